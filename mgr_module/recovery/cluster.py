"""Ceph state -> ceph_recovery.model.Snapshot. Pure functions over the mgr's JSON dumps.

Inputs are what `MgrModule.get()` returns: 'osd_map' (as `ceph osd dump -f json`),
'osd_map_tree' (as `ceph osd tree -f json`), 'pg_dump' (pg_stats + osd_stats).

Per-OSD PG counts (documented approach):
  * up OSDs: PGs whose up or acting set holds the OSD; of those, the ones not `active`
    (pgs_inactive) and the ones `degraded`/`undersized` (pgs_degraded); pg_log_entries is the
    sum of `log_size` over the PGs it is acting for.
  * down OSDs: the OSD map drops them from every up/acting set, so their PGs are not visible
    there. `pgs` is the OSD's last `num_pgs` from osd_stats (the mgr keeps a down OSD's last
    stats); `pgs_inactive` counts non-active PGs whose `blocked_by` names the OSD (peering waits
    for it: its start unblocks them); `pgs_degraded` is the number of degraded/undersized PGs
    of the cluster that list fewer OSDs than their pool size and none of them on the OSD's
    host (bounded by `pgs`), i.e. the PGs this host's return would make whole again.
    Its missed entries (how far its PGs' logs advanced since it went down) and every PG's
    members (the snapshot's PgMap) come from pgtrack.py.
"""
from __future__ import annotations

import datetime
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ceph_recovery.model import (PROC_RUNNING, PROC_STOPPED, PROC_UNKNOWN, Finding, HostMem,
                                 OsdState, Snapshot)
from ceph_recovery.view import fresh_ok_to_stop

from .pgtrack import pg_membership, pg_states

# What the shell reads of get("osd_map"): the map's epoch and flags, and of each OSD, pool and
# osd_xinfo entry these fields. slim_osd_map drops the rest (each OSD's addresses and
# history: some 4 KB of Python objects per OSD) as soon as the map is read.
OSD_MAP_FIELDS = ("epoch", "flags", "flags_set", "crush_node_flags")
OSD_MAP_LISTS = (("osds", ("osd", "up", "in", "state", "up_from")),
                 ("osd_xinfo", ("osd", "down_stamp")),
                 ("pools", ("pool", "pool_name", "size", "min_size", "pg_num")))
NO_FLAGS: frozenset = frozenset()     # shared by every OSD without one (most of them)
# and of get("osd_map_tree"), each node's (CrushIndex)
TREE_LISTS = (("nodes", ("id", "name", "type", "children")),)


class CrushIndex(object):
    """Names, types and parents of the CRUSH tree, and every OSD's path (root first)."""

    def __init__(self, tree: Mapping[str, Any]) -> None:
        nodes = list(tree.get("nodes", ()))
        self.by_id = {n["id"]: n for n in nodes}
        self.parent: Dict[int, int] = {}
        for n in nodes:
            for c in n.get("children", ()) or ():
                self.parent[c] = n["id"]
        self.types = {n["name"]: n.get("type", "") for n in nodes}
        self.osd_ids = sorted(n["id"] for n in nodes if n["id"] >= 0)
        self.hosts = frozenset(n for n, t in self.types.items() if t == "host")

    def path(self, node_id: int) -> Tuple[str, ...]:
        names: List[str] = []
        cur = self.parent.get(node_id)
        seen = set()
        while cur is not None and cur not in seen:
            seen.add(cur)
            names.append(self.by_id[cur]["name"])
            cur = self.parent.get(cur)
        return tuple(reversed(names))

    def host_of(self, osd_id: int) -> Optional[str]:
        cur = self.parent.get(osd_id)
        while cur is not None:
            node = self.by_id[cur]
            if node.get("type") == "host":
                return node["name"]
            cur = self.parent.get(cur)
        return None

    def buckets(self) -> Dict[str, str]:
        return {name: t for name, t in self.types.items() if t != "osd"}

    def osds_under(self, bucket: str) -> List[int]:
        return [o for o in self.osd_ids if bucket in self.path(o)]


def cluster_flags(osd_map: Mapping[str, Any]) -> frozenset:
    flags = osd_map.get("flags_set")
    if flags is None:
        flags = [f for f in str(osd_map.get("flags", "")).split(",") if f]
    return frozenset(flags)


def parse_stamp(text: Any) -> Optional[float]:
    """Ceph utime '2026-11-22T09:10:11.123456+0000' (or with a space) -> epoch seconds."""
    if not isinstance(text, str) or not text or text.startswith("0.0"):
        return None
    s = text.replace(" ", "T")
    for fmt in ("%Y-%m-%dT%H:%M:%S.%f%z", "%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%dT%H:%M:%S.%f"):
        try:
            dt = datetime.datetime.strptime(s, fmt)
        except ValueError:
            continue
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=datetime.timezone.utc)
        ts = dt.timestamp()
        return ts if ts > 0 else None
    return None


def pg_counts(pg_dump: Mapping[str, Any], down: Iterable[int],
              host_osds: Mapping[int, Iterable[int]],
              fallback_pgs: Optional[Mapping[int, int]] = None,
              ) -> Tuple[Dict[int, Dict[str, int]], Dict[str, int]]:
    """Per-OSD {pgs, pgs_inactive, pgs_degraded, pg_log_entries} and cluster totals.

    fallback_pgs: PG counts for down OSDs whose osd_stats this mgr never received (an mgr
    that started after they went down): their last count seen up, else an even share."""
    down = set(down)
    pg_dump = pg_dump.get("pg_map", pg_dump)   # `ceph pg dump` wraps it, mgr's get() does not
    per: Dict[int, Dict[str, int]] = {}

    def bump(osd: int, key: str, n: int = 1) -> None:
        per.setdefault(osd, {"pgs": 0, "pgs_inactive": 0, "pgs_degraded": 0,
                             "pg_log_entries": 0})[key] += n

    stats = pg_dump.get("pg_stats", []) or []
    totals = {"total": len(stats), "active": 0, "clean": 0}
    short = []
    for pg in stats:
        st = pg_states(pg)
        active = "active" in st
        degraded = bool(st & {"degraded", "undersized"})
        totals["active"] += active
        totals["clean"] += "clean" in st
        members = set(pg.get("up", []) or []) | set(pg.get("acting", []) or [])
        for o in members:
            bump(o, "pgs")
            if not active:
                bump(o, "pgs_inactive")
            if degraded:
                bump(o, "pgs_degraded")
        for o in pg.get("acting", []) or []:
            bump(o, "pg_log_entries", int(pg.get("log_size", 0) or 0))
        if not active:
            for o in set(pg.get("blocked_by", []) or []) - members:
                bump(o, "pgs_inactive")
        if degraded:
            short.append((members, int(pg.get("log_size", 0) or 0)))
    num_pgs = {s.get("osd"): int(s.get("num_pgs", 0) or 0)
               for s in pg_dump.get("osd_stats", []) or []}
    for o in down:
        c = per.setdefault(o, {"pgs": 0, "pgs_inactive": 0, "pgs_degraded": 0,
                               "pg_log_entries": 0})
        c["pgs"] = max(c["pgs"], num_pgs.get(o, 0) or (fallback_pgs or {}).get(o, 0))
        peers = set(host_osds.get(o, ()))
        missing_here = sum(1 for m, _n in short if not (m & peers))
        c["pgs_degraded"] = min(c["pgs"], missing_here) if c["pgs"] else missing_here

    return per, totals


def slim_osd_map(osd_map: Any) -> Dict[str, Any]:
    """get("osd_map") reduced to OSD_MAP_FIELDS and OSD_MAP_LISTS, in its own shape: every
    view the shell builds from it equals the one from the full map."""
    return _slim(osd_map, OSD_MAP_FIELDS, OSD_MAP_LISTS)


def slim_tree(tree: Any) -> Dict[str, Any]:
    """get("osd_map_tree") reduced to TREE_LISTS: the same CrushIndex."""
    return _slim(tree, (), TREE_LISTS)


def _slim(dump: Any, fields: Tuple[str, ...],
          lists: Tuple[Tuple[str, Tuple[str, ...]], ...]) -> Dict[str, Any]:
    if not isinstance(dump, Mapping):
        return {}
    out = {k: dump[k] for k in fields if k in dump}
    for name, keep in lists:
        if name in dump:
            out[name] = [{k: e[k] for k in keep if k in e} if isinstance(e, Mapping) else e
                         for e in dump[name] or ()]
    return out


def even_share(osd_map: Mapping[str, Any]) -> Dict[int, int]:
    """Each `in` OSD's even share of all PG replicas (pg_num x size over the pools)."""
    ins = [o["osd"] for o in osd_map.get("osds", []) if o.get("in")]
    replicas = sum(int(p.get("pg_num", 0)) * int(p.get("size", 0))
                   for p in osd_map.get("pools", []) or [])
    share = int(round(replicas / float(len(ins)))) if ins else 0
    return {o: share for o in ins}


def host_mem(report: Any, received_at: float) -> HostMem:
    m = report.memory
    total = m.limit if (m.source == "cgroup" and m.limit) else m.total
    return HostMem(name=report.host, mem_total=int(total), mem_used=int(m.used),
                   mem_available=int(m.available), mem_limit=m.limit, swap_total=m.swap_total,
                   source=m.source, reported_at=received_at)


def _pg_view(crush: "CrushIndex", entries: Mapping[int, Any], osd_map: Mapping[str, Any],
             pg_dump: Mapping[str, Any], pgs_seen: Optional[Mapping[int, int]]
             ) -> Tuple[Dict[int, Dict[str, int]], Dict[str, int]]:
    """pg_counts() for this map: down OSDs, their host partners, and PG-count fallbacks."""
    hosts_of = {o: crush.host_of(o) for o in crush.osd_ids}
    by_host: Dict[str, List[int]] = {}
    for o, h in hosts_of.items():
        if h is not None:
            by_host.setdefault(h, []).append(o)
    down = [o for o in crush.osd_ids if o in entries and not entries[o].get("up")]
    fallback = dict(even_share(osd_map))
    fallback.update(pgs_seen or {})
    return pg_counts(pg_dump, down, {o: by_host.get(hosts_of[o], ()) for o in down}, fallback)


def _process(fresh: Mapping[str, Tuple[Any, float]], host: str, osd: int
             ) -> Tuple[str, int, Optional[float], Optional[str], int]:
    """(process state, rss, started_at, daemon state, dups warnings) of `osd` from its
    host's fresh helper report (the warnings whether it runs or not: a stopped OSD's log
    tells what its last start loaded)."""
    proc, rss, started, state, dups = PROC_UNKNOWN, 0, None, None, 0
    if host in fresh:
        for p in fresh[host][0].osds:
            if p.id == osd:
                proc = PROC_RUNNING if p.process == "running" else PROC_STOPPED
                dups = int(getattr(p, "pglog_dups", 0) or 0)
                if proc == PROC_RUNNING:
                    rss, started, state = p.rss, p.started_at, p.state
    return proc, rss, started, state, dups


def pg_view(crush: "CrushIndex", osd_map: Mapping[str, Any], pg_dump: Mapping[str, Any],
            pgs_seen: Optional[Mapping[int, int]] = None,
            members_seen: Optional[Mapping[str, Tuple[int, ...]]] = None) -> Tuple:
    """What a snapshot takes from the PG stats: (per-OSD counts, totals, PgMap). The engine
    keeps it while the same dumps come again (an idle tick that read nothing new)."""
    entries = {o["osd"]: o for o in osd_map.get("osds", [])}
    per, totals = _pg_view(crush, entries, osd_map, pg_dump, pgs_seen)
    return per, totals, pg_membership(pg_dump, osd_map, members_seen)


def build_snapshot(osd_map: Mapping[str, Any], tree: Mapping[str, Any],
                   pg_dump: Mapping[str, Any], reports: Mapping[str, Tuple[Any, float]],
                   now: float, stale_after: float,
                   ok_to_stop: Optional[Tuple[int, Mapping[int, Tuple[bool, float]]]] = None,
                   heap_support: Optional[Mapping[int, bool]] = None,
                   findings: Tuple[Finding, ...] = (),
                   pgs_seen: Optional[Mapping[int, int]] = None,
                   down_seen: Optional[Mapping[int, float]] = None,
                   memory_targets: Optional[Mapping[int, int]] = None,
                   members_seen: Optional[Mapping[str, Tuple[int, ...]]] = None,
                   recovery_configs: Optional[Mapping[int, Tuple[Tuple[str, str], ...]]] = None,
                   missed: Optional[Mapping[int, int]] = None,
                   crush: Optional["CrushIndex"] = None,
                   pgs: Optional[Tuple] = None,
                   op_queues: Optional[Mapping[int, Optional[str]]] = None,
                   versions: Optional[Mapping[int, str]] = None,
                   crush_tunables: Optional[Mapping[str, int]] = None) -> Snapshot:
    """One tick's Snapshot. `reports`: host -> (parsed protocol Report, time received).
    `missed`: missed_entries() of the down OSDs the shell knows them for. `crush` and `pgs`
    (pg_view()): built from these same dumps already. `op_queues`: each OSD's scheduler
    (OsdState.op_queue), None = not known. `versions`: osd -> its `ceph_version` from its
    metadata (executor.OsdVersions), where the shell read it.

    down_since: the OSD map's down_stamp when set (Pacific leaves it 0 for OSDs the mon marks
    down on failure reports), else `down_seen`: when the shell first saw the OSD down."""
    crush = crush or CrushIndex(tree)
    epoch = int(osd_map.get("epoch", 0))
    heap_support = heap_support or {}
    entries = {o["osd"]: o for o in osd_map.get("osds", [])}
    xinfo = {x.get("osd"): x for x in osd_map.get("osd_xinfo", []) or []}
    per, totals, pg_map = pgs or pg_view(crush, osd_map, pg_dump, pgs_seen, members_seen)
    fresh = {h: (r, t) for h, (r, t) in reports.items() if now - t <= stale_after}
    osds = []
    for o in crush.osd_ids:
        e, host = entries.get(o), crush.host_of(o)
        if e is None or host is None:
            continue
        up = bool(e.get("up"))
        proc, rss, started, state, dups = _process(fresh, host, o)
        c = per.get(o, {})
        osds.append(OsdState(
            id=o, host=host, crush_path=crush.path(o), up=up, in_=bool(e.get("in")),
            flags=frozenset(s for s in e.get("state", []) if s not in ("exists", "up"))
            or NO_FLAGS,
            process=proc, rss_bytes=int(rss), process_started_at=started, daemon_state=state,
            pgs=c.get("pgs", 0), pgs_inactive=c.get("pgs_inactive", 0),
            pgs_degraded=c.get("pgs_degraded", 0), pg_log_entries=c.get("pg_log_entries", 0),
            missed_entries=None if up else (missed or {}).get(o),
            down_since=None if up else (parse_stamp(xinfo.get(o, {}).get("down_stamp"))
                                        or (down_seen or {}).get(o)),
            heap_release=heap_support.get(o),
            memory_target=None if memory_targets is None else memory_targets.get(o, 0),
            recovery_config=None if recovery_configs is None else recovery_configs.get(o, ()),
            op_queue=(op_queues or {}).get(o),
            ceph_version=(versions or {}).get(o), pglog_dups=dups))
    oks = fresh_ok_to_stop(ok_to_stop, epoch, now)
    return Snapshot(
        epoch=epoch, osds=tuple(osds),
        hosts=tuple(host_mem(r, t) for h, (r, t) in sorted(fresh.items())),
        bucket_flags={b: frozenset(f) for b, f in (osd_map.get("crush_node_flags") or {}).items()},
        cluster_flags=cluster_flags(osd_map), buckets=crush.buckets(),
        pgs_total=totals["total"], pgs_active=totals["active"], pgs_clean=totals["clean"],
        ok_to_stop=oks, findings=tuple(findings),
        helpers_seen={h: t for h, (r, t) in reports.items()},
        pg_map=pg_map, crush_tunables=crush_tunables)
