"""What a plan() call predicts of an OSD's peak: the footprint policy on the observations, and
the core's rules that override or floor it (the OSD's load and missed entries, growth.py; its
host's running OSDs; its own past peaks).

A Predictor stands alone: it is made from the view of the snapshot, the footprint policy, the
time, the run's per-OSD maps (model.columns), its observations and the OSDs it finished, and
answers with numbers. A decision shares its own maps, observations and finished set with
its Predictor, so that what a stage records (a load, an observation) is what the next
prediction reads; the stage then calls learning_changed(), since predictions made earlier in
the call are cached. The per-host floor and the running OSDs' size are taken once per call,
when first asked. No I/O."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from .growth import floor_from_load, growth_samples, peak_from_load, settled
from .model import Columns, Intent, Observation, OsdState, Progress, Snapshot, columns
from .policy_types import Policies
from .view import View

WARMUP_OBSERVATIONS = 3     # measured starts before a start beside another in flight on its
                            # host is charged its plain prediction
PROBE_LOAD_FRACTION = 1 / 3.0   # a probe start's load, at most this share of its predicted
                                # peak (lab: 53-146 MiB loads of 200-400 MiB peaks; model:
                                # 1.18 of 6 GiB)
PEER_FLOOR_FACTOR = 1.2     # RSS can run 20 % over osd_memory_target (docs/design.md, Ceph facts)


class Predictor:
    """Peak predictions of one plan() call (see the module docstring)."""

    def __init__(self, view: View, footprint: Callable[..., int], now: float,
                 cols: Columns, observations: List[Observation],
                 finished: Set[int]) -> None:
        self.view, self.footprint_policy, self.now = view, footprint, now
        self.observations, self.finished = observations, finished
        self.granted = cols["granted"]
        self.downtime = cols["downtime"]
        self.missed = cols["missed"]
        self.load_rss = cols["load_rss"]
        self.peaks = cols["peaks"]
        self.settling = cols["settling"]
        self._pred: Dict[int, int] = {}
        self._floor: Dict[str, int] = {}
        self._learn: Optional[List[Observation]] = None
        self._growth: Optional[List[Tuple[int, Optional[int]]]] = None
        self._own: Optional[Dict[int, List[Observation]]] = None
        self._running: Optional[int] = None

    @classmethod
    def of(cls, snapshot: Snapshot, intent: Intent, progress: Progress, policies: Policies,
           now: float) -> "Predictor":
        """The predictions a plan() call on these inputs starts from, before any stage."""
        return cls(View(snapshot, intent, progress, now), policies.footprint, now,
                   columns(progress.osds), list(progress.observations), set(progress.finished))

    def predict(self, osd_id: int) -> int:
        """The peak an OSD is admitted on. Where its missed entries are known and a load of
        this cluster is, grant_from_load(); else the footprint policy's prediction (never
        below its prior until WARMUP_OBSERVATIONS real peaks are known: lower bounds may raise
        it, not lower it; three OSDs seen at 2x their load while their peaks were 5x would
        teach it half the truth). Floored at the median rss of the running OSDs on the same
        host (peer_floor), at its own past peak with as much history (own_peak) and, once
        this OSD was allowed to boot, at load_bound(): its measured load-time rss voids a
        prediction below it. Once it booted and its load decides (load_decides), the policy
        is left out: peak_from_load floored by peer_floor."""
        if osd_id not in self._pred:
            o = self.view.by_id[osd_id]
            if o.down_since is None and osd_id in self.downtime:   # up again: its history
                o = replace(o, down_since=self.now - self.downtime[osd_id],
                            missed_entries=self.missed.get(osd_id, o.missed_entries))
            if self.load_rss.get(osd_id, 0) > 0 and self.load_decides(osd_id):
                pred = 0      # load_bound() says it
            else:
                pred = self.grant_from_load(osd_id) or self.policy_peak(o)
            self._pred[osd_id] = max(pred, self.peer_floor(o.host), self.load_bound(osd_id),
                                     self.own_peak(osd_id))
        return self._pred[osd_id]

    def policy_peak(self, o: OsdState) -> int:
        """The footprint policy on learning(), never below its prior until
        WARMUP_OBSERVATIONS real peaks are known."""
        pred = self.footprint(o, self.learning())
        if self.final_observations() < WARMUP_OBSERVATIONS:
            pred = max(pred, self.footprint(o, ()))
        return pred

    def grant_from_load(self, osd_id: int) -> int:
        """A grant's peak from loads this cluster showed, where the OSD's missed entries are
        known and it has not loaded yet: peak_from_load() of its own last settled load, else
        of the largest load of the recent settled starts and of the OSDs this run let boot
        (same release and configuration; loads grow run to run as heaps keep pages, the
        largest covers that). Measured loads and missed entries say more than the footprint
        policy's prior (fresh labs: the second start of a run +96 to +112 % on the prior); an
        underestimate costs a preboot, not memory: gate 2 boots it on its real load. 0 when
        no load is known."""
        missed = self.missed_of(osd_id)
        if missed is None or self.load_rss.get(osd_id, 0) > 0:
            return 0
        own = [ob.load_bytes for ob in settled(self.observations) if ob.osd == osd_id]
        load = own[-1] if own else self.largest_load()
        return peak_from_load(load, self.growth_samples(), missed) if load > 0 else 0

    def largest_load(self) -> int:
        """The largest preboot load this cluster showed: of the recent settled starts and of
        the OSDs this run let boot (same release and configuration). 0 when none is known."""
        return max([ob.load_bytes for ob in settled(self.observations)] +
                   list(self.load_rss.values()), default=0)

    def expected_load(self, osd_id: int) -> int:
        """The rss a staged OSD holds in preboot, before its boot (reserve.py): the largest
        load this cluster showed (largest_load), at least PROBE_LOAD_FRACTION of its predicted
        peak (the share a probe start rests on), at most that peak."""
        pred = self.predict(osd_id)
        return min(pred, max(int(pred * PROBE_LOAD_FRACTION), self.largest_load()))

    def own_peak(self, osd_id: int) -> int:
        """The largest peak observed of `osd_id` (an earlier start of it that finished,
        settled or failed) with no more missed entries than it has now (unknown counts): a
        start of the same OSD that missed as much carries at least that history. 0 if none."""
        if self._own is None:
            self._own = {}
            for ob in self.observations:
                self._own.setdefault(ob.osd, []).append(ob)
        missed = self.missed_of(osd_id)
        return max((ob.peak_bytes for ob in self._own.get(osd_id, ()) if missed is None or
                    ob.missed_entries is None or ob.missed_entries <= missed), default=0)

    def footprint(self, o: OsdState, observations: Sequence[Observation]) -> int:
        """The footprint policy, told the cluster's own size (running_rss()) if it takes it
        (policy_types: the attribute `takes_running_rss`)."""
        if getattr(self.footprint_policy, "takes_running_rss", False):
            return int(self.footprint_policy(o, observations, self.now,
                                             running_rss=self.running_rss()))
        return int(self.footprint_policy(o, observations, self.now))

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

    def load_decides(self, osd_id: int) -> bool:
        """Once `osd_id` loaded, its load decides its peak (peak_from_load) rather than the
        footprint policy: where a growth is learned, or where its missed entries are known
        (growth.by_missed, calibrated on the labs: 0 to +13 % where the capped prior that
        gate 2 also took was up to +97 %)."""
        return bool(self.growth_samples()) or self.missed_of(osd_id) is not None

    def boot_peak(self, o: OsdState) -> int:
        """Gate 2's peak of a granted OSD in preboot (its load is o.rss_bytes): where its load
        decides (load_decides) peak_from_load floored by peer_floor (as predict() once it
        booted), else the larger of its grant's prediction and LOAD_TO_PEAK_MIN x the load."""
        by_load = self.peak_from_load(o.id, o.rss_bytes)
        if self.load_decides(o.id):
            return max(by_load, self.peer_floor(o.host))
        return max(self.predict(o.id), by_load)

    def admitted_peak(self, o: OsdState) -> int:
        """The peak an OSD this run let boot was admitted on (the brake's line): where its
        load decides, its load bound (as gate 2), else the larger of the footprint policy on
        the recorded observations (not learning()'s live bounds) and its load bound."""
        if self.load_rss.get(o.id, 0) > 0 and self.load_decides(o.id):
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
