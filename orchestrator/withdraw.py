"""Withdrawn starts: a start the run gives up on leaves no grant and no loaded process.

Rules:
- a start that times out (inflight.py) or that a run's end (incomplete, abort) withdraws has
  its process stopped: a down OSD holds no PG, so the stop needs no ok-to-stop (the helper
  re-checks it all the same), and a loaded OSD held by its noup must not keep its load-time
  memory outside any run;
- the stop is asked again every STOP_RETRY_S until the helper reports the process stopped, in
  any phase (a lost instruction, a helper that was away); the OSD is not granted again
  meanwhile (admission.py);
- a run that ends leaves no grant: the helpers' boot gate reads the grants. An OSD already
  allowed to boot is left to come up; every other OSD of the run ends up, or down, held and
  stopped, never loaded and held -- except one still rebuilding its allocator when the run
  ends incomplete: a stop would only start the rebuild again at its next start, so it is left
  running, held by its noup, and named (an abort, the operator's word, stops it too).
"""
from __future__ import annotations

from typing import Mapping

from .actions import StopOsd
from .context import Context
from .model import PROC_STOPPED, Columns
from .bootclock import rebuilding
from .stageout import Staged, StageOut, join, put

STOP_RETRY_S = 30.0


def stop_process(ctx: Context, stopped: Mapping[int, float], o, why: str) -> StageOut:
    """Stop the process of a down OSD whose start the run withdrew (it holds no PG: a down
    OSD needs no ok-to-stop), and keep asking until the helpers report it stopped
    (track_stops; the stopped record, `stopped` so far)."""
    if o.process == PROC_STOPPED:
        return StageOut()
    return StageOut(actions=(_stop(o, why),), records=(("stopped", put(stopped, o.id,
                                                                     ctx.now)),))


def _stop(o, why: str) -> Staged:
    return "memory", StopOsd(osd=o.id, host=o.host, reason="%s: stop its process" % why)


def track_stops(ctx: Context, stopped: Mapping[int, float],
                granted: Mapping[int, float]) -> StageOut:
    """Every tick, in any phase: a withdrawn start's process still running STOP_RETRY_S
    after its stop was sent (`stopped`: OSD -> when) is stopped again. Done once it is
    stopped or up, or granted again by a run."""
    keep = dict(stopped)
    acts = []
    for osd_id, sent in sorted(stopped.items()):
        o = ctx.view.by_id.get(osd_id)
        if o is None or o.up or o.process == PROC_STOPPED or osd_id in granted:
            del keep[osd_id]
        elif ctx.now - sent >= STOP_RETRY_S:
            acts.append(_stop(o, "withdrawn start still running %.0fs after its stop" % (
                ctx.now - sent)))
            keep[osd_id] = ctx.now
    if keep == stopped and not acts:
        return StageOut()
    return StageOut(actions=tuple(acts), records=(("stopped", keep),))


def withdraw_grants(ctx: Context, cols: Columns, why: str,
                    spare_rebuilds: bool = False) -> StageOut:
    """A run that ends (incomplete, aborted) leaves no grant behind (module docstring):
    the stops, and the run's columns without its grants; `spare_rebuilds`: leave an OSD
    rebuilding its allocator running (held)."""
    granted = sorted(cols["granted"])
    stopped, outs = cols["stopped"], []
    for osd_id in granted:
        o = ctx.view.by_id.get(osd_id)
        if spare_rebuilds and rebuilding(osd_id, cols["rebuild_seen"], ctx.now):
            outs.append(StageOut(reasons=("osd.%d left running, held: still rebuilding its "
                                          "allocator (a stop would start the rebuild again)"
                                          % osd_id,)))
        elif osd_id not in cols["booting"] and o is not None and not o.up:
            outs.append(stop_process(ctx, stopped, o, why))
            stopped = dict(outs[-1].records).get("stopped", stopped)
    gone = set(granted)
    return join(*outs, StageOut(records=tuple(
        (n, {k: v for k, v in cols[n].items() if k not in gone})
        for n in ("granted", "booting", "staged", "rebuild_from", "rebuild_seen"))))
