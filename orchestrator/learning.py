"""What the starts of a run teach the footprint learning, and a failed start's count.

Rules:
- a finished start is observed at its peak so far, at least its load floor
  (Predictor.load_floor) while its real peak is still to come (a run may end before its OSDs
  settle); that observation is provisional;
- a settled start replaces its provisional observation with its real peak and its preboot
  load (Observation.load_bytes: what peering and recovery added is learned from it);
- a failed start (its process died, it timed out, the brake stopped it) is observed at its
  peak so far, counted towards MAX_START_FAILURES and forgotten: it is a candidate again,
  held, admitted on the new prediction.
Every function here reads a Lifecycle and returns the StageOut that records it; one whose
records change what the Predictor learns from says so (StageOut.learned), so that the
predictions made earlier in the call are made again.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import AbstractSet, Any, List, Optional, Sequence, Tuple

from .decision import Decision, fmt_bytes
from .context import Context
from .model import START_MARKERS, Columns, Observation
from .predict import Predictor
from .stageout import StageOut, cleared, drop, put
from . import dups

MAX_START_FAILURES = 3

Record = Tuple[str, Any]


@dataclass(frozen=True)
class Lifecycle:
    """What the lifecycle decisions read: the call's Context, the Predictor, and the run's
    records as they stand (its columns, observations, finished and held OSDs, the OSDs whose
    start failed in this call, the granted OSDs whose rss stopped growing). The records a
    decision returns update these in place, so the next decision and the next prediction see
    them."""
    ctx: Context
    predictor: Predictor
    cols: Columns
    observations: Sequence[Observation]
    finished: AbstractSet[int]
    held_osds: AbstractSet[int]
    failed_now: AbstractSet[int]
    rss_flat: AbstractSet[int]


def lifecycle(t: Decision) -> Lifecycle:
    """The records of the decision being made, as the lifecycle decisions read them."""
    return Lifecycle(t.ctx, t.predictor, t.cols, t.observations, t.finished, t.held_osds,
                     t.failed_now, t.rss_flat)


def observe(lc: Lifecycle, o, peak: int, load: Optional[int] = None) -> Tuple[Record, ...]:
    """The observations record with an observation of a finished (or failed) start: its peak
    so far (`peak`, at least its rss now), and at least its load floor while its real peak is
    still to come. `load` (its preboot rss) only for a settled start: its peak is then real.
    No record where nothing was measured."""
    peak = max(peak, o.rss_bytes, lc.predictor.load_floor(o.id) if load is None else 0)
    if peak <= 0:
        return ()
    ob = Observation(osd=o.id, pgs=o.pgs, downtime_s=lc.cols["downtime"].get(o.id, 0.0),
                     pg_log_entries=o.pg_log_entries, peak_bytes=peak,
                     missed_entries=lc.cols["missed"].get(o.id), load_bytes=load)
    return (("observations", list(lc.observations) + [ob]),)


def settled_observation(lc: Lifecycle, o) -> StageOut:
    """The real peak of a settled OSD replaces the observation made when it finished (that one
    was provisional: at least its load bound, see observe)."""
    peak = lc.cols["peaks"].get(o.id, 0)
    load = lc.cols["load_rss"].get(o.id) or None
    for i in range(len(lc.observations) - 1, -1, -1):
        ob = lc.observations[i]
        if ob.osd == o.id:
            if peak > 0 and (peak, load) != (ob.peak_bytes, ob.load_bytes):
                obs: List[Observation] = list(lc.observations)
                obs[i] = replace(ob, peak_bytes=peak, load_bytes=load)
                return StageOut(records=(("observations", obs),), learned=True)
            return StageOut()
    records = observe(lc, o, peak, load)
    return StageOut(records=records, learned=bool(records))


def forget(lc: Lifecycle, osd_id: int) -> Tuple[Record, ...]:
    """The records that forget a start: its run markers (START_MARKERS) and its hold."""
    return cleared(lc.cols, osd_id, START_MARKERS) + (
        ("held_osds", set(lc.held_osds) - {osd_id}),)


def fail_start(lc: Lifecycle, o, why: str) -> StageOut:
    """A start that ended before its OSD settled: learn its peak so far, count it, forget its
    run markers (it is a candidate again, held, admitted on the new prediction). Its peak so
    far goes into the observation; forgetting the start clears it from the peaks."""
    cols = lc.cols
    peak = max(cols["peaks"].get(o.id, 0), o.rss_bytes)
    n = cols["failures"].get(o.id, 0) + 1
    line = "osd.%d on %s: %s (peak seen %s), failure %d of %d" % (
        o.id, o.host, why, fmt_bytes(peak), n, dups.max_failures(o, MAX_START_FAILURES))
    records = observe(lc, o, peak) + (
        ("failures", put(cols["failures"], o.id, n)),
        ("failed_now", set(lc.failed_now) | {o.id})) + forget(lc, o.id) + (
        ("settling", drop(cols["settling"], o.id)),
        ("finished", set(lc.finished) - {o.id}))
    return StageOut(health=(("RECOVERY_START_FAILED", line, 1),), records=records,
                    learned=True)
