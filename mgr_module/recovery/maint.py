"""Maintenance windows and `ceph recovery wait` in the mgr shell (the decisions are the core's:
ceph_recovery.maintenance).

No mgr_module import: handlers return (rc, stdout, stderr) and module.py wraps them, so they
run the same in unit tests with a recording `ceph`. Like every command, enter/exit only change
the persisted windows (and, for exit, start the controlled run) under the engine's lock and
wake the tick; only the tick acts. The one exception is the ok-to-stop query of `enter`: a
read-only question asked without the lock, whose answer decides whether the window is opened.

`wait` runs in ceph-mgr's command thread for this module, which carries every command of the
module one at a time, helper-report included. While a wait blocks, the helpers' reports queue
behind it; a helper whose command times out (5 s by default) misses its instructions (and
Pacific's librados client can crash on a reply that comes after its timeout). So one call
blocks at most WAIT_MAX_S seconds, well under the helper's timeout, and answers ETIMEDOUT while the run or window is
still going; scripts call it in a loop (docs/examples/rolling-maintenance.sh).
"""
from __future__ import annotations

import errno
import json
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from ceph_recovery import maintenance as M
from ceph_recovery.model import PHASE_ABORTED, PHASE_DONE

from .inputs import InputError, check_buckets

STATUS_SCHEMA = 1          # `ceph recovery status -f json` document version (docs)
WAIT_DEFAULT_S = 2.0
WAIT_MAX_S = 2.0
WAIT_POLL_S = 0.5
JSON_FORMATS = ("json", "json-pretty")
Answer = Tuple[int, str, str]


# ------------------------------------------------------------------ engine glue (tick)
def holds(engine: Any) -> frozenset:
    """The intent's holds plus the buckets held by maintenance windows."""
    return frozenset(engine.run.intent.holds) | M.held_buckets(engine.run.windows)


def _run_view(engine: Any) -> M.RunView:
    p = engine.run.progress
    return M.RunView(run_id=p.run_id, phase=p.phase, active=engine.active)


def tick(engine: Any, snap: Any, now: float) -> Tuple[Any, ...]:
    """Under the engine's lock: this tick's drill and window actions (after plan()'s)."""
    from . import drillcli         # drillcli builds on this module's command helpers
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
    from . import drillcli
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
def _err(code: int, msg: str) -> Answer:
    return -code, "", "recovery: " + msg


def _answer(obj: Dict[str, Any], line: str, fmt: str) -> Answer:
    if fmt in JSON_FORMATS:
        return 0, json.dumps(obj, sort_keys=True, default=str), ""
    return 0, line, ""


def _bucket(engine: Any, bucket: str) -> str:
    if engine.crush is None:
        raise InputError(errno.EAGAIN, "no OSD map seen yet, retry in a few seconds")
    (name,) = check_buckets([bucket], engine.crush.buckets())
    return name


def enter(engine: Any, bucket: str, reason: Optional[str], max_duration: Optional[str],
          fmt: str, now: float) -> Answer:
    """Open a window: refused (EBUSY, PGs named) unless ok-to-stop clears the whole bucket."""
    try:
        with engine.lock:
            name = _bucket(engine, bucket)
            secs = M.parse_duration(max_duration) if max_duration else \
                M.DEFAULT_MAX_DURATION_S
            up = [o.id for o in M.under(name, engine.snapshot) if o.up]
        verdict = bucket_verdict(engine, up)
        with engine.lock:
            w = M.check_enter(name, engine.snapshot, engine.run.windows, engine.active,
                              verdict, reason or "", secs, now)
            engine.run.windows = list(engine.run.windows) + [w]
            engine.run.record(now, engine.snapshot.epoch, {
                "kind": "command", "bucket": name, "reason": "maintenance enter %s (%s)"
                % (name, reason or "-")}, "accepted")
    except InputError as e:
        return _err(e.errno, e.message)
    except M.Refused as e:
        return _err(e.errno, "maintenance enter %s refused: %s" % (bucket, e.message))
    except ValueError as e:
        return _err(errno.EINVAL, "maintenance enter: %s" % e)
    engine.wake()
    return _answer(M.window_to_dict(w), "maintenance enter %s: accepted; holding and "
                   "stopping %s" % (name, ", ".join("osd.%d" % i for i in w.osds)), fmt)


def bucket_verdict(engine: Any, up: List[int]) -> Any:
    """Ceph's ok-to-stop on every up OSD of a bucket together (not one by one: two OSDs of
    one PG may each be cleared alone), asked outside the engine lock (a mon command)."""
    rc, out = 0, {"ok_to_stop": True}
    if up:
        rc, text, _e = engine.executor.mon({"prefix": "osd ok-to-stop", "format": "json",
                                            "ids": [str(i) for i in up]})
        out = _loads(text)
    return M.ok_to_stop_verdict(rc, out)


def _loads(text: str) -> Any:
    try:
        return json.loads(text) if text and text.strip() else None
    except ValueError:
        return None


def exit_(engine: Any, bucket: str, budget: Optional[str], concurrency: Optional[str],
          fmt: str, now: float) -> Answer:
    """End a window by a controlled start of its bucket; noout restored at the end. One OSD
    at a time per host unless --concurrency says otherwise: a planned exit has time, and its
    OSDs' peaks are what the next window's exit learns from."""
    try:
        with engine.lock:
            name = _bucket(engine, bucket)
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


def ls(engine: Any, fmt: str, now: float) -> Answer:
    with engine.lock:
        rows = windows_view(engine, now)
    if fmt in JSON_FORMATS:
        return 0, json.dumps({"windows": rows}, sort_keys=True), ""
    if not rows:
        return 0, "no maintenance window", ""
    return 0, "\n".join("%s: %s for %s (max %s)%s, osds %s, reason: %s%s" % (
        r["bucket"], r["phase"], M.fmt_duration(r["elapsed_s"]),
        M.fmt_duration(r["max_duration_s"]), " OVERDUE" if r["overdue"] else "",
        ",".join(str(i) for i in r["osds"]), r["reason"] or "-",
        "; last exit: " + r["note"] if r["note"] else "") for r in rows), ""


def _busy(engine: Any) -> List[str]:
    from . import drillcli
    what = ["run %s (%s)" % (engine.run.progress.run_id, engine.run.progress.phase)] \
        if engine.active else []
    return what + ["maintenance %s %s" % (w.phase[:-3], w.bucket)
                   for w in M.busy(engine.run.windows)] + drillcli.busy(engine)


def wait(engine: Any, timeout: Optional[float], fmt: str,
         clock: Callable[[], float] = time.time,
         sleep: Callable[[float], None] = time.sleep) -> Answer:
    """Block (at most WAIT_MAX_S) until no run and no window enter/exit is going on; then
    the last outcome: 0, or its errno (ECANCELED aborted, EIO failed) and reason."""
    t = WAIT_DEFAULT_S if timeout is None else float(timeout)
    if not 0 < t <= WAIT_MAX_S:
        return _err(errno.EINVAL, "wait --timeout must be in (0, %g] seconds: ceph-mgr runs "
                    "this module's commands one at a time; call wait again while it answers "
                    "ETIMEDOUT" % WAIT_MAX_S)
    deadline = clock() + t
    while True:
        with engine.lock:
            going = _busy(engine)
            last = engine.run.outcomes[-1] if engine.run.outcomes else None
        if not going:
            break
        if clock() >= deadline:
            return _err(errno.ETIMEDOUT, "still going after %gs: %s" % (t, "; ".join(going)))
        sleep(WAIT_POLL_S)
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
