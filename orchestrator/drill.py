"""Disaster-recovery drills: the pure decisions behind `ceph recovery drill start|abort|report`.

A drill is a maintenance window (ceph_recovery.maintenance) with a downtime:

  requested `drill start` was accepted as a request: nothing is set, held or created. The
            mgr shell asks `osd ok-to-stop` for the bucket's up OSDs together (and, with
            --write-load, the monitors' mon_allow_pool_delete and whether the pool's name
            is free) in its next tick; settle_start() then begins the drill or ends it
            `aborted` with a `refused` outcome (EBUSY, EINVAL or EEXIST).
  preparing (--write-load only) the drill's pool is created and written to, before its
            window opens: the helpers re-check ok-to-stop before each stop, and a pool
            whose PGs are still being created would make them refuse. Once the pool is
            ready and every PG active, the window opens (entering).
  entering  the drill's window is entering (noout, hold, the helpers stop the bucket's OSDs;
            `drill start` was accepted only if ok-to-stop cleared the whole bucket).
  down      the window is open: every OSD of the bucket is down. Once down for `downtime_s`,
            the tick asks the shell to run the window's exit (a controlled start scoped to
            the bucket, under the drill's budget).
  exiting   the exit's run is going on. When the window closes (every OSD up, noout
            restored), the drill waits for every PG to be active+clean (at most CLEAN_WAIT_S)
            and ends `done`.
  aborting  (an abort before the exit) the drill is stopped and everything comes back at
            once, as it was before the drill: the window is dropped
            (so its bucket is no longer held: plan() releases the group noup), every down
            OSD of the bucket gets one start instruction
            (again only if still stopped START_RETRY_S later, at most ABORT_STARTS in all:
            an OSD the kernel kills on every start is left down, named, as systemd's start
            limit would), and once all are up or left down the bucket's noout is unset
            (unless it was set before the drill).
  done | aborted   final; the drill keeps its timeline for `drill report`.

Abort triggers, checked every tick until the drill ends: PGs inactive without a break for
longer than the drill's inactive grace (`--inactive-grace`, INACTIVE_GRACE_S by default:
stopping or starting OSDs makes PGs peer, inactive for a moment),
HEALTH_ERR or the operator's `drill abort`. Once the exit has begun, its controlled start
owns the bucket's OSDs, and no abort starts them outside its budget: the abort aborts the
exit's run (which stops the OSDs it had not let boot), the window goes back into maintenance
(stopping the OSDs the exit started), and the drill ends aborted with its bucket kept in
maintenance, as after a failed exit (its controlled start could not bring every OSD back
within the budget, or its run was aborted): every OSD of the bucket ends up, or held and
stopped, never loaded and held.

Every tick adds one sample to a bounded timeline (sample_limit(); when full, every other sample
is dropped so the whole drill stays covered at half the resolution). Per-host memory is
sampled for the bucket's hosts (the ones whose OSDs stop and start); the per-host peak is kept
for every host. Level triggered like maintenance: an mgr failover resumes from the persisted
drill. Pure: no I/O, no clock (`now` is an argument).

This module has the tick (plan_drill); the commands' checks are in drillcmd.py, the state in
drillstate.py, the timeline and report in drillreport.py, and it re-exports them all.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Optional, Sequence

from . import drillload as L
from . import maintenance as M
from .drillcmd import (check_abort, check_budget, check_start, exit_started, find, going,
                       settle_start)
from .drillreport import (MAX_SAMPLES, TIMELINE_BYTES, drill_to_dict, inactive_pg_seconds,
                          report, sample, sample_limit, summary_line)
from .drillstate import (ABORT_STARTS, ABORTED, ABORTING, CLEAN_WAIT_S, DONE, DOWN,
                         ENTERING, EXITING, FINAL, HEALTH_ERR, INACTIVE_GRACE_RANGE,
                         INACTIVE_GRACE_S, KEEP_DRILLS, PHASES, PREPARE_TIMEOUT_S, PREPARING,
                         REQUESTED, START_RETRY_S, STOP_CLEAN, STOP_KILL, STOP_MODES, Drill,
                         DrillStep, Observed, drill_from_dict)
from .actions import GrantStart, UnsetGroupFlag
from .model import PROC_RUNNING, PROC_STOPPED, Snapshot


# ------------------------------------------------------------------ the tick
def plan_drill(snap: Snapshot, d: Drill, windows: Sequence[M.Window], seen: Observed,
               now: float) -> DrillStep:
    """One tick of a drill: its sample, then its phase's decision, then its writer's order
    (when it has a write load)."""
    if d.load is not None and d.phase not in FINAL:
        d = replace(d, load=L.absorb(d.load, seen.load))
    if d.phase in FINAL:
        return DrillStep(d, tuple(windows))
    if d.phase == REQUESTED:        # nothing set yet: the shell settles it (settle_start)
        return _requested(d, windows, now)
    d = sample(d, snap, seen, now)
    w = M.find(windows, d.bucket)
    if d.phase != ABORTING:
        why = _abort_reason(d, w, snap, seen, now)
        d = _track_inactive(d, snap, now)
        if why:
            return _with_load(_abort(d, windows, snap, why, now))
    if d.phase == EXITING and w is not None and w.phase != M.EXITING:
        return _exit_failed(d, w, windows, snap, now)
    step = {PREPARING: _preparing, ENTERING: _entering, DOWN: _down, EXITING: _exiting,
            ABORTING: _aborting}
    return _with_load(step[d.phase](d, w, windows, snap, now))


def _with_load(step: DrillStep) -> DrillStep:
    """The writer's order of a step that does not end the drill (_end sets its own):
    write while the bucket is down and until all of its OSDs are up again (by the exit or
    by the abort: what clients see while the bucket returns is part of the measure)."""
    d = step.drill
    if d.load is None or step.load_order is not None or d.phase in FINAL:
        return step
    if d.phase == ABORTING and d.load.state == L.CREATING:
        return replace(step, load_order=L.IDLE)        # an aborted drill creates nothing
    writing = d.phase in (PREPARING, ENTERING, DOWN) or (d.phase in (EXITING, ABORTING) and
                                                         d.up_at is None)
    return replace(step, load_order=L.order(d.load, writing, False, False,
                                            len(d.samples) >= 2))


def _requested(d: Drill, windows: Sequence[M.Window], now: float) -> DrillStep:
    """An abort before the drill began ends it: nothing was set, held or created."""
    if not d.abort_requested:
        return DrillStep(d, tuple(windows))
    why = "operator: %s before the drill began; nothing was changed" % d.abort_requested
    d = replace(d, phase=ABORTED, ended_at=now, aborted_at=now, abort_requested="",
                reason=why)
    return DrillStep(d, tuple(windows), outcome=M.Outcome(
        "drill %s" % d.id, False, "aborted", "drill %s on %s aborted: %s" % (
            d.id, d.bucket, why), now))


def _track_inactive(d: Drill, snap: Snapshot, now: float) -> Drill:
    if snap.pgs_active < snap.pgs_total:
        return d if d.inactive_since is not None else replace(d, inactive_since=now)
    return replace(d, inactive_since=None)


def _abort_reason(d: Drill, w: Optional[M.Window], snap: Snapshot, seen: Observed,
                  now: float) -> str:
    if d.abort_requested:
        return "operator: %s" % d.abort_requested
    if seen.health == HEALTH_ERR:
        return "HEALTH_ERR appeared"
    if snap.pgs_active < snap.pgs_total and d.inactive_since is not None \
            and now - d.inactive_since > d.inactive_grace_s:
        return "%d PG(s) inactive for more than %gs" % (snap.pgs_total - snap.pgs_active,
                                                         d.inactive_grace_s)
    if d.phase in (ENTERING, DOWN) and w is None:
        return "its maintenance window on %s is gone" % d.bucket
    return ""


def _exit_failed(d: Drill, w: M.Window, windows: Sequence[M.Window], snap: Snapshot,
                 now: float) -> DrillStep:
    """The exit's run ended with OSDs of the bucket down (not enough memory) or was aborted:
    the drill ends aborted and the bucket stays in maintenance (held, noout kept, its
    window in RECOVERY_MAINTENANCE), for `maintenance exit` to bring back. Starting every
    OSD at once after the controlled start found they do not fit is the OOM chain this
    tool prevents."""
    why = ("%sthe exit failed: %s; %s stays in maintenance (held, noout kept): `ceph "
           "recovery maintenance exit %s --budget ...` brings it back" % (
               "aborted (%s): " % d.reason if d.aborted_at is not None else "",
               w.note or "window back in maintenance", d.bucket, d.bucket))
    return _end(d, windows, snap, ABORTED, why, now)


def _abort(d: Drill, windows: Sequence[M.Window], snap: Snapshot, why: str,
           now: float) -> DrillStep:
    """Before its exit: drop the drill's window (its hold goes) and start every OSD at once,
    as they were before the drill (no run owns them). Once its exit's run owns them: abort
    that run only. A controlled start's OSDs are never started outside its budget; the run's
    abort stops the ones it had not let boot (withdraw.py), the window goes back into
    maintenance and stops the ones the exit started, and the drill ends aborted with its
    bucket kept there (_exit_failed): every OSD ends up, or held and stopped, never loaded
    and held."""
    w = M.find(windows, d.bucket)
    if d.phase == EXITING and w is not None:
        d = replace(d, reason=why, abort_requested="",
                    aborted_at=d.aborted_at if d.aborted_at is not None else now)
        if w.phase == M.EXITING:
            return DrillStep(d, tuple(windows), abort_run=True)
        return _exit_failed(d, w, windows, snap, now)
    kept = tuple(x for x in windows if x.bucket != d.bucket or x.reason != _reason(d))
    d = replace(d, phase=ABORTING, reason=why, abort_requested="", aborted_at=now)
    step = _aborting(d, None, kept, snap, now)
    return replace(step, abort_run=bool(d.exit_run))


def _reason(d: Drill) -> str:
    return "drill %s" % d.id


def _preparing(d, w, windows, snap, now) -> DrillStep:
    """Open the window once the pool is there and every PG active; abort when the pool
    cannot be created or the window cannot open (ok-to-stop was asked at `drill start`;
    the helpers ask again before each stop)."""
    why = ""
    if d.load.state == L.CREATING and d.load.note:
        why = "write load: pool %s not created: %s" % (d.load.pool, d.load.note)
    elif now - d.started_at > PREPARE_TIMEOUT_S:
        why = "write load: pool %s not ready after %gs" % (d.load.pool, PREPARE_TIMEOUT_S)
    elif d.load.state != L.CREATING and snap.pgs_active == snap.pgs_total:
        try:
            w = M.check_enter(d.bucket, snap, windows, False, (True, [], "asked at start"),
                              _reason(d), M.DEFAULT_MAX_DURATION_S, now)
        except M.Refused as e:
            return _abort(d, windows, snap, "its window cannot open: %s" % e.message, now)
        return DrillStep(replace(d, phase=ENTERING, osds=w.osds, noout_before=w.noout_before),
                         tuple(windows) + (replace(w, kill=d.stop == STOP_KILL),))
    if why:
        return _abort(d, windows, snap, why, now)
    return DrillStep(d, tuple(windows))


def _entering(d, w, windows, snap, now) -> DrillStep:
    if w.phase == M.OPEN:
        d = replace(d, phase=DOWN, down_at=now)
    return DrillStep(d, tuple(windows))


def _down(d, w, windows, snap, now) -> DrillStep:
    return DrillStep(d, tuple(windows), start_exit=now - (d.down_at or now) >= d.downtime_s)


def _exiting(d, w, windows, snap, now) -> DrillStep:
    """up_at: the first tick every OSD of the bucket is up (the window closes later, once its
    exit's run is done and noout restored); the drill ends once every PG is clean."""
    if d.up_at is None and all(o.up for o in M.under(d.bucket, snap)):
        d = replace(d, up_at=now)
    if w is not None:
        return DrillStep(d, tuple(windows))
    d = d if d.up_at is not None else replace(d, up_at=now)
    if d.clean_at is not None:
        return _end(d, windows, snap, DONE, "every OSD of %s up, every PG active+clean"
                    % d.bucket, now)
    if now - d.up_at > CLEAN_WAIT_S:
        return _end(d, windows, snap, DONE, "every OSD of %s up; PGs not all clean after %gs"
                    % (d.bucket, CLEAN_WAIT_S), now)
    return DrillStep(d, tuple(windows))


def _aborting(d, w, windows, snap, now) -> DrillStep:
    mine = M.under(d.bucket, snap)
    down = [o for o in mine if not o.up]
    due = [o for o in down if _start_due(d, o, now)]
    if due:
        acts = tuple(GrantStart(osd=o.id, host=o.host, reason="drill %s aborted (%s): start "
                                "every OSD of %s" % (d.id, d.reason, d.bucket)) for o in due)
        started, starts = dict(d.started), dict(d.starts)
        started.update((o.id, now) for o in due)
        starts.update((o.id, starts.get(o.id, 0) + 1) for o in due)
        return DrillStep(replace(d, started=started, starts=starts), tuple(windows), acts)
    if not all(_left_down(d, o, now) for o in down):
        return DrillStep(d, tuple(windows))         # starts on their way
    d = d if d.up_at is not None or down else replace(d, up_at=now)
    if M.NOOUT in (snap.bucket_flags.get(d.bucket) or ()) and not d.noout_before:
        return DrillStep(d, tuple(windows), (UnsetGroupFlag(
            bucket=d.bucket, flag=M.NOOUT, reason="drill %s aborted: every OSD of %s %s"
            % (d.id, d.bucket, "up" if not down else "up or left down"),),))
    why = d.reason if not down else "%s; %s not up after %d starts each: left down" % (
        d.reason, ", ".join("osd.%d" % o.id for o in down), ABORT_STARTS)
    return _end(d, windows, snap, ABORTED, why, now)


def _start_due(d: Drill, o: Any, now: float) -> bool:
    """One start instruction per down OSD: the helpers' process states lag it (a report
    built before the start, or none fresh), so a process not yet seen running is no reason
    to instruct it again. Only a process still seen stopped START_RETRY_S after its start
    was instructed is a failed start, instructed once more, ABORT_STARTS times at most."""
    if o.process == PROC_RUNNING:
        return False
    return o.id not in d.started or (_failed_start(d, o, now)
                                     and d.starts.get(o.id, 1) < ABORT_STARTS)


def _left_down(d: Drill, o: Any, now: float) -> bool:
    """A down OSD that used its ABORT_STARTS and is still stopped START_RETRY_S after the last."""
    return _failed_start(d, o, now) and d.starts.get(o.id, 1) >= ABORT_STARTS


def _failed_start(d: Drill, o: Any, now: float) -> bool:
    """The abort's last start of `o` failed: its process still seen stopped START_RETRY_S
    after the instruction."""
    sent = d.started.get(o.id)
    return sent is not None and o.process == PROC_STOPPED and now - sent > START_RETRY_S


def _end(d: Drill, windows, snap: Snapshot, phase: str, why: str, now: float) -> DrillStep:
    """The drill's end; with a write load, only once its pool is verified and removed."""
    if not L.finished(d.load):
        return DrillStep(d, tuple(windows), load_order=L.order(
            d.load, False, True, snap.pgs_active == snap.pgs_total, True))
    if d.load is not None and d.load.state == L.LEFT:
        why = "%s; pool %s left: %s" % (why, d.load.pool, d.load.note)
    d = replace(d, phase=phase, ended_at=now, reason=why)
    ok = phase == DONE
    out = M.Outcome("drill %s" % d.id, ok, "done" if ok else "aborted",
                    "drill %s on %s %s: %s" % (d.id, d.bucket, phase, why), now)
    return DrillStep(d, tuple(windows), outcome=out)


__all__ = ["Drill", "Observed", "DrillStep", "check_start", "settle_start", "check_abort",
           "check_budget", "going", "REQUESTED",
           "find", "MAX_SAMPLES", "TIMELINE_BYTES",
           "exit_started", "plan_drill", "sample_limit", "report", "summary_line",
           "inactive_pg_seconds", "drill_to_dict", "drill_from_dict", "ABORT_STARTS",
           "ABORTED", "ABORTING", "CLEAN_WAIT_S", "DONE", "DOWN", "ENTERING", "EXITING",
           "FINAL", "HEALTH_ERR", "INACTIVE_GRACE_RANGE", "INACTIVE_GRACE_S", "KEEP_DRILLS",
           "PHASES", "PREPARE_TIMEOUT_S", "PREPARING", "START_RETRY_S", "STOP_CLEAN",
           "STOP_KILL", "STOP_MODES"]
