"""The `controlled` strategy: every tick, build a Snapshot of the model, call the real
`ceph_recovery.plan.plan()`, and carry out the returned actions in order.

The helper's boot gate stands in for systemd here: an in-scope OSD killed by the OOM killer
is not restarted automatically, plan() decides (out-of-scope OSDs keep systemd semantics).
OsdState values are cached per OSD and rebuilt only when the OSD changed, so a tick costs
O(changed OSDs) plus plan() itself.
"""
from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Dict, List, Set

from ceph_recovery import actions as A
from ceph_recovery.model import (MODE_CONTROLLED, PROC_RUNNING, PROC_STOPPED, Budget, HostMem,
                                 Intent, OsdState, PgMap, PoolInfo, Progress, Snapshot)
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policies import resolve
from ceph_recovery.view import OK_TO_STOP_TTL_S

from . import levers
from .basestrategy import Strategy
from .cluster import BOOTING, LOADING, PREBOOT, RUNNING_PHASES, Osd

STUCK_S = 3600.0
# what the helper reads from a running OSD's admin socket (`status`), by model phase: the
# OSD is "initializing" while it loads its PGs and "preboot" once they are loaded
DAEMON_STATES = {ph: "active" for ph in RUNNING_PHASES}
DAEMON_STATES.update({LOADING: "initializing", PREBOOT: "preboot", BOOTING: "booting"})


class Controlled(Strategy):
    name = "controlled"

    def __init__(self, cfg):
        super().__init__(cfg)
        self.intent = None
        self.progress = Progress()
        self.done = False
        self.cache: Dict[int, OsdState] = {}
        self.queries: Dict[int, float] = {}    # osd -> when plan() asked ok-to-stop
        self.flags: Set[str] = set()
        self.last_actions: List[A.Action] = []
        self.policies = None
        self.last_act = 0.0
        self.buckets: Dict[str, str] = {}
        self.last_health: List[str] = []
        self.trace = None                      # a text file: JSON lines per tick (--trace)
        self.config_changed: Set[tuple] = set()   # (who, name) set and not restored yet
        self.pg_map = None                     # static membership, built once (pg_map())

    def _pg_map(self, sim) -> PgMap:
        """PG membership as the mgr reads it (members = CRUSH's up set with every OSD up, the
        one pool's size/min_size); the placement never changes in a run, so only the
        inactive set is new each tick."""
        cl = sim.cl
        if self.pg_map is None:
            self.pg_map = PgMap(members=cl.members, pool_of=(1,) * len(cl.members),
                                pools={1: PoolInfo(size=cl.size, min_size=cl.min_size)},
                                by_osd={o.id: tuple(o.pgs) for o in cl.osds})
        return replace(self.pg_map, inactive=frozenset(cl.inactive_pgs))

    # ------------------------------------------------------------------ snapshot
    def _osd_state(self, sim, o: Osd) -> OsdState:
        topo = sim.cl.topo
        return OsdState(
            id=o.id, host=o.host, crush_path=(topo.root, o.rack, o.host), up=o.up,
            in_=not o.out, flags=self._flags(o),
            process=PROC_RUNNING if o.running else PROC_STOPPED,
            rss_bytes=int(o.rss), process_started_at=o.started_at if o.running else None,
            daemon_state=DAEMON_STATES.get(o.phase) if sim.cfg.daemon_state else None,
            pgs=len(o.pgs), pgs_inactive=o.inactive, pgs_degraded=o.degraded,
            pg_log_entries=(sim.p.log_entries_per_pg(len(o.pgs)) * len(o.pgs)
                            if o.running else 0),
            down_since=o.down_since if not o.up else None,
            heap_release=sim.p.heap_release, memory_target=self._memory_target(sim, o),
            recovery_config=self._recovery_config(sim, o), op_queue=sim.p.op_queue)

    @staticmethod
    def _flags(o: Osd) -> frozenset:
        """The OSD's own flags in the OSD map (noup, noin)."""
        return frozenset(f for f, on in (("noup", o.noup), ("noin", o.noin)) if on)

    @staticmethod
    def _memory_target(sim, o: Osd) -> int:
        """The OSD's own osd_memory_target, as `config dump` shows it (0: none, it inherits)."""
        return sim.cl.own_memory_target(o) or 0

    @staticmethod
    def _recovery_config(sim, o: Osd):
        """The OSD's own recovery settings, as `config dump` shows them (section osd.N)."""
        who = "osd.%d" % o.id
        return tuple(sorted((name, v) for (w, name), v in sim.cl.config.items()
                            if w == who and name != levers.MEMORY_TARGET))

    def snapshot(self, sim) -> Snapshot:
        cl = sim.cl
        for oid in cl.dirty_osds:
            self.cache[oid] = self._osd_state(sim, cl.osds[oid])
        cl.dirty_osds.clear()
        if len(self.cache) != len(cl.osds):
            for o in cl.osds:
                if o.id not in self.cache:
                    self.cache[o.id] = self._osd_state(sim, o)
        osds = [self._with_missed(sim, self.cache[i]) for i in range(len(cl.osds))]
        ram = int(cl.host_ram)
        hosts = tuple(HostMem(name=h, mem_total=ram, mem_used=int(cl.host_used[h]),
                              mem_available=max(0, ram - int(cl.host_used[h])),
                              reported_at=sim.now) for h in cl.hosts)
        if not self.buckets:
            self.buckets = {h: "host" for h in cl.hosts}
            self.buckets.update({r: "rack" for r in cl.topo.racks})
            self.buckets[cl.topo.root] = "root"
        answers = self._answers(sim)
        return Snapshot(
            epoch=cl.epoch, osds=tuple(osds),
            hosts=hosts, bucket_flags={b: frozenset(("noup",)) for b in sim.lc.held_buckets},
            cluster_flags=frozenset(self.flags), buckets=self.buckets,
            pgs_total=len(cl.members), pgs_active=cl.n_active, pgs_clean=cl.n_clean_pgs,
            ok_to_stop=answers, helpers_seen={h: sim.now for h in cl.hosts},
            pg_map=self._pg_map(sim) if sim.cfg.membership else None)

    def _with_missed(self, sim, st: OsdState) -> OsdState:
        """A down OSD's missed PG log entries, as the mgr reads them from its PGs' versions
        (pgtrack.missed_entries: how far each advanced since the OSD was seen down): the
        writes its PGs took that an earlier peering did not merge, capped by what the log
        holds (the same numbers Lifecycle._boot turns into its history memory)."""
        if st.up:
            return st
        o = sim.cl.osds[st.id]
        return replace(st, missed_entries=int(sim.cl.unmerged_writes(o, sim.now)))

    def _answers(self, sim) -> Dict[int, bool]:
        """Like the mgr shell: an answer lives OK_TO_STOP_TTL_S after plan() asked for it (the
        core's constant, view.fresh_ok_to_stop), then plan() must ask again; within that time
        it is answered at this snapshot's epoch (the shell also drops it at a new epoch: the
        model answers afresh instead, which is the state the re-asked query would see)."""
        for oid, at in list(self.queries.items()):
            if sim.now - at >= OK_TO_STOP_TTL_S:
                del self.queries[oid]
        return {oid: sim.cl.ok_to_stop(sim.cl.osds[oid]) for oid in sorted(self.queries)}

    # ------------------------------------------------------------------ tick
    def tick(self, sim) -> None:
        if self.done:
            return
        if self.intent is None:
            self.intent = self.make_intent(sim)
            self.policies = self.make_policies(sim, self.intent)
        snap = self.snapshot(sim)
        t0 = time.perf_counter()
        res = self.plan(sim, snap)
        sim.m.plan_s.append(time.perf_counter() - t0)
        sim.m.decisions += 1
        if sim.cfg.check_invariants:
            self._check(sim, snap, res)
        self.progress = res.progress
        self.last_actions = list(res.actions)
        self.last_health = ["%s: %s" % (c.code, "; ".join(c.detail[:2]) or c.summary)
                            for c in res.health]
        if self.trace is not None:
            self._trace(sim, res)
        for a in res.actions:
            self.apply(sim, a)
            if not isinstance(a, (A.Wait, A.QueryOkToStop)):
                self.last_act = sim.now

    def make_intent(self, sim) -> Intent:
        return Intent(mode=MODE_CONTROLLED, budget=Budget(sim.cfg.budget_kind, sim.cfg.budget),
                      scope=sim.failed_buckets, concurrency=sim.cfg.concurrency,
                      start_order=sim.cfg.start_order, run_id="sim-%d" % sim.cfg.seed)

    def make_policies(self, sim, intent: Intent):
        pol = resolve(intent)
        return pol if sim.cfg.throttle else replace(pol, throttle=None)

    def plan(self, sim, snap):
        return plan(snap, self.intent, self.progress, self.policies, sim.now)

    def _trace(self, sim, res) -> None:
        """One JSON line per tick: what plan() decided and the failed hosts' memory."""
        hosts = sorted({o.host for o in sim.failed})
        acts = [a.describe() for a in res.actions if not isinstance(a, A.HoldOsd)]
        self.trace.write(json.dumps({
            "t": sim.now, "epoch": sim.cl.epoch, "actions": acts,
            "health": [c.code for c in res.health],
            "health_detail": [d for c in res.health for d in c.detail],
            "budget": (res.summary.get("budget") or {}).get("state"),
            "used_gib": {h: round(sim.cl.host_used[h] / 2 ** 30, 2) for h in hosts},
            "down": sim.cl.n_down, "pgs_inactive": len(sim.cl.members) - sim.cl.n_active},
            sort_keys=True) + "\n")

    def _check(self, sim, snap, res) -> None:
        bad = check_invariants(snap, self.intent, self.progress, res, self.policies, sim.now)
        bad = list(bad or ())
        if bad:
            sim.m.invariant_violations += len(bad)
            for b in bad[:3]:
                sim.m.violations.append("t=%.0f %s" % (sim.now, b))

    def apply(self, sim, a: A.Action) -> None:
        cl, lc = sim.cl, sim.lc
        o = cl.osds[a.osd] if getattr(a, "osd", -1) >= 0 else None
        if isinstance(a, (A.SetFlag, A.UnsetFlag)):
            (self.flags.add if isinstance(a, A.SetFlag) else self.flags.discard)(a.flag)
            levers.set_flags(sim, self.flags)
        elif isinstance(a, (A.SetConfig, A.RestoreConfig)):
            self._config(sim, a)
        elif isinstance(a, A.StopOsd):
            levers.stop_osd(sim, o)
        elif isinstance(a, (A.HoldOsd, A.AllowBoot)):
            o.noup = isinstance(a, A.HoldOsd)
            cl.dirty_osds.add(o.id)
            cl.epoch += 1
            if not o.noup:
                lc.allow_boot(o, sim.now)
        elif isinstance(a, (A.HoldBucket, A.ReleaseBucket)):
            self._bucket(sim, a)
        elif isinstance(a, A.GrantStart):
            if not o.running:
                lc.start(o, sim.now)
        elif isinstance(a, A.QueryOkToStop):
            self.queries[o.id] = sim.now
        elif isinstance(a, A.HeapRelease):
            sim.m.heap_releases += 1
            lc.heap_release(o)
        elif isinstance(a, A.RestartOsd):
            self._restart(sim, o)
        elif isinstance(a, A.Done):
            self.done = True

    def _config(self, sim, a) -> None:
        """SetConfig / RestoreConfig through the model's levers; a setting the model does not
        represent is counted (JSON `unmodelled_actions`), not applied."""
        key = (a.who, a.name)
        try:
            levers.set_config(sim, a.who, a.name, a.value)
        except ValueError as e:
            sim.m.unmodelled.append("t=%.0f %s (%s)" % (sim.now, a.describe()[:100], e))
            return
        if isinstance(a, A.SetConfig):
            sim.m.config_sets += 1
            self.config_changed.add(key)
        else:
            self.config_changed.discard(key)

    def _bucket(self, sim, a) -> None:
        if isinstance(a, A.HoldBucket):
            sim.lc.held_buckets.add(a.bucket)
        else:
            sim.lc.held_buckets.discard(a.bucket)
            for o in sim.cl.osds:
                if a.bucket in (o.host, o.rack, sim.cl.topo.root):
                    sim.lc.allow_boot(o, sim.now)
        sim.cl.epoch += 1

    def _restart(self, sim, o: Osd) -> None:
        sim.m.restarts += 1
        if o.running:
            sim.lc.stop(o, sim.now)
        sim.lc.start(o, sim.now)

    # ------------------------------------------------------------------ engine hooks
    def systemd_restarts(self, sim, osd) -> bool:
        return self.done or not osd.in_scope

    def finished(self, sim) -> bool:
        """Done, or everything up and clean with every flag and setting of the run undone
        (plan() not saying Done is reported in JSON). While something is still set, plan()
        gets its ticks to restore it; one that never does ends by stuck() after STUCK_S."""
        return self.done or (sim.cl.n_down == 0 and not self.flags and not self.config_changed)

    def stuck(self, sim) -> bool:
        """Done, or nothing moves and plan() only waited for STUCK_S simulated seconds."""
        return self.done or sim.now - self.last_act >= STUCK_S
