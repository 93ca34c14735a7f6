"""Maintenance windows and `ceph recovery wait` in the mgr shell (the decisions are the core's:
ceph_recovery.maintenance).

No mgr_module import: handlers return (rc, stdout, stderr) and module.py wraps them, so they
run the same in unit tests with a recording `ceph`. Every handler runs in ceph-mgr's command
thread for this module, which carries every command of the module one at a time,
helper-report included: a handler that waited would make the helpers' own commands queue and
time out. So no handler asks a mon anything or sleeps. `enter` only records a requested
window; the tick asks ok-to-stop and opens or refuses it (settle.py). `exit` changes the
persisted windows and starts the controlled run; the tick acts.

`wait` answers at once with the state: ETIMEDOUT while a run, a window's enter/exit or a
drill is going on (the caller polls again, a few seconds later:
docs/examples/rolling-maintenance.sh), else the last outcome.
"""
from __future__ import annotations

import errno
from typing import Any, Dict, List, Optional, Tuple

from ceph_recovery import maintenance as M
from ceph_recovery.model import PHASE_ABORTED, PHASE_DONE

from . import drillcli, poolavail
from .answers import Answer
from .answers import answer as _answer
from .answers import bucket_name as _bucket
from .answers import err as _err
from .inputs import InputError
from .text import JSON_FORMATS, dump_json

STATUS_SCHEMA = 1          # `ceph recovery status -f json` document version (docs)


# ------------------------------------------------------------------ engine glue (tick)
def holds(engine: Any) -> frozenset:
    """The intent's holds plus the buckets held by maintenance windows."""
    return frozenset(engine.run.intent.holds) | M.held_buckets(engine.run.windows)


def _run_view(engine: Any) -> M.RunView:
    p = engine.run.progress
    return M.RunView(run_id=p.run_id, phase=p.phase, active=engine.active)


def tick(engine: Any, snap: Any, now: float) -> Tuple[Any, ...]:
    """Under the engine's lock: this tick's drill and window actions (after plan()'s)."""
    poolavail.observe(engine, snap, now)
    drill_actions = drillcli.tick(engine, snap, now)
    step = M.plan_windows(snap, engine.run.windows, _run_view(engine), now)
    engine.run.windows = list(step.windows)
    engine.maint_health = step.health
    for o in step.outcomes:
        engine.run.outcomes.append(o)
        engine.run.record(now, snap.epoch, {"kind": "maintenance", "reason": o.reason},
                          o.code)
    return drill_actions + step.actions


def after_tick(engine: Any, now: float) -> None:
    """Under the lock, at the end of a tick: what only begins between two ticks (a drill's
    exit run)."""
    drillcli.after_tick(engine, now)


def run_ended(engine: Any, snap: Any, now: float) -> None:
    """Under the lock, after a tick that found the run ended (done/aborted, its end carried
    out): its outcome, recorded once per run id (every later tick finds it ended too)."""
    p, scope = engine.run.progress, set(engine.run.intent.scope)
    what = "run %s" % p.run_id
    if p.phase not in (PHASE_DONE, PHASE_ABORTED) or any(o.what == what
                                                         for o in engine.run.outcomes):
        return
    down = [o.id for o in snap.osds if not o.up and (not scope or scope & set(o.crush_path)
                                                     or o.host in scope)]
    engine.run.outcomes.append(M.run_outcome(p.run_id, p.phase, down, now))


def windows_view(engine: Any, now: float) -> List[Dict[str, Any]]:
    out = []
    for w in engine.run.windows:
        d = M.window_to_dict(w)
        d["elapsed_s"] = round(now - w.entered_at, 1)
        d["overdue"] = now - w.entered_at > w.max_duration_s
        out.append(d)
    return out


# ------------------------------------------------------------------ commands
def enter(engine: Any, bucket: str, reason: Optional[str], max_duration: Optional[str],
          fmt: str, now: float) -> Answer:
    """Request a window: refused at once (EINVAL, ENOENT, EBUSY) on what the handler can
    check without a mon; else recorded as `requested`, and the next tick asks ok-to-stop for
    the whole bucket and opens it or refuses it (EBUSY, PGs named: `wait`, `maintenance
    ls`). Nothing is set or held before ok-to-stop cleared it."""
    try:
        secs = M.parse_duration(max_duration) if max_duration else M.DEFAULT_MAX_DURATION_S
        with engine.lock:
            name = _bucket(engine, bucket)
            w = M.check_enter(name, engine.snapshot, engine.run.windows, engine.active,
                              None, reason or "", secs, now)
            engine.run.windows = list(engine.run.windows) + [w]
            engine.run.record(now, engine.snapshot.epoch, {
                "kind": "command", "bucket": name, "reason": "maintenance enter %s (%s): "
                "requested, ok-to-stop asked on the next tick" % (name, reason or "-")},
                "accepted")
    except InputError as e:
        return _err(e.errno, e.message)
    except M.Refused as e:
        return _err(e.errno, "maintenance enter %s refused: %s" % (bucket, e.message))
    except ValueError as e:
        return _err(errno.EINVAL, "maintenance enter: %s" % e)
    engine.wake()
    return _answer(M.window_to_dict(w), "maintenance enter %s: requested; the next tick asks "
                   "ok-to-stop for %s and then holds and stops them, or refuses (EBUSY). Not "
                   "in maintenance yet: `ceph recovery wait` answers 0 once it is, "
                   "`ceph recovery maintenance ls` shows it" % (
                       name, ", ".join("osd.%d" % i for i in w.osds)), fmt)


def exit_(engine: Any, bucket: str, budget: Optional[str], concurrency: Optional[str],
          fmt: str, now: float) -> Answer:
    """End a window by a controlled start of its bucket; noout restored at the end. One OSD
    at a time per host unless --concurrency says otherwise: a planned exit has time, and its
    OSDs' peaks are what the next window's exit learns from."""
    try:
        with engine.lock:
            name = _bucket(engine, bucket)
            req = M.find(engine.run.windows, name)
            if req is not None and req.phase == M.REQUESTED:
                return _cancel(engine, req, fmt, now)
            w = M.check_exit(name, engine.run.windows, engine.active)
            intent = engine.start(budget, [name], "1" if concurrency is None else concurrency,
                                  now)
            engine.begin(intent, now)
            engine.run.windows = [M.exiting(x, intent.run_id) if x is w else x
                                  for x in engine.run.windows]
    except InputError as e:
        return _err(e.errno, e.message)
    except M.Refused as e:
        return _err(e.errno, "maintenance exit %s refused: %s" % (bucket, e.message))
    engine.wake()
    return _answer({"bucket": name, "run_id": intent.run_id, "accepted": True},
                   "maintenance exit %s: accepted; controlled start run %s, noout restored "
                   "when every OSD is up" % (name, intent.run_id), fmt)


def _cancel(engine: Any, w: Any, fmt: str, now: float) -> Answer:
    """Under the lock: `exit` of a requested window withdraws the request (nothing was set)."""
    why = "maintenance enter %s withdrawn by maintenance exit before ok-to-stop was " \
        "asked: nothing was changed" % w.bucket
    engine.run.windows = [x for x in engine.run.windows if x is not w]
    engine.run.outcomes.append(M.Outcome("maintenance enter %s" % w.bucket, False, "aborted",
                                         why, now))
    engine.run.record(now, engine.snapshot.epoch if engine.snapshot else 0, {
        "kind": "command", "bucket": w.bucket, "reason": why}, "accepted")
    engine.wake()
    return _answer({"bucket": w.bucket, "withdrawn": True}, why, fmt)


def ls(engine: Any, fmt: str, now: float) -> Answer:
    """The windows, and the latest refused enter of each bucket without a window."""
    with engine.lock:
        rows = windows_view(engine, now)
        refused = [M.outcome_to_dict(o) for o in M.refusals(engine.run.outcomes,
                                                             engine.run.windows)]
    if fmt in JSON_FORMATS:
        return 0, dump_json({"windows": rows, "refused": refused}, fmt), ""
    if not rows and not refused:
        return 0, "no maintenance window", ""
    return 0, "\n".join(["%s: %s for %s (max %s)%s, osds %s, reason: %s%s" % (
        r["bucket"], r["phase"], M.fmt_duration(r["elapsed_s"]),
        M.fmt_duration(r["max_duration_s"]), " OVERDUE" if r["overdue"] else "",
        ",".join(str(i) for i in r["osds"]), r["reason"] or "-",
        "; last exit: " + r["note"] if r["note"] else "") for r in rows] + [
        "%s: refused %s ago: %s" % (o["what"][len("maintenance enter "):],
                                    M.fmt_duration(now - o["at"]), o["reason"])
        for o in refused]), ""


def _busy(engine: Any) -> List[str]:
    what = ["run %s (%s)" % (engine.run.progress.run_id, engine.run.progress.phase)] \
        if engine.active else []
    verb = {M.REQUESTED: "enter (requested, ok-to-stop not asked yet)",
            M.ENTERING: "enter", M.EXITING: "exit"}
    return what + ["maintenance %s %s" % (verb[w.phase], w.bucket)
                   for w in M.busy(engine.run.windows)] + drillcli.busy(engine)


def wait(engine: Any, timeout: Optional[float], fmt: str) -> Answer:
    """The state at once, never blocking: ETIMEDOUT while a run, a window's enter/exit or a
    drill is going on (poll again); then the last outcome: 0, or its errno (ECANCELED
    aborted, EIO failed, EBUSY/EINVAL/EEXIST refused) and reason. `timeout` is accepted and
    not used: an answer never waits."""
    with engine.lock:
        going = _busy(engine)
        last = engine.run.outcomes[-1] if engine.run.outcomes else None
    if going:
        return _err(errno.ETIMEDOUT, "still going: %s" % "; ".join(going))
    if last is None:
        return _answer({"ok": True, "outcome": None}, "nothing to wait for", fmt)
    if last.ok:
        return _answer({"ok": True, "outcome": M.outcome_to_dict(last)}, last.reason, fmt)
    return -last.errno, "", "recovery: %s %s: %s" % (last.what, last.code, last.reason)


def progress_events(engine: Any, now: float) -> Dict[str, Tuple[str, float]]:
    """One `ceph -s` progress event per window: id -> (message, fraction of max-duration)."""
    with engine.lock:
        return {"recovery-maintenance-%s" % w.bucket: (
            "Maintenance of %s (%s, %s of %s%s)" % (
                w.bucket, w.phase, M.fmt_duration(now - w.entered_at),
                M.fmt_duration(w.max_duration_s), ": " + w.reason if w.reason else ""),
            min(1.0, (now - w.entered_at) / w.max_duration_s))
            for w in engine.run.windows}
