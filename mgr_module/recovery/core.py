"""Adapters to the pure core: plan() and the network view, imported lazily and guarded
so the module loads (and reports why) even while a core piece is missing."""
from __future__ import annotations

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
    from ceph_recovery.plan import plan  # lazy: the module still loads if the core is broken
    return plan


def policies_for(intent: Intent):
    """The policy bundle named by the intent (ceph_recovery.policies.resolve)."""
    from ceph_recovery.policies import resolve
    return resolve(intent)


def call_plan(snapshot: Snapshot, intent: Intent, progress: Progress, now: float) -> PlanOutput:
    actions, new_progress, health, summary = _plan_fn()(snapshot, intent, progress,
                                                       policies_for(intent), now)
    return PlanOutput(actions, new_progress, health, summary)


def preview(snapshot: Snapshot, intent: Intent, progress: Progress, now: float) -> Dict[str, Any]:
    """Dry-run material: start order and predicted footprints from the run's own policies,
    and the candidates that may load inflated PG log dups (ceph_recovery.dups: they start
    alone on their host)."""
    from ceph_recovery.dups import why_suspect
    from ceph_recovery.view import View
    pol = policies_for(intent)
    view = View(snapshot, intent, progress, now)
    order = pol.start_order(sorted(view.candidates, key=lambda o: o.id), snapshot)
    predict = _predictor(snapshot, intent, progress, pol, now)
    dups = [{"osd": o.id, "host": o.host, "release": o.ceph_version, "warnings": o.pglog_dups,
             "why": why_suspect(o)} for o in order if why_suspect(o) is not None]
    return {"order": [{"osd": o.id, "host": o.host, "pgs": o.pgs,
                       "predicted_bytes": predict(o), "release": o.ceph_version,
                       "pglog_dups": o.pglog_dups} for o in order],
            "policies": list(pol.names), "pglog_dups": dups}


def dry_run_text(d: Mapping[str, Any]) -> str:
    """`start-controlled --dry-run`'s plain-text line."""
    line = "dry run: start order %s" % (", ".join(
        "osd.%s" % x["osd"] for x in d["order"]) or "(nothing down)")
    if d.get("pglog_dups"):
        line += "; may load inflated PG log dups, each starts alone on its host: %s" % (
            ", ".join("osd.%s (%s)" % (x["osd"], x["why"]) for x in d["pglog_dups"]))
    return line


def _predictor(snapshot, intent, progress, pol, now):
    """The plan's own prediction (footprint policy floored by the core's peer floor) when the
    core exposes it, else the footprint policy alone."""
    try:
        from ceph_recovery.decision import Decision
        tick = Decision(snapshot, intent, progress, pol, now)
        return lambda o: int(tick.predict(o.id))
    except (ImportError, AttributeError, TypeError):
        return lambda o: int(pol.footprint(o, progress.observations, now))


def budget_now(budget: Budget, progress: Progress) -> Budget:
    """The budget the run applies now (an auto budget raised or not; core's rule if it has
    one, else the budget as given)."""
    try:
        from ceph_recovery.model import budget_now as rule  # type: ignore
    except ImportError:
        return budget
    return rule(budget, getattr(progress, "budget_state", ""))


def budget_bytes(budget: Budget, host: Optional[HostMem]) -> Optional[int]:
    """The host's budget in bytes (core's helper if it has one)."""
    if host is None:
        return int(budget.value) - budget.reserve_bytes if budget.kind == "bytes" else None
    try:
        return int(policies_for(Intent(budget=budget)).budget(host, budget))
    except ImportError:
        pass
    if budget.kind != "bytes":     # fraction, or auto at the fraction before its raise
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


def findings_holding(findings: Tuple[Any, ...], network_by_host: Mapping[str, Any],
                     now: float) -> Tuple[Any, ...]:
    """The findings restricted to the hosts whose own report shows them (netview.own_side):
    what may hold starts. () when the core lacks it."""
    try:
        from ceph_recovery import netview  # type: ignore
    except ImportError:
        return ()
    return netview.own_side(findings, network_by_host, now)


def network_view(network_by_host: Mapping[str, Any], findings: Tuple[Any, ...],
                 now: float) -> Dict[str, Any]:
    try:
        from ceph_recovery import netview  # type: ignore
    except ImportError as e:
        return {"error": "ceph_recovery.netview not available: %s" % e, "findings": []}
    view = netview.build_view(network_by_host, findings, now)
    return view if isinstance(view, dict) else {"view": view}


def network_text(view: Mapping[str, Any]) -> str:
    """The plain-text table of a network_view() (ceph_recovery.netview.render_text)."""
    if "error" in view and "pairs" not in view:
        return "network view unavailable: %s\n" % view["error"]
    from ceph_recovery import netview  # type: ignore
    return netview.render_text(view) + "\n"


def plan_available() -> Tuple[bool, str]:
    try:
        _plan_fn()
    except ImportError as e:
        return False, str(e)
    return True, ""


def actions_list(actions) -> List[Dict[str, Any]]:
    return [a.to_dict() for a in actions]
