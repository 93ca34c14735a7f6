"""State of the model cluster: OSD processes, their memory, and per-PG counters.

PG states are kept incrementally: every PG holds how many of its up-set members are
peering, up-and-peered, and up-peered-and-recovered; an OSD changing class touches only its
own PGs (about 100), never the whole PG table. A PG is active when at least min_size members
are up and peered and none is still peering; clean when every member is recovered.
A member marked out (monitor.py) whose data was re-replicated elsewhere has a substitute: a
complete copy on another OSD that counts as an up, recovered member. While the member, in
again, backfills, its substitute stays in the acting set (pg_temp) and the PG is remapped:
not degraded, and not clean either until the backfill ends.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set

from .params import Params
from .topology import Topology

# OSD classes as PGs see them
C_DOWN, C_PEERING, C_OK, C_CLEAN = 0, 1, 2, 3
# process phases
STOPPED, LOADING, PREBOOT, BOOTING, PEERING, RECOVERING, ACTIVE, FAILED = (
    "stopped", "loading", "preboot", "booting", "peering", "recovering", "active", "failed")
RUNNING_PHASES = (LOADING, PREBOOT, BOOTING, PEERING, RECOVERING, ACTIVE)
# an out OSD's data elsewhere: none, being re-replicated, a substitute member, a pg_temp
# member while the OSD, in again, backfills
SUB_NONE, SUB_PENDING, SUB_READY, SUB_TEMP = 0, 1, 2, 3


class Osd:
    """One OSD daemon of the model (process, map state, memory components)."""

    __slots__ = ("id", "host", "rack", "pgs", "phase", "cls", "noup", "down_since",
                 "started_at", "t_phase_end", "pending_writes", "active_pgs_down",
                 "peer_base_left", "peer_left", "peer_total", "obj_left", "obj_total",
                 "hist_peak", "hist_keep", "nonhist", "rss", "veteran", "starts",
                 "restart_at", "inactive", "degraded", "load_bytes", "in_scope", "released",
                 "write_mult", "steady", "rec_w", "rec_cap", "run_peak", "rec_ops", "merged",
                 "reload", "out", "noin", "up_out", "backfill", "sub")

    def __init__(self, osd_id: int, host: str, rack: str, pgs: List[int], load_bytes: int):
        self.id, self.host, self.rack, self.pgs = osd_id, host, rack, pgs
        self.phase, self.cls, self.noup = ACTIVE, C_CLEAN, False
        self.down_since: Optional[float] = None
        self.started_at: Optional[float] = None
        self.t_phase_end = 0.0
        self.pending_writes = 0.0        # missed client writes not yet recovered
        self.merged = 0.0                # of those, entries an earlier peering merged into its
                                         # PG log (on disk: a restart does not peer them again)
        self.reload = 0.0                # history memory this process loaded at start (merged)
        self.active_pgs_down = 0         # its PGs that stayed active (took writes) while it was down
        self.peer_base_left = self.peer_left = self.peer_total = 0.0
        self.obj_left = self.obj_total = 0.0
        self.hist_peak = self.hist_keep = 0.0
        self.nonhist = self.rss = 0.0
        self.veteran = True              # running since before the failure (a survivor)
        self.starts: List[float] = []    # systemd start times (StartLimitBurst accounting)
        self.restart_at: Optional[float] = None
        self.inactive = self.degraded = 0
        self.load_bytes = load_bytes
        self.in_scope = False
        self.released = False            # heap release already returned the free pages
        self.write_mult = 1.0            # this OSD's client load relative to the mean (seeded)
        self.steady = 0.0                # healthy RSS for its osd_memory_target (levers.py)
        self.rec_w = 1.0                 # recovery share weight (throttles, levers.py)
        self.rec_cap = 0.0               # recovery objects/s cap from osd_recovery_sleep; 0: none
        self.run_peak = 0.0              # largest rss since the process started
        self.rec_ops = 0.0               # recovery ops in flight while recovering (levers.py)
        self.out = False                 # marked out (monitor.py)
        self.noin = False                # per-OSD noin: not marked in at boot
        self.up_out = False              # up but out (booted under noin): in no PG
        self.backfill = False            # in again after out: its recovery is a backfill
        self.sub = SUB_NONE              # its data's copy elsewhere while it is out

    @property
    def up(self) -> bool:
        return self.cls != C_DOWN or self.up_out

    @property
    def running(self) -> bool:
        return self.phase in RUNNING_PHASES


class Cluster:
    """OSDs, hosts and PG counters of one simulation run."""

    def __init__(self, topo: Topology, params: Params, host_ram: float):
        self.p, self.topo = params, topo
        self.size, self.min_size = topo.size, topo.min_size
        by_osd: List[List[int]] = [[] for _ in range(topo.n_osds)]
        for i, up in enumerate(topo.pgs):
            for o in up:
                by_osd[o].append(i)
        self.osds = [Osd(i, topo.host_of[i], topo.rack_of_host[topo.host_of[i]], by_osd[i],
                         params.load_bytes(len(by_osd[i]))) for i in range(topo.n_osds)]
        self.members = topo.pgs
        n = len(topo.pgs)
        self.n_ok = [self.size] * n
        self.n_peer = [0] * n
        self.n_clean = [self.size] * n
        self.n_sub = [0] * n          # substitutes of out members (SUB_READY or SUB_TEMP)
        self.n_temp = [0] * n         # of those, pg_temp members of a backfilling member
        self.remapped: Set[int] = set()   # PG indexes with a pg_temp member (backfilling)
        self.n_active = self.n_clean_total = n
        self.n_available = n          # PGs with >= min_size members up and peered
        self.inactive_pgs: Set[int] = set()   # PG indexes not active (kept incrementally)
        self.inactive_pg_s = 0.0      # PG-seconds without client I/O since the return (t >= 0)
        self.last_inactive_t: Optional[float] = None   # the last moment (t >= 0) a PG was
        # without client I/O, exact to the event: a peering's end or a re-peering's end
        self.hosts = topo.hosts
        self.host_osds: Dict[str, List[Osd]] = {h: [] for h in self.hosts}
        for o in self.osds:
            self.host_osds[o.host].append(o)
        self.host_ram = float(host_ram)
        self.host_used = {h: float(params.host_system_bytes) for h in self.hosts}
        self.dirty_osds: Set[int] = set()
        self.dirty_hosts: Set[str] = set()
        self.epoch = 1
        self.n_down = 0
        self.config: Dict[tuple, str] = {}     # (who, name) -> value set by a run
        for o in self.osds:
            o.steady = float(params.steady_rss)
            o.rec_ops = params.recovery_ops(params.recovery_max_active_default,
                                            params.max_backfills_default)
            o.nonhist = o.steady
            self.set_rss(o, o.nonhist)

    def missed_writes(self, o: Osd, t: float) -> float:
        """Client writes `o` has not recovered at time `t`: those pending from before plus
        those its PGs took since it went down (none while it is up)."""
        since = o.down_since if o.down_since is not None else t
        return o.pending_writes + o.active_pgs_down * self.p.write_rate_per_pg * \
            o.write_mult * max(0.0, t - since)

    def unmerged_writes(self, o: Osd, t: float) -> float:
        """Missed writes `o`'s next peering merges: those no earlier peering merged, capped by
        what its PG logs hold (beyond them: backfill, no log memory)."""
        return min(max(0.0, self.missed_writes(o, t) - o.merged), self.history_cap(o))

    def history_cap(self, o: Osd) -> float:
        """Missed writes `o`'s PG logs still hold (beyond them: backfill, no log memory)."""
        return float(self.p.history_cap_per_pg(len(o.pgs)) * len(o.pgs))

    def own_memory_target(self, o: Osd) -> Optional[int]:
        """The osd_memory_target a run set in `o`'s own section (`config dump`'s osd.N), or
        None: the OSD inherits the default."""
        value = self.config.get(("osd.%d" % o.id, "osd_memory_target"))
        return int(float(value)) if value is not None else None

    # ---------------------------------------------------------------- PG bookkeeping
    def _pg_state(self, pg: int):
        """(active, not degraded): substitutes count as up, recovered members."""
        sub = self.n_sub[pg]
        active = self.n_ok[pg] + sub >= self.min_size and self.n_peer[pg] == 0
        return active, self.n_clean[pg] + sub >= len(self.members[pg])

    @property
    def n_clean_pgs(self) -> int:
        """PGs active+clean: not degraded and not remapped (no backfill going on)."""
        return self.n_clean_total - len(self.remapped)

    def set_substitute(self, o: Osd, sub: int, at: Optional[float] = None) -> None:
        """`o`'s data elsewhere becomes `sub` at `at` (monitor.py, lifecycle.py): a substitute
        counts in each of o's PGs as an up, recovered member (SUB_READY, SUB_TEMP); a PG it
        makes active is without client I/O until `at`."""
        old, o.sub = o.sub, sub
        inactive = len(self.inactive_pgs)
        d_sub = (sub >= SUB_READY) - (old >= SUB_READY)
        d_temp = (sub == SUB_TEMP) - (old == SUB_TEMP)
        if not d_sub and not d_temp:
            return
        for pg in o.pgs:
            self.n_temp[pg] += d_temp
            (self.remapped.add if self.n_temp[pg] else self.remapped.discard)(pg)
            if d_sub:
                self._count(pg, 0, 0, 0, d_sub)
        if at is not None and len(self.inactive_pgs) < inactive:
            self.inactive_until(at)
        self.epoch += 1

    def set_class(self, o: Osd, new: int) -> None:
        """Move `o` to PG class `new`, updating PG, per-OSD and global counters."""
        old = o.cls
        if old == new:
            return
        o.cls = new
        if (old == C_DOWN) != (new == C_DOWN):
            self.epoch += 1
            self.n_down += 1 if new == C_DOWN else -1
        d_ok = (new >= C_OK) - (old >= C_OK)
        d_peer = (new == C_PEERING) - (old == C_PEERING)
        d_clean = (new == C_CLEAN) - (old == C_CLEAN)
        for pg in o.pgs:
            self._count(pg, d_ok, d_peer, d_clean, 0)

    def _count(self, pg: int, d_ok: int, d_peer: int, d_clean: int, d_sub: int) -> None:
        """Change one PG's member counts; flip its state counters where it changes."""
        a0, c0 = self._pg_state(pg)
        if d_ok or d_sub:
            ok = self.n_ok[pg] + self.n_sub[pg]
            before = ok >= self.min_size
            if (ok + d_ok + d_sub >= self.min_size) != before:
                self.n_available += -1 if before else 1
        self.n_ok[pg] += d_ok
        self.n_peer[pg] += d_peer
        self.n_clean[pg] += d_clean
        self.n_sub[pg] += d_sub
        a1, c1 = self._pg_state(pg)
        if a0 != a1:
            (self.inactive_pgs.discard if a1 else self.inactive_pgs.add)(pg)
            self._flip(pg, "inactive", -1 if a1 else 1)
            self.n_active += 1 if a1 else -1
        if c0 != c1:
            self._flip(pg, "degraded", -1 if c1 else 1)
            self.n_clean_total += 1 if c1 else -1

    def _flip(self, pg: int, attr: str, delta: int) -> None:
        for m in self.members[pg]:
            x = self.osds[m]
            setattr(x, attr, getattr(x, attr) + delta)
            self.dirty_osds.add(m)
            if attr == "degraded" and delta > 0 and x.veteran and x.running:
                self._survivor_growth(x)

    def _survivor_growth(self, x: Osd) -> None:
        """Survivors serving degraded writes grow (and keep it until restarted)."""
        frac = x.degraded / max(1, len(x.pgs))
        grown = x.steady * (1.0 + self.p.survivor_growth * frac)
        if grown > x.nonhist:
            x.nonhist = grown
            self.set_rss(x, x.nonhist + x.hist_keep)

    def ok_to_stop(self, o: Osd) -> bool:
        """ok-to-stop for `o` alone: Params.ok_to_stop_ceph picks Ceph's rule (below) or the
        model's original one: would stopping `o` make an active PG inactive?"""
        if self.p.ok_to_stop_ceph:
            return self.ok_to_stop_ceph(o)
        if o.cls < C_OK:
            return True
        for pg in o.pgs:
            ok = self.n_ok[pg] + self.n_sub[pg]
            if self.n_peer[pg] == 0 and ok >= self.min_size > ok - 1:
                return False
        return True

    def ok_to_stop_ceph(self, o: Osd) -> bool:
        """DaemonServer::_check_offlines_pgs (mgr, 16.2) for the set {o}. A PG counts when o is
        in its acting set, or, if the PG is degraded, in avail_no_missing (members with no
        missing objects: here recovered members, C_CLEAN). Such a PG is not ok when it is not
        active (bad_already_inactive) or when fewer than min_size of those members remain
        (bad_become_inactive). A returning OSD still recovering is in no degraded PG's
        avail_no_missing, so Ceph clears it even where its stop drops the acting set below
        min_size."""
        if o.cls == C_DOWN:
            return True
        n = self.size
        for pg in o.pgs:
            sub = self.n_sub[pg]
            degraded = self.n_clean[pg] + sub < n
            if degraded and o.cls != C_CLEAN:
                continue
            left = (self.n_clean[pg] + sub if degraded
                    else self.n_ok[pg] + self.n_peer[pg] + sub) - 1
            if pg in self.inactive_pgs or left < self.min_size:
                return False
        return True

    def repeer_after_stop(self, o: Osd, now: float, seconds: float) -> None:
        """`o` just went down: each of its PGs that stays active re-peers among the members
        left, `seconds` without client I/O. Shorter than a tick, it is never seen in a PG
        state a tick reads; it is counted in inactive_pg_s and ends at now + seconds."""
        n = sum(1 for pg in o.pgs if pg not in self.inactive_pgs)
        self.inactive_pg_s += seconds * n
        if n:
            self.inactive_until(now + seconds)

    def inactive_until(self, t: float) -> None:
        """Some PG was without client I/O until `t` (from the return on: t >= 0)."""
        if t >= 0 and (self.last_inactive_t is None or t > self.last_inactive_t):
            self.last_inactive_t = t

    def active_pgs_without(self, o: Osd) -> int:
        """Of o's PGs, how many stay active (take client writes) without o."""
        n = 0
        for pg in o.pgs:
            ok = self.n_ok[pg] + self.n_sub[pg] - (1 if o.cls >= C_OK else 0)
            if ok >= self.min_size:
                n += 1
        return n

    # ---------------------------------------------------------------- memory
    def set_rss(self, o: Osd, rss: float) -> None:
        if rss > o.run_peak:
            o.run_peak = rss
        if rss != o.rss:
            self.host_used[o.host] += rss - o.rss
            o.rss = rss
            self.dirty_osds.add(o.id)
            self.dirty_hosts.add(o.host)

