"""Progress (and Intent) <-> JSON with a schema version (the mgr module keeps them in its store).

    text = progress_to_json(progress)
    progress = progress_from_json(text)     # ValueError (EINVAL material) on any defect

Pure: str in, value out. Mapping keys that are OSD ids become JSON strings and come back as
ints. A resumed mgr re-plans from the stored `granted`/`booting` markers, so an OSD granted
before a failover is never granted twice.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .model import (BUDGET_STATES, OSD_FIELDS, PHASE_IDLE, Budget, Intent, Observation, Progress,
                    RunPhase)

SCHEMA_VERSION = 1
PHASES = tuple(p.value for p in RunPhase)
# the per-OSD maps (OSD_FIELDS) that hold bytes or counts; every other one holds seconds
_INT_MAPS = frozenset(("peaks", "fresh_rss", "failures", "load_rss", "missed", "heap_rss",
                       "restart_rss", "shrink_rss"))


def _map_kind(name: str) -> type:
    return int if name in _INT_MAPS else float


def progress_to_dict(p: Progress) -> Dict[str, Any]:
    d: Dict[str, Any] = {"schema": SCHEMA_VERSION, "run_id": p.run_id, "phase": p.phase,
                         "epoch": p.epoch}
    for k in OSD_FIELDS:
        kind = _map_kind(k)
        d[k] = {str(osd): kind(v) for osd, v in sorted(p.osd_map(k).items())}
    d["finished"] = sorted(p.finished)
    d["held_osds"] = sorted(p.held_osds)
    d["held_buckets"] = sorted(p.held_buckets)
    d["auto_held"] = sorted(p.auto_held)
    d["saved_flags"] = None if p.saved_flags is None else sorted(p.saved_flags)
    d["observations"] = [_observation(o) for o in p.observations]
    d["started_at"], d["finished_at"] = p.started_at, p.finished_at
    d["service_at"], d["stalled_since"] = p.service_at, p.stalled_since
    d["inactive_pg_s"] = p.inactive_pg_s
    d["inactive_seen"] = None if p.inactive_seen is None else list(p.inactive_seen)
    d["budget_state"] = p.budget_state
    d["saved_config"] = {k: v for k, v in sorted(p.saved_config.items())}
    d["restoring"] = {k: [v, float(at)] for k, (v, at) in sorted(p.restoring.items())}
    d["restoring_flags"] = {k: float(at) for k, at in sorted(p.restoring_flags.items())}
    return d


def _observation(o: Observation) -> List[Any]:
    """[osd, pgs, downtime_s, pg_log_entries, peak_bytes(, missed_entries(, load_bytes))]:
    the optional tail only as long as needed (missed_entries null when only the load is
    known), so a record without a load reads the same as before load_bytes existed."""
    out: List[Any] = [o.osd, o.pgs, o.downtime_s, o.pg_log_entries, o.peak_bytes]
    if o.load_bytes is not None:
        return out + [o.missed_entries, o.load_bytes]
    return out + ([] if o.missed_entries is None else [o.missed_entries])


def progress_to_json(p: Progress) -> str:
    return json.dumps(progress_to_dict(p), sort_keys=True, separators=(",", ":"))


def _num(v, what: str, kind=float):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("progress: %s must be a number, got %r" % (what, v))
    return kind(v)


def _osd_map(d: Mapping[str, Any], key: str, kind=float) -> Dict[int, Any]:
    raw = d.get(key, {})
    if not isinstance(raw, Mapping):
        raise ValueError("progress: %s must be an object" % key)
    out = {}
    for k, v in raw.items():
        try:
            osd = int(k)
        except (TypeError, ValueError):
            raise ValueError("progress: %s has a non-integer OSD id %r" % (key, k)) from None
        out[osd] = _num(v, "%s[%s]" % (key, k), kind)
    return out


def _str_set(d: Mapping[str, Any], key: str):
    raw = d.get(key, [])
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise ValueError("progress: %s must be a list of strings" % key)
    return frozenset(raw)


def _int_set(d: Mapping[str, Any], key: str):
    raw = d.get(key, [])
    if not isinstance(raw, list):
        raise ValueError("progress: %s must be a list of OSD ids" % key)
    return frozenset(int(_num(x, key, int)) for x in raw)


def _observations(d: Mapping[str, Any]):
    raw = d.get("observations", [])
    if not isinstance(raw, list):
        raise ValueError("progress: observations must be a list")
    out = []
    for i, ob in enumerate(raw):
        if not isinstance(ob, list) or len(ob) not in (5, 6, 7):
            raise ValueError("progress: observations[%d] must be [osd, pgs, downtime_s, "
                             "pg_log_entries, peak_bytes(, missed_entries(, load_bytes))]" % i)
        w = "observations[%d]" % i
        missed = ob[5] if len(ob) >= 6 else None
        if missed is None and len(ob) == 6:
            raise ValueError("progress: %s: missed_entries is null without a load_bytes" % w)
        out.append(Observation(osd=_num(ob[0], w, int), pgs=_num(ob[1], w, int),
                               downtime_s=_num(ob[2], w), pg_log_entries=_num(ob[3], w, int),
                               peak_bytes=_num(ob[4], w, int),
                               missed_entries=None if missed is None else _num(missed, w, int),
                               load_bytes=_num(ob[6], w, int) if len(ob) == 7 else None))
    return tuple(out)


def _opt_time(d: Mapping[str, Any], key: str):
    v = d.get(key)
    return None if v is None else _num(v, key)


def progress_from_dict(d: Any) -> Progress:
    if not isinstance(d, Mapping):
        raise ValueError("progress: expected a JSON object")
    if d.get("schema") != SCHEMA_VERSION:
        raise ValueError("progress: unsupported schema %r (this side reads %d)"
                         % (d.get("schema"), SCHEMA_VERSION))
    phase = d.get("phase", PHASE_IDLE)
    if phase not in PHASES:
        raise ValueError("progress: unknown phase %r" % (phase,))
    phase = RunPhase(phase)
    run_id = d.get("run_id", "")
    if not isinstance(run_id, str):
        raise ValueError("progress: run_id must be a string")
    saved = d.get("saved_flags")
    return Progress(
        run_id=run_id, phase=phase, epoch=_num(d.get("epoch", 0), "epoch", int),
        finished=_int_set(d, "finished"), held_osds=_int_set(d, "held_osds"),
        held_buckets=_str_set(d, "held_buckets"),
        saved_flags=None if saved is None else _str_set(d, "saved_flags"),
        observations=_observations(d),
        started_at=_opt_time(d, "started_at"), finished_at=_opt_time(d, "finished_at"),
        auto_held=_str_set(d, "auto_held"),
        saved_config=_saved_config(d), restoring=_restoring(d),
        restoring_flags=_restoring_flags(d),
        service_at=_opt_time(d, "service_at"), stalled_since=_opt_time(d, "stalled_since"),
        inactive_pg_s=_num(d.get("inactive_pg_s", 0.0), "inactive_pg_s"),
        inactive_seen=_inactive_seen(d),
        budget_state=_budget_state(d),
    ).with_columns(**{name: _osd_map(d, name, _map_kind(name)) for name in OSD_FIELDS})


def _budget_state(d: Mapping[str, Any]) -> str:
    """The budget's state ("" in progress stored before it existed)."""
    v = d.get("budget_state", "")
    if v not in BUDGET_STATES:
        raise ValueError("progress: budget_state must be one of %s, got %r" % (
            ", ".join(repr(x) for x in BUDGET_STATES), v))
    return v


def _inactive_seen(d: Mapping[str, Any]) -> Optional[Tuple[float, int]]:
    """[time, PGs not active] of the last tick, or None (also in progress stored before it)."""
    v = d.get("inactive_seen")
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != 2:
        raise ValueError("progress: inactive_seen must be [time, count], got %r" % (v,))
    return _num(v[0], "inactive_seen time"), _num(v[1], "inactive_seen count", int)


def _saved_config(d: Mapping[str, Any]) -> Dict[str, Optional[str]]:
    raw = d.get("saved_config", {})
    if not isinstance(raw, Mapping) or not all(
            isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in raw.items()):
        raise ValueError("progress: saved_config must map 'who name' to a string or null")
    return dict(raw)


def _restoring(d: Mapping[str, Any]) -> Dict[str, Tuple[Optional[str], float]]:
    raw = d.get("restoring", {})
    if not isinstance(raw, Mapping):
        raise ValueError("progress: restoring must be an object")
    out = {}
    for k, v in raw.items():
        if not isinstance(k, str) or not isinstance(v, list) or len(v) != 2 or \
                not (v[0] is None or isinstance(v[0], str)):
            raise ValueError("progress: restoring must map 'who name' to [value or null, "
                             "time sent]")
        out[k] = (v[0], _num(v[1], "restoring[%s]" % k))
    return out


def _restoring_flags(d: Mapping[str, Any]) -> Dict[str, float]:
    raw = d.get("restoring_flags", {})
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) for k in raw):
        raise ValueError("progress: restoring_flags must map a flag to the time sent")
    return {k: _num(v, "restoring_flags[%s]" % k) for k, v in raw.items()}


def progress_from_json(text: str) -> Progress:
    try:
        d = json.loads(text)
    except (TypeError, ValueError) as e:
        raise ValueError("progress: not valid JSON: %s" % e) from None
    return progress_from_dict(d)


INTENT_MODES = ("idle", "controlled", "paused", "abort")


def intent_to_dict(i: Intent) -> Dict[str, Any]:
    return {"schema": SCHEMA_VERSION, "mode": i.mode,
            "budget": {"kind": i.budget.kind, "value": i.budget.value,
                       "reserve_bytes": i.budget.reserve_bytes},
            "scope": list(i.scope), "concurrency": i.concurrency, "holds": sorted(i.holds),
            "auto_hold": i.auto_hold, "start_order": i.start_order, "footprint": i.footprint,
            "over_budget": i.over_budget, "restart_cooldown_s": i.restart_cooldown_s,
            "boot_timeout_s": i.boot_timeout_s, "leave_out": i.leave_out, "run_id": i.run_id,
            "stall_limit_s": i.stall_limit_s}


def _typed(d: Mapping[str, Any], key: str, types, default):
    v = d.get(key, default)
    if isinstance(v, bool) and bool not in types:
        raise ValueError("intent: %s must not be a boolean" % key)
    if not isinstance(v, types):
        raise ValueError("intent: %s has the wrong type (%s)" % (key, type(v).__name__))
    return v


def intent_from_dict(d: Any) -> Intent:
    """Inverse of intent_to_dict; unknown keys (a newer schema) are ignored."""
    if not isinstance(d, Mapping):
        raise ValueError("intent: expected a JSON object")
    mode = _typed(d, "mode", (str,), "idle")
    if mode not in INTENT_MODES:
        raise ValueError("intent: unknown mode %r" % mode)
    b = _typed(d, "budget", (Mapping,), {})
    budget = Budget(kind=_typed(b, "kind", (str,), "fraction"),
                    value=float(_typed(b, "value", (int, float), Budget().value)),
                    reserve_bytes=int(_typed(b, "reserve_bytes", (int,), 0)))
    scope = _typed(d, "scope", (list, tuple), [])
    holds = _typed(d, "holds", (list, tuple), [])
    if not all(isinstance(x, str) for x in list(scope) + list(holds)):
        raise ValueError("intent: scope and holds must be lists of bucket names")
    return Intent(
        mode=mode, budget=budget, scope=tuple(scope), holds=frozenset(holds),
        concurrency=int(_typed(d, "concurrency", (int,), 1)),
        auto_hold=bool(_typed(d, "auto_hold", (bool,), False)),
        start_order=_typed(d, "start_order", (str,), Intent.start_order),
        footprint=_typed(d, "footprint", (str,), "learned"),
        over_budget=_typed(d, "over_budget", (str,), "heap_then_restart"),
        restart_cooldown_s=float(_typed(d, "restart_cooldown_s", (int, float), 600.0)),
        boot_timeout_s=float(_typed(d, "boot_timeout_s", (int, float), 600.0)),
        leave_out=bool(_typed(d, "leave_out", (bool,), False)),
        run_id=_typed(d, "run_id", (str,), ""),
        stall_limit_s=float(_typed(d, "stall_limit_s", (int, float), Intent.stall_limit_s)))
