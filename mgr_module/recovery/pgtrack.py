"""What the shell reads per PG from the PG stats and keeps across ticks: each PG's members
(Snapshot.pg_map) and the versions of its log (a down OSD's missed entries). Pure functions
over the mgr's dumps; what they keep lives in the engine's memory (lost on failover).

PG membership (Snapshot.pg_map, pg_membership()): from the PG stats (`pg dump pgs_brief`:
pgid, state, up, acting) and the pools of the OSD map (`osd dump`: pool, size, min_size).
A down OSD is not in any up/acting set of a replicated pool, so a PG's members are its acting
set, then its up set, then, while it is not active, the OSDs its peering is `blocked_by`, then
the members the shell saw last while the PG was complete (`members_seen`, kept by the engine
in memory: an mgr that starts after the failure learns them only from blocked_by). A PG of a
pool the map does not list is left out.

Missed entries of a down OSD (OsdState.missed_entries, missed_entries()): per PG of the OSD,
the versions its log advanced since the OSD went down (pg_stats `version`, "epoch'version" of
the PG's last update; `last_update` on releases that name it so), each capped by the PG's
`log_size` (past it Ceph backfills instead of building a missing set), summed. It needs the
versions of the OSD's PGs from before it went down, which the shell keeps in memory (the
engine: the previous tick's versions, taken when it first sees the OSD down), so it is unknown
(None) for an OSD that went down before this mgr started. `pgs` x the mean `log_size` of its
PGs is no substitute (their logs also hold what was written before the outage: it predicted
1,058 MiB on the lab for an OSD that peaked at 240 MB).
"""
from __future__ import annotations

from array import array
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ceph_recovery.model import OsdState, PgMap, PoolInfo

from .packed import ByPg, Packed, PackedMap

# PG states that say nothing of whether clients reach the PG: a new mgr's PGs before the OSDs
# report to it, and PGs being created
UNKNOWN_STATES = frozenset(("unknown", "creating"))
# a PG without a readable version (pg_versions); versions past 64 bits are not kept either
NO_VERSION = -1
INT64 = (1 << 63) - 1


# what the shell reads of a PG's stats (get("pg_dump") holds some 60 values per PG, nested;
# kept whole, 100,000 PGs held 1.3 GB of the mgr's memory)
PG_FIELDS = ("pgid", "state", "up", "acting", "blocked_by", "version", "last_update",
             "log_size")


def slim_pg_dump(pg_dump: Any) -> Dict[str, Any]:
    """The PG stats reduced to what the shell reads, in the shape of get("pg_dump"): per PG
    PG_FIELDS (those present, blocked_by only when not empty), per OSD its `num_pgs`, and the
    cluster's degraded object count. The mgr's full dump is dropped right after."""
    if not isinstance(pg_dump, Mapping):
        return {"pg_stats": [], "osd_stats": []}
    pg_dump = pg_dump.get("pg_map", pg_dump)
    stats = []
    for pg in pg_dump.get("pg_stats", []) or []:
        stats.append({k: pg[k] for k in PG_FIELDS if k in pg and (k != "blocked_by" or pg[k])})
    osds = [{"osd": o.get("osd"), "num_pgs": o.get("num_pgs", 0)}
            for o in pg_dump.get("osd_stats", []) or []]
    slim: Dict[str, Any] = {"pg_stats": stats, "osd_stats": osds}
    stat_sum = (pg_dump.get("pg_stats_sum") or {}).get("stat_sum")
    if isinstance(stat_sum, Mapping) and "num_objects_degraded" in stat_sum:
        slim["pg_stats_sum"] = {"stat_sum": {
            "num_objects_degraded": stat_sum["num_objects_degraded"]}}
    return slim


def pg_states(pg: Mapping[str, Any]) -> frozenset:
    """A PG's states ("active+undersized+degraded" -> its three words)."""
    return frozenset(str(pg.get("state", "")).split("+"))


def _version(pg: Mapping[str, Any]) -> Optional[int]:
    """The version part of a PG's last update ("45'1234" -> 1234), None if absent or bad."""
    text = pg.get("version", pg.get("last_update"))
    if not isinstance(text, str) or "'" not in text:
        return None
    v = text.rsplit("'", 1)[1]
    return int(v) if v.isdigit() else None


def pg_versions(pg_dump: Any) -> ByPg:
    """pgid -> the version of its last update (see missed_entries), packed (packed.py)."""
    ids, versions = [], array("q")
    for pg in _pg_stats(pg_dump):
        ids.append(str(pg.get("pgid", "")))
        v = _version(pg)
        versions.append(NO_VERSION if v is None or v > INT64 else v)
    return ByPg(ids, versions, NO_VERSION)


def missed_entries(pg_dump: Any, at_down: Mapping[int, Mapping[str, int]]) -> Dict[int, int]:
    """Per OSD of `at_down` (osd -> {pgid: version when it went down}): the log entries its PGs
    wrote since, each PG's count capped by its log_size, summed (see the module docstring)."""
    if not at_down:
        return {}
    now = {str(pg.get("pgid", "")): (_version(pg), int(pg.get("log_size", 0) or 0))
           for pg in _pg_stats(pg_dump)}
    out = {}
    for osd, before in at_down.items():
        total = 0
        for pgid, v0 in before.items():
            v, log = now.get(pgid, (None, 0))
            if v is not None:
                total += min(max(0, v - v0), log)
        out[osd] = total
    return out


def remember_versions(osds: Iterable[OsdState], members_seen: Mapping[str, Tuple[int, ...]],
                      before: Mapping[str, int], down_versions: Dict[int, Dict[str, int]],
                      pg_dump: Any) -> ByPg:
    """Keeps, in `down_versions`, for an OSD seen down for the first time the versions its PGs
    (members_seen) had one tick earlier (`before`: from before it went down); forgets an OSD
    up again. Returns this tick's versions (the next call's `before`). One pass over the
    PGs, however many OSDs went down."""
    new: Dict[int, Dict[str, int]] = {}
    known = bool(before)
    for o in osds:
        if o.up:
            down_versions.pop(o.id, None)
        elif o.id not in down_versions and known:
            new[o.id] = down_versions[o.id] = {}
    if new:
        for pgid, members in members_seen.items():
            for osd in members:
                if osd in new and pgid in before:
                    new[osd][pgid] = before[pgid]
    return pg_versions(pg_dump)


def _pg_stats(pg_dump: Any) -> Iterable[Mapping[str, Any]]:
    """The PG entries of `pg dump [pgs_brief]` in any of its shapes: a list (pgs_brief on
    some releases), {"pg_stats": [...]}, or {"pg_map": {"pg_stats": [...]}}; each read once,
    as they come (a large dump's are in columns: pgcolumns.PgRows)."""
    if isinstance(pg_dump, list):
        return pg_dump
    pg_dump = pg_dump.get("pg_map", pg_dump)
    return pg_dump.get("pg_stats", []) or []


def _members(pg: Mapping[str, Any], active: bool, seen: Tuple[int, ...],
             known: Mapping[int, int]) -> Tuple:
    """The PG's members (OSDs of the map), each as `known`'s own int object: a PgMap of
    100,000 PGs then holds 5,000 OSD ids, not 300,000 copies of them."""
    out: List[int] = []
    extra = list(pg.get("blocked_by", []) or []) if not active else []
    for o in list(pg.get("acting", []) or []) + list(pg.get("up", []) or []) + extra + \
            list(seen):
        if isinstance(o, int) and o in known and o not in out:
            out.append(known[o])
    return tuple(out)


def pg_membership(pg_dump: Any, osd_map: Mapping[str, Any],
                  members_seen: Optional[Mapping[str, Tuple[int, ...]]] = None
                  ) -> Optional[PgMap]:
    """The snapshot's PgMap (see the module docstring), None when the dump has no PGs. Its
    members, pools and PG indexes per OSD are packed (packed.py)."""
    pools = {int(p["pool"]): PoolInfo(size=int(p.get("size", 0) or 0),
                                      min_size=int(p.get("min_size", 0) or 0),
                                      name=str(p.get("pool_name") or ""))
             for p in osd_map.get("pools", []) or [] if "pool" in p}
    known = {o.get("osd"): o.get("osd") for o in osd_map.get("osds", []) or []}
    seen = members_seen if isinstance(members_seen, ByPg) else ByPg.of(members_seen or {})
    ids: List[str] = []
    members, pool_of = Packed(), array("i")
    inactive, unknown = [], []
    by_osd: Dict[int, Any] = {}
    for pg in _pg_stats(pg_dump):
        pgid = str(pg.get("pgid", ""))
        pool = pgid.split(".", 1)[0]
        if not pool.isdigit() or int(pool) not in pools:
            continue
        states = pg_states(pg)
        active = "active" in states
        i = len(ids)
        m = _members(pg, active, tuple(seen.at(i, pgid, ())), known)
        ids.append(pgid)
        members.append(m)
        pool_of.append(int(pool))
        if not active:
            inactive.append(i)
            if states & UNKNOWN_STATES:
                unknown.append(i)
        for o in m:
            if o not in by_osd:
                by_osd[o] = array("i")
            by_osd[o].append(i)
    if not ids:
        return None
    return PgMap(members=members, pool_of=pool_of, pools=pools, by_osd=PackedMap(by_osd),
                 inactive=frozenset(inactive), ids=tuple(ids), unknown=frozenset(unknown))


def remember_members(pg_map: Optional[PgMap], seen: Mapping[str, Tuple[int, ...]]) -> ByPg:
    """Each PG's members while it has its pool's full size (all of them known), else those
    kept before: `seen` renewed in the order of `pg_map`'s PGs (a PG gone from the map is
    forgotten)."""
    old = seen if isinstance(seen, ByPg) else ByPg.of(seen)
    if pg_map is None:
        return old
    kept = Packed()
    for i, pgid in enumerate(pg_map.ids):
        m = pg_map.members[i]
        kept.append(m if len(m) >= pg_map.pools[pg_map.pool_of[i]].size else
                    old.at(i, pgid, ()))
    return ByPg(pg_map.ids, kept)
