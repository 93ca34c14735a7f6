"""Disaster-recovery drills: the pure decisions behind `ceph recovery drill start|abort|report`.

A drill is a maintenance window (ceph_recovery.maintenance) with a downtime:

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
  aborting  the drill is stopped and everything comes back at once: the window is dropped
            (so its bucket is no longer held: plan() releases the group noup), the exit's run
            (if any) is aborted, every down OSD of the bucket gets one start instruction
            (again only if still stopped START_RETRY_S later), and
            once all are up the bucket's noout is unset (unless it was set before the drill).
  done | aborted   final; the drill keeps its timeline for `drill report`.

Abort triggers, checked every tick until the drill ends: PGs inactive without a break for
longer than the drill's inactive grace (`--inactive-grace`, INACTIVE_GRACE_S by default:
stopping or starting OSDs makes PGs peer, inactive for a moment),
HEALTH_ERR or the operator's `drill abort`. A failed window exit (its controlled start could
not bring every OSD back within the budget, or its run was aborted) is no trigger: the drill
ends aborted with its bucket kept in maintenance, never started all at once.

Every tick adds one sample to a bounded timeline (sample_limit(); when full, every other sample
is dropped so the whole drill stays covered at half the resolution). Per-host memory is
sampled for the bucket's hosts (the ones whose OSDs stop and start); the per-host peak is kept
for every host. Level triggered like maintenance: an mgr failover resumes from the persisted
drill. Pure: no I/O, no clock (`now` is an argument).
"""
from __future__ import annotations

import errno
from dataclasses import dataclass, field, replace
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from . import drillload as L
from . import maintenance as M
from .drillreport import (_FLOATS, MAX_SAMPLES, TIMELINE_BYTES, drill_to_dict,
                          inactive_pg_seconds, report, sample, sample_limit, summary_line)
from .actions import Action, GrantStart, UnsetGroupFlag
from .model import PROC_RUNNING, PROC_STOPPED, Snapshot

PREPARING, ENTERING, DOWN, EXITING, ABORTING, DONE, ABORTED = (
    "preparing", "entering", "down", "exiting", "aborting", "done", "aborted")
PHASES = (PREPARING, ENTERING, DOWN, EXITING, ABORTING, DONE, ABORTED)
PREPARE_TIMEOUT_S = 120.0
FINAL = (DONE, ABORTED)
# --stop: `clean` shuts the bucket's OSDs down (each marks itself down); `kill` SIGKILLs them
# (a power loss: the monitors mark them down from their peers' failure reports, and they come
# back without a clean shutdown). Either way only after ok-to-stop cleared them.
STOP_CLEAN, STOP_KILL = "clean", "kill"
STOP_MODES = (STOP_CLEAN, STOP_KILL)
INACTIVE_GRACE_S = 20.0
INACTIVE_GRACE_RANGE = (5.0, 3600.0)
START_RETRY_S = 30.0           # as the run's GRANT_RETRY_S: a start not taken by then failed
CLEAN_WAIT_S = 600.0
KEEP_DRILLS = 3
HEALTH_ERR = "HEALTH_ERR"


@dataclass(frozen=True)
class Drill:
    id: str
    bucket: str
    downtime_s: float
    started_at: float
    budget: str = ""                     # the operator's --budget text ("" = module default)
    concurrency: str = ""
    phase: str = ENTERING
    osds: Tuple[int, ...] = ()
    hosts: Tuple[str, ...] = ()          # hosts of the bucket's OSDs (sampled per tick)
    noout_before: bool = False
    budgets: Mapping[str, int] = field(default_factory=dict)   # host -> budget bytes
    down_at: Optional[float] = None      # every OSD of the bucket down
    exit_at: Optional[float] = None      # the exit's controlled start began
    up_at: Optional[float] = None        # every OSD of the bucket up again
    active_at: Optional[float] = None    # every PG active again after the exit began
    clean_at: Optional[float] = None     # every PG active+clean again
    ended_at: Optional[float] = None
    aborted_at: Optional[float] = None   # the abort began (every OSD started at once)
    started: Mapping[int, float] = field(default_factory=dict)  # osd -> abort's start sent
    exit_run: str = ""
    inactive_since: Optional[float] = None
    abort_requested: str = ""            # operator's abort, picked up by the next tick
    reason: str = ""                     # why it aborted, or how it ended
    peaks: Mapping[str, int] = field(default_factory=dict)     # host -> peak memory used
    samples: Tuple[Mapping[str, Any], ...] = ()
    load: Optional[L.Load] = None        # --write-load: its pool and counters (drillload)
    stop: str = STOP_CLEAN               # --stop: how its OSDs go down (STOP_MODES)
    inactive_grace_s: float = INACTIVE_GRACE_S   # --inactive-grace: PGs inactive this long abort


@dataclass(frozen=True)
class Observed:
    """What the shell saw this tick besides the snapshot."""

    health: str = "HEALTH_OK"            # overall status from the mgr's health
    degraded_objects: int = 0
    load: Optional[L.Seen] = None        # the drill's writer (one drill goes on at a time)


@dataclass(frozen=True)
class DrillStep:
    drill: Drill
    windows: Tuple[M.Window, ...]
    actions: Tuple[Action, ...] = ()
    start_exit: bool = False             # the shell runs the window's exit now
    abort_run: bool = False              # the shell aborts the exit's run now
    outcome: Optional[M.Outcome] = None
    load_order: Optional[str] = None     # the writer's order (drillload.order), None: no load


# ------------------------------------------------------------------ commands
def check_start(drill_id: str, bucket: str, downtime_s: float, snapshot: Snapshot,
                windows: Sequence[M.Window], drills: Sequence[Drill], run_active: bool,
                verdict: Tuple[bool, List[str], str], budgets: Mapping[str, int],
                budget: str, concurrency: str, now: float, write_load: int = 0,
                stop: str = STOP_CLEAN, inactive_grace_s: float = INACTIVE_GRACE_S
                ) -> Tuple[Drill, M.Window]:
    """The drill and its window, or M.Refused: EBUSY when a drill is going on or ok-to-stop
    does not clear the bucket (check_enter's refusals), EINVAL on a bad downtime, write
    load, stop mode or inactive grace."""
    if not downtime_s > 0:
        raise M.Refused(errno.EINVAL, "downtime must be positive")
    lo, hi = INACTIVE_GRACE_RANGE
    if not lo <= inactive_grace_s <= hi:
        raise M.Refused(errno.EINVAL, "--inactive-grace must be %gs to %gs, got %gs"
                        % (lo, hi, inactive_grace_s))
    if stop not in STOP_MODES:
        raise M.Refused(errno.EINVAL, "--stop must be %s, got %r" % (" or ".join(STOP_MODES),
                                                                     stop))
    busy = [d for d in drills if d.phase not in FINAL]
    if busy:
        raise M.Refused(errno.EBUSY, "drill %s on %s is %s: abort it or wait for it"
                        % (busy[0].id, busy[0].bucket, busy[0].phase))
    w = replace(M.check_enter(bucket, snapshot, windows, run_active, verdict,
                              "drill %s" % drill_id, M.DEFAULT_MAX_DURATION_S, now),
                kill=stop == STOP_KILL)
    hosts = tuple(sorted({o.host for o in M.under(bucket, snapshot)}))
    load = None
    if write_load:
        try:
            load = L.new_load(drill_id, write_load, len({o.host for o in snapshot.osds}),
                              len(hosts))
        except ValueError as e:
            raise M.Refused(errno.EINVAL, str(e))
    d = Drill(id=drill_id, bucket=w.bucket, downtime_s=float(downtime_s), started_at=now,
              budget=budget, concurrency=concurrency, osds=w.osds, hosts=hosts,
              noout_before=w.noout_before, budgets=dict(budgets), load=load, stop=stop,
              inactive_grace_s=float(inactive_grace_s),
              phase=ENTERING if load is None else PREPARING)
    return d, w


def going(drills: Sequence[Drill]) -> Drill:
    """The drill going on (at most one is: check_start refuses a second), or Refused ENOENT."""
    for d in drills:
        if d.phase not in FINAL:
            return d
    raise M.Refused(errno.ENOENT, "no drill is going on")


def check_abort(drills: Sequence[Drill], reason: str) -> Drill:
    """The going drill with the operator's abort noted, or Refused: ENOENT without a drill,
    EBUSY when it is already aborting."""
    d = going(drills)
    if d.phase == ABORTING:
        raise M.Refused(errno.EBUSY, "drill %s is already aborting" % d.id)
    return replace(d, abort_requested=reason or "operator abort")


def check_budget(drills: Sequence[Drill], budget: str, budgets: Mapping[str, int]) -> Drill:
    """The going drill with its exit's budget replaced (`budgets`: per host, from the shell's
    parse of `budget`), or Refused: ENOENT without a drill, EBUSY once its exit has begun (the
    exit's run holds the budget it started with)."""
    d = going(drills)
    if d.phase not in (PREPARING, ENTERING, DOWN):
        raise M.Refused(errno.EBUSY, "drill %s is %s: its budget can change only before "
                        "its exit begins" % (d.id, d.phase))
    return replace(d, budget=budget, budgets=dict(budgets))


def find(drills: Sequence[Drill], drill_id: Optional[str]) -> Drill:
    """The drill `drill_id` (the latest one when None), or Refused ENOENT."""
    if not drills:
        raise M.Refused(errno.ENOENT, "no drill has run")
    if not drill_id:
        return drills[-1]
    for d in drills:
        if d.id == drill_id:
            return d
    raise M.Refused(errno.ENOENT, "no drill %s (known: %s)" % (
        drill_id, ", ".join(d.id for d in drills)))


def exit_started(d: Drill, run_id: str, now: float) -> Drill:
    return replace(d, phase=EXITING, exit_run=run_id, exit_at=now)


# ------------------------------------------------------------------ the tick
def plan_drill(snap: Snapshot, d: Drill, windows: Sequence[M.Window], seen: Observed,
               now: float) -> DrillStep:
    """One tick of a drill: its sample, then its phase's decision, then its writer's order
    (when it has a write load)."""
    if d.load is not None and d.phase not in FINAL:
        d = replace(d, load=L.absorb(d.load, seen.load))
    if d.phase in FINAL:
        return DrillStep(d, tuple(windows))
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
    why = ("the exit failed: %s; %s stays in maintenance (held, noout kept): `ceph recovery "
           "maintenance exit %s --budget ...` brings it back" % (
               w.note or "window back in maintenance", d.bucket, d.bucket))
    return _end(d, windows, snap, ABORTED, why, now)


def _abort(d: Drill, windows: Sequence[M.Window], snap: Snapshot, why: str,
           now: float) -> DrillStep:
    """Drop the drill's window (its hold goes), abort the exit's run, then start every OSD."""
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
    if down:
        due = [o for o in down if _start_due(d, o, now)]
        acts = tuple(GrantStart(osd=o.id, host=o.host, reason="drill %s aborted (%s): start "
                                "every OSD of %s" % (d.id, d.reason, d.bucket)) for o in due)
        started = dict(d.started)
        started.update((o.id, now) for o in due)
        return DrillStep(replace(d, started=started), tuple(windows), acts)
    d = d if d.up_at is not None else replace(d, up_at=now)
    if M.NOOUT in (snap.bucket_flags.get(d.bucket) or ()) and not d.noout_before:
        return DrillStep(d, tuple(windows), (UnsetGroupFlag(
            bucket=d.bucket, flag=M.NOOUT, reason="drill %s aborted: every OSD of %s up"
            % (d.id, d.bucket)),))
    return _end(d, windows, snap, ABORTED, d.reason, now)


def _start_due(d: Drill, o: Any, now: float) -> bool:
    """One start instruction per down OSD: the helpers' process states lag it (a report
    built before the start, or none fresh), so a process not yet seen running is no reason
    to instruct it again. Only a process still seen stopped START_RETRY_S after its start
    was instructed is a failed start, instructed once more."""
    if o.process == PROC_RUNNING:
        return False
    sent = d.started.get(o.id)
    return sent is None or (o.process == PROC_STOPPED and now - sent > START_RETRY_S)


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


# ------------------------------------------------------------------ persistence
__all__ = ["Drill", "Observed", "DrillStep", "check_start", "check_abort", "check_budget",
           "find", "MAX_SAMPLES", "TIMELINE_BYTES",
           "exit_started", "plan_drill", "sample_limit", "report", "summary_line",
           "inactive_pg_seconds", "drill_to_dict", "drill_from_dict"]


def drill_from_dict(x: Mapping[str, Any]) -> Drill:
    """ValueError on a malformed entry (the shell reports the state as unreadable)."""
    if not isinstance(x, Mapping) or x.get("phase") not in PHASES or not x.get("id"):
        raise ValueError("drill: bad entry %r" % (x,))
    opt = {k: (None if x.get(k) is None else float(x[k])) for k in _FLOATS}
    return Drill(id=str(x["id"]), bucket=str(x["bucket"]), downtime_s=float(x["downtime_s"]),
                 started_at=float(x["started_at"]), budget=str(x.get("budget", "")),
                 concurrency=str(x.get("concurrency", "")), phase=str(x["phase"]),
                 osds=tuple(int(i) for i in x.get("osds", ())),
                 hosts=tuple(str(h) for h in x.get("hosts", ())),
                 noout_before=bool(x.get("noout_before", False)),
                 budgets={str(k): int(v) for k, v in (x.get("budgets") or {}).items()},
                 exit_run=str(x.get("exit_run", "")),
                 abort_requested=str(x.get("abort_requested", "")),
                 reason=str(x.get("reason", "")),
                 peaks={str(k): int(v) for k, v in (x.get("peaks") or {}).items()},
                 samples=tuple(dict(s) for s in x.get("samples", ())),
                 started={int(k): float(v) for k, v in (x.get("started") or {}).items()},
                 load=L.from_dict(x.get("load")),
                 stop=STOP_KILL if x.get("stop") == STOP_KILL else STOP_CLEAN,
                 inactive_grace_s=float(x.get("inactive_grace_s", INACTIVE_GRACE_S)), **opt)
