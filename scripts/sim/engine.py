"""The simulation loop: strategy tick, time advance, OOM killer, systemd restarts, metrics."""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import List, Optional

from ceph_recovery.model import (AUTO_RAISED_FRACTION, BUDGET_AUTO, DEFAULT_BUDGET_FRACTION,
                                 Intent)

from .cluster import C_DOWN, FAILED, Cluster, Osd
from .lifecycle import Lifecycle
from .outreturn import OutReturn
from .params import Params
from .topology import Topology


@dataclass
class RunConfig:
    strategy: str = "controlled"
    fail: str = "rack:1"
    downtime_s: float = 3600.0
    horizon_s: float = 96 * 3600.0
    tick_s: float = 5.0
    budget: float = DEFAULT_BUDGET_FRACTION   # for "auto": the fraction before its raise
    budget_kind: str = BUDGET_AUTO            # "auto" | "fraction" (model.Budget.kind)
    host_ram: Optional[float] = None     # bytes; default params.host_ram_per_osd * OSDs/host
    concurrency: int = Intent.concurrency
    start_order: str = Intent.start_order   # controlled: the start_order policy
    check_invariants: bool = False
    seed: int = 0
    membership: bool = True    # controlled: the snapshot carries PG membership (PgMap)
    daemon_state: bool = True  # controlled: the snapshot carries each running OSD's own
                               # state, as the helper reads it from the admin socket
    throttle: bool = True      # controlled/oracle: the run may throttle recovery (False: the
                               # bundle's throttle policy is removed, to compare without it)


@dataclass
class Metrics:
    oom_kills: int = 0
    restarts: int = 0
    heap_releases: int = 0
    decisions: int = 0
    invariant_violations: int = 0
    units_failed: int = 0
    stops: int = 0
    config_sets: int = 0
    peak_host_mem: float = 0.0
    peak_host: str = ""
    peak_time: float = 0.0
    peak_in_run: float = 0.0          # the peak until plan() said Done (all of it without plan())
    t_all_up: Optional[float] = None
    t_all_active: Optional[float] = None
    t_all_available: Optional[float] = None
    t_all_clean: Optional[float] = None
    violations: List[str] = field(default_factory=list)
    plan_s: List[float] = field(default_factory=list)
    unmodelled: List[str] = field(default_factory=list)


def failed_osds(cl: Cluster, spec: str) -> List[Osd]:
    """`rack:1`, `host:7`, or several comma-separated -> the OSDs under those buckets."""
    out: List[Osd] = []
    names = []
    for part in spec.split(","):
        kind, _, idx = part.strip().partition(":")
        if kind not in ("rack", "host") or not idx.isdigit():
            raise ValueError("--fail wants rack:N or host:N (comma-separated), got %r" % part)
        name = "%s%s" % (kind, idx)
        known = cl.topo.racks if kind == "rack" else cl.topo.hosts
        if name not in known:
            raise LookupError("no %s named %s (have %s..%s)" % (kind, name, known[0], known[-1]))
        names.append(name)
    for o in cl.osds:
        if o.host in names or o.rack in names:
            out.append(o)
    return out


class Sim:
    """One run of one strategy on one model cluster."""

    def __init__(self, topo: Topology, params: Params, cfg: RunConfig, strategy):
        per_host = topo.n_osds // len(set(topo.host_of))
        ram = cfg.host_ram or int(round(params.host_ram_per_osd * per_host))
        self.cfg, self.p = cfg, params
        self.cl = Cluster(topo, params, ram)
        self.lc = Lifecycle(self.cl)
        self.m = Metrics()
        self.oom = strategy.oom
        self.failed = failed_osds(self.cl, cfg.fail)
        self.failed_buckets = tuple(p.strip().replace(":", "") for p in cfg.fail.split(","))
        rng = random.Random(cfg.seed)
        for o in self.failed:
            o.in_scope = True
            o.write_mult = rng.uniform(1.0 - params.write_jitter, 1.0 + params.write_jitter)
        # the budget peaks are measured against: an auto budget's ceiling (it may be raised)
        self.budget = ram * (AUTO_RAISED_FRACTION if cfg.budget_kind == BUDGET_AUTO
                             else cfg.budget)
        self.now = 0.0
        self.strategy = strategy
        self.out_return = OutReturn(params.out_return)
        self.lc.fail(self.failed, -cfg.downtime_s)
        self._track_peak()

    # ------------------------------------------------------------------ systemd
    def systemd_failure(self, o: Osd) -> None:
        """Restart=on-failure, RestartSec, StartLimitBurst within StartLimitInterval."""
        p = self.p
        recent = [s for s in o.starts if self.now - s < p.start_limit_interval_s]
        if len(recent) >= p.start_limit_burst:
            o.phase = FAILED
            self.m.units_failed += 1
        else:
            o.restart_at = self.now + p.restart_sec

    def _systemd_restarts(self) -> None:
        for o in self.failed:
            if o.restart_at is not None and o.restart_at <= self.now and o.phase != FAILED:
                self.lc.start(o, self.now)

    # ------------------------------------------------------------------ OOM killer
    def _oom(self) -> None:
        cl = self.cl
        for h in sorted(cl.dirty_hosts):
            while self.oom and cl.host_used[h] > cl.host_ram:
                victims = [o for o in cl.host_osds[h] if o.running]
                if not victims:
                    break
                v = max(victims, key=lambda o: (o.rss, o.id))
                self.m.oom_kills += 1
                self.lc.stop(v, self.now, killed=True)
                if self.strategy.systemd_restarts(self, v):
                    self.systemd_failure(v)

    def _track_peak(self) -> None:
        cl = self.cl
        in_run = not getattr(self.strategy, "done", False)
        for h in sorted(cl.dirty_hosts):
            if in_run and cl.host_used[h] > self.m.peak_in_run:
                self.m.peak_in_run = cl.host_used[h]
            if cl.host_used[h] > self.m.peak_host_mem:
                self.m.peak_host_mem, self.m.peak_host = cl.host_used[h], h
                self.m.peak_time = self.now
        cl.dirty_hosts.clear()

    def _milestones(self) -> None:
        cl, m = self.cl, self.m
        n = len(cl.members)
        m.t_all_up = (m.t_all_up if m.t_all_up is not None else self.now) \
            if cl.n_down == 0 else None
        m.t_all_active = self._all_active_since() if cl.n_active == n else None
        m.t_all_available = (m.t_all_available if m.t_all_available is not None else self.now) \
            if cl.n_available == n else None
        m.t_all_clean = (m.t_all_clean if m.t_all_clean is not None else self.now) \
            if cl.n_clean_pgs == n else None

    def _all_active_since(self) -> float:
        """With every PG active now: since when, exact to the event. A PG is without client
        I/O while a member peers and while it re-peers after a member's stop, and both end at
        a known moment (Cluster.last_inactive_t), also between two ticks: a kill's re-peering
        (a few seconds) is part of the time to all PGs active whether or not a tick fell in
        it. Without any since the return, the first tick that saw them all active."""
        if self.cl.last_inactive_t is not None:
            return self.cl.last_inactive_t
        return self.m.t_all_active if self.m.t_all_active is not None else self.now

    def _settled(self) -> bool:
        """Every PG clean and every OSD up (PGs of out OSDs can be clean without them)."""
        return self.m.t_all_clean is not None and self.cl.n_down == 0

    def _inactive(self) -> int:
        return len(self.cl.members) - self.cl.n_active

    def quiescent(self) -> bool:
        """Nothing can change any more without a new decision."""
        return not self.lc.dyn and all(o.restart_at is None or o.phase == FAILED
                                       for o in self.failed) \
            and not self.lc.mon.busy(self.failed)

    # ------------------------------------------------------------------ loop
    def run(self) -> dict:
        t_wall = time.perf_counter()
        dt = self.cfg.tick_s
        while self.now <= self.cfg.horizon_s:
            self.lc.mon.tick(self.now, self.failed)
            self.out_return.tick(self)
            self._systemd_restarts()
            self.strategy.tick(self)
            self._oom()
            self._track_peak()
            self._milestones()
            if self._settled() and self.strategy.finished(self):
                break
            if self.quiescent() and self.strategy.stuck(self):
                break
            before = self._inactive()
            self.lc.advance(self.now, self.now + dt)
            self.now += dt
            self.cl.inactive_pg_s += 0.5 * (before + self._inactive()) * dt
            self._oom()
            self._track_peak()
            self._milestones()
        return self.result(time.perf_counter() - t_wall)

    def result(self, wall: float) -> dict:
        m, cfg, cl = self.m, self.cfg, self.cl
        converged = m.t_all_clean is not None and cl.n_down == 0 and self.lc.mon.n_out == 0
        return {
            "strategy": cfg.strategy, "osds": len(cl.osds), "hosts": len(cl.hosts),
            "racks": len(cl.topo.racks), "pgs": len(cl.members), "fail": cfg.fail,
            "failed_osds": len(self.failed), "downtime_s": cfg.downtime_s,
            "seed": cfg.seed, "tick_s": cfg.tick_s, "horizon_s": cfg.horizon_s,
            "budget_frac": cfg.budget, "budget_kind": cfg.budget_kind,
            "host_ram_bytes": int(cl.host_ram),
            "budget_bytes": int(self.budget), "concurrency": cfg.concurrency,
            "start_order": cfg.start_order if cfg.strategy in ("controlled", "oracle") else None,
            "concurrency_note": getattr(self.strategy, "concurrency_note", None),
            "heap_release_supported": self.p.heap_release,
            "time_to_all_up_s": m.t_all_up, "time_to_all_pgs_active_s": m.t_all_active,
            "time_to_all_pgs_clean_s": m.t_all_clean,
            "time_to_all_pgs_min_size_s": m.t_all_available,
            "peak_host_mem_bytes": int(m.peak_host_mem), "peak_host": m.peak_host,
            "peak_time_s": m.peak_time,
            "peak_host_mem_over_budget": round(m.peak_host_mem / self.budget, 4),
            "peak_in_run_over_budget": round(m.peak_in_run / self.budget, 4),
            "oom_kills": m.oom_kills, "restarts": m.restarts, "heap_releases": m.heap_releases,
            "units_failed": m.units_failed, "decisions": m.decisions,
            "invariant_violations": m.invariant_violations,
            "invariant_examples": m.violations[:5],
            "inactive_pg_s": round(cl.inactive_pg_s),
            "osds_down_at_end": cl.n_down, "pgs_inactive_at_end": self._inactive(),
            "osds_marked_out": self.lc.mon.marked_out, "osds_marked_in": self.lc.mon.marked_in,
            "osds_out_at_end": self.lc.mon.n_out, "pgs_remapped_at_end": len(cl.remapped),
            "plan_median_ms": _ms(m.plan_s, 0.5), "plan_p99_ms": _ms(m.plan_s, 0.99),
            "stops": m.stops, "config_sets": m.config_sets,
            "config_left_changed": sorted("%s %s" % k for k in getattr(
                self.strategy, "config_changed", ())),
            "flags_left_set": sorted(getattr(self.strategy, "flags", ())),
            "unmodelled_actions": m.unmodelled[:10],
            "plan_done": getattr(self.strategy, "done", None),
            "plan_phase": getattr(getattr(self.strategy, "progress", None), "phase", None),
            "plan_last_health": getattr(self.strategy, "last_health", None),
            "sim_time_s": self.now, "wall_s": round(wall, 3), "converged": converged,
        }


def _ms(xs: List[float], q: float) -> Optional[float]:
    if not xs:
        return None
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(round(q * (len(s) - 1))))] * 1000.0, 2)


__all__ = ["Sim", "RunConfig", "failed_osds", "C_DOWN"]
