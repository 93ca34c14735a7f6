"""What a host's OSDs in flight and settling are still expected to grow (admission.py's
`reserved`), and when a settling OSD's peak is behind it.

Rules:
- an OSD in flight (granted and not finished, or restarting) reserves max(0, predicted - rss):
  the growth it is still expected to make (its rss is already in the host's `used`); its live
  load voids a lower prediction (Predictor.peak_from_load); a restarted OSD grows back at most
  to the rss it was restarted at (no second peak; view.still_peering);
- a staged OSD (staging.py) not yet let boot reserves only its load (Predictor.expected_load):
  in preboot a process holds what it loaded, and it grows to its peak only after its boot,
  which staging.room_to_peak lets happen only where that growth fits beside every other
  reservation on its host; the rest of its prediction (staged_rest) counts where what every
  OSD will need in the end does (the host's queue check, admission._queue_fits);
- a settling OSD reserves the same while it is at its peak so far, or only its way back up
  once it has fallen SETTLE_DROP below that peak (settling_reserve).
"""
from __future__ import annotations

from typing import AbstractSet, Dict, Iterable, List, Mapping

from .context import Context
from .model import Columns, OsdState
from .predict import PEER_FLOOR_FACTOR, Predictor
from . import warmup

SETTLE_DROP = 0.05     # a settling OSD this far below its peak so far is past its peak


def plain_slots(ctx: Context, budget_state: str, predictor: Predictor) -> int:
    """Starts in flight per host charged their plain prediction, and restarts allowed beside
    them (warmup.concurrency over the run's budget state and the predictor's observations)."""
    return warmup.concurrency(budget_state, predictor.final_observations(), ctx.slots())


def host_margin(ctx: Context, budget_state: str, predictor: Predictor) -> float:
    """The margin on the predictions a start beside others is admitted on: warmup.margin
    where more starts are allowed than those charged their plain prediction, else 1.0."""
    if ctx.slots() > plain_slots(ctx, budget_state, predictor):
        return warmup.margin(budget_state, predictor.final_observations())
    return 1.0


def flight(ctx: Context, granted: Mapping[int, float],
           new_restarts: AbstractSet[int]) -> Dict[str, List[int]]:
    """host -> the OSDs in flight there now: granted and not finished, restarting, and
    restarted in this tick (`new_restarts`)."""
    out = ctx.view.in_flight(granted)
    for x in sorted(new_restarts):
        out.setdefault(ctx.view.host_of(x), []).append(x)
    return out


def reserved(ctx: Context, predictor: Predictor, cols: Columns, host: str,
             in_flight: Iterable[int], margin: float = 1.0) -> int:
    """Predicted growth still to come on `host`: the OSDs of `in_flight` and the host's
    settling OSDs, with their predictions x `margin` (warmup.margin)."""
    total = 0
    for osd_id in in_flight:     # granted, or restarting (it loads its PGs and peers again)
        total += in_flight_reserve(ctx, predictor, cols, osd_id, margin)
    for osd_id in cols["settling"]:
        o = ctx.view.by_id.get(osd_id)
        if o is not None and o.host == host:
            total += settling_reserve(predictor, cols["peaks"], o, margin)
    return total


def staged_rest(ctx: Context, predictor: Predictor, cols: Columns,
                in_flight: Iterable[int]) -> int:
    """The rest of their whole predictions that the staged OSDs of `in_flight` are not
    charged before their boot (reserved() counts their load)."""
    return sum(in_flight_reserve(ctx, predictor, cols, x, peaks=True) -
               in_flight_reserve(ctx, predictor, cols, x)
               for x in in_flight if x in cols["staged"])


def in_flight_reserve(ctx: Context, predictor: Predictor, cols: Columns, osd_id: int,
                      margin: float = 1.0, peaks: bool = False) -> int:
    """Growth still expected from one OSD in flight (the module's rules)."""
    rss = ctx.view.by_id[osd_id].rss_bytes
    if osd_id in cols["staged"] and not peaks:
        return max(0, int(predictor.expected_load(osd_id) * margin) - rss)
    # before its boot its rss is its load so far, and that live load voids a lower prediction
    # (Predictor.load_bound counts only from the boot on): with several starts in flight, the
    # next grant is gated by the load the ones before it show, which can exceed peaks learned
    # on lighter starts. Once let boot, its rss is no load: it grows through peering and
    # recovery, and predict() carries the bound of the load it booted with.
    peak = predictor.predict(osd_id)
    if osd_id not in cols["load_rss"]:
        peak = max(peak, predictor.peak_from_load(osd_id, rss))
    if osd_id not in cols["granted"] and osd_id in cols["restart_rss"]:
        peak = min(peak, cols["restart_rss"][osd_id])
    return max(0, int(peak * margin) - rss)


def settling_reserve(predictor: Predictor, peaks: Mapping[int, int], o: OsdState,
                     margin: float = 1.0) -> int:
    """Growth still expected from a settling OSD: predicted - rss while it is at its peak so
    far (still growing, as on the lab where RSS grows through recovery); once it has fallen
    SETTLE_DROP below that peak (its peak is behind it), only its way back up to that peak.
    A peak below the OSD's load floor (Predictor.load_floor) is not behind it: that was its
    preboot load. Past its peak, a tcmalloc OSD whose osd_memory_target is known grows back
    only up to target x PEER_FLOOR_FACTOR: its PG log and recovery memory shrink as its PGs
    recover, and PriorityCache::Manager::tune_memory grows caches only below the target."""
    peak = peaks.get(o.id, 0)
    if past_peak(predictor, peaks, o):
        back = peak
        if o.heap_release is True and o.memory_target:
            back = min(peak, int(o.memory_target * PEER_FLOOR_FACTOR))
        return max(0, back - o.rss_bytes)
    return max(0, int(predictor.predict(o.id) * margin) - o.rss_bytes)


def past_peak(predictor: Predictor, peaks: Mapping[int, int], o: OsdState) -> bool:
    """A settling OSD SETTLE_DROP below its peak so far (`peaks`), a peak at or above its load
    floor (below it, that peak was its preboot load): its peak is behind it."""
    peak = peaks.get(o.id, 0)
    return peak > 0 and peak >= predictor.load_floor(o.id) and \
        o.rss_bytes < peak * (1.0 - SETTLE_DROP)
