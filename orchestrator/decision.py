"""The decision ONE plan() call makes (a mutable value that never escapes the call): what it
read (snapshot, intent, progress), the progress markers the stages update, health lines, and
the actions it emits per stage. `result()` freezes it into a PlanResult.

Stages are emitted in this fixed order so that every prefix of the action list leaves the
cluster no worse off: flags and holds first, releases only after the per-OSD holds that
replace them, then memory responses, boots, grants, and finally flag restores / Done.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, Optional, Sequence, Set, Tuple

from .actions import Action
from .growth import floor_from_load, growth_samples, peak_from_load
from .membership import stop_breaks, up_ids
from .model import (HealthCheck, Intent, Observation, OsdColumn, OsdState, Progress, Snapshot)
from .policy_types import Policies
from .result import PlanResult
from .view import View

STAGES = ("flags", "hold_buckets", "hold_osds", "releases", "memory", "boots", "grants", "tail")
AUTO_SLOTS = 1 << 16        # CONCURRENCY_AUTO: no slot count, memory admission decides
MAX_OBSERVATIONS = 200      # footprint learning keeps the most recent observations only
WARMUP_OBSERVATIONS = 3     # measured starts before a start beside another in flight on its
                            # host is charged its plain prediction
WARMUP_MARGIN = 1.7         # until then such a start, and the OSDs in flight and settling
                            # beside it, are charged prediction x this: the worst measured
                            # under-prediction of a prediction no real peak shaped (simulator,
                            # one rack down 1 h: peaks 6.1-6.6 GiB on predictions 3.9-4.9 GiB,
                            # 6.6 / 3.9 = 1.69; docs/memory-model.md "Auto concurrency holds
                            # the budget"; lab: 2.7 x the load where 2 x was assumed, 1.35)
MAX_DETAIL = 50             # health detail lines / summary reasons kept (the count stays exact)
PEER_FLOOR_FACTOR = 1.2     # RSS can run 20 % over osd_memory_target (docs/design.md, Ceph facts)
PROBE_LOAD_FRACTION = 1 / 3.0   # a probe start's load, at most this share of its predicted
                                # peak (lab: 53-146 MiB loads of 200-400 MiB peaks; model:
                                # 1.18 of 6 GiB)
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
           "RECOVERY_INCOMPLETE": "controlled recovery ended with %d OSD(s) still down: "
                                  "not enough memory",
           "RECOVERY_SETTING_KEPT": "%d setting(s) the run lowered kept: the host cannot "
                                    "hold the restored value"}
SEVERITY = dict.fromkeys(SUMMARY, "warning")    # HEALTH_ERR is for data at risk: none of these


def fmt_bytes(n: float) -> str:
    return "%.0f MiB" % (n / 1048576.0)


class Decision:
    """The decision being made by one plan() call (see the module docstring)."""

    def __init__(self, snapshot: Snapshot, intent: Intent, progress: Progress,
                 policies: Policies, now: float):
        self.s, self.i, self.p, self.pol, self.now = snapshot, intent, progress, policies, now
        self.view = View(snapshot, intent, progress, now)
        self.stage: Dict[str, List[Action]] = {k: [] for k in STAGES}
        self._health: Dict[str, List[str]] = {}
        self._health_count: Dict[str, int] = {}
        self.reasons: List[str] = []
        self.state: Optional[str] = None          # "new" | "running" | "paused" | "abort" | None
        self.phase = progress.phase
        self.run_id = progress.run_id
        self.saved_flags = progress.saved_flags
        self.started_at, self.finished_at = progress.started_at, progress.finished_at
        self.osds = dict(progress.osds)           # osd -> OsdRun; the maps below view it
        self.granted = OsdColumn(self.osds, "granted")
        self.booting = OsdColumn(self.osds, "booting")
        self.finished: Set[int] = set(progress.finished)
        self.held_osds: Set[int] = set(progress.held_osds)
        self.held_buckets: Set[str] = set(progress.held_buckets)
        self.auto_held: Set[str] = set(progress.auto_held)
        self.restarted = OsdColumn(self.osds, "restarted")
        self.heap_released = OsdColumn(self.osds, "heap_released")
        self.observations: List[Observation] = list(progress.observations)
        self.peaks = OsdColumn(self.osds, "peaks")
        self.downtime = OsdColumn(self.osds, "downtime")
        self.fresh_rss = OsdColumn(self.osds, "fresh_rss")
        self.failures = OsdColumn(self.osds, "failures")
        self.failed_now: Set[int] = set()     # OSDs whose start failed in this call
        self.settling = OsdColumn(self.osds, "settling")
        self.grew_at = OsdColumn(self.osds, "grew_at")
        self.load_rss = OsdColumn(self.osds, "load_rss")
        self.missed = OsdColumn(self.osds, "missed")
        self.heap_rss = OsdColumn(self.osds, "heap_rss")
        self.restart_rss = OsdColumn(self.osds, "restart_rss")
        self.shrink_at = OsdColumn(self.osds, "shrink_at")
        self.shrink_rss = OsdColumn(self.osds, "shrink_rss")
        self.saved_config = dict(progress.saved_config)
        self.service_at, self.stalled_since = progress.service_at, progress.stalled_since
        self.inactive_pg_s, self.inactive_seen = progress.inactive_pg_s, progress.inactive_seen
        self.released: Set[str] = set()           # buckets released this tick
        self.new_restarts: Set[int] = set()
        self.room_restarts: Set[int] = set()      # of those, made for the next start's room
        self.over: Set[str] = set()               # hosts over budget this tick
        self.rss_flat: Set[int] = set()           # granted OSDs whose rss stopped growing
        self.kept_preboot: Set[int] = set()       # granted OSDs gate 2 keeps in preboot
        self.hosts_summary: Dict[str, dict] = {}
        self._budgets: Dict[str, int] = {}
        self._pred: Dict[int, int] = {}
        self._floor: Dict[str, int] = {}
        self._learn: Optional[List[Observation]] = None
        self._growth: Optional[List[Tuple[int, Optional[int]]]] = None
        self._own: Optional[Dict[int, int]] = None
        self._breaks: Dict[Tuple[int, int], List[int]] = {}
        self._up: Optional[Set[int]] = None
        self._running: Optional[int] = None

    # ------------------------------------------------------------------ helpers
    def emit(self, stage: str, action: Action) -> None:
        self.stage[stage].append(action)

    def health(self, code: str, line: str, count: int = 1) -> None:
        self._health.setdefault(code, []).append(line)
        self._health_count[code] = self._health_count.get(code, 0) + count

    def budget(self, host: str) -> int:
        if host not in self._budgets:
            self._budgets[host] = int(self.pol.budget(self.view.hostmem[host], self.i.budget))
        return self._budgets[host]

    def predict(self, osd_id: int) -> int:
        """The footprint policy's prediction (never below its prior until WARMUP_OBSERVATIONS
        real peaks are known: lower bounds may raise it, not lower it; three OSDs seen at 2x
        their load while their peaks were 5x would teach it half the truth), floored at the
        median rss of the running OSDs
        on the same host (peer_floor) and, once this OSD was allowed to boot, at
        load_bound(): its measured load-time rss voids a prediction below it. Once it booted
        with a growth learned, the policy is left out: peak_from_load floored by peer_floor."""
        if osd_id not in self._pred:
            o = self.view.by_id[osd_id]
            if o.down_since is None and osd_id in self.downtime:   # up again: its history
                o = replace(o, down_since=self.now - self.downtime[osd_id],
                            missed_entries=self.missed.get(osd_id, o.missed_entries))
            if self.load_rss.get(osd_id, 0) > 0 and self.growth_samples():
                pred = 0      # its load and a learned growth say more than the policy
            else:
                pred = self.footprint(o, self.learning())
                if self.final_observations() < WARMUP_OBSERVATIONS:
                    pred = max(pred, self.footprint(o, ()))
            self._pred[osd_id] = max(pred, self.peer_floor(o.host), self.load_bound(osd_id),
                                     self.own_peak(osd_id))
        return self._pred[osd_id]

    def own_peak(self, osd_id: int) -> int:
        """The largest peak this run observed of `osd_id` (an earlier start of it that
        finished, settled or failed): whatever the footprint policy learns or not, a start of
        the same OSD after more downtime carries at least that history. 0 if none."""
        if self._own is None:
            self._own = {}
            for ob in self.observations:
                self._own[ob.osd] = max(self._own.get(ob.osd, 0), ob.peak_bytes)
        return self._own.get(osd_id, 0)

    def footprint(self, o: OsdState, observations: Sequence[Observation]) -> int:
        """The footprint policy, told the cluster's own size (running_rss()) if it takes it
        (policy_types: the attribute `takes_running_rss`)."""
        if getattr(self.pol.footprint, "takes_running_rss", False):
            return int(self.pol.footprint(o, observations, self.now,
                                          running_rss=self.running_rss()))
        return int(self.pol.footprint(o, observations, self.now))

    def running_rss(self) -> Optional[int]:
        """The largest rss of the cluster's up, running OSDs this run did not start (any host:
        same release and configuration), None when none runs: the footprint policy caps its
        prior by it (policies/footprint.py)."""
        if self._running is None:
            rss = [o.rss_bytes for o in self.view.by_id.values()
                   if o.up and o.rss_bytes > 0 and o.id not in self.granted
                   and o.id not in self.finished]
            self._running = max(rss) if rss else 0
        return self._running or None

    def load_bound(self, osd_id: int) -> int:
        """The peak of an OSD this run let boot, from the rss it had loaded in preboot, until
        its real peak is known (it settled): peak_from_load(). A footprint learned on lighter
        starts (less history missed) can predict less than the load says; the next start must
        not be admitted on that lower prediction. 0 before its boot."""
        return self.peak_from_load(osd_id, self.load_rss.get(osd_id, 0))

    def load_floor(self, osd_id: int) -> int:
        """The least peak of an OSD this run let boot while its real peak is unknown
        (floor_from_load of its preboot rss): the live bounds of learning(), a provisional
        observation, and whether a settling OSD's peak is behind it. 0 before its boot."""
        return floor_from_load(self.load_rss.get(osd_id, 0), self.growth_samples(),
                               self.missed_of(osd_id))

    def peak_from_load(self, osd_id: int, load: int) -> int:
        """The one rule for a peak predicted from a preboot load (gate 2, reservations, the
        brake): peak_from_load() on the settled observations, with this OSD's missed entries."""
        return peak_from_load(load, self.growth_samples(), self.missed_of(osd_id))

    def missed_of(self, osd_id: int) -> Optional[int]:
        """The PG log entries `osd_id` missed: as recorded at its grant, else as the snapshot
        shows them (None: unknown)."""
        missed = self.missed.get(osd_id)
        if missed is None:
            o = self.view.by_id.get(osd_id)
            missed = o.missed_entries if o is not None else None
        return missed

    def growth_samples(self) -> List[Tuple[int, Optional[int]]]:
        if self._growth is None:
            self._growth = growth_samples(self.observations)
        return self._growth

    def boot_peak(self, o: OsdState) -> int:
        """Gate 2's peak of a granted OSD in preboot (its load is o.rss_bytes): with a learned
        growth peak_from_load floored by peer_floor (as predict() once it booted), else the
        larger of its grant's prediction and LOAD_TO_PEAK_MIN x the load."""
        by_load = self.peak_from_load(o.id, o.rss_bytes)
        if self.growth_samples():
            return max(by_load, self.peer_floor(o.host))
        return max(self.predict(o.id), by_load)

    def admitted_peak(self, o: OsdState) -> int:
        """The peak an OSD this run let boot was admitted on (the brake's line): with a
        learned growth its load bound (as gate 2), else the larger of the footprint policy on
        the recorded observations (not learning()'s live bounds) and its load bound."""
        if self.load_rss.get(o.id, 0) > 0 and self.growth_samples():
            return self.load_bound(o.id)
        return max(self.footprint(o, self.observations), self.load_bound(o.id))

    def record_load(self, osd_id: int, rss: int) -> None:
        """The preboot rss of an OSD allowed to boot now."""
        self.load_rss[osd_id] = rss
        self.learning_changed()

    def learning_changed(self) -> None:
        """Predictions made earlier in this tick did not know the new load or observation."""
        self._pred.clear()
        self._learn = None
        self._growth = None
        self._own = None

    def learning(self) -> List[Observation]:
        """Observations for the footprint policy: the recorded ones plus, for every OSD this
        run let boot that is still in flight or settling, the larger of its peak so far and its
        load_floor() when that is above its recorded peak (lower bounds of its real peak:
        predictions follow the growth the run is watching, not only finished starts)."""
        if self._learn is None:
            last = {ob.osd: ob.peak_bytes for ob in self.observations}
            live = []
            for osd_id in sorted(set(self.settling) | set(self.load_rss)):
                o = self.view.by_id.get(osd_id)
                peak = max(self.peaks.get(osd_id, 0), self.load_floor(osd_id))
                if o is not None and peak > last.get(osd_id, 0):
                    live.append(Observation(osd=osd_id, pgs=o.pgs,
                                            downtime_s=self.downtime.get(osd_id, 0.0),
                                            pg_log_entries=o.pg_log_entries, peak_bytes=peak,
                                            missed_entries=self.missed.get(osd_id)))
            self._learn = self.observations + live
        return self._learn

    def final_observations(self) -> int:
        """Observations of real peaks: not those of OSDs still settling (made when the OSD
        finished, a lower bound of a peak still to come) nor the live bounds of learning()."""
        provisional = {ob.osd for ob in self.observations} & set(self.settling)
        return len(self.observations) - len(provisional)

    def peer_floor(self, host: str) -> int:
        """Median rss of the up, running OSDs on `host` not in flight, x PEER_FLOOR_FACTOR: a
        returning OSD has the same hardware and configuration (cache target, PG count class)
        as its host's running OSDs and ends up at least that big, plus the 20 % an OSD's RSS
        can run over its osd_memory_target (docs/design.md, Ceph). Only the same host: survivors on
        other hosts grew serving the outage's writes (lab: 300-550 MB against 190-240 MB for
        a returning OSD), and they say nothing about a host whose OSDs are all down (no
        floor there; the footprint policy and this run's observations decide). OSDs this run
        brought back are left out too: their peaks are observations already, and their rss
        is the history a restart sheds, not a steady-state size."""
        if host not in self._floor:
            rss = sorted(o.rss_bytes for o in self.view.by_host.get(host, ())
                         if o.up and o.rss_bytes > 0 and o.id not in self.granted
                         and o.id not in self.finished)
            self._floor[host] = int(rss[(len(rss) - 1) // 2] * PEER_FLOOR_FACTOR) if rss else 0
        return self._floor[host]

    def stop_breaks(self, osd_id: int) -> List[int]:
        """PG indexes a stop of `osd_id` now would take below min_size (with this tick's
        restarts counted as stopped too); empty when the snapshot has no PG membership."""
        pm = self.s.pg_map
        if pm is None:
            return []
        key = (osd_id, len(self.new_restarts))     # new_restarts only grows within a tick
        if key not in self._breaks:
            if self._up is None:
                self._up = up_ids(self.view.by_id)
            self._breaks[key] = stop_breaks(pm, self._up, osd_id, self.new_restarts)
        return self._breaks[key]

    def may_stop(self, osd_id: int) -> bool:
        """ok-to-stop True in this snapshot AND no PG with min_size up drops below it (Ceph's
        ok-to-stop clears a returning OSD still recovering even where it does: the core never
        makes an active PG inactive)."""
        return self.s.ok_to_stop.get(osd_id) is True and not self.stop_breaks(osd_id)

    def stop_refusal(self, osd_id: int) -> str:
        """Why the membership refuses stopping `osd_id` ("" if it does not)."""
        bad = self.stop_breaks(osd_id)
        if not bad:
            return ""
        pm = self.s.pg_map
        return "its stop would take %d PG(s) below min_size (%s)" % (
            len(bad), ", ".join(pm.name(x) for x in bad[:3]) + (", ..." if len(bad) > 3 else ""))

    def concurrency(self) -> int:
        """Starts in flight per host charged their plain prediction (and restarts allowed
        beside them): 1 until WARMUP_OBSERVATIONS real peaks are known on this cluster
        (final_observations), then slots(). Starts beyond it, up to slots(), are charged
        margin() (admission.py). Lower bounds do not
        open it (load floors, peaks so far of OSDs still settling, even those already past a
        peak: the first to pass theirs missed the least history): every start admitted on a
        prediction that only lower bounds shaped adds its under-prediction to the host
        (simulator, one rack down 1 h: 1.14 x the budget at 1,200 OSDs when load floors
        opened it, 1.06 when past peaks did; 0.93 with real peaks, and faster)."""
        if self.final_observations() < WARMUP_OBSERVATIONS:
            return 1
        return self.slots()

    def slots(self) -> int:
        """Starts allowed in flight per host at all: intent.concurrency, AUTO_SLOTS for
        CONCURRENCY_AUTO. Those beyond concurrency() are charged margin() (admission.py)."""
        return self.i.concurrency or AUTO_SLOTS

    def margin(self) -> float:
        """The factor on predictions that charges a start beyond concurrency() (while fewer
        than WARMUP_OBSERVATIONS real peaks are known, WARMUP_MARGIN): more starts per host
        when memory admits them with that margin, instead of one until three starts settled
        (simulator, one rack down 1 h, 30 hosts, seed 1, all PGs active: 64 GiB 715 -> 230 s,
        48 GiB 1,090 -> 805 s, 44 GiB 1,215 -> 1,065 s, failed hosts' peak <= 0.93 x the
        budget; with a margin of 1.0 the 44 GiB cell peaked at 1.18 x the budget). 1.0 once
        real peaks are known."""
        if self.final_observations() < WARMUP_OBSERVATIONS:
            return WARMUP_MARGIN
        return 1.0

    def progress(self) -> Progress:
        """The progress as it stands now (what policies see, and what plan() returns)."""
        return Progress(
            run_id=self.run_id, phase=self.phase, epoch=max(self.s.epoch, self.p.epoch),
            osds=dict(self.osds),
            finished=frozenset(self.finished), held_osds=frozenset(self.held_osds),
            held_buckets=frozenset(self.held_buckets), saved_flags=self.saved_flags,
            observations=tuple(self.observations[-MAX_OBSERVATIONS:]),
            started_at=self.started_at, finished_at=self.finished_at,
            auto_held=frozenset(self.auto_held), saved_config=dict(self.saved_config),
            service_at=self.service_at, stalled_since=self.stalled_since,
            inactive_pg_s=self.inactive_pg_s, inactive_seen=self.inactive_seen)

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
        v = self.view
        in_flight = sum(len(x) for x in v.in_flight(self.granted).values())
        return {
            "run_id": progress.run_id, "phase": progress.phase, "mode": self.i.mode,
            "epoch": progress.epoch, "time": self.now,
            "started_at": progress.started_at, "service_restored_at": progress.service_at,
            "inactive_pg_s": round(progress.inactive_pg_s, 1),
            "finished_at": progress.finished_at,
            "stalled_since": progress.stalled_since,
            "policies": list(self.pol.names),
            "counts": {"candidates": len(v.candidates), "in_flight": in_flight,
                       "granted": len(progress.granted), "booting": len(progress.booting),
                       "settling": len(progress.settling),
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
