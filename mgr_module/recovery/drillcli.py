"""Disaster-recovery drills in the mgr shell: `ceph recovery drill start|abort|budget|report`
and the drill's part of the tick (the decisions are the core's: ceph_recovery.drill).

No mgr_module import: handlers return (rc, stdout, stderr); maintcli.py registers them.
Like maintenance enter, `drill start` asks no mon: it validates and records a requested
drill; the next tick asks ok-to-stop for the bucket's up OSDs together (and checks a write
load's pool) and begins or refuses it (settle.py); the tick acts. The drill's window is an
ordinary maintenance window (reason "drill <id>"), so the enter, the hold and the exit are the
maintenance code's.
"""
from __future__ import annotations

import errno
import json
from dataclasses import replace
from typing import Any, Dict, Mapping, Optional, Tuple

from ceph_recovery import drill as D
from ceph_recovery import drillload as L
from ceph_recovery import maintenance as M

from . import core, drillload
from .inputs import InputError
from .answers import Answer
from .answers import answer as _answer
from .answers import bucket_name as _bucket
from .answers import err as _err


# ------------------------------------------------------------------ observations (module.py)
def observed(health: Any, pg_dump: Any) -> D.Observed:
    """Overall health status from mgr get("health") ({"json": text}) and the degraded object
    count from get("pg_dump") (either shape); unknown values read as OK / 0."""
    status = "HEALTH_OK"
    try:
        h = json.loads(health["json"]) if isinstance(health, Mapping) else {}
        status = str(h.get("status") or status)
    except (KeyError, TypeError, ValueError):
        pass
    degraded = 0
    try:
        pg_map = pg_dump.get("pg_map", pg_dump)   # `ceph pg dump` wraps it, mgr's get() not
        degraded = int(pg_map["pg_stats_sum"]["stat_sum"].get("num_objects_degraded", 0))
    except (KeyError, TypeError, ValueError, AttributeError):
        pass
    return D.Observed(health=status, degraded_objects=degraded)


# ------------------------------------------------------------------ the tick
def tick(engine: Any, snap: Any, now: float) -> Tuple[Any, ...]:
    """Under the engine's lock, before the windows' tick: each going drill's actions; starts
    (exit) or aborts the run it asks for."""
    drills = list(getattr(engine.run, "drills", []))
    seen = getattr(engine, "observed", None) or D.Observed()
    actions: list = []
    going = None
    for i, d in enumerate(drills):
        if d.phase in D.FINAL:
            continue
        step = D.plan_drill(snap, d, engine.run.windows, replace(seen, load=_seen(engine, d)),
                            now)
        engine.run.windows = list(step.windows)
        new = step.drill
        going = (new.id, new.load, step.load_order)
        if step.start_exit:
            engine.drill_exit_due = new.id
        if step.abort_run and engine.active and \
                engine.run.progress.run_id == new.exit_run:
            engine.set_mode("abort", now)
        if step.outcome is not None:
            engine.run.outcomes.append(step.outcome)
            engine.run.record(now, snap.epoch, {"kind": "drill", "reason": step.outcome.reason},
                              step.outcome.code)
        elif new.phase == D.ABORTING and d.phase != D.ABORTING:
            engine.run.record(now, snap.epoch, {"kind": "drill", "reason": "drill %s aborting:"
                                                " %s" % (new.id, new.reason)}, "noted")
        drills[i] = new
        actions.extend(step.actions)
    engine.run.drills = drills
    drillload.apply(engine, *(going or ("", None, None)))
    return tuple(actions)


def _seen(engine: Any, d: D.Drill) -> Any:
    """The drill's writer's counters (None when it has no writer, or another drill's)."""
    w = getattr(engine, "drill_writer", None)
    if d.load is None or w is None or w.load.pool != d.load.pool:
        return None
    return w.take()


def after_tick(engine: Any, now: float) -> None:
    """Under the lock, once the tick's own progress is stored: the exit a drill asked for
    this tick begins here, as an operator's `maintenance exit` between two ticks would (a
    run begun inside the tick would be overwritten by the progress plan() returned)."""
    due, engine.drill_exit_due = getattr(engine, "drill_exit_due", None), None
    drills = list(getattr(engine.run, "drills", []))
    for i, d in enumerate(drills):
        if d.id == due and d.phase == D.DOWN:
            drills[i] = _start_exit(engine, d, now)
            engine.wake()
    engine.run.drills = drills


def _start_exit(engine: Any, d: D.Drill, now: float) -> D.Drill:
    """The drill's window exit: a controlled start of the bucket under the drill's budget.
    Refused (a run is active, bad budget) -> the drill aborts on the next tick."""
    try:
        w = M.check_exit(d.bucket, engine.run.windows, engine.active)
        intent = engine.start(d.budget or None, [d.bucket], d.concurrency or None, now)
        engine.begin(intent, now)
    except (InputError, M.Refused) as e:
        return replace(d, abort_requested="exit refused: %s" % getattr(e, "message", e))
    engine.run.windows = [M.exiting(x, intent.run_id) if x is w else x
                          for x in engine.run.windows]
    # the budgets the exit starts under: a host's memory may have changed while it was down
    # (a cgroup limit), and a fraction or auto budget follows it
    return D.exit_started(d, intent.run_id, now, _host_budgets(engine, intent))


def starting(engine: Any) -> frozenset:
    """OSDs an aborting drill is starting (their start instructions need no run)."""
    return frozenset(i for d in getattr(engine.run, "drills", []) if d.phase == D.ABORTING
                     for i in d.osds)


def busy(engine: Any) -> list:
    return ["drill %s %s (%s)" % (d.id, d.bucket, d.phase)
            for d in getattr(engine.run, "drills", []) if d.phase not in D.FINAL]


# ------------------------------------------------------------------ commands
def _budgets(engine: Any, budget: Optional[str], bucket: str, concurrency: Optional[str],
             now: float) -> Dict[str, int]:
    """Per-host budget bytes of the drill's exit (validates --budget/--concurrency)."""
    return _host_budgets(engine, engine.prepare(budget, [bucket], concurrency, now))


def _host_budgets(engine: Any, intent: Any) -> Dict[str, int]:
    """Per-host budget bytes of `intent` on the hosts' memory as the last snapshot shows it."""
    out = {}
    for h in engine.snapshot.hosts:
        b = core.budget_bytes(intent.budget, h)
        if b is not None:
            out[h.name] = int(b)
    return out


def _check_load(write_load: Optional[int]) -> int:
    """0 without a write load; InputError EINVAL outside 1..MAX_RATE objects/s. Whether the
    drill may remove its pool and whether its name is free needs the mons: the tick checks
    them before the drill begins (settle.load_refusal)."""
    if write_load is None:
        return 0
    if isinstance(write_load, bool) or not isinstance(write_load, int) \
            or not 1 <= write_load <= L.MAX_RATE:
        raise InputError(errno.EINVAL, "--write-load must be 1 to %d objects/s" % L.MAX_RATE)
    return int(write_load)


def start(engine: Any, fail: str, downtime: str, budget: Optional[str],
          concurrency: Optional[str], fmt: str, now: float,
          write_load: Optional[int] = None, stop: Optional[str] = None,
          inactive_grace: Optional[str] = None) -> Answer:
    """Request a drill: refused at once on what needs no mon (EINVAL, ENOENT, EBUSY); else
    recorded as `requested`, and the next tick asks ok-to-stop for the bucket and begins it
    or refuses it (EBUSY, PGs named: `wait`, `drill report`). Nothing is set before."""
    try:
        secs = M.parse_duration(downtime)
        grace = D.INACTIVE_GRACE_S if inactive_grace is None else M.parse_duration(
            inactive_grace)
        rate = _check_load(write_load)
        with engine.lock:
            name = _bucket(engine, fail)
            budgets = _budgets(engine, budget, name, concurrency, now)
            drills = list(getattr(engine.run, "drills", []))
            d, _w = D.check_start("d%d" % int(now), name, secs, engine.snapshot,
                                  engine.run.windows, drills, engine.active, None, budgets,
                                  budget or "", "" if concurrency is None else
                                  str(concurrency), now, rate, stop or D.STOP_CLEAN, grace)
            engine.run.drills = (drills + [d])[-D.KEEP_DRILLS:]
            engine.run.record(now, engine.snapshot.epoch, {
                "kind": "command", "bucket": name, "reason": "drill start %s: fail %s for %s:"
                " requested, ok-to-stop asked on the next tick" % (
                    d.id, name, M.fmt_duration(secs))}, "accepted")
    except InputError as e:
        return _err(e.errno, e.message)
    except M.Refused as e:
        return _err(e.errno, "drill start --fail %s refused: %s" % (fail, e.message))
    except ValueError as e:
        return _err(errno.EINVAL, "drill start: %s" % e)
    engine.wake()
    load = "" if d.load is None else "; writing %d objects/s to pool %s (created first)" % (
        d.load.rate, d.load.pool)
    return _answer(D.drill_to_dict(d), "drill %s: requested; once ok-to-stop clears %s (next "
                   "tick): %s %s for %s, then a controlled start%s. Refused (EBUSY) "
                   "otherwise: `ceph recovery wait`, `ceph recovery drill report` show it" % (
                       d.id, name, "killing (SIGKILL)" if d.stop == D.STOP_KILL
                       else "stopping", ", ".join("osd.%d" % i for i in d.osds),
                       M.fmt_duration(secs), load), fmt)


def abort(engine: Any, fmt: str, now: float) -> Answer:
    """The operator's abort: the next tick brings everything back at once."""
    try:
        with engine.lock:
            drills = list(getattr(engine.run, "drills", []))
            d = D.check_abort(drills, "operator abort")
            engine.run.drills = [d if x.id == d.id else x for x in drills]
            engine.run.record(now, engine.snapshot.epoch if engine.snapshot else 0, {
                "kind": "command", "reason": "drill abort %s" % d.id}, "accepted")
    except M.Refused as e:
        return _err(e.errno, "drill abort: %s" % e.message)
    engine.wake()
    return _answer({"id": d.id, "aborting": True}, "drill %s: abort accepted; starting every "
                   "OSD of %s, noout restored once all are up" % (d.id, d.bucket), fmt)


def budget(engine: Any, budget_text: str, fmt: str, now: float) -> Answer:
    """A new budget for the going drill's exit (before the exit begins): EINVAL on a bad
    budget, ENOENT without a drill, EBUSY once the exit began; nothing changes on an error."""
    try:
        with engine.lock:
            drills = list(getattr(engine.run, "drills", []))
            g = D.going(drills)
            budgets = _budgets(engine, budget_text, g.bucket, g.concurrency or None, now)
            d = D.check_budget(drills, budget_text, budgets)
            engine.run.drills = [d if x.id == d.id else x for x in drills]
            engine.run.record(now, engine.snapshot.epoch if engine.snapshot else 0, {
                "kind": "command", "reason": "drill budget %s: %s" % (d.id, budget_text)},
                "accepted")
    except (InputError, M.Refused) as e:
        return _err(e.errno, "drill budget: %s" % e.message)
    return _answer(D.drill_to_dict(d), "drill %s: exit budget %s (%s)" % (
        d.id, budget_text, ", ".join("%s %d MiB" % (h, b >> 20)
                                     for h, b in sorted(d.budgets.items()))), fmt)


def report(engine: Any, drill_id: Optional[str], fmt: str) -> Answer:
    try:
        with engine.lock:
            d = D.find(list(getattr(engine.run, "drills", [])), drill_id)
    except M.Refused as e:
        return _err(e.errno, "drill report: %s" % e.message)
    return _answer(D.report(d), D.summary_line(d), fmt)
