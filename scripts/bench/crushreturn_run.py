"""`ceph-recovery-bench --crush-return --out DIR`: one host's OSDs returning one at a time, in
`crushtool --test` of the lab's release (run in its chroot, scripts/lab/release.py).

Per cluster (root/rack/host/osd built by `crushtool --build`, straw2, CRUSH weight 1 per OSD,
the built rule `chooseleaf firstn 0 type host`, size 3, pg_num for 100 PGs per OSD rounded
as the pg autoscaler rounds) and per tunables profile: the first host's OSDs 0..k-1 in, the
other 12 - k at reweight 0 (`--weight ID 0`, what `ceph osd out` sets), k = 0..12; the
mappings of every PG (`--pool-id` makes x the pool's placement seed, as the OSDMap does).
k = 1 is also run with each of the 12 as the one in. The numbers are crushreturn.py's.
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import tempfile
from typing import Callable, Dict, List, Sequence, Tuple

from ..lab import release
from . import crushreturn as C

POOL_ID = 1
SIZE = 3
PER_HOST = 12
CLUSTERS = (("30x12", 30, 3), ("100x12", 100, 10))     # name, hosts, racks
# (name, crushtool flags on the built map). The built map has the release's optimal profile
# (jewel: choose_local_tries 0, choose_local_fallback_tries 0, choose_total_tries 50,
# chooseleaf_descend_once 1, chooseleaf_vary_r 1, chooseleaf_stable 1); bobtail is the first
# profile whose rejections go back to the host choice; argonaut, the legacy one, retries
# inside the chosen host (an old cluster whose tunables were never raised).
PROFILES: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("optimal", ()),
    ("bobtail", ("--set-chooseleaf-vary-r", "0", "--set-chooseleaf-stable", "0")),
    ("argonaut", ("--set-choose-local-tries", "2", "--set-choose-local-fallback-tries", "5",
                  "--set-choose-total-tries", "19", "--set-chooseleaf-descend-once", "0",
                  "--set-chooseleaf-vary-r", "0", "--set-chooseleaf-stable", "0")),
)
TUNABLES = ("choose_local_tries", "choose_local_fallback_tries", "choose_total_tries",
            "chooseleaf_descend_once", "chooseleaf_vary_r", "chooseleaf_stable")


class Crushtool:
    """crushtool and ceph-conf of one release: `chroot ROOT tool`, the maps in a scratch
    directory under ROOT/tmp (the same file at `inside` in the chroot and `outside` here)."""

    def __init__(self, ceph: str) -> None:
        self.root = release.ensure_root(ceph)
        self.state = {"root": self.root}
        base = release.host_path(self.state, "/tmp")
        self.outside = tempfile.mkdtemp(prefix="crush-return.", dir=base)
        self.inside = "/tmp/" + os.path.basename(self.outside) if self.root else self.outside

    def run(self, tool: str, *args: str) -> str:
        proc = subprocess.run(release.tool(self.state, tool) + list(args), capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError("%s %s: rc %d: %s" % (tool, " ".join(args[:6]), proc.returncode,
                                                      proc.stderr.strip()[-800:]))
        return proc.stdout

    def path(self, name: str) -> str:
        return os.path.join(self.inside, name)

    def conf(self, key: str) -> float:
        return float(self.run("ceph-conf", "-c", "/dev/null", "--show-config-value", key))

    def close(self) -> None:
        shutil.rmtree(self.outside, ignore_errors=True)


def build(ct: Crushtool, name: str, hosts: int, racks: int) -> str:
    """The cluster's map; checks the built rule is the host-failure-domain one assumed."""
    m = ct.path(name)
    ct.run("crushtool", "-o", m, "--build", "--num_osds", str(hosts * PER_HOST),
           "host", "straw2", str(PER_HOST), "rack", "straw2", str(hosts // racks),
           "root", "straw2", "0")
    steps = json.loads(ct.run("crushtool", "-i", m, "--dump", "-f", "json"))["rules"][0]["steps"]
    if [s["op"] for s in steps] != ["take", "chooseleaf_firstn", "emit"] or \
            steps[1]["type"] != "host":
        raise RuntimeError("crushtool --build made rule 0 %r, not chooseleaf host" % steps)
    return m


def with_profile(ct: Crushtool, base: str, profile: str, flags: Sequence[str]) -> Tuple[str, dict]:
    """The map with the profile's tunables, and the tunables crushtool then dumps."""
    m = "%s.%s" % (base, profile) if flags else base    # crushtool writes no map unchanged
    if flags:
        ct.run("crushtool", "-i", base, *flags, "-o", m)
    dumped = json.loads(ct.run("crushtool", "-i", m, "--dump", "-f", "json"))["tunables"]
    return m, dumped


def mappings(ct: Crushtool, m: str, pg_num: int, out: Sequence[int]) -> Dict[int, List[int]]:
    args = ["-i", m, "--test", "--rule", "0", "--pool-id", str(POOL_ID), "--num-rep", str(SIZE),
            "--min-x", "0", "--max-x", str(pg_num - 1), "--show-mappings"]
    for osd in out:
        args += ["--weight", str(osd), "0"]
    return C.parse_mappings(ct.run("crushtool", *args))


def run_profile(ct: Crushtool, m: str, pg_num: int, limits: Tuple[float, float]) -> Tuple[
        List[dict], dict]:
    """k = 0..12 of host0's OSDs in (in id order), and k = 1 for each as the one in."""
    host = list(range(PER_HOST))
    final = mappings(ct, m, pg_num, [])
    rows = []
    for k in range(PER_HOST + 1):
        now = final if k == PER_HOST else mappings(ct, m, pg_num, host[k:])
        rows.append(C.k_row(k, host, now, final, limits[0], limits[1], SIZE))
    firsts = {o: mappings(ct, m, pg_num, [x for x in host if x != o]) for o in host}
    return rows, C.first_osd_spread(host, firsts)


def run_cluster(ct: Crushtool, name: str, hosts: int, racks: int, limits: Tuple[float, float],
                log: Callable[..., None]) -> Tuple[dict, List[dict], Dict[str, dict]]:
    base = build(ct, "map-" + name, hosts, racks)
    pg_num = C.pg_num_for(hosts * PER_HOST, 100, SIZE)
    info = {"name": name, "hosts": hosts, "racks": racks, "per_host": PER_HOST,
            "osds": hosts * PER_HOST, "pg_num": pg_num, "host": "host0",
            "host_osds": list(range(PER_HOST)), "first_osd": {}}
    rows, dumped = [], {}
    for profile, flags in PROFILES:
        log("crush-return %s: %s, pg_num %d" % (name, profile, pg_num))
        m, dumped[profile] = with_profile(ct, base, profile, flags)
        got, first = run_profile(ct, m, pg_num, limits)
        info["first_osd"][profile] = first
        info.setdefault("share", got[-1]["share"])      # the first profile's: optimal
        rows += [dict(r, cluster=name, profile=profile) for r in got]
    return info, rows, dumped


def run(out_dir: str, ceph: str, log: Callable[..., None]) -> dict:
    """Every cluster and profile; writes DIR/crush-return.json and DIR/crush-return.md."""
    ct = Crushtool(ceph)
    try:
        soft = ct.conf("mon_max_pg_per_osd")
        ratio = ct.conf("osd_max_pg_per_osd_hard_ratio")
        version = ct.run("ceph", "--version").split()[2]
        doc = {"ceph": ceph, "ceph_version": version, "mon_max_pg_per_osd": soft,
               "osd_max_pg_per_osd_hard_ratio": ratio, "hard_limit": soft * ratio,
               "size": SIZE, "pool_id": POOL_ID, "clusters": [], "rows": [],
               "when": datetime.datetime.now(datetime.timezone.utc).isoformat(
                   timespec="seconds")}
        dumped: Dict[str, dict] = {}
        for name, hosts, racks in CLUSTERS:
            info, rows, dumped = run_cluster(ct, name, hosts, racks, (soft * ratio, soft), log)
            doc["clusters"].append(info)
            doc["rows"] += rows
    finally:
        ct.close()
    doc["profiles"] = [{"name": p, "flags": list(f), "dumped_profile": dumped[p]["profile"],
                        "tunables": {k: dumped[p][k] for k in TUNABLES}} for p, f in PROFILES]
    write(out_dir, doc)
    return doc


def write(out_dir: str, doc: dict) -> None:
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "crush-return.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    with open(os.path.join(out_dir, "crush-return.md"), "w") as f:
        f.write(C.page(doc, C.findings(doc)))
