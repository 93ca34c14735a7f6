"""Type checks of a stored run state document before RunState.loads converts it.

A state whose digest is valid may still hold a field of the wrong type (written by another
version, or edited by hand with `ceph config-key set`). Converted as it is, it can raise out
of the loader (an AttributeError, an OverflowError) or load and then fail every tick. Every
field the shell reads is checked here: a state that breaks any rule is unreadable
(ValueError), which the module reports as RECOVERY_STATE_UNREADABLE and starts from nothing.
Intent and progress are the core's to check (ceph_recovery.persist).
No mgr_module import: unit-tested outside ceph-mgr.
"""
from __future__ import annotations

import json
import math
from typing import Any, Callable, Dict, Mapping

from ceph_recovery import drillstate as drill_core
from ceph_recovery import maintenance as maint

Check = Callable[[Any], bool]
MAX_NUMBER = 1 << 62        # any stored number (times, epochs, bytes, ids)


def _num(v: Any) -> bool:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return abs(v) < MAX_NUMBER and (isinstance(v, int) or math.isfinite(v))


def _int(v: Any) -> bool:
    return _num(v) and isinstance(v, int)


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _opt(check: Check) -> Check:
    return lambda v: v is None or check(v)


def _list(check: Check) -> Check:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _id_map(check: Check) -> Check:
    """An object keyed by OSD ids (decimal strings)."""
    def ok(v: Any) -> bool:
        return isinstance(v, dict) and all(
            isinstance(k, str) and k.lstrip("-").isdigit() and len(k) < 20 and check(x)
            for k, x in v.items())
    return ok


def _str_map(check: Check) -> Check:
    return lambda v: isinstance(v, dict) and all(check(x) for x in v.values())


def _obj(fields: Mapping[str, Check], required: tuple = ()) -> Check:
    """An object whose listed fields, where present, pass their checks."""
    def ok(v: Any) -> bool:
        return isinstance(v, dict) and all(k in v for k in required) and all(
            check(v[k]) for k, check in fields.items() if k in v)
    return ok


_WINDOW = _obj({"bucket": _str, "reason": _str, "max_duration_s": lambda v: _num(v) and 0 < v
                <= maint.MAX_DURATION_S, "entered_at": _num, "phase": _str,
                "osds": _list(_int), "noout_before": _bool, "stops": _id_map(_num),
                "opened_at": _opt(_num), "exit_run": _str, "note": _str, "kill": _bool},
               ("bucket", "phase"))
_OUTCOME = _obj({"what": _str, "ok": _bool, "code": _str, "reason": _str, "at": _num},
                ("what", "ok", "code", "reason", "at"))
_LOAD = _opt(_obj({"rate": _int, "pool": _str, "size": _int, "min_size": _int, "state": _str,
                   "written": _int, "errors": _int, "verified": _int, "bad": _int,
                   "p99_max_ms": _opt(_num), "note": _str}))
_DRILL_FIELDS: Dict[str, Check] = {
    "id": _str, "bucket": _str, "downtime_s": lambda v: _num(v) and 0 < v
    <= maint.MAX_DURATION_S, "started_at": _num, "budget": _str, "concurrency": _str,
    "phase": _str, "osds": _list(_int), "hosts": _list(_str), "noout_before": _bool,
    "budgets": _str_map(_int), "exit_run": _str, "abort_requested": _str, "reason": _str,
    "peaks": _str_map(_int), "samples": _list(lambda s: isinstance(s, dict)), "load": _LOAD,
    "started": _id_map(_num), "starts": _id_map(_int), "stop": _str,
    "inactive_grace_s": _num, "availability": _opt(lambda v: isinstance(v, dict))}
_DRILL_FIELDS.update({k: _opt(_num) for k in ("down_at", "exit_at", "up_at", "active_at",
                                              "clean_at", "ended_at", "aborted_at",
                                              "inactive_since")})
_DRILL = _obj(_DRILL_FIELDS, ("id", "bucket", "downtime_s", "started_at", "phase"))
_INSTRUCTION = _obj({"id": _str, "host": _str, "op": _str, "osd": _int, "reason": _str,
                     "issued_at": _num, "epoch": _int, "done_at": _opt(_num),
                     "closed": _opt(_str), "closed_at": _opt(_num), "error": _opt(_str),
                     "signal": _str, "prepared": _bool}, ("id", "host", "op", "osd", "issued_at"))
_JOURNAL_ENTRY = _obj({"time": _num, "epoch": _int, "action": lambda v: isinstance(v, dict),
                       "result": _str}, ("time", "action", "result"))
_LEFTOVERS = _opt(_obj({"run_id": _opt(_str), "flags": _list(_str), "noup": _list(_int)}))
FIELDS: Dict[str, Check] = {
    "intent": lambda v: isinstance(v, dict), "progress": lambda v: isinstance(v, dict),
    "journal": _list(_JOURNAL_ENTRY), "instructions": _str_map(_INSTRUCTION), "seq": _int,
    "heap_support": _id_map(_bool), "starts": _id_map(_int), "pgs_seen": _id_map(_int),
    "down_seen": _id_map(_num), "windows": _list(_WINDOW), "outcomes": _list(_OUTCOME),
    "drills": _list(_DRILL), "leftovers": _LEFTOVERS}


def _no_constant(name: str) -> Any:
    raise ValueError("run state holds a non-finite number (%s)" % name)


def decode(text: Any) -> Dict[str, Any]:
    """The state document, its fields checked; ValueError naming the first bad field."""
    if not isinstance(text, str):
        raise ValueError("run state is not text")
    try:
        d = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("run state nested too deeply")
    if not isinstance(d, dict):
        raise ValueError("run state is not a JSON object")
    for key, check in FIELDS.items():
        if key in d and not check(d[key]):
            raise ValueError("run state field %r has the wrong type or value" % key)
    for w in d.get("windows", ()):
        if w["phase"] not in maint.PHASES:
            raise ValueError("run state: window phase %r unknown" % (w["phase"],))
    for x in d.get("drills", ()):
        if x["phase"] not in drill_core.PHASES:
            raise ValueError("run state: drill phase %r unknown" % (x["phase"],))
    return d
