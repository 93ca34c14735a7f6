"""Mon-side setup of a scale lab, run inside the release's chroot (its python3-rados speaks the
release's cephx): OSD ids registered in bulk, per-host helper keys in one import.

    python3 -m ceph_recovery_tools.lab.scaleops osds --conf C --count N [--threads 32]
    python3 -m ceph_recovery_tools.lab.scaleops keys --conf C --hosts host0,host1,... --out K

`osd new` is one mon command per id; the mon folds the commands that arrive together into one
Paxos proposal, so they go out from a pool of threads (one proposal per batch, not per OSD).
The OSDs exist only in the map: no data, no key, never up.
Imports only the standard library, rados and this package's helper caps.
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import struct
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Sequence, Tuple

from ..helper import caps


def connect(conf: str, name: str = "client.admin", keyring: str = ""):
    import rados
    opts = {"admin_socket": "", "log_file": "", "log_to_stderr": "false"}
    if keyring:
        opts["keyring"] = keyring
    cluster = rados.Rados(conffile=conf, name=name, conf=opts)
    cluster.connect(timeout=30)
    return cluster


def mon(cluster, cmd: Dict, inbuf: bytes = b"") -> str:
    rc, out, err = cluster.mon_command(json.dumps(cmd), inbuf, timeout=120)
    if rc != 0:
        raise RuntimeError("%s -> rc %d: %s" % (cmd.get("prefix"), rc, err))
    return out.decode() if isinstance(out, bytes) else out


def create_osds(conf: str, count: int, threads: int = 256) -> float:
    """osd.0 .. osd.<count-1> via `osd new <uuid> <id>` (in, down, no key); seconds taken."""
    cluster = connect(conf)
    t0 = time.monotonic()
    try:
        mon(cluster, {"prefix": "osd setmaxosd", "newmax": count})

        def one(i: int) -> None:
            mon(cluster, {"prefix": "osd new", "uuid": str(uuid.uuid4()), "id": i})
        with ThreadPoolExecutor(max_workers=threads) as pool:
            for f in [pool.submit(one, i) for i in range(count)]:
                f.result()
    finally:
        cluster.shutdown()
    return time.monotonic() - t0


def key_kind(conf_keyring: str) -> Tuple[int, int]:
    """(cephx key type, secret length) of the admin key: the release's own kind (Tentacle
    makes type 2 with 32 bytes and refuses type 1 keys; older releases type 1, 16 bytes)."""
    with open(conf_keyring) as f:
        for line in f:
            if line.strip().startswith("key"):
                raw = base64.b64decode(line.split("=", 1)[1].strip())
                kind, _s, _n, length = struct.unpack("<HIIH", raw[:12])
                return kind, length
    return 1, 16


def cephx_key(kind: int = 1, length: int = 16) -> str:
    """A new cephx secret as ceph-authtool --gen-print-key writes it: type, creation time,
    random bytes."""
    raw = os.urandom(length)
    return base64.b64encode(struct.pack("<HIIH", kind, int(time.time()), 0, length) +
                            raw).decode()


def keyring_text(hosts: Sequence[str], key: Tuple[int, int] = (1, 16)) -> str:
    """One entry per host: client.recovery-helper.<host> with that host's helper caps."""
    out: List[str] = []
    for h in hosts:
        out.append("[%s]\n\tkey = %s\n" % (caps.helper_name(h), cephx_key(*key)))
        for kind, cap in caps.helper_caps(h).items():
            # a keyring value is one double-quoted string: the cap's own quotes become single
            # quotes, which the cap grammar reads the same
            out.append("\tcaps %s = \"%s\"\n" % (kind, cap.replace('"', "'")))
    return "".join(out)


def import_keys(conf: str, hosts: Sequence[str], out: str, admin_keyring: str) -> None:
    text = keyring_text(hosts, key_kind(admin_keyring))
    with open(out, "w") as f:
        f.write(text)
    cluster = connect(conf)
    try:
        mon(cluster, {"prefix": "auth import"}, text.encode())
    finally:
        cluster.shutdown()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="scaleops")
    sub = p.add_subparsers(dest="cmd", required=True)
    o = sub.add_parser("osds")
    o.add_argument("--conf", required=True)
    o.add_argument("--count", type=int, required=True)
    o.add_argument("--threads", type=int, default=256)
    k = sub.add_parser("keys")
    k.add_argument("--conf", required=True)
    k.add_argument("--hosts", required=True)
    k.add_argument("--out", required=True)
    k.add_argument("--admin-keyring", required=True)
    a = p.parse_args(argv)
    if a.cmd == "osds":
        print(json.dumps({"osds": a.count, "seconds": round(create_osds(a.conf, a.count,
                                                                         a.threads), 1)}))
    else:
        import_keys(a.conf, a.hosts.split(","), a.out, a.admin_keyring)
        print(json.dumps({"keys": len(a.hosts.split(","))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
