"""The decision ONE plan() call makes (a mutable value that never escapes the call): the
progress markers the stages update, health lines, and the actions it emits per stage, beside
the call's frozen inputs (`ctx`, context.py). `result()` freezes it into a PlanResult.

Stages are emitted in this fixed order so that every prefix of the action list leaves the
cluster no worse off: flags and holds first, releases only after the per-OSD holds that
replace them, then memory responses, boots, grants, and finally flag restores / Done.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from .actions import Action
from .membership import stop_breaks
from .context import Context
from .holds import Buckets
from .model import (HealthCheck, Observation, Progress, columns, records_from,
                    BUDGET_RAISED, BUDGET_VALIDATED, budget_now)
from .predict import WARMUP_OBSERVATIONS, Predictor
from .result import PlanResult
from .stageout import StageOut

STAGES = ("flags", "hold_buckets", "hold_osds", "releases", "memory", "boots", "grants", "tail")
MAX_OBSERVATIONS = 200      # footprint learning keeps the most recent observations only
WARMUP_MARGIN = 1.7         # below WARMUP_OBSERVATIONS (predict.py) a start beside another in
                            # flight on its host, and the OSDs in flight and settling
                            # beside it, are charged prediction x this: the worst measured
                            # under-prediction of a prediction no real peak shaped (simulator,
                            # one rack down 1 h: peaks 6.1-6.6 GiB on predictions 3.9-4.9 GiB,
                            # 6.6 / 3.9 = 1.69; docs/memory-model.md "Auto concurrency holds
                            # the budget"; lab: 2.7 x the load where 2 x was assumed, 1.35)
# The longest an OSD's allocator rebuild holds its boot clock (Decision.rebuild_clock): 2 h,
# the startup probe Rook had to allow for this phase (rook#10196). Long enough for the field's
# "minutes to hours"; past it the run may end incomplete, and it still never stops the OSD.
REBUILD_MAX_S = 7200.0
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
        self.over: Set[str] = set()               # hosts over budget this tick
        self.rss_flat: Set[int] = set()           # granted OSDs whose rss stopped growing
        self.kept_preboot: Set[int] = set()       # granted OSDs gate 2 keeps in preboot
        self.hosts_summary: Dict[str, dict] = {}
        self.ends_by: Optional[float] = None      # ending.ends_by, set by plan()
        self._budgets: Dict[str, int] = {}
        self._breaks: Dict[Tuple[int, int], List[int]] = {}
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
        made so far, its records in place of these (a set or dict record updated in place)."""
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
            else:
                setattr(self, name, value)

    def budget(self, host: str) -> int:
        """The host's budget in bytes; an auto budget at the fraction its state gives
        (autobudget.py moves the state)."""
        if host not in self._budgets:
            b = budget_now(self.ctx.intent.budget, self.budget_state)
            self._budgets[host] = int(self.ctx.policies.budget(self.ctx.view.hostmem[host], b))
        return self._budgets[host]

    def clear_budgets(self) -> None:
        self._budgets.clear()

    def grant_clock(self, osd_id: int) -> float:
        """When a granted OSD's boot_timeout started: its boot (AllowBoot), else its grant --
        or the end of its allocator rebuild, if later (rebuild_clock)."""
        base = self.booting.get(osd_id, self.granted[osd_id])
        rebuilt = self.rebuild_clock(osd_id)
        return base if rebuilt is None else max(base, rebuilt)

    def rebuild_clock(self, osd_id: int) -> Optional[float]:
        """Where a granted OSD's allocator rebuild (BlueStore's scan of every onode after an
        unclean stop, before it loads any PG; model.DAEMON_REBUILDING) leaves its boot clock:
        the last tick it was seen rebuilding, so the clock restarts when the rebuild ends.
        The rebuild is the OSD's own work, minutes to hours on a large OSD, and a stop would
        only start it again (the stop is unclean too). At most REBUILD_MAX_S after it was
        first seen: past that the clock runs (inflight._timed_out names it, never stops it,
        and it is no progress: the stall rule ends the run). None if it was never seen."""
        seen = self.rebuild_seen.get(osd_id)
        if seen is None:
            return None
        return min(seen, self.rebuild_from.get(osd_id, seen) + REBUILD_MAX_S)

    def rebuilding(self, osd_id: int) -> bool:
        """Seen rebuilding its allocator in this tick's snapshot."""
        return self.rebuild_seen.get(osd_id) == self.ctx.now

    def clock_bound(self, osd_id: int) -> float:
        """The latest a granted OSD's boot clock can start if nothing else moves it: its
        grant_clock, or for one rebuilding now the end of its REBUILD_MAX_S."""
        clock = self.grant_clock(osd_id)
        if self.rebuilding(osd_id):
            clock = max(clock, self.rebuild_from.get(osd_id, self.ctx.now) + REBUILD_MAX_S)
        return clock

    def stopping(self) -> Set[int]:
        """OSDs counted as stopped by every later stop decision, on every host: this tick's
        restarts and the restarts of earlier ticks still in flight (view.restarting: the
        instruction may not have run yet, or the OSD is back but still peering). An
        ok-to-stop answer asked before one of them cleared each OSD alone."""
        return set(self.new_restarts) | self.ctx.view.restarting

    def stop_breaks(self, osd_id: int) -> List[int]:
        """PG indexes a stop of `osd_id` now would take below min_size (with the restarts in
        flight counted as stopped too); empty when the snapshot has no PG membership."""
        pm = self.ctx.snapshot.pg_map
        if pm is None:
            return []
        key = (osd_id, len(self.new_restarts))     # new_restarts only grows within a tick
        if key not in self._breaks:
            self._breaks[key] = stop_breaks(pm, self.ctx.up, osd_id, self.stopping() - {osd_id})
        return self._breaks[key]

    def _blind_overlap(self, osd_id: int) -> bool:
        """Without PG membership nothing says whether two stops share a PG: one in flight at
        a time, cluster-wide (a second one in this tick waits: room.py)."""
        return self.ctx.snapshot.pg_map is None and bool(self.ctx.view.restarting - {osd_id})

    def may_stop(self, osd_id: int) -> bool:
        """ok-to-stop True in this snapshot AND no PG with min_size up drops below it, the
        restarts in flight counted as stopped (Ceph's ok-to-stop clears a returning OSD still
        recovering even where it does: the core never makes an active PG inactive)."""
        return self.ctx.snapshot.ok_to_stop.get(osd_id) is True and \
            not self.stop_breaks(osd_id) and not self._blind_overlap(osd_id)

    def stop_refusal(self, osd_id: int) -> str:
        """Why the membership refuses stopping `osd_id` ("" if it does not)."""
        if self._blind_overlap(osd_id):
            return "osd.%s restarting: without PG membership one stop at a time" % ",".join(
                str(x) for x in sorted(self.ctx.view.restarting - {osd_id}))
        bad = self.stop_breaks(osd_id)
        if not bad:
            return ""
        pm = self.ctx.snapshot.pg_map
        return "its stop would take %d PG(s) below min_size (%s)" % (
            len(bad), ", ".join(pm.name(x) for x in bad[:3]) + (", ..." if len(bad) > 3 else ""))

    def concurrency(self) -> int:
        """Starts in flight per host charged their plain prediction (and restarts allowed
        beside them): 1 until warmed_up(), then ctx.slots(). Starts beyond it, up to ctx.slots(),
        are charged margin() (admission.py). Lower bounds do not open it (load floors, peaks so
        far of OSDs still settling, even those already past a peak: the first to pass theirs
        missed the least history): every start admitted on a prediction that only lower
        bounds shaped adds its under-prediction to the host (simulator, one rack down 1 h:
        1.14 x the budget at 1,200 OSDs when load floors opened it, 1.06 when past peaks did;
        0.93 with real peaks, and faster)."""
        if not self.warmed_up():
            return 1
        return self.ctx.slots()

    def margin(self) -> float:
        """The factor on predictions that charges a start beyond concurrency() (until
        warmed_up(), WARMUP_MARGIN): more starts per host
        when memory admits them with that margin, instead of one until three starts settled
        (simulator, one rack down 1 h, 30 hosts, seed 1, all PGs active: 64 GiB 715 -> 230 s,
        48 GiB 1,090 -> 805 s, 44 GiB 1,215 -> 1,065 s, failed hosts' peak <= 0.93 x the
        budget; with a margin of 1.0 the 44 GiB cell peaked at 1.18 x the budget). 1.0 once
        warmed_up()."""
        if not self.warmed_up():
            return WARMUP_MARGIN
        return 1.0

    def warmed_up(self) -> bool:
        """Predictions are shaped by real peaks: WARMUP_OBSERVATIONS settled starts are known,
        or this run's auto budget was raised, or its fixed one validated (autobudget.py:
        AUTO_EVIDENCE OSDs it let boot are past their peaks, each within the peak its start
        was admitted on, and none outgrew its prediction on a host or failed a start; a
        budget held later ends this again). Settling takes minutes
        (inflight.SETTLE_QUIET_S); peaks within their predictions show the same sooner
        (measured in docs/memory-model.md, "Staged starts: a host's OSDs peer in turn")."""
        return self.budget_state in (BUDGET_RAISED, BUDGET_VALIDATED) or \
            self.predictor.final_observations() >= WARMUP_OBSERVATIONS

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
