"""plan(): the pure, level-triggered decision core of a controlled start.

    plan(snapshot, intent, progress, policies, now)
        -> PlanResult(actions, progress, health, summary)

Every tick re-plans from the fresh snapshot; `progress` carries only markers (granted,
booting, finished, held, restarted, heap_released, saved_flags, observations, peaks, epoch).

Invariants (stated here, checked by `check_invariants`, see invariants.py):
  I1 stale epoch: if snapshot.epoch < progress.epoch the only action is Wait and progress is
     returned unchanged; otherwise the new progress records epoch = snapshot.epoch.
  I2 per host, OSDs in flight (granted and not finished, or restarting) <= intent.concurrency
     (auto, 0: no slot count; memory admission alone bounds them); a restart that makes room
     for the boot of an OSD kept in preboot shares that OSD's slot (room.py), which then
     boots only once the restart is done.
  I3 a GrantStart is only for an in-scope, down candidate whose host has a fresh helper, no
     network finding, no operator hold over it, and
     used + reserved + need <= budget(host) (see admission.py; a staged start's need is its
     load, staging.py).
  I4 RestartOsd only for an OSD whose snapshot.ok_to_stop answer is True, not restarted within
     intent.restart_cooldown_s; at most one RestartOsd per tick (Ceph clears each OSD alone:
     two cleared OSDs of one PG at min_size would together make it inactive).
  I5 prefix safety: SetFlag/HoldBucket/HoldOsd come before any ReleaseBucket; a bucket is
     released only when every down candidate under it is held per OSD (already, or by an
     earlier HoldOsd in the same list); an OSD is granted only when it carries a per-OSD noup
     (already, or by an earlier HoldOsd); operator-held buckets are never released.
  I6 no GrantStart/AllowBoot/RestartOsd unless the run is running (mode controlled); UnsetFlag
     only for RUN_CLUSTER_FLAGS the run set (not in saved_flags), only with Done or on abort.
  I7 a run ends all-up (Done) or with a health check saying why not. Done waits until the
     OSDs it started have settled (PGs no longer degraded, inflight.py): they keep growing
     while they recover, and the run keeps answering over-budget hosts until then.
  I9 every SetConfig is recorded write-ahead in progress.saved_config; when the run ends (Done,
     abort) every setting it changed is restored, or named by RECOVERY_SETTING_KEPT.
  I10 a staged OSD (staging.py) is let boot only while fewer than PEERING_PER_HOST OSDs let
     boot on its host are still peering.
  I11 a start that may load inflated PG log dups (dups.py) is granted only with nothing else
     in flight on its host, and nothing is granted beside it while it is in flight.
  I8 MarkOut only with intent.leave_out, only for a down OSD, only in the tick that ends the
     run (an OSD is never removed; marking out is the operator's explicit choice).

Shell contract: persist the returned progress BEFORE carrying out the actions (write-ahead).
A crash then loses at most actions, which the next tick re-issues (holds, boots, grants after
GRANT_RETRY_S, flag restores after Done/abort); a lost progress after SetFlag would make the
next first tick save the run's own flags as the operator's. Standing grants for the helper's
boot gate are `progress.osd_map("granted")`. Lifecycle timing constants: see inflight.py.

Abort semantics ("no OSD half-started"): OSDs already allowed to boot are left to come up;
granted OSDs not yet allowed to boot stay held by their per-OSD noup (their process may sit in
preboot) and are listed in RECOVERY_ABORTED, as are the other held candidates; the cluster
flags the run set are restored. Pause: no new grants, boots or restarts (heap release and
ok-to-stop queries continue); in-flight OSDs may finish.
"""
from __future__ import annotations

from typing import AbstractSet, Mapping

from .actions import Done, SetFlag, Wait
from .admission import grant_stage
from .room import memory_stage, room_for_boots
from .ending import end_if_stalled, ends_by, incomplete_report, track_service
from .settings import lower_targets, restore_settings
from .inflight import (MAX_START_FAILURES, SETTLE_MAX_S, boots, clear_stale_noup, regrants,
                       report_failures,
                       track_in_flight, track_restarts, track_settling)
from .withdraw import track_stops, withdraw_grants
from .invariants import check_invariants  # noqa: F401  (re-exported: plan.check_invariants)
from .model import (MODE_ABORT, MODE_CONTROLLED, MODE_IDLE, MODE_PAUSED, PHASE_ABORTED,
                    PHASE_ABORTING, PHASE_DONE, PHASE_PAUSED, PHASE_RUNNING,
                    RUN_CLUSTER_FLAGS, Intent, Progress, Snapshot)
from .policy_types import Policies
from .result import PlanResult
from .brake import memory_hosts
from .throttle import report_waits, throttle
from .context import Context, context
from .decision import Decision
from .learning import lifecycle
from .staging import preboot
from .holds import bucket_holds, held_report, hold_osds, start_run
from .stageout import StageOut
from .stopcheck import StopCheck
from .view import begin_run, starts_run
from . import autobudget, dups, restore, shrink, tunables

MODES = (MODE_IDLE, MODE_CONTROLLED, MODE_PAUSED, MODE_ABORT)
ACTIVE = (PHASE_RUNNING, PHASE_PAUSED, PHASE_ABORTING)

__all__ = ["plan", "PlanResult", "check_invariants", "validate_intent"]


def validate_intent(intent: Intent) -> None:
    """Raise ValueError (EINVAL material) for an intent plan() cannot act on."""
    if intent.mode not in MODES:
        raise ValueError("unknown mode %r (known: %s)" % (intent.mode, ", ".join(MODES)))
    if isinstance(intent.concurrency, bool) or not isinstance(intent.concurrency, int) \
            or intent.concurrency < 0:
        raise ValueError("concurrency must be an integer >= 1, or 0 for auto, got %r"
                         % (intent.concurrency,))
    if intent.restart_cooldown_s < 0 or intent.boot_timeout_s <= 0:
        raise ValueError("restart_cooldown_s must be >= 0 and boot_timeout_s > 0")
    b = intent.budget
    if not b.value > 0 or b.reserve_bytes < 0 or (b.kind != "bytes" and b.value > 1):
        raise ValueError("budget must be a fraction in (0, 1] (auto: the fraction before its "
                         "raise) or a positive number of bytes, with reserve_bytes >= 0; got %r"
                         % (b,))


def plan(snapshot: Snapshot, intent: Intent, progress: Progress, policies: Policies,
         now: float) -> PlanResult:
    """Decide this tick's ordered actions. Pure: reads its arguments, returns new values.

    The stages run in the order below (within a stage name, actions keep this order). Those
    called as t.apply(stage(ctx, records...)) read the frozen Context and the records they
    are given and return a StageOut (stageout.py); those called as t.apply_each(...) yield one
    StageOut per decision, each applied before the next is made; the others write the
    Decision `t`."""
    validate_intent(intent)
    if snapshot.epoch < progress.epoch:
        msg = "stale osd map epoch %d < %d" % (snapshot.epoch, progress.epoch)
        return PlanResult((Wait(reason=msg),), progress, (),
                          {"run_id": progress.run_id, "phase": progress.phase,
                           "mode": intent.mode, "epoch": progress.epoch, "stale": msg})
    state = _run_state(intent, progress)
    start = begin_run(intent, progress, snapshot, now) if state == "new" else progress
    ctx = context(snapshot, intent, start, policies, now, state)
    t = Decision(ctx)
    if state == "new":
        t.apply(start_run(ctx, t.buckets))
        t.apply(restore.adopt(t.saved_config, t.restoring, t.saved_flags, t.restoring_flags))
    t.apply(bucket_holds(ctx, t.buckets))
    t.apply(track_stops(ctx, t.stopped, t.granted))
    t.apply(track_restarts(ctx, t.restarted, t.fresh_rss))
    if ctx.state is not None:
        t.apply_each(track_settling(lifecycle(t), t.new_restarts))
        t.apply(shrink.track(ctx, t.shrink_at, t.shrink_rss))
        t.apply_each(track_in_flight(lifecycle(t)))
        t.apply(autobudget.update(ctx, t.predictor, t.cols, t.budget_state))
        t.apply(hold_osds(ctx, t.booting, t.held_osds))
    # the first memory response: needs no ok-to-stop, no tcmalloc
    t.apply(throttle(ctx, t.budget, t.cols, t.saved_config, t.restoring))
    stops = stop_check(ctx, t.new_restarts)
    over = memory_stage(t, stops)
    if ctx.state in ("new", "running"):
        t.apply(lower_targets(ctx, t.predictor, t.budget, t.saved_config, t.restoring))
        t.apply_each(boots(preboot(t), t.rss_flat, over))
        t.apply(clear_stale_noup(ctx, t.held_osds, t.granted))
        t.apply_each(regrants(lifecycle(t), over))
        room_for_boots(t, stops)
        grant_stage(t, over, stops)
        t.apply(dups.report(ctx.view.candidates, ctx.dups_suspects, t.failures,
                            MAX_START_FAILURES))
        t.apply(tunables.report(ctx))
        t.apply(report_waits(ctx, t.cols, t.hosts_summary, SETTLE_MAX_S,
                             memory_hosts(ctx.view, t.stage["memory"], t.cols)))
    t.apply(report_failures(ctx, t.failures, t.finished, t.failed_now))
    t.apply(held_report(ctx, t.buckets))
    _tail(t)
    return t.result()


def stop_check(ctx: Context, new_restarts: AbstractSet[int]) -> StopCheck:
    """Whether the run may stop an OSD now (stopcheck.py), over this call's snapshot and its
    restarts: those in flight and this tick's own (`new_restarts`, as it grows)."""
    return StopCheck(ctx.snapshot.pg_map, ctx.up, ctx.view.restarting,
                     ctx.snapshot.ok_to_stop, new_restarts)


def _run_state(i: Intent, p: Progress):
    if starts_run(i, p):
        return "new"
    if i.mode == MODE_CONTROLLED:
        return "running" if p.phase in ACTIVE else None
    if p.phase in ACTIVE:      # mode idle during a run stops it like abort does
        return "paused" if i.mode == MODE_PAUSED else "abort"
    return None


def _restore_flags(t: Decision, why: str) -> None:
    t.apply(restore_settings(t.ctx, t.saved_config, t.restoring, why))
    saved = t.saved_flags or frozenset()
    set_now = {a.flag for a in t.stage["flags"] if isinstance(a, SetFlag)}
    for f in RUN_CLUSTER_FLAGS:
        if f not in saved and (f in t.ctx.snapshot.cluster_flags or f in set_now):
            t.apply(restore.unset_flag(t.ctx, t.restoring_flags, f,
                                       "%s: restore flags saved at start" % why))


def _tail(t: Decision) -> None:
    v = t.ctx.view
    t.apply(restore.confirm(t.ctx, t.restoring, t.restoring_flags))
    t.apply(_scope_report(t.ctx))
    if t.ctx.state in ("new", "running"):
        if t.phase == PHASE_PAUSED:         # resumed
            t.phase = PHASE_RUNNING
        t.apply(track_service(t.ctx, t.service_at, t.inactive_pg_s, t.inactive_seen))
        if end_if_stalled(t, _restore_flags):
            pass
        elif not v.candidates and not t.granted and not v.restarting and not t.new_restarts \
                and not t.settling:
            _restore_flags(t, "run done")
            t.emit("tail", Done(reason="all %d in-scope OSDs up; %d started by this run" % (
                len(v.in_scope), len(t.finished))))
            t.phase, t.finished_at = PHASE_DONE, t.ctx.now
    elif t.ctx.state == "paused":
        t.phase = PHASE_PAUSED
        t.health("RECOVERY_PAUSED", "paused by operator: %d granted, %d waiting" % (
            len(t.granted), len(v.candidates)), count=len(t.granted))
    elif t.ctx.state == "abort":
        t.apply(withdraw_grants(t.ctx, t.cols, "run aborted"))
        _restore_flags(t, "run aborted")
        t.phase, t.finished_at = PHASE_ABORTED, t.ctx.now
    if t.ctx.state is None:
        t.apply(incomplete_report(t.ctx, t.phase, t.stalled_since, t.hosts_summary))
        if t.saved_config:
            t.apply(restore_settings(t.ctx, t.saved_config, t.restoring, "after the run"))
    t.apply(_aborted_report(t.ctx, t.phase, t.stopped))
    t.ends_by = ends_by(t.ctx, t.phase, t.stalled_since, t.cols, SETTLE_MAX_S)
    if t.ctx.state is not None and not t.actions():
        t.emit("tail", Wait(reason="%d in flight, %d settling, %d waiting%s" % (
            len(t.granted), len(t.settling),
            sum(1 for o in v.candidates if o.id not in t.granted),
            "; " + t.reasons[0] if t.reasons else "")))


def _scope_report(ctx: Context) -> StageOut:
    """RECOVERY_SCOPE_UNKNOWN: scope buckets of a run that match no OSD."""
    unknown = sorted(set(ctx.intent.scope) - ctx.view.scope_seen)
    if not unknown or ctx.state is None:
        return StageOut()
    return StageOut(health=(("RECOVERY_SCOPE_UNKNOWN", "scope bucket(s) %s match no OSD in "
                             "the CRUSH map" % ", ".join(unknown), len(unknown)),))


def _aborted_report(ctx: Context, phase: str, stopped: Mapping[int, float]) -> StageOut:
    """RECOVERY_ABORTED: after an abort the shell sets the mode back to idle; the OSDs the run
    left held by their noup stay named until a new run starts (or their noup goes)."""
    if phase != PHASE_ABORTED or ctx.intent.mode not in (MODE_ABORT, MODE_IDLE):
        return StageOut()
    booting = ctx.progress.osd_map("booting")
    left = sorted(o.id for o in ctx.view.candidates if o.id not in booting and (
        ctx.intent.mode == MODE_ABORT or "noup" in o.flags))
    if not left:
        return StageOut()
    return StageOut(health=(("RECOVERY_ABORTED", "held (noup) after abort: %s" % ", ".join(
        "osd.%d%s" % (x, " (its process being stopped)" if x in stopped else "")
        for x in left), len(left)),))
