"""The status document of `ceph recovery status -f json` (schema: maint.STATUS_SCHEMA) and its
per-host table, read from the engine (called with its lock held)."""
from __future__ import annotations

import json
from typing import Any, Dict, Optional

from ceph_recovery.model import DAEMON_REBUILDING, Intent

from . import core, maint, poolavail, versions


def host_table(eng: Any, intent: Optional[Intent] = None) -> Dict[str, Dict[str, Any]]:
    """Per host: OSDs, down, in flight, staged, rebuilding (down, its process rebuilding its
    allocator: the helper's daemon state), budget, used, next OSD (plan summary if any)."""
    snap, p = eng.snapshot, eng.run.progress
    intent = intent or eng.run.intent
    planned: Dict[str, Any] = {}
    if eng.plan_out is not None and intent is eng.run.intent:
        planned = dict(eng.plan_out.summary.get("hosts", {}) or {})
    table: Dict[str, Dict[str, Any]] = {}
    if snap is None:
        return table
    for o in snap.osds:
        h = table.setdefault(o.host, {"osds": [], "down": [], "in_flight": [], "staged": [],
                                      "rebuilding": []})
        h["osds"].append(o.id)
        if not o.up:
            h["down"].append(o.id)
            if o.daemon_state == DAEMON_REBUILDING:   # its allocator, after an unclean stop
                h["rebuilding"].append(o.id)
        in_flight = o.id in p.osd_map("granted") or o.id in p.osd_map("booting")
        if in_flight and o.id not in p.finished:
            h["in_flight"].append(o.id)
            if o.id in p.osd_map("staged"):        # loaded, waits in preboot for its turn to peer
                h["staged"].append(o.id)
    budget = core.budget_now(intent.budget, p)
    for name, h in table.items():
        hm = snap.host(name)
        h["used"] = hm.mem_used if hm else None
        h["mem_total"] = hm.mem_total if hm else None
        h["budget"] = core.budget_bytes(budget, hm)
        pl = planned.get(name) or {}
        h["next_osd"] = pl.get("next_osd")
        h["predicted_next_bytes"] = pl.get("predicted")
        h["gate"] = pl.get("gate")
        h["waiting_on"] = pl.get("waiting_on")
        h["waiting_for"], h["eta_s"] = pl.get("waiting_for"), pl.get("eta_s")
        h["helper_seen_s_ago"] = None
    return table


def status(eng: Any, now: float) -> Dict[str, Any]:
    """The whole status document: run, intent, per-host table, health, summary, journal."""
    snap, p, i = eng.snapshot, eng.run.progress, eng.run.intent
    table = host_table(eng)
    for host, t in eng.reports.items():
        if host in table:
            table[host]["helper_seen_s_ago"] = round(now - t[1], 1)
    out = eng.plan_out
    return {
        "schema": maint.STATUS_SCHEMA, "maintenance": maint.windows_view(eng, now),
        "version": versions.module_version(),
        "run_id": p.run_id, "phase": p.phase, "mode": i.mode, "active": eng.active,
        "epoch": snap.epoch if snap else None, "decided_epoch": p.epoch,
        "budget": dict(i.budget.__dict__, state=getattr(p, "budget_state", "") or None,
                       now=core.budget_now(i.budget, p).value), "scope": list(i.scope),
        "concurrency": i.concurrency, "leave_out": i.leave_out, "holds": sorted(i.holds),
        "granted": sorted(p.osd_map("granted")), "booting": sorted(p.osd_map("booting")),
        "staged": sorted(p.osd_map("staged")),
        "finished": sorted(p.finished),
        "restarted": {str(k): v for k, v in p.osd_map("restarted").items()},
        "heap_support": {str(k): v for k, v in eng.run.heap_support.items()},
        "starts_carried_out": {str(k): v for k, v in eng.run.starts.items()},
        "pgs": {"total": snap.pgs_total if snap else 0,
                "active": snap.pgs_active if snap else 0,
                "clean": snap.pgs_clean if snap else 0},
        "hosts": table, "open_instructions": eng.run.open_instructions(),
        "health": [h.code for h in eng.health_checks()],
        "health_detail": {h.code: list(h.detail) for h in eng.health_checks()},
        "summary": _plain(out.summary) if out else {},
        "findings": [f.__dict__ for f in eng.findings if hasattr(f, "__dict__")],
        "pool_availability": poolavail.view(eng, now),
        "error": eng.error, "journal": list(eng.run.journal)}


def _plain(v: Any) -> Any:
    """JSON-safe copy of a summary (frozensets/tuples/dataclasses)."""
    return json.loads(json.dumps(v, default=lambda x: sorted(x) if isinstance(x, (set, frozenset))
                             else getattr(x, "__dict__", str(x))))
