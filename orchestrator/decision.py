"""The decision ONE plan() call makes (a mutable value that never escapes the call): the
progress markers the stages update, health lines, and the actions it emits per stage, beside
the call's frozen inputs (`ctx`, context.py). `result()` freezes it into a PlanResult.

Stages are emitted in this fixed order so that every prefix of the action list leaves the
cluster no worse off: flags and holds first, releases only after the per-OSD holds that
replace them, then memory responses, boots, grants, and finally flag restores / Done.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set, Tuple

from .actions import Action
from .context import Context
from .holds import Buckets
from .model import HealthCheck, Observation, Progress, budget_now, columns, records_from
from .predict import Predictor
from .result import PlanResult
from .stageout import StageOut

STAGES = ("flags", "hold_buckets", "hold_osds", "releases", "memory", "boots", "grants", "tail")
MAX_OBSERVATIONS = 200      # footprint learning keeps the most recent observations only
MAX_DETAIL = 50             # health detail lines / summary reasons kept (the count stays exact)
SUMMARY = {"RECOVERY_BUDGET_EXCEEDED": "%d host(s) over their recovery memory budget",
           "RECOVERY_BUDGET_TOO_SMALL": "%d host(s) cannot fit their next OSD in the budget",
           "RECOVERY_DOMAIN_HELD": "%d CRUSH bucket(s) held (noup)",
           "RECOVERY_NETWORK_DEGRADED": "%d network finding(s) hold OSD starts",
           "RECOVERY_HELPER_MISSING": "%d host(s) without a fresh recovery helper",
           "RECOVERY_BOOT_TIMEOUT": "%d OSD(s) granted a start are not up in time",
           "RECOVERY_PAUSED": "controlled recovery paused (%d OSDs in flight)",
           "RECOVERY_ABORTED": "controlled recovery aborted (%d OSDs left held)",
           "RECOVERY_RESTART_REFUSED": "%d over-budget restart(s) refused",
           "RECOVERY_START_FAILED": "%d OSD start(s) failed (process died while starting)",
           "RECOVERY_SCOPE_UNKNOWN": "%d scope bucket(s) match no OSD",
           "RECOVERY_INCOMPLETE": "controlled recovery ended with %d OSD(s) still down "
                                  "and held",
           "RECOVERY_SETTING_KEPT": "%d setting(s) the run lowered kept: the host cannot "
                                    "hold the restored value",
           "RECOVERY_RESTORE_PENDING": "%d restore(s) of what a run changed not confirmed "
                                       "yet",
           "RECOVERY_PGLOG_DUPS": "%d OSD(s) may load inflated PG log dups (tracker 53729)",
           "RECOVERY_CRUSH_TUNABLES": "%d host(s) return out OSDs under CRUSH tunables "
                                      "that retry inside a host"}
SEVERITY = dict.fromkeys(SUMMARY, "warning")    # HEALTH_ERR is for data at risk: none of these


def fmt_bytes(n: float) -> str:
    return "%.0f MiB" % (n / 1048576.0)


class Decision:
    """The decision being made by one plan() call (see the module docstring)."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        progress = ctx.progress
        self.stage: Dict[str, List[Action]] = {k: [] for k in STAGES}
        self._health: Dict[str, List[str]] = {}
        self._health_count: Dict[str, int] = {}
        self.reasons: List[str] = []
        self.phase = progress.phase
        self.run_id = progress.run_id
        self.saved_flags = progress.saved_flags
        self.started_at, self.finished_at = progress.started_at, progress.finished_at
        # the run's per-OSD records as one plain osd -> value dict per field (OSD_FIELDS);
        # progress() builds the records back
        self.cols = columns(progress.osds)
        self.granted = self.cols["granted"]
        self.booting = self.cols["booting"]
        self.staged = self.cols["staged"]
        self.finished: Set[int] = set(progress.finished)
        self.held_osds: Set[int] = set(progress.held_osds)
        self.buckets = Buckets(frozenset(progress.held_buckets), frozenset(progress.auto_held))
        self.restarted = self.cols["restarted"]
        self.heap_released = self.cols["heap_released"]
        self.observations: List[Observation] = list(progress.observations)
        self.peaks = self.cols["peaks"]
        self.downtime = self.cols["downtime"]
        self.fresh_rss = self.cols["fresh_rss"]
        self.failures = self.cols["failures"]
        self.failed_now: Set[int] = set()     # OSDs whose start failed in this call
        self.settling = self.cols["settling"]
        self.grew_at = self.cols["grew_at"]
        self.load_rss = self.cols["load_rss"]
        self.missed = self.cols["missed"]
        self.heap_rss = self.cols["heap_rss"]
        self.restart_rss = self.cols["restart_rss"]
        self.shrink_at = self.cols["shrink_at"]
        self.shrink_rss = self.cols["shrink_rss"]
        self.saved_config = dict(progress.saved_config)
        self.restoring = dict(progress.restoring)
        self.restoring_flags = dict(progress.restoring_flags)
        self.stopped = self.cols["stopped"]
        self.rebuild_from = self.cols["rebuild_from"]
        self.rebuild_seen = self.cols["rebuild_seen"]
        self.service_at, self.stalled_since = progress.service_at, progress.stalled_since
        self.inactive_pg_s, self.inactive_seen = progress.inactive_pg_s, progress.inactive_seen
        self.budget_state = progress.budget_state
        self.new_restarts: Set[int] = set()
        self.room_restarts: Set[int] = set()      # of those, made for the next start's room
        self.rss_flat: Set[int] = set()           # granted OSDs whose rss stopped growing
        self.kept_preboot: Set[int] = set()       # granted OSDs gate 2 keeps in preboot
        self.hosts_summary: Dict[str, dict] = {}
        self.ends_by: Optional[float] = None      # ending.ends_by, set by plan()
        self._budgets: Dict[Tuple[str, str], int] = {}
        # peak predictions over this decision's own maps, observations and finished set
        self.predictor = Predictor(ctx.view, ctx.policies.footprint, ctx.now, self.cols,
                                   self.observations, self.finished)

    # ------------------------------------------------------------------ helpers
    def emit(self, stage: str, action: Action) -> None:
        self.stage[stage].append(action)

    def health(self, code: str, line: str, count: int = 1) -> None:
        self._health.setdefault(code, []).append(line)
        self._health_count[code] = self._health_count.get(code, 0) + count

    def apply(self, out: StageOut) -> None:
        """Take a stage function's result: its actions, health lines and reasons after those
        made so far, its records in place of these (a set, dict or list record updated in
        place), then the Predictor's new learning (StageOut.learned)."""
        for stage, action in out.actions:
            self.stage[stage].append(action)
        for code, line, count in out.health:
            self.health(code, line, count)
        self.reasons.extend(out.reasons)
        for name, value in out.records:
            current = getattr(self, name)
            if current is value:
                continue
            if isinstance(current, (set, dict)):
                current.clear()
                current.update(value)
            elif isinstance(current, list):
                current[:] = value
            else:
                setattr(self, name, value)
        if out.learned:
            self.predictor.learning_changed()

    def apply_each(self, outs: Iterable[StageOut]) -> None:
        """Apply each of a stage's decisions before the next is made (it reads their records)."""
        for out in outs:
            self.apply(out)

    def budget(self, host: str) -> int:
        """The host's budget in bytes; an auto budget at the fraction its state gives
        (autobudget.py moves the state; a budget is kept per host and state)."""
        key = (host, self.budget_state)
        if key not in self._budgets:
            b = budget_now(self.ctx.intent.budget, self.budget_state)
            self._budgets[key] = int(self.ctx.policies.budget(self.ctx.view.hostmem[host], b))
        return self._budgets[key]

    def progress(self) -> Progress:
        """The progress as it stands now (what policies see, and what plan() returns)."""
        return Progress(
            run_id=self.run_id, phase=self.phase,
            epoch=max(self.ctx.snapshot.epoch, self.ctx.progress.epoch),
            osds=records_from(self.ctx.progress.osds, self.cols),
            finished=frozenset(self.finished), held_osds=frozenset(self.held_osds),
            held_buckets=self.buckets.held, saved_flags=self.saved_flags,
            observations=tuple(self.observations[-MAX_OBSERVATIONS:]),
            started_at=self.started_at, finished_at=self.finished_at,
            auto_held=self.buckets.auto_held, saved_config=dict(self.saved_config),
            service_at=self.service_at, stalled_since=self.stalled_since,
            inactive_pg_s=self.inactive_pg_s, inactive_seen=self.inactive_seen,
            budget_state=self.budget_state, restoring=dict(self.restoring),
            restoring_flags=dict(self.restoring_flags))

    def actions(self) -> Tuple[Action, ...]:
        return tuple(a for k in STAGES for a in self.stage[k])

    def health_checks(self) -> Tuple[HealthCheck, ...]:
        out = []
        for code in sorted(self._health):
            n = self._health_count[code]
            lines = self._health[code]
            if len(lines) > MAX_DETAIL:
                lines = lines[:MAX_DETAIL] + ["... and %d more" % (len(lines) - MAX_DETAIL)]
            out.append(HealthCheck(code=code, severity=SEVERITY.get(code, "warning"),
                                   summary=SUMMARY.get(code, code + " (%d)") % n,
                                   detail=tuple(lines), count=n))
        return tuple(out)

    def summary(self, progress: Progress) -> dict:
        v = self.ctx.view
        in_flight = sum(len(x) for x in v.in_flight(self.granted).values())
        return {
            "run_id": progress.run_id, "phase": progress.phase, "mode": self.ctx.intent.mode,
            "epoch": progress.epoch, "time": self.ctx.now,
            "started_at": progress.started_at, "service_restored_at": progress.service_at,
            "inactive_pg_s": round(progress.inactive_pg_s, 1),
            "finished_at": progress.finished_at,
            "stalled_since": progress.stalled_since,
            "ends_by": None if self.ends_by is None else round(self.ends_by, 1),
            "policies": list(self.ctx.policies.names),
            "budget": {"kind": self.ctx.intent.budget.kind, "state": progress.budget_state or None},
            "counts": {"candidates": len(v.candidates), "in_flight": in_flight,
                       "granted": len(progress.osd_map("granted")),
                       "booting": len(progress.osd_map("booting")),
                       "staged": len(progress.osd_map("staged")),
                       "settling": len(progress.osd_map("settling")),
                       "finished": len(progress.finished), "osds": len(v.by_id),
                       "in_scope": len(v.in_scope)},
            "hosts": self.hosts_summary,
            "health": sorted(self._health),
            "reasons": list(self.reasons[:MAX_DETAIL]),
        }

    def result(self) -> PlanResult:
        progress = self.progress()
        return PlanResult(self.actions(), progress, self.health_checks(),
                          self.summary(progress))
