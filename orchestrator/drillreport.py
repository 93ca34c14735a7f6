"""A drill's report and its persisted form (ceph_recovery.drill re-exports both): the
measured times, per-host peak vs budget, inactive PG-seconds, the write load's counts, the
timeline (one sample per tick, kept within a state-store chunk); `drill report`'s one plain line.
Pure: values in, values out."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, Mapping, Optional, Sequence

from . import availability as AV
from . import drillload as L
from . import maintenance as M

MAX_SAMPLES = 240
TIMELINE_BYTES = 60000         # a drill's timeline fits one state-store chunk

# ------------------------------------------------------------------ report
def _since(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None else round(b - a, 1)


def report(d: Any) -> Dict[str, Any]:
    """`drill report -f json`: the drill, its measured times (from the bucket's return: the
    exit's start, or the abort), per-host peak vs budget and the timeline."""
    hosts = {h: {"peak_bytes": d.peaks.get(h), "budget_bytes": d.budgets.get(h),
                 "peak_over_budget": (d.peaks.get(h) is not None and d.budgets.get(h)
                                      is not None and d.peaks[h] > d.budgets[h])}
             for h in sorted(set(d.peaks) | set(d.budgets))}
    out = drill_to_dict(d)
    back = d.exit_at if d.exit_at is not None else d.aborted_at     # the bucket's return
    out.update({"outcome": d.phase, "downtime_s": _since(d.down_at, back),
                "time_to_all_up_s": _since(back, d.up_at),
                "time_to_all_active_s": _since(back, d.active_at),
                "time_to_clean_s": _since(back, d.clean_at), "hosts": hosts,
                "timeline": [dict(s) for s in d.samples],
                "inactive_pg_seconds": inactive_pg_seconds(d.samples, _since(
                    d.started_at, d.exit_at or d.aborted_at)),
                "write_load": None if d.load is None else L.report(d.load),
                "pool_availability": pool_availability(d)})
    del out["samples"], out["availability"]
    return out


def pool_availability(d: Any) -> Dict[str, Any]:
    """Per-pool service over the drill: ours from its samples; Ceph's as the difference
    between its answers at the drill's start and end (availability.ceph_delta), once both
    were read."""
    return {"ceph_at_start": d.ceph_at_start or AV.NOT_READ,
            "ceph_at_end": d.ceph_at_end or AV.NOT_READ,
            "pools": AV.records(AV.ceph_delta(d.ceph_before, d.ceph_after), d.pools)}


def inactive_pg_seconds(samples: Sequence[Mapping[str, Any]],
                        since: Optional[float]) -> Optional[float]:
    """PG-seconds spent inactive from the bucket's return (the exit's start or the abort,
    as drill time `since`; None: from the first sample) to the drill's end: each sample's inactive PGs held until the next sample (the
    tick's resolution)."""
    xs = [s for s in samples if since is None or float(s["t"]) >= since]
    if not xs:
        return None
    return round(sum((float(b["t"]) - float(a["t"])) * (a["pgs_total"] - a["pgs_active"])
                     for a, b in zip(xs, xs[1:])), 1)


def _gib(n: Optional[int]) -> str:
    if n is None:
        return "-"
    return "%.1fG" % (n / 2.0 ** 30) if n >= 2 ** 30 else "%dM" % (n // 2 ** 20)


def summary_line(d: Any) -> str:
    """`drill report` plain: one line."""
    r = report(d)

    def sec(v: Optional[float]) -> str:
        return "-" if v is None else M.fmt_duration(v)
    peaks = " ".join("%s %s/%s" % (h, _gib(v["peak_bytes"]), _gib(v["budget_bytes"]))
                     for h, v in r["hosts"].items() if h in d.hosts)
    return ("drill %s on %s: %s%s; downtime %s, all active after %s, clean after %s; "
            "peak/budget %s" % (d.id, d.bucket, d.phase, " (%s)" % d.reason if d.reason
                                else "", sec(r["downtime_s"]), sec(r["time_to_all_active_s"]),
                                sec(r["time_to_clean_s"]), peaks or "-"))


# ------------------------------------------------------------------ persistence
_FLOATS = ("down_at", "exit_at", "up_at", "active_at", "clean_at", "ended_at", "aborted_at",
           "inactive_since")


def drill_to_dict(d: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "id": d.id, "bucket": d.bucket, "downtime_s": d.downtime_s,
        "started_at": d.started_at, "budget": d.budget, "concurrency": d.concurrency,
        "phase": d.phase, "osds": list(d.osds), "hosts": list(d.hosts),
        "noout_before": d.noout_before, "budgets": dict(d.budgets), "exit_run": d.exit_run,
        "abort_requested": d.abort_requested, "reason": d.reason, "peaks": dict(d.peaks),
        "samples": [dict(s) for s in d.samples], "load": L.to_dict(d.load),
        "started": {str(k): v for k, v in sorted(d.started.items())},
        "starts": {str(k): v for k, v in sorted(d.starts.items())}, "stop": d.stop,
        "inactive_grace_s": d.inactive_grace_s,
        "availability": {"pools": AV.tracks_to_dict(d.pools), "ceph_at_start": d.ceph_at_start,
                         "ceph_at_end": d.ceph_at_end, "ceph_before": _answer(d.ceph_before),
                         "ceph_after": _answer(d.ceph_after)}}
    for k in _FLOATS:
        out[k] = getattr(d, k)
    return out


def _answer(a: Optional[Mapping[str, Mapping[str, Any]]]) -> Optional[Dict[str, Any]]:
    return None if a is None else {k: dict(v) for k, v in sorted(a.items())[:AV.MAX_POOLS]}


# ------------------------------------------------------------------ timeline
def sample(d: Any, snap: Any, seen: Any, now: float) -> Any:
    """This tick's sample and peaks of a going drill; first-all-active / first-clean times
    after the exit."""
    peaks = dict(d.peaks)
    mem: Dict[str, Optional[int]] = {}
    for h in snap.hosts:
        if h.mem_used is not None:
            peaks[h.name] = max(int(h.mem_used), int(peaks.get(h.name, 0)))
        if h.name in d.hosts:
            mem[h.name] = None if h.mem_used is None else int(h.mem_used)
    mine = M.under(d.bucket, snap)
    s = {"t": round(now - d.started_at, 1), "phase": d.phase,
         "osds_up": sum(1 for o in snap.osds if o.up), "osds_total": len(snap.osds),
         "bucket_up": sum(1 for o in mine if o.up), "pgs_total": snap.pgs_total,
         "pgs_active": snap.pgs_active, "pgs_clean": snap.pgs_clean,
         "degraded_objects": int(seen.degraded_objects), "mem_used": mem}
    if d.load is not None:
        s.update(L.sample_fields(d.load, seen.load))
    samples = tuple(d.samples)
    if len(samples) >= sample_limit(len(d.hosts)):
        samples = samples[::2]
    d = replace(d, peaks=peaks, samples=samples + (s,),
                pools=AV.track(d.pools if d.samples else None, snap.pg_map, now))
    back = d.exit_at if d.exit_at is not None else d.aborted_at
    if back is not None and d.active_at is None and snap.pgs_active == snap.pgs_total \
            and all(o.up for o in mine):
        d = replace(d, active_at=now)
    if d.active_at is not None and d.clean_at is None and snap.pgs_clean == snap.pgs_total:
        d = replace(d, clean_at=now)
    return d


def sample_limit(hosts: int) -> int:
    """Samples kept: MAX_SAMPLES, fewer when the bucket spans many hosts (each sample carries
    one memory figure per host), so that the timeline stays within TIMELINE_BYTES."""
    return max(16, min(MAX_SAMPLES, TIMELINE_BYTES // (200 + 40 * hosts)))
