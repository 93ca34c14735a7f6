"""Adapters to the pure core: plan(), its dry-run preview, budgets and the network view.

The core is part of the module's folder (built into `_core`), so it is imported here once, at
load: a broken core fails this import, and module.py answers every command ENOSYS naming the
error instead of running with a stand-in that could disagree with the core."""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ceph_recovery import netview, network
from ceph_recovery.predict import Predictor
from ceph_recovery.dups import why_suspect
from ceph_recovery.model import Budget, HostMem, Intent, Progress, Snapshot
from ceph_recovery.model import budget_now as _budget_now
from ceph_recovery.plan import plan
from ceph_recovery.policies import resolve
from ceph_recovery.view import View


class PlanOutput(object):
    """plan()'s answer, normalised: actions, new progress, health checks, summary dict."""

    def __init__(self, actions, progress, health, summary) -> None:
        self.actions = tuple(actions or ())
        self.progress = progress
        self.health = tuple(health or ())
        self.summary = summary if isinstance(summary, Mapping) else (
            getattr(summary, "__dict__", None) or {"text": str(summary or "")})


def policies_for(intent: Intent):
    """The policy bundle named by the intent (ceph_recovery.policies.resolve)."""
    return resolve(intent)


def call_plan(snapshot: Snapshot, intent: Intent, progress: Progress, now: float) -> PlanOutput:
    actions, new_progress, health, summary = plan(snapshot, intent, progress,
                                                  policies_for(intent), now)
    return PlanOutput(actions, new_progress, health, summary)


def preview(snapshot: Snapshot, intent: Intent, progress: Progress, now: float) -> Dict[str, Any]:
    """Dry-run material: start order and predicted footprints from the run's own policies,
    and the candidates that may load inflated PG log dups (ceph_recovery.dups: they start
    alone on their host)."""
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
    """The plan's own prediction: the footprint policy floored as plan() floors it."""
    tick = Predictor.of(snapshot, intent, progress, pol, now)
    return lambda o: int(tick.predict(o.id))


def budget_now(budget: Budget, progress: Progress) -> Budget:
    """The budget the run applies now (an auto budget raised or held: the core's rule)."""
    return _budget_now(budget, getattr(progress, "budget_state", ""))


def budget_bytes(budget: Budget, host: Optional[HostMem]) -> Optional[int]:
    """The host's budget in bytes (the budget policy's), or a fixed budget's without a host
    report (None for a fraction: nothing to take it of)."""
    if host is None:
        return int(budget.value) - budget.reserve_bytes if budget.kind == "bytes" else None
    return int(policies_for(Intent(budget=budget)).budget(host, budget))


def network_findings(network_by_host: Mapping[str, Any], previous: Tuple[Any, ...],
                     now: float) -> Tuple[Any, ...]:
    """The network findings of the hosts' latest results (ceph_recovery.network)."""
    return tuple(network.evaluate(network_by_host, previous, now))


def findings_holding(findings: Tuple[Any, ...], network_by_host: Mapping[str, Any],
                     now: float) -> Tuple[Any, ...]:
    """The findings restricted to the hosts whose own report shows them (netview.own_side):
    what may hold starts."""
    return netview.own_side(findings, network_by_host, now)


def network_view(network_by_host: Mapping[str, Any], findings: Tuple[Any, ...],
                 now: float) -> Dict[str, Any]:
    return netview.build_view(network_by_host, findings, now)


def network_text(view: Mapping[str, Any]) -> str:
    """The plain-text table of a network_view() (ceph_recovery.netview.render_text)."""
    return netview.render_text(view) + "\n"


def actions_list(actions) -> List[Dict[str, Any]]:
    return [a.to_dict() for a in actions]
