"""Adapters to the pure core: plan() and the network view, imported lazily and guarded
so the module loads (and reports why) even while a core piece is missing."""
from __future__ import annotations

import inspect
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ceph_recovery.model import Budget, HostMem, Intent, Progress, Snapshot


class PlanOutput(object):
    """plan()'s answer, normalised: actions, new progress, health checks, summary dict."""

    def __init__(self, actions, progress, health, summary) -> None:
        self.actions = tuple(actions or ())
        self.progress = progress
        self.health = tuple(health or ())
        self.summary = summary if isinstance(summary, Mapping) else (
            getattr(summary, "__dict__", None) or {"text": str(summary or "")})


def _plan_fn():
    from ceph_recovery.plan import plan  # noqa: WPS433 (lazy: the core may not be built yet)
    return plan


def call_plan(snapshot: Snapshot, intent: Intent, progress: Progress, now: float) -> PlanOutput:
    fn = _plan_fn()
    params = inspect.signature(fn).parameters
    kw: Dict[str, Any] = {}
    if "now" in params:
        kw["now"] = now
    args = [snapshot, intent, progress]
    res = fn(*args, **kw) if "now" in kw else fn(*args, now)
    if isinstance(res, tuple):
        actions, new_progress = res[0], res[1]
        health = res[2] if len(res) > 2 else ()
        summary = res[3] if len(res) > 3 else {}
        return PlanOutput(actions, new_progress, health, summary)
    return PlanOutput(getattr(res, "actions", ()), getattr(res, "progress", progress),
                      getattr(res, "health", ()), getattr(res, "summary", {}))


def budget_bytes(budget: Budget, host: Optional[HostMem]) -> Optional[int]:
    """The host's budget in bytes (core's helper if it has one)."""
    if host is None:
        return int(budget.value) - budget.reserve_bytes if budget.kind == "bytes" else None
    try:
        from ceph_recovery.plan import budget_bytes as core_budget  # type: ignore
        return int(core_budget(budget, host))
    except (ImportError, TypeError):
        pass
    if budget.kind == "fraction":
        return int(budget.value * host.mem_total) - budget.reserve_bytes
    return int(budget.value) - budget.reserve_bytes


def network_findings(network_by_host: Mapping[str, Any], previous: Tuple[Any, ...],
                     now: float) -> Tuple[Tuple[Any, ...], Optional[str]]:
    """(findings, error). Empty findings and a reason when ceph_recovery.network is absent."""
    try:
        from ceph_recovery import network  # type: ignore
    except ImportError as e:
        return (), "ceph_recovery.network not available: %s" % e
    return tuple(network.evaluate(network_by_host, previous, now)), None


def network_view(network_by_host: Mapping[str, Any], findings: Tuple[Any, ...],
                 now: float) -> Dict[str, Any]:
    try:
        from ceph_recovery import network  # type: ignore
    except ImportError as e:
        return {"error": "ceph_recovery.network not available: %s" % e, "findings": []}
    view = network.network_view(network_by_host, findings, now)
    return view if isinstance(view, dict) else {"view": view}


def plan_available() -> Tuple[bool, str]:
    try:
        _plan_fn()
    except ImportError as e:
        return False, str(e)
    return True, ""


def actions_list(actions) -> List[Dict[str, Any]]:
    return [a.to_dict() for a in actions]
