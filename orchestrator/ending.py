"""How a run ends when memory cannot bring every OSD back, and when service was restored.

Rules:
- service restored: the first tick of a run at which every PG is active (Progress.service_at;
  `ceph recovery status` shows it beside "all up").
- stalled: candidates are left, nothing is granted (but OSDs gate 2 keeps in preboot: their
  peak does not fit), no OSD this run started is still settling
  (its memory may still fall as its PGs recover: settling lasts at most SETTLE_MAX_S), and
  this tick granted or booted nothing. Heap releases, ok-to-stop queries and restarts that
  never lead to a start do not count as progress (they can repeat forever when the budget
  cannot hold the next OSD).
- after Intent.stall_limit_s (STALL_END_S unless the operator set the module's stall_limit)
  stalled the run ends instead of waiting forever: the cluster flags it set
  are restored (noout and norebalance must not stay set cluster-wide: a second failure would
  not re-replicate), the OSDs that did not fit stay held by their per-OSD noup (starting them
  would break the budget), and RECOVERY_INCOMPLETE names, per host, what is missing and how
  much memory it lacks. It stays raised until those OSDs are up (or a new run starts).
- with `--leave-out` (Intent.leave_out) the OSDs left down are also marked out at that end, so
  Ceph re-replicates their data to the OSDs that run; they are never removed, and stay held.
  Only an operator's explicit option does this: marking out moves data.
- a run that ends takes back the restarts its memory stage made in that tick to make room for
  a next start that will not come: they would leave an OSD down at the end for nothing.
"""
from __future__ import annotations

from typing import AbstractSet, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .actions import Action, Done, GrantStart, AllowBoot, MarkOut, RestartOsd
from .model import DAEMON_REBUILDING, PHASE_DONE, PHASE_RUNNING, Columns, Intent
from .context import Context
from .bootclock import clock_bound, grant_clock
from .decision import Decision, fmt_bytes
from .stageout import StageOut
from .withdraw import withdraw_grants

STALL_END_S = Intent.stall_limit_s


def track_service(ctx: Context, service_at: Optional[float], inactive_pg_s: float,
                  inactive_seen: Optional[Tuple[float, int]]) -> StageOut:
    """Service restored (every PG active) and service lost: PG-seconds without client I/O,
    each tick's count of PGs not active held until the next tick (the mgr's PG states are
    what a tick sees; a PG inactive only between two ticks is not counted)."""
    s = ctx.snapshot
    inactive = max(0, s.pgs_total - s.pgs_active)
    if inactive_seen is not None and ctx.now > inactive_seen[0]:
        inactive_pg_s += inactive_seen[1] * (ctx.now - inactive_seen[0])
    if service_at is None and s.pgs_total > 0 and s.pgs_active >= s.pgs_total:
        service_at = ctx.now
    return StageOut(records=(("inactive_pg_s", inactive_pg_s),
                             ("inactive_seen", (ctx.now, inactive)), ("service_at", service_at)))


def _progressing(ctx: Context, stage: Mapping[str, Sequence[Action]], cols: Columns,
                 kept_preboot: AbstractSet[int]) -> bool:
    """Progress: a grant or a boot this tick (`stage`: its actions so far), a grant younger
    than boot_timeout that the run does not itself keep in preboot, or an OSD settling (its
    memory may still fall). A grant past boot_timeout is no progress, whatever its OSD does
    (inflight._timed_out)."""
    was = ctx.progress.osd_map("granted")
    new = [a for a in stage["grants"] if isinstance(a, GrantStart) and a.osd not in was] + \
        [a for a in stage["boots"] if isinstance(a, AllowBoot)]
    granted = cols["granted"]
    live = [x for x in granted if x not in kept_preboot and
            ctx.now - grant_clock(x, granted, cols["booting"], cols["rebuild_seen"],
                                  cols["rebuild_from"]) < ctx.intent.boot_timeout_s]
    return bool(new or live or cols["settling"])


def ends_by(ctx: Context, phase: str, stalled_since: Optional[float], cols: Columns,
            settle_max_s: float) -> Optional[float]:
    """The latest time a running run can end if nothing progresses from now on: every
    grant in flight times out boot_timeout after its grant (or its boot, or the end of its
    allocator rebuild, which holds the clock at most REBUILD_MAX_S), settling lasts at
    most `settle_max_s` (inflight.SETTLE_MAX_S), and the stall clock then ends the run after
    stall_limit. None for a run not running (paused: the operator holds it)."""
    if phase != PHASE_RUNNING:
        return None
    if stalled_since is not None:
        return stalled_since + ctx.intent.stall_limit_s
    last = ctx.now
    granted = cols["granted"]
    for x in granted:
        bound = clock_bound(x, granted, cols["booting"], cols["rebuild_seen"],
                            cols["rebuild_from"], ctx.now)
        last = max(last, bound + ctx.intent.boot_timeout_s)
    for x, at in cols["settling"].items():
        last = max(last, at + settle_max_s)
    return last + ctx.intent.stall_limit_s


def end_if_stalled(t: Decision, restore) -> bool:
    """In a running run: start, reset or act on the stall clock. True if the run ended now."""
    if not t.ctx.view.candidates or _progressing(t.ctx, t.stage, t.cols, t.kept_preboot):
        t.stalled_since = None
        return False
    if t.stalled_since is None:
        t.stalled_since = t.ctx.now
    if t.ctx.now - t.stalled_since < t.ctx.intent.stall_limit_s:
        return False
    _withdraw_restarts(t)
    t.apply(withdraw_grants(t.ctx, t.cols, "run ended incomplete", spare_rebuilds=True))
    restore(t, "run ended incomplete")
    left = sorted(o.id for o in t.ctx.view.candidates)
    if t.ctx.intent.leave_out:
        for osd in left:
            t.emit("tail", MarkOut(osd=osd, reason="--leave-out: ended incomplete, Ceph "
                                   "re-replicates its data elsewhere"))
    t.emit("tail", Done(reason="ended incomplete after %.0fs without a start that fits: %d "
                        "in-scope OSD(s) still down and held (%s); %d started by this run" % (
                            t.ctx.now - t.stalled_since, len(left),
                            ", ".join("osd.%d" % x for x in left[:20]), len(t.finished))))
    t.phase, t.finished_at = PHASE_DONE, t.ctx.now
    t.apply(incomplete_report(t.ctx, t.phase, t.stalled_since, t.hosts_summary))
    return True


def _withdraw_restarts(t: Decision) -> None:
    """Drop this tick's make-room restarts and their bookkeeping (module docstring); a
    restart that answers a host over its budget stays."""
    gone = [a for a in t.stage["memory"]
            if isinstance(a, RestartOsd) and a.osd in t.room_restarts]
    if not gone:
        return
    t.stage["memory"] = [a for a in t.stage["memory"] if a not in gone]
    for a in gone:
        for name, column in (("restarted", t.restarted), ("restart_rss", t.restart_rss),
                             ("fresh_rss", t.fresh_rss)):
            before = t.ctx.progress.osd_map(name).get(a.osd)
            column.pop(a.osd, None)
            if before is not None:
                column[a.osd] = before
        t.new_restarts.discard(a.osd)


def incomplete_report(ctx: Context, phase: str, stalled_since: Optional[float],
                      hosts_summary: Mapping[str, dict]) -> StageOut:
    """RECOVERY_INCOMPLETE after a run that ended stalled: per host, the down OSDs it left
    held and what the next one lacks (from the host's summary)."""
    if phase != PHASE_DONE or stalled_since is None:
        return StageOut()
    left: Dict[str, List[int]] = {}
    for o in ctx.view.candidates:
        left.setdefault(o.host, []).append(o.id)
    lines = []
    for host in sorted(left):
        ids = sorted(left[host])
        rebuilding = [x for x in ids if ctx.view.by_id[x].daemon_state == DAEMON_REBUILDING]
        line = "%s: osd.%s still down and held (noup)%s%s; %s" % (
            host, ",".join(str(x) for x in ids), _lack(hosts_summary.get(host) or {}), "".join(
                ", osd.%d still rebuilding its allocator (left running)" % x
                for x in rebuilding), _advice(ctx.intent.leave_out))
        lines.append(("RECOVERY_INCOMPLETE", line, len(ids)))
    return StageOut(health=tuple(lines))


def _advice(left_out: bool) -> str:
    if left_out:
        return ("marked out (--leave-out): Ceph re-replicates their data; start them when "
                "memory allows, then `ceph osd in`")
    return ("start them once their host can take them (`ceph recovery start-controlled`), "
            "or let Ceph re-replicate their data (`ceph osd out`, or `--leave-out`)")


def _lack(hs: Mapping[str, Any]) -> str:
    if not hs.get("predicted") or hs.get("budget") is None or hs.get("used") is None:
        return ""
    more = hs["used"] + hs["predicted"] - hs["budget"]
    if more <= 0:
        return ""
    return ": needs %s more for osd.%s (used %s + predicted %s > budget %s)" % (
        fmt_bytes(more), hs.get("next_osd"), fmt_bytes(hs["used"]), fmt_bytes(hs["predicted"]),
        fmt_bytes(hs["budget"]))
