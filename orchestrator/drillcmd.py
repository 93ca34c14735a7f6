"""The drill commands' pure checks: `drill start` (check_start, and settle_start once the
tick has asked ok-to-stop), `drill abort`, `drill budget`, `drill report`'s lookup (find),
and the exit's start (exit_started). Each returns the drill as the command leaves it, or
raises maintenance.Refused with an errno; nothing here acts on a cluster.
ceph_recovery.drill re-exports all of them (the drill's life: that module's docstring). Pure.
"""
from __future__ import annotations

import errno
from dataclasses import replace
from typing import List, Mapping, Optional, Sequence, Tuple

from . import drillload as L
from . import maintenance as M
from .drillstate import (ABORTED, ABORTING, DOWN, ENTERING, EXITING, FINAL,
                         INACTIVE_GRACE_RANGE, INACTIVE_GRACE_S, PREPARING, REQUESTED,
                         STOP_CLEAN, STOP_KILL, STOP_MODES, Drill)
from .model import Snapshot


def check_start(drill_id: str, bucket: str, downtime_s: float, snapshot: Snapshot,
                windows: Sequence[M.Window], drills: Sequence[Drill], run_active: bool,
                verdict: Optional[Tuple[bool, List[str], str]], budgets: Mapping[str, int],
                budget: str, concurrency: str, now: float, write_load: int = 0,
                stop: str = STOP_CLEAN, inactive_grace_s: float = INACTIVE_GRACE_S
                ) -> Tuple[Drill, M.Window]:
    """The drill and its window, or M.Refused: EBUSY when a drill is going on or ok-to-stop
    does not clear the bucket (check_enter's refusals), EINVAL on a bad downtime, write
    load, stop mode or inactive grace. verdict None: ok-to-stop not asked yet, the drill is
    only requested (its window is not to be added; settle_start decides it)."""
    if not 0 < downtime_s <= M.MAX_DURATION_S:
        raise M.Refused(errno.EINVAL, "downtime must be positive and at most %d days"
                        % (M.MAX_DURATION_S // 86400))
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
              phase=REQUESTED if verdict is None else ENTERING if load is None else PREPARING)
    return d, w


def settle_start(d: Drill, snapshot: Snapshot, windows: Sequence[M.Window],
                 drills: Sequence[Drill], run_active: bool,
                 verdict: Tuple[bool, List[str], str], now: float,
                 refusal: Optional[M.Refused] = None
                 ) -> Tuple[Drill, Tuple[M.Window, ...], Optional[M.Outcome]]:
    """A requested drill decided on the answers asked for it (`refusal`: the shell's own
    check of its write load failed): the drill begun (preparing or entering, its window
    added when entering) and no outcome yet, or the drill ended `aborted` with its `refused`
    outcome and nothing changed. Every check of `drill start` is made again on this
    snapshot."""
    others = [x for x in drills if x.id != d.id]
    try:
        if refusal is not None:
            raise refusal
        new, w = check_start(d.id, d.bucket, d.downtime_s, snapshot, windows, others,
                             run_active, verdict, d.budgets, d.budget, d.concurrency, now,
                             d.load.rate if d.load is not None else 0, d.stop,
                             d.inactive_grace_s)
    except M.Refused as e:
        why = "refused: %s" % e.message
        out = M.Outcome("drill %s" % d.id, False, M.REFUSED, "drill %s on %s %s" % (
            d.id, d.bucket, why), now, e.errno)
        return replace(d, phase=ABORTED, ended_at=now, reason=why), tuple(windows), out
    added = (w,) if new.phase == ENTERING else ()
    return new, tuple(windows) + added, None


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
    if d.phase not in (REQUESTED, PREPARING, ENTERING, DOWN):
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


def exit_started(d: Drill, run_id: str, now: float,
                 budgets: Optional[Mapping[str, int]] = None) -> Drill:
    """The drill's exit began as run `run_id`; `budgets` (per host, from the shell's budget
    rule at the exit's start) replace those computed when the drill started."""
    d = replace(d, phase=EXITING, exit_run=run_id, exit_at=now)
    return replace(d, budgets=dict(budgets)) if budgets else d
