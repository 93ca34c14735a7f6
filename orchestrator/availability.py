"""Per-pool service in Ceph's own terms: uptime, downtime, failures, MTBF, MTTR and score per
pool, from Ceph (Tentacle's `ceph osd pool availability-status`, when its
`enable_availability_tracking` is on) and from this project's own tick-by-tick view of the
PG states, under the same names.

A pool is down while any of its PGs is not active (Ceph also counts a pool with unfound
objects as down; the PG states the shells read do not show those); a PG in state unknown or
creating says nothing either way. Ours (`PoolTrack`) is
level triggered: each observation of a snapshot's PgMap either keeps a pool's state or
opens or closes an outage at `now`, so its times are exact to the observation (the tick).
A failure is an outage that began; MTBF = uptime / failures, MTTR = downtime / failures,
score = MTBF / (MTBF + MTTR), as Ceph defines them; with no failure, MTBF and MTTR are 0 and
the score 1, as Ceph prints them.

records() puts both side by side: one record per pool with the preferred source's values at
the top (Ceph's where it answered for that pool, `source: "ceph"`, else ours, `source:
"recovery"`) and both sources' own values under `ceph` and `recovery` (None where that
source has none). Pure: values in, values out; `now` is an argument.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Dict, FrozenSet, List, Mapping, Optional

from .pgmap import PgMap

# the per-pool values, in Ceph's terms (seconds as `_s`)
FIELDS = ("uptime_s", "downtime_s", "num_failures", "mtbf_s", "mttr_s", "score", "available")
SOURCE_CEPH, SOURCE_RECOVERY = "ceph", "recovery"
# Ceph's tracking as the shell found it (`ceph` of a status or drill report)
TRACKED = "tracked"            # the command answered per-pool values
DISABLED = "disabled"          # Tentacle+ with enable_availability_tracking off
UNSUPPORTED = "unsupported"    # the mons do not know the command (before Tentacle)
FAILED = "failed"              # no usable answer this time (timeout, unreadable JSON)
NOT_READ = "not read"
MAX_POOLS = 128                # pools a drill keeps (lowest ids first): its state stays small


@dataclass(frozen=True)
class PoolTrack:
    """Our record of one pool's service from `since` to the last observation `seen_at`:
    the closed outages' total and count, and the open one's start."""

    name: str
    since: float
    seen_at: float
    downtime_s: float = 0.0          # closed outages
    num_failures: int = 0            # outages begun (an open one included)
    down_since: Optional[float] = None


def pools_down(pg_map: PgMap) -> FrozenSet[int]:
    """Pool ids with at least one PG that is not active."""
    return frozenset(pg_map.pool_of[i] for i in pg_map.inactive)


def track(tracks: Optional[Mapping[int, PoolTrack]], pg_map: Optional[PgMap],
          now: float) -> Dict[int, PoolTrack]:
    """`tracks` after one more observation. None: tracking begins now, every pool counted as
    it is (one already down has an outage from now). A pool new to an ongoing tracking is
    counted from the first observation that finds it available (a pool whose PGs are being
    created is no failure); a pool gone from the map is dropped. A pool with a PG in state
    unknown or creating (PgMap.unknown: a new mgr's PGs before the OSDs report to it) is
    not observed: its track stays as it was. Without a PgMap nothing was observed:
    `tracks` as they are."""
    if pg_map is None:
        return dict(tracks or {})
    down = pools_down(pg_map)
    unknown = frozenset(pg_map.pool_of[i] for i in pg_map.unknown)
    out: Dict[int, PoolTrack] = {}
    for pool, info in sorted(pg_map.pools.items()):
        t = (tracks or {}).get(pool)
        if pool in unknown:         # not observed this time: as it was
            if t is not None:
                out[pool] = t
            continue
        is_down = pool in down
        if t is None:
            if tracks is not None and is_down:
                continue
            t = PoolTrack(name=info.name or str(pool), since=now, seen_at=now)
        if is_down and t.down_since is None:
            t = replace(t, down_since=now, num_failures=t.num_failures + 1)
        elif not is_down and t.down_since is not None:
            t = replace(t, downtime_s=t.downtime_s + max(0.0, now - t.down_since),
                        down_since=None)
        out[pool] = replace(t, seen_at=max(now, t.seen_at),
                            name=info.name or t.name)
    return out


def _derived(uptime: float, downtime: float, failures: int) -> Dict[str, Any]:
    mtbf = uptime / failures if failures else 0.0
    mttr = downtime / failures if failures else 0.0
    return {"mtbf_s": round(mtbf, 1), "mttr_s": round(mttr, 1),
            "score": round(mtbf / (mtbf + mttr), 6) if mtbf + mttr > 0 else
            (1.0 if not failures else 0.0)}


def measures(t: PoolTrack) -> Dict[str, Any]:
    """Ours for one pool, in Ceph's terms, up to its last observation."""
    downtime = t.downtime_s + (t.seen_at - t.down_since if t.down_since is not None else 0.0)
    uptime = max(0.0, t.seen_at - t.since - downtime)
    out = {"uptime_s": round(uptime, 1), "downtime_s": round(downtime, 1),
           "num_failures": t.num_failures}
    out.update(_derived(uptime, downtime, t.num_failures))
    out["available"] = t.down_since is None
    return out


# ------------------------------------------------------------------ Ceph's answer
def _num(v: Any) -> Optional[float]:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def from_ceph(answer: Any) -> Dict[str, Dict[str, Any]]:
    """`osd pool availability-status -f json` as {pool name: values under FIELDS}. Tentacle
    20.2 answers a list with one object per pool, seconds as integers:
    [{"pool": "lab", "uptime": 19, "downtime": 3, "mtbf": 19, "mttr": 3, "num_failures": 1,
      "score": 0.8636363636363636, "available": false}, ...]
    An entry without its name or a number is left out (a shape this code does not know
    gives {})."""
    out: Dict[str, Dict[str, Any]] = {}
    if not isinstance(answer, list):
        return out
    for v in answer:
        if not isinstance(v, Mapping) or not isinstance(v.get("pool"), str):
            continue
        nums = {k: _num(v.get(k)) for k in ("uptime", "downtime", "num_failures", "mtbf",
                                             "mttr", "score")}
        if any(x is None for x in nums.values()):
            continue
        out[v["pool"]] = {
            "uptime_s": round(nums["uptime"], 1), "downtime_s": round(nums["downtime"], 1),
            "num_failures": int(nums["num_failures"]), "mtbf_s": round(nums["mtbf"], 1),
            "mttr_s": round(nums["mttr"], 1), "score": round(nums["score"], 6),
            "available": bool(v.get("available", True))}
    return out


def ceph_delta(before: Optional[Mapping[str, Mapping[str, Any]]],
               after: Optional[Mapping[str, Mapping[str, Any]]]
               ) -> Optional[Dict[str, Dict[str, Any]]]:
    """Ceph's values between two answers (a drill's start and end), per pool of `after`: the
    uptime, downtime and failures it counted meanwhile, MTBF/MTTR/score of those. A pool
    `before` does not list was created meanwhile (counted from zero). A pool whose counters
    went back (its status was cleared, the tracking restarted) is left out. None when
    either answer is missing."""
    if before is None or after is None:
        return None
    zero = {"uptime_s": 0.0, "downtime_s": 0.0, "num_failures": 0}
    out: Dict[str, Dict[str, Any]] = {}
    for name, a in after.items():
        b = before.get(name, zero)
        up, down = a["uptime_s"] - b["uptime_s"], a["downtime_s"] - b["downtime_s"]
        failures = int(a["num_failures"]) - int(b["num_failures"])
        if up < 0 or down < 0 or failures < 0:
            continue
        v = {"uptime_s": round(up, 1), "downtime_s": round(down, 1), "num_failures": failures}
        v.update(_derived(up, down, failures))
        v["available"] = a["available"]
        out[name] = v
    return out


# ------------------------------------------------------------------ side by side
def records(ceph: Optional[Mapping[str, Mapping[str, Any]]],
            ours: Mapping[int, PoolTrack]) -> List[Dict[str, Any]]:
    """One record per pool (by name; ours first, then pools only Ceph lists): the preferred
    source's values at the top under FIELDS, `source`, and each source's own under `ceph`
    and `recovery`. `ceph` None: Ceph's tracking did not answer (every record is ours)."""
    mine = {t.name: measures(t) for _pool, t in sorted(ours.items())}
    names = list(mine) + sorted(n for n in (ceph or {}) if n not in mine)
    out = []
    for name in names:
        c = (ceph or {}).get(name)
        r = mine.get(name)
        top = c if c is not None else r
        rec: Dict[str, Any] = {"pool": name,
                               "source": SOURCE_CEPH if c is not None else SOURCE_RECOVERY}
        rec.update({k: (top or {}).get(k) for k in FIELDS})
        rec.update({"ceph": dict(c) if c is not None else None,
                    "recovery": dict(r) if r is not None else None})
        out.append(rec)
    return out


# ------------------------------------------------------------------ persisted form
def tracks_to_dict(tracks: Mapping[int, PoolTrack]) -> Dict[str, Dict[str, Any]]:
    return {str(pool): {"name": t.name, "since": t.since, "seen_at": t.seen_at,
                        "downtime_s": t.downtime_s, "num_failures": t.num_failures,
                        "down_since": t.down_since}
            for pool, t in sorted(tracks.items())[:MAX_POOLS]}


def tracks_from_dict(x: Any) -> Dict[int, PoolTrack]:
    """The persisted tracks; a malformed entry is dropped (the measure is lost, not the
    state that carries it)."""
    out: Dict[int, PoolTrack] = {}
    if not isinstance(x, Mapping):
        return out
    for k, v in x.items():
        try:
            down = v.get("down_since")
            out[int(k)] = PoolTrack(
                name=str(v["name"]), since=float(v["since"]), seen_at=float(v["seen_at"]),
                downtime_s=float(v.get("downtime_s", 0.0)),
                num_failures=int(v.get("num_failures", 0)),
                down_since=None if down is None else float(down))
        except (AttributeError, KeyError, TypeError, ValueError):
            continue
    return out


def answer_from_dict(x: Any) -> Optional[Dict[str, Dict[str, Any]]]:
    """A persisted Ceph answer (from_ceph's form) or None; malformed pools are dropped."""
    if not isinstance(x, Mapping):
        return None
    out = {}
    for name, v in list(x.items())[:MAX_POOLS]:
        if isinstance(v, Mapping) and all(_num(v.get(k)) is not None
                                          for k in FIELDS if k != "available"):
            out[str(name)] = {k: v.get(k) for k in FIELDS}
    return out
