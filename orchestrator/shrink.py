"""Returning OSDs that settled while their PGs still recover: their host waits for them.

Rules:
- an OSD this run started stops settling (inflight.track_settling) when its PGs are no longer
  degraded, or when it has not grown for SETTLE_QUIET_S, or after SETTLE_MAX_S. In the last two
  cases its PGs still recover, and recovery trims its PG log and missing set: it keeps
  shrinking. From then on it is *recovering*: its rss and the time are kept as a reference
  (OsdRun.shrink_rss, .shrink_at), and its shrink is measured against them.
- it stops recovering when its PGs are no longer degraded, or when it goes down, its process
  stops, or a new process of it started since the reference (a restart, a crash: what it
  holds then is no longer what recovery trims; a restart between two ticks shows only as a
  later process start).
- a host whose next OSD does not fit, with nothing to release or restart, waits for its
  recovering OSDs while they shrink: measured (rss below the reference), or not yet
  measurable (within SHRINK_GRACE_S of the reference). RECOVERY_BUDGET_TOO_SMALL then names
  them with an ETA at the measured rate (also in the status summary: throttle.report_waits)
  instead of "nothing can be released or restarted". A shrink that stopped (recovery paused)
  is reported as that again. The stall clock (ending.py) runs either way: a wait longer than
  the stall limit ends the run, as any stretch without a start.
"""
from __future__ import annotations

from typing import List, Mapping, Tuple

from .context import Context
from .decision import fmt_bytes
from .model import PROC_STOPPED, Columns
from .stageout import StageOut, put

SHRINK_GRACE_S = 60.0     # a new reference has no measured shrink yet: this long it may wait


def begin(ctx: Context, cols: Columns, o) -> StageOut:
    """`o` stopped settling with PGs still degraded: measure its shrink from here (the
    shrink_rss and shrink_at records)."""
    if o.up and o.pgs > 0 and o.pgs_degraded > 0 and o.rss_bytes > 0:
        return StageOut(records=(("shrink_rss", put(cols["shrink_rss"], o.id, o.rss_bytes)),
                                 ("shrink_at", put(cols["shrink_at"], o.id, ctx.now))))
    return StageOut()


def track(ctx: Context, shrink_at: Mapping[int, float],
          shrink_rss: Mapping[int, int]) -> StageOut:
    """Forget the OSDs that no longer recover (module rules)."""
    gone = set()
    for osd_id in sorted(shrink_at):
        o = ctx.view.by_id.get(osd_id)
        if o is None or not o.up or o.process == PROC_STOPPED or \
                (o.pgs > 0 and o.pgs_degraded == 0) or \
                (o.process_started_at or 0.0) > shrink_at[osd_id]:
            gone.add(osd_id)
    if not gone:
        return StageOut()
    return StageOut(records=(
        ("shrink_at", {k: v for k, v in shrink_at.items() if k not in gone}),
        ("shrink_rss", {k: v for k, v in shrink_rss.items() if k not in gone})))


def recovering(ctx: Context, cols: Columns, host: str) -> List[Tuple[int, int, int, float]]:
    """(osd, rss, reference rss, reference time) of `host`'s recovering OSDs, by id."""
    shrink_at, shrink_rss = cols["shrink_at"], cols["shrink_rss"]
    out = []
    for osd_id in sorted(shrink_at):
        o = ctx.view.by_id.get(osd_id)
        if o is not None and o.host == host and osd_id in shrink_rss:
            out.append((osd_id, o.rss_bytes, shrink_rss[osd_id], shrink_at[osd_id]))
    return out


def rate(rows: List[Tuple[int, int, int, float]], now: float) -> float:
    """Bytes/s the recovering OSDs of `rows` shed, measured from their references."""
    return sum((ref - rss) / (now - at) for _osd, rss, ref, at in rows
               if rss < ref and now > at)


def describe(ctx: Context, cols: Columns, host: str, need: int) -> str:
    """"recovering osd.3,7 to shrink as their PGs recover: ETA ..." for `need` bytes."""
    rows = recovering(ctx, cols, host)
    shed = rate(rows, ctx.now)
    eta = ("ETA ~%.0f s at the measured %s/s" % (max(0, need) / shed, fmt_bytes(shed))
           if shed > 0 else "no shrink measured yet")
    return "recovering osd.%s to shrink as their PGs recover: %s" % (
        ",".join(str(r[0]) for r in rows), eta)


def waits(ctx: Context, cols: Columns, host: str) -> bool:
    """True if `host` waits for its recovering OSDs (module rules)."""
    rows = recovering(ctx, cols, host)
    return rate(rows, ctx.now) > 0 or any(ctx.now - at < SHRINK_GRACE_S for *_r, at in rows)


__all__ = ["SHRINK_GRACE_S", "begin", "track", "recovering", "rate", "describe", "waits"]
