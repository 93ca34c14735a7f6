"""A drill's write load (`drill start --write-load N`): the pure decisions; the mgr shell's
writer thread (mgr_module/recovery/drillload.py) carries them out.

The drill writes N objects/s of test data into a pool of its own, `recovery-drill-<id>`, and
never into any other pool. The pool's lifecycle, persisted in the drill (so an mgr failover
resumes it, the pool's name included):

  creating   asked for; the shell creates the pool once the drill has been persisted (the
             drill's second tick: its first tick's state write comes first), so a failover
             never leaves a pool that no persisted drill names.
  created    the pool exists: write while the bucket is down and through the controlled
             start (until every OSD of the bucket is up), idle otherwise and while aborting.
  verified   at the drill's end, once every PG is active: every object was read back and its
             checksum compared (objects missing or wrong counted as bad).
  removed | left   the pool was removed; or its removal was refused (`left`, with the
             mon's answer): the report names it.

The drill ends (done or aborted) only once the pool is removed or left. Removal needs the
monitors' `mon_allow_pool_delete`; `drill start` refuses a write load without it (EINVAL)
rather than switching it on: while it is on, any client with the caps may delete any pool.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

NONE, CREATE, WRITE, IDLE, VERIFY, REMOVE = "", "create", "write", "idle", "verify", "remove"
CREATING, CREATED, VERIFIED, REMOVED, LEFT = "creating", "created", "verified", "removed", "left"
STATES = (CREATING, CREATED, VERIFIED, REMOVED, LEFT)
POOL_PREFIX = "recovery-drill-"
MAX_RATE = 500                 # objects/s: a drill's load is a probe, not a benchmark
OBJECT_SIZE = 4096


@dataclass(frozen=True)
class Load:
    rate: int
    pool: str
    size: int
    min_size: int
    state: str = CREATING
    written: int = 0               # objects acknowledged (cumulative)
    errors: int = 0                # writes that failed after their retries
    verified: int = 0              # objects read back with the right checksum
    bad: int = 0                   # objects missing, unreadable or with a wrong checksum
    p99_max_ms: Optional[float] = None
    note: str = ""


@dataclass(frozen=True)
class Seen:
    """What the shell's writer reports at a tick (counters are cumulative)."""

    pool_ready: bool = False
    written: int = 0
    errors: int = 0
    latencies_ms: Tuple[float, ...] = ()     # writes completed since the last tick
    verified: Optional[int] = None           # set once a verify pass ended
    bad: int = 0
    removed: bool = False
    error: str = ""                          # the last create/remove refusal


def pool_name(drill_id: str) -> str:
    return POOL_PREFIX + drill_id


def pool_sizes(hosts_total: int, hosts_failed: int) -> Tuple[int, int]:
    """(size, min_size) for the drill's pool: up to 3 copies on distinct hosts, and a
    min_size the hosts left up during the drill can still meet, so the drill's own load
    stays writable while the bucket is down."""
    size = max(1, min(3, hosts_total))
    left = max(1, hosts_total - hosts_failed)
    return size, max(1, min(size - 1 if size > 1 else 1, left))


def new_load(drill_id: str, rate: int, hosts_total: int, hosts_failed: int) -> Load:
    """ValueError unless 1 <= rate <= MAX_RATE."""
    if not 1 <= int(rate) <= MAX_RATE:
        raise ValueError("--write-load must be 1 to %d objects/s" % MAX_RATE)
    size, min_size = pool_sizes(hosts_total, hosts_failed)
    return Load(rate=int(rate), pool=pool_name(drill_id), size=size, min_size=min_size)


def absorb(load: Load, seen: Optional[Seen]) -> Load:
    """The writer's report folded into the persisted load."""
    if seen is None:
        return load
    ld = replace(load, written=max(load.written, seen.written),
                 errors=max(load.errors, seen.errors))
    if seen.latencies_ms:
        p99 = percentile(seen.latencies_ms, 99)
        ld = replace(ld, p99_max_ms=p99 if ld.p99_max_ms is None else max(ld.p99_max_ms, p99))
    if ld.state == CREATING and seen.pool_ready:
        ld = replace(ld, state=CREATED)
    if ld.state == CREATED and seen.verified is not None:
        ld = replace(ld, state=VERIFIED, verified=seen.verified, bad=seen.bad)
    if ld.state in (CREATING, CREATED, VERIFIED) and seen.removed:
        return replace(ld, state=REMOVED)
    if ld.state == VERIFIED and seen.error:
        return replace(ld, state=LEFT, note=seen.error)
    if ld.state == CREATING and seen.error:
        return replace(ld, note=seen.error)
    return ld


def order(load: Load, writing: bool, ending: bool, all_active: bool, persisted: bool) -> str:
    """What the writer does now. `writing`: the drill's phase writes (bucket down or coming
    back); `ending`: the drill would end now; `persisted`: the drill was stored already."""
    if load.state in (REMOVED, LEFT):
        return NONE
    if ending:
        if load.state == CREATED:
            return VERIFY if all_active else IDLE
        return REMOVE          # verified, or never confirmed created (removal is idempotent)
    if load.state == CREATING:
        return CREATE if persisted else IDLE
    return WRITE if writing and load.state == CREATED else IDLE


def finished(load: Optional[Load]) -> bool:
    return load is None or load.state in (REMOVED, LEFT)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (values non-empty)."""
    xs = sorted(values)
    k = max(0, min(len(xs) - 1, int(-(-pct * len(xs) // 100)) - 1))
    return round(float(xs[k]), 2)


def sample_fields(load: Load, seen: Optional[Seen]) -> Dict[str, Any]:
    """The load's part of a timeline sample: objects acknowledged so far and this interval's
    write latency (None when no write completed in it: blocked or idle)."""
    lat = tuple(seen.latencies_ms) if seen is not None else ()
    return {"objects_written": load.written,
            "write_p50_ms": percentile(lat, 50) if lat else None,
            "write_p99_ms": percentile(lat, 99) if lat else None}


def report(load: Load) -> Dict[str, Any]:
    return {"rate": load.rate, "pool": load.pool, "size": load.size,
            "min_size": load.min_size, "pool_state": load.state,
            "objects_written": load.written, "objects_verified": load.verified,
            "objects_bad": load.bad, "write_errors": load.errors,
            "write_p99_max_ms": load.p99_max_ms, "note": load.note}


def to_dict(load: Optional[Load]) -> Optional[Dict[str, Any]]:
    if load is None:
        return None
    return {"rate": load.rate, "pool": load.pool, "size": load.size,
            "min_size": load.min_size, "state": load.state, "written": load.written,
            "errors": load.errors, "verified": load.verified, "bad": load.bad,
            "p99_max_ms": load.p99_max_ms, "note": load.note}


def from_dict(x: Optional[Mapping[str, Any]]) -> Optional[Load]:
    """ValueError on a malformed entry."""
    if x is None:
        return None
    if not isinstance(x, Mapping) or x.get("state") not in STATES \
            or not str(x.get("pool", "")).startswith(POOL_PREFIX):
        raise ValueError("drill load: bad entry %r" % (x,))
    p99 = x.get("p99_max_ms")
    return Load(rate=int(x["rate"]), pool=str(x["pool"]), size=int(x["size"]),
                min_size=int(x["min_size"]), state=str(x["state"]),
                written=int(x.get("written", 0)), errors=int(x.get("errors", 0)),
                verified=int(x.get("verified", 0)), bad=int(x.get("bad", 0)),
                p99_max_ms=None if p99 is None else float(p99), note=str(x.get("note", "")))
