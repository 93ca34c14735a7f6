"""Model topologies and PG placements built by Ceph's own tools (no home-made placement).

    crushtool --build --num_osds N host straw2 <osds/host> rack straw2 <hosts/rack> root straw2 0
    osdmaptool --createsimple N --pg-bits B om --with-default-pool
    osdmaptool om --import-crush cm
    osdmaptool om --mark-up-in --test-map-pgs-dump      -> every PG's up set

`crushtool --build` writes rule 0 `replicated_rule` = take root, chooseleaf firstn 0 type host,
which is the host failure domain we model; `load()` checks that and refuses anything else.
Results are cached per (N, H, R, B, ceph version) under ~/.cache/ceph-recovery-sim (override
with $CEPH_RECOVERY_SIM_CACHE) so repeated runs start in milliseconds.
"""
from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Tuple

CACHE_ENV = "CEPH_RECOVERY_SIM_CACHE"
PG_LINE = re.compile(r"^(\d+)\.([0-9a-f]+)\s+\[([0-9,]*)\]\s+(-?\d+)\s*$")
FORMAT_VERSION = 1


class TopologyError(Exception):
    """Bad topology parameters or a Ceph tool failure; `errno` says which."""

    def __init__(self, err: int, msg: str):
        super().__init__(msg)
        self.errno = err


@dataclass(frozen=True)
class Topology:
    """Hosts, racks and every PG's up set, as Ceph's CRUSH computed them."""

    n_osds: int
    host_of: Tuple[str, ...]            # osd id -> host bucket name
    rack_of_host: Dict[str, str]        # host -> rack bucket name
    root: str
    pgs: Tuple[Tuple[int, ...], ...]    # PG index -> up set (osd ids, primary first)
    size: int
    min_size: int
    pg_bits: int

    @property
    def hosts(self) -> List[str]:
        return sorted(set(self.host_of), key=_natural)

    @property
    def racks(self) -> List[str]:
        return sorted(set(self.rack_of_host.values()), key=_natural)


def _natural(name: str):
    m = re.match(r"^(.*?)(\d+)$", name)
    return (m.group(1), int(m.group(2))) if m else (name, -1)


def check_shape(n_osds: int, n_hosts: int, n_racks: int) -> Tuple[int, int]:
    """OSDs per host and hosts per rack, or EINVAL when the shape does not divide evenly."""
    if min(n_osds, n_hosts, n_racks) < 1:
        raise TopologyError(errno.EINVAL, "osds, hosts and racks must be >= 1")
    if n_osds % n_hosts or n_hosts % n_racks:
        raise TopologyError(errno.EINVAL, "need osds %% hosts == 0 and hosts %% racks == 0, got "
                            "%d osds / %d hosts / %d racks" % (n_osds, n_hosts, n_racks))
    if n_hosts < 3:
        raise TopologyError(errno.EINVAL, "a size-3 pool with a host failure domain needs >= 3 "
                            "hosts, got %d" % n_hosts)
    return n_osds // n_hosts, n_hosts // n_racks


def default_pg_bits(n_osds: int) -> int:
    """pg_num = N << bits; bits 5 gives 32 PGs per OSD, x3 replicas ~ 96 PG copies per OSD."""
    return 5


def _run(args: List[str], cwd: str) -> str:
    try:
        out = subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True)
    except FileNotFoundError as e:
        raise TopologyError(errno.ENOENT, "%s not found: install ceph-base (%s)" % (args[0], e))
    except subprocess.CalledProcessError as e:
        raise TopologyError(errno.EIO, "%s failed (rc %d): %s" % (
            " ".join(args), e.returncode, (e.stderr or "").strip()[-400:]))
    return out.stdout


def ceph_version() -> str:
    try:
        out = subprocess.run(["ceph-osd", "--version"], capture_output=True, text=True).stdout
    except FileNotFoundError:
        return "unknown"
    m = re.search(r"version (\S+)", out)
    return m.group(1) if m else "unknown"


def parse_pgs_dump(text: str) -> List[Tuple[str, Tuple[int, ...]]]:
    """Parse `osdmaptool --test-map-pgs-dump` lines `1.1f\t[3,7,11]\t3` -> [("1.1f", (3,7,11))]."""
    rows = []
    for line in text.splitlines():
        m = PG_LINE.match(line.strip())
        if m:
            up = tuple(int(x) for x in m.group(3).split(",") if x != "")
            rows.append(("%s.%s" % (m.group(1), m.group(2)), up))
    return rows


def parse_crush(dump: dict) -> Tuple[Dict[int, str], Dict[str, str], str]:
    """From `crushtool --dump` JSON: osd -> host, host -> rack, root name. Checks rule 0."""
    by_id = {b["id"]: b for b in dump["buckets"]}
    host_of: Dict[int, str] = {}
    rack_of: Dict[str, str] = {}
    roots = [b["name"] for b in dump["buckets"] if b["type_name"] == "root"]
    for b in dump["buckets"]:
        for it in b["items"]:
            if b["type_name"] == "host" and it["id"] >= 0:
                host_of[it["id"]] = b["name"]
            elif b["type_name"] == "rack" and it["id"] in by_id:
                rack_of[by_id[it["id"]]["name"]] = b["name"]
    rules = [r for r in dump["rules"] if r.get("rule_id", r.get("ruleset")) == 0]
    steps = rules[0]["steps"] if rules else []
    if not any(s.get("op", "").startswith("chooseleaf") and s.get("type") == "host"
               for s in steps):
        raise TopologyError(errno.EINVAL, "CRUSH rule 0 is not a host-failure-domain rule: %r"
                            % (steps,))
    if len(roots) != 1:
        raise TopologyError(errno.EINVAL, "expected one root bucket, got %r" % (roots,))
    return host_of, rack_of, roots[0]


def _build(n_osds: int, n_hosts: int, n_racks: int, pg_bits: int, tmp: str) -> dict:
    per_host, per_rack = check_shape(n_osds, n_hosts, n_racks)
    _run(["crushtool", "--build", "--num_osds", str(n_osds), "host", "straw2", str(per_host),
          "rack", "straw2", str(per_rack), "root", "straw2", "0", "-o", "cm"], tmp)
    _run(["osdmaptool", "--createsimple", str(n_osds), "--pg-bits", str(pg_bits), "om",
          "--with-default-pool"], tmp)
    _run(["osdmaptool", "om", "--import-crush", "cm"], tmp)
    crush = json.loads(_run(["crushtool", "-i", "cm", "--dump", "-f", "json"], tmp))
    osdmap = json.loads(_run(["osdmaptool", "om", "--dump", "json"], tmp))
    pool = osdmap["pools"][0]
    dump = _run(["osdmaptool", "om", "--mark-up-in", "--test-map-pgs-dump"], tmp)
    pgs = [list(up) for _name, up in parse_pgs_dump(dump)]
    if len(pgs) != pool["pg_num"]:
        raise TopologyError(errno.EIO, "parsed %d PGs, pool has pg_num %d" % (
            len(pgs), pool["pg_num"]))
    host_of, rack_of, root = parse_crush(crush)
    return {"format": FORMAT_VERSION, "n_osds": n_osds, "host_of": [host_of[i] for i in
            range(n_osds)], "rack_of_host": rack_of, "root": root, "pgs": pgs,
            "size": pool["size"], "min_size": pool["min_size"], "pg_bits": pg_bits}


def cache_dir() -> str:
    d = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache",
                                                  "ceph-recovery-sim")
    os.makedirs(d, exist_ok=True)
    return d


def load(n_osds: int, n_hosts: int, n_racks: int, pg_bits: int = 0,
         use_cache: bool = True) -> Topology:
    """Build (or read from the cache) the topology and PG placement of a model cluster."""
    check_shape(n_osds, n_hosts, n_racks)
    bits = pg_bits or default_pg_bits(n_osds)
    path = os.path.join(cache_dir(), "topo-%d-%d-%d-b%d-%s-v%d.json" % (
        n_osds, n_hosts, n_racks, bits, ceph_version(), FORMAT_VERSION))
    data = None
    if use_cache and os.path.exists(path):
        with open(path) as f:
            data = json.load(f)
    if data is None:
        with tempfile.TemporaryDirectory(prefix="crsim-") as tmp:
            data = _build(n_osds, n_hosts, n_racks, bits, tmp)
        if use_cache:
            fd, tmpf = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, separators=(",", ":"))
            os.replace(tmpf, path)
    return Topology(n_osds=data["n_osds"], host_of=tuple(data["host_of"]),
                    rack_of_host=dict(data["rack_of_host"]), root=data["root"],
                    pgs=tuple(tuple(p) for p in data["pgs"]), size=data["size"],
                    min_size=data["min_size"], pg_bits=data["pg_bits"])
