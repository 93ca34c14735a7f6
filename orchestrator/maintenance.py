"""Maintenance windows: the pure decisions behind `ceph recovery maintenance enter|exit`.

A window takes one CRUSH bucket out of service on purpose and brings it back under the
controlled start. Its life:

  requested `enter` was accepted as a request: nothing is set and nothing is held. The mgr
            shell asks `osd ok-to-stop` for the bucket's up OSDs together in its next tick
            (a command handler never waits for a mon), then settle_enter() either opens the
            window (entering) or drops it with a `refused` outcome (EBUSY, the PGs named),
            which `ceph recovery wait` and `maintenance ls` report. `maintenance exit` of a
            requested window cancels it.
  entering  the bucket's `noout` (osd set-group noout <bucket>) is set, and its hold: the
            bucket is in `held_buckets(windows)`, which the shell adds to the intent's holds,
            so plan() sets `osd set-group noup <bucket>` (gate 2) and the helpers' boot gate
            refuses autostart of its OSDs (gate 1, also across a reboot of its hosts). Only
            once both flags are in the OSD map are its OSDs stopped (StopOsd: the helper
            re-checks ok-to-stop before each stop). Stops are not repeated within STOP_RETRY_S.
  open      every OSD of the bucket is down and stopped. `RECOVERY_MAINTENANCE` is raised only
            past the window's max duration (Ceph's health checks have no informational
            severity: any check makes HEALTH_WARN; before that the window shows in
            `ceph -s` as a progress event and in `ceph recovery maintenance ls`).
  exiting   the bucket is no longer held by the window: a controlled run with scope = the
            bucket (started by the shell with the exit, run id `exit_run`) holds its OSDs per
            OSD and starts them one at a time within the budget. When that run is done with
            every OSD of the bucket up, `noout` is unset (if the window set it), and once the
            map no longer shows it the window closes. If the run is aborted or ends with OSDs
            still down, the window goes back to `entering`: held and noout as at enter, and
            any OSD the exit had started is stopped again (the helper's ok-to-stop guards
            each stop), so an aborted exit leaves no half state behind. That failure stays
            the window's last outcome (`note`).

Level triggered like plan(): every tick re-decides from the snapshot and the persisted windows,
so an mgr failover mid-enter or mid-exit costs one tick and repeats nothing that took effect.
Pure: no I/O, no clock (`now` is an argument).

This module has the commands' checks and the tick; the window's state and its persisted form
are in maintstate.py, and it re-exports them.
"""
from __future__ import annotations

import errno
import math
from dataclasses import replace
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from .actions import Action, SetGroupFlag, StopOsd, UnsetGroupFlag
from .model import PHASE_ABORTED, PHASE_DONE, PROC_RUNNING, HealthCheck, OsdState, Snapshot
from .maintstate import (CHECK, DEFAULT_MAX_DURATION_S, ENTERING, EXITING, MAX_DURATION_S,
                         MAX_REASON_LEN, NOOUT, NOUP, OPEN, PHASES, REFUSED, REQUESTED,
                         STOP_RETRY_S, Outcome, Refused, RunView, Step, Window, outcome_from_dict,
                         outcome_to_dict, window_from_dict, window_to_dict)


# ------------------------------------------------------------------ parsing, views
def parse_duration(text: Any) -> float:
    """'4h', '90m', '30s', '3600' -> seconds, finite, in (0, MAX_DURATION_S]; ValueError
    otherwise (inf, nan, negative or absurdly large durations included)."""
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):
        raise ValueError("duration must be a number with an optional s/m/h/d unit, got %s"
                         % type(text).__name__)
    s = str(text).strip().lower()[:64]
    mult = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}.get(s[-1:], None)
    num = s[:-1] if mult is not None else s
    try:
        v = float(num) * (mult or 1.0)
    except ValueError:
        raise ValueError("duration %r: expected a number with an optional s/m/h/d unit"
                         % (str(text)[:64],))
    if not math.isfinite(v):
        raise ValueError("duration %r must be a finite number" % (str(text)[:64],))
    if not v > 0:
        raise ValueError("duration %r must be positive" % (str(text)[:64],))
    if v > MAX_DURATION_S:
        raise ValueError("duration %r is longer than %d days" % (str(text)[:64],
                                                                 MAX_DURATION_S // 86400))
    return v


def fmt_duration(s: float) -> str:
    s = int(max(0, s))
    if s >= 3600:
        return "%dh%02dm" % (s // 3600, s % 3600 // 60)
    if s >= 60:
        return "%dm%02ds" % (s // 60, s % 60)
    return "%ds" % s


def under(bucket: str, snapshot: Snapshot) -> List[OsdState]:
    """The OSDs whose CRUSH path (or host) names `bucket`, by id."""
    return sorted((o for o in snapshot.osds if bucket in o.crush_path or o.host == bucket),
                  key=lambda o: o.id)


def held_buckets(windows: Sequence[Window]) -> FrozenSet[str]:
    """Buckets the windows hold (noup + boot gate): entering and open ones. An exiting
    window's run holds its OSDs per OSD instead."""
    return frozenset(w.bucket for w in windows if w.phase in (ENTERING, OPEN))


def busy(windows: Sequence[Window]) -> List[Window]:
    """Windows that are on their way somewhere (`ceph recovery wait` waits for them)."""
    return [w for w in windows if w.phase in (REQUESTED, ENTERING, EXITING)]


def ok_to_stop_verdict(rc: int, answer: Any) -> Tuple[bool, List[str], str]:
    """(ok, PGs that would become inactive, why) from `osd ok-to-stop <ids> -f json`; rc EBUSY
    still carries the JSON verdict. No JSON verdict -> not ok."""
    if isinstance(answer, dict) and "ok_to_stop" in answer:
        pgs = sorted(str(p) for p in answer.get("bad_become_inactive") or [])
        ok = bool(answer["ok_to_stop"]) and rc == 0
        why = "ok-to-stop" if ok else (
            "%d PG(s) would become inactive: %s" % (len(pgs), " ".join(pgs)) if pgs
            else "ok-to-stop refused (rc %d)" % rc)
        return ok, pgs, why
    return False, [], "ok-to-stop gave no verdict (rc %d)" % rc


# ------------------------------------------------------------------ commands
def check_enter(bucket: str, snapshot: Snapshot, windows: Sequence[Window], run_active: bool,
                verdict: Optional[Tuple[bool, List[str], str]], reason: str,
                max_duration_s: float, now: float) -> Window:
    """The window `enter` opens, or Refused (EBUSY/EINVAL) with why. `verdict` is the
    ok-to-stop answer for every up OSD of the bucket together (ok_to_stop_verdict); None:
    not asked yet, and the window is only requested (settle_enter decides it)."""
    osds = under(bucket, snapshot)
    if not osds:
        raise Refused(errno.EINVAL, "bucket %s holds no OSD" % bucket)
    if not 0 < max_duration_s <= MAX_DURATION_S:
        raise Refused(errno.EINVAL, "max-duration must be positive and at most %d days"
                      % (MAX_DURATION_S // 86400))
    if not isinstance(reason, str) or len(reason) > MAX_REASON_LEN:
        raise Refused(errno.EINVAL, "reason must be text of at most %d characters"
                      % MAX_REASON_LEN)
    for w in windows:
        mine = {o.id for o in osds}
        if w.bucket == bucket or mine & set(w.osds):
            raise Refused(errno.EBUSY, "bucket %s overlaps the maintenance window of %s (%s)"
                          % (bucket, w.bucket, w.phase))
    if run_active:
        raise Refused(errno.EBUSY, "a controlled recovery run is active: wait for it or "
                      "abort it first")
    if verdict is not None:
        ok, _pgs, why = verdict
        if not ok and any(o.up for o in osds):
            raise Refused(errno.EBUSY, "stopping %s (%s) is not safe: %s" % (
                bucket, ", ".join("osd.%d" % o.id for o in osds if o.up), why))
    noout = NOOUT in (snapshot.bucket_flags.get(bucket) or ())
    return Window(bucket=bucket, reason=reason, max_duration_s=float(max_duration_s),
                  entered_at=now, phase=ENTERING if verdict is not None else REQUESTED,
                  osds=tuple(o.id for o in osds), noout_before=noout)


def settle_enter(w: Window, snapshot: Snapshot, windows: Sequence[Window], run_active: bool,
                 verdict: Tuple[bool, List[str], str], now: float
                 ) -> Tuple[Tuple[Window, ...], Optional[Outcome]]:
    """A requested window decided on the ok-to-stop answer asked for it: the windows with
    it entering (no outcome yet: the enter's outcome comes once it is open), or without it
    and its `refused` outcome. Every check of `enter` is made again, on this snapshot: the
    cluster and the other commands may have changed since the request."""
    others = [x for x in windows if x is not w]
    try:
        new = check_enter(w.bucket, snapshot, others, run_active, verdict, w.reason,
                          w.max_duration_s, now)
    except Refused as e:
        return tuple(others), Outcome("maintenance enter %s" % w.bucket, False, REFUSED,
                                      "maintenance enter %s refused: %s" % (w.bucket,
                                                                            e.message),
                                      now, e.errno)
    return tuple(new if x is w else x for x in windows), None


def refusals(outcomes: Sequence[Outcome], windows: Sequence[Window]) -> List[Outcome]:
    """The latest refused enter of each bucket that has no window now (`maintenance ls`
    shows them; a later enter of the bucket replaces its refusal)."""
    latest: Dict[str, Outcome] = {}
    prefix = "maintenance enter "
    for o in outcomes:
        if o.what.startswith(prefix):
            latest[o.what[len(prefix):]] = o
    have = {w.bucket for w in windows}
    return [o for b, o in sorted(latest.items()) if o.code == REFUSED and b not in have]


def check_exit(bucket: str, windows: Sequence[Window], run_active: bool) -> Window:
    """The window `exit` ends, or Refused: ENOENT (no window), EBUSY (already exiting, or a
    run is active)."""
    w = find(windows, bucket)
    if w is None:
        raise Refused(errno.ENOENT, "no maintenance window on %s" % bucket)
    if w.phase == EXITING:
        raise Refused(errno.EBUSY, "the window on %s is already exiting (run %s)"
                      % (bucket, w.exit_run))
    if run_active:
        raise Refused(errno.EBUSY, "a controlled recovery run is active: wait for it or "
                      "abort it first")
    return w


def exiting(w: Window, run_id: str) -> Window:
    return replace(w, phase=EXITING, exit_run=run_id, note="")


def find(windows: Sequence[Window], bucket: str) -> Optional[Window]:
    for w in windows:
        if w.bucket == bucket:
            return w
    return None


# ------------------------------------------------------------------ the tick
def plan_windows(snapshot: Snapshot, windows: Sequence[Window], run: RunView,
                 now: float) -> Step:
    """This tick's ordered actions for every window, the windows after it (closed ones
    dropped), RECOVERY_MAINTENANCE and the outcomes reached this tick."""
    actions: List[Action] = []
    kept: List[Window] = []
    outcomes: List[Outcome] = []
    for w in sorted(windows, key=lambda x: x.bucket):
        step = {REQUESTED: _requested, ENTERING: _entering, OPEN: _open,
                EXITING: _exiting}[w.phase]
        new, acts, out = step(w, snapshot, run, now)
        actions.extend(acts)
        outcomes.extend(out)
        if new is not None:
            kept.append(new)
    return Step(tuple(actions), tuple(kept), _health(kept, now), tuple(outcomes))


def _flags(w: Window, snapshot: Snapshot) -> FrozenSet[str]:
    return frozenset(snapshot.bucket_flags.get(w.bucket) or ())


def _set_noout(w: Window, snapshot: Snapshot) -> List[Action]:
    if NOOUT in _flags(w, snapshot):
        return []
    return [SetGroupFlag(bucket=w.bucket, flag=NOOUT, reason="maintenance of %s: keep its "
                         "data in place while it is down" % w.bucket)]


def _entering(w: Window, snap: Snapshot, run: RunView, now: float):
    acts = _set_noout(w, snap)
    flags = _flags(w, snap)
    if acts or NOUP not in flags:
        return w, acts, ()          # stop nothing before noout and the hold are in the map
    stops = dict(w.stops)
    running = [o for o in under(w.bucket, snap) if o.up or o.process == PROC_RUNNING]
    for o in running:
        if now - stops.get(o.id, float("-inf")) >= STOP_RETRY_S:
            acts.append(StopOsd(osd=o.id, host=o.host, kill=w.kill,
                                reason="maintenance of %s%s%s" % (
                                    w.bucket, ": " + w.reason if w.reason else "",
                                    " (SIGKILL: a power loss)" if w.kill else "")))
            stops[o.id] = now
    if running:
        return replace(w, stops=stops), acts, ()
    n = len(under(w.bucket, snap))
    # back in maintenance after a failed exit: that failure stays the outcome to report
    out = () if w.note else (Outcome("maintenance enter %s" % w.bucket, True, "done",
                                     "%d OSD(s) of %s down and held" % (n, w.bucket), now),)
    return replace(w, phase=OPEN, opened_at=now, stops={}), acts, out


def _requested(w: Window, snap: Snapshot, run: RunView, now: float):
    return w, (), ()                # the shell settles it (settle_enter): nothing set yet


def _open(w: Window, snap: Snapshot, run: RunView, now: float):
    return w, _set_noout(w, snap), ()


def _exiting(w: Window, snap: Snapshot, run: RunView, now: float):
    mine = run.run_id == w.exit_run
    if mine and run.phase not in (PHASE_DONE, PHASE_ABORTED):
        return w, (), ()            # the exit's run is going on
    down = [o.id for o in under(w.bucket, snap) if not o.up]
    if not down:
        if NOOUT in _flags(w, snap) and not w.noout_before:
            return w, (UnsetGroupFlag(bucket=w.bucket, flag=NOOUT, reason="maintenance of "
                                      "%s ended: every OSD up" % w.bucket),), ()
        return None, (), (Outcome("maintenance exit %s" % w.bucket, True, "done",
                                  "every OSD of %s up, window closed" % w.bucket, now),)
    if not mine:
        why, code = "the exit's run %s is gone (another run replaced it)" % w.exit_run, "failed"
    elif run.phase == PHASE_ABORTED:
        why, code = "exit run %s aborted" % w.exit_run, "aborted"
    else:
        why, code = "exit run %s ended with %s still down" % (
            w.exit_run, ", ".join("osd.%d" % i for i in down)), "failed"
    back = replace(w, phase=ENTERING, exit_run="", note=why, stops={}, opened_at=None)
    return back, (), (Outcome("maintenance exit %s" % w.bucket, False, code, why +
                              "; window back in maintenance (held, noout kept, its OSDs "
                              "stopped again)", now),)


def _health(windows: Sequence[Window], now: float) -> Tuple[HealthCheck, ...]:
    late = [w for w in windows if now - w.entered_at > w.max_duration_s]
    if not late:
        return ()
    detail = tuple("%s: in maintenance for %s, past its max-duration %s (%s; reason: %s)" % (
        w.bucket, fmt_duration(now - w.entered_at), fmt_duration(w.max_duration_s), w.phase,
        w.reason or "-") for w in late)
    return (HealthCheck(code=CHECK, severity="warning", count=len(late), detail=detail,
                        summary="%d maintenance window(s) open past their max-duration"
                        % len(late)),)


def run_outcome(run_id: str, phase: str, down_in_scope: Sequence[int], now: float) -> Outcome:
    """How a controlled run that reached done/aborted ended."""
    what = "run %s" % run_id
    if phase == PHASE_ABORTED:
        return Outcome(what, False, "aborted", "run %s aborted by the operator" % run_id, now)
    if down_in_scope:
        return Outcome(what, False, "failed", "run %s ended with %s still down" % (
            run_id, ", ".join("osd.%d" % i for i in down_in_scope)), now)
    return Outcome(what, True, "done", "run %s done: every OSD in scope up" % run_id, now)


__all__ = ["CHECK", "DEFAULT_MAX_DURATION_S", "ENTERING", "EXITING", "MAX_DURATION_S",
           "MAX_REASON_LEN", "NOOUT", "NOUP", "OPEN", "PHASES", "REFUSED", "REQUESTED",
           "STOP_RETRY_S", "Outcome", "Refused", "RunView", "Step", "Window",
           "outcome_from_dict", "outcome_to_dict", "window_from_dict", "window_to_dict",
           "parse_duration", "fmt_duration", "under", "held_buckets", "busy",
           "ok_to_stop_verdict", "check_enter", "settle_enter", "refusals", "check_exit",
           "exiting", "find", "plan_windows", "run_outcome"]
