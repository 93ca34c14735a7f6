"""OSD process lifecycle in the model: start, load, preboot, boot, peering, recovery, stop.

Memory of a returning OSD (see docs/memory-model.md):
  start (load_pgs)   rss = load_bytes          (fresh process + PG logs + dups)
  peering            rss rises to (nonhist + H) * (1 + peering_peak_frac) at its end
  recovery           H shrinks with recovered objects down to retain_frac * H (kept); the
                     data of its recovery ops in flight adds rec_buffers()
  after boot         caches refill nonhist linearly to steady_rss over cache_fill_s
where H = missed writes (capped at what the PG log holds) * bytes_per_missed_write.
A process stopped while recovering keeps on disk the entries its peering merged (Osd.merged):
the next process loads restart_hist_frac of their history memory at start (Osd.reload: PG
log, missing set) and peers only the writes it missed since, without a second peak.
An OSD the monitor marked out (monitor.py) is marked in at its boot (unless noin) and, once
its data was re-replicated and its PGs' logs moved past its own, backfills instead: no
missed entries merged (no history memory), Params.backfill_objects() to push, its PGs'
substitutes in their acting sets (pg_temp) until it is done; norebalance pauses it.
Booted under noin it stays up and out, in no PG.
"""
from __future__ import annotations

from typing import Dict, Set

from .cluster import (ACTIVE, BOOTING, C_CLEAN, C_DOWN, C_OK, C_PEERING, FAILED, LOADING,
                      PEERING, PREBOOT, RECOVERING, STOPPED, SUB_NONE, SUB_READY, SUB_TEMP,
                      Cluster, Osd)
from .monitor import Monitor


# A phase that ends within EPS_S of a step's end ends in that step: the step was cut at its end,
# and float rounding must not leave it holding a share of its host's rate for one more step.
EPS_S = 1e-6


class Lifecycle:
    """Moves OSDs through their phases; keeps the per-host peering/recovering sets."""

    def __init__(self, cl: Cluster):
        self.cl, self.p = cl, cl.p
        self.dyn: Set[int] = set()                       # OSDs that change with time
        self.peering: Dict[str, Set[int]] = {h: set() for h in cl.hosts}
        self.recovering: Dict[str, Set[int]] = {h: set() for h in cl.hosts}
        self.held_buckets: Set[str] = set()
        self.cluster_noup = False
        self.recovery_paused = False                     # norecover / nobackfill set
        self.norebalance = False                         # pauses backfills of out OSDs
        self.mon = Monitor(cl)

    # ------------------------------------------------------------------ transitions
    def held(self, o: Osd) -> bool:
        return o.noup or self.cluster_noup or o.host in self.held_buckets or \
            o.rack in self.held_buckets or self.cl.topo.root in self.held_buckets

    def fail(self, osds, at: float) -> None:
        """Power loss of `osds` at time `at` (negative: before the simulation starts)."""
        for o in osds:
            self.stop(o, at)
        for o in osds:
            o.active_pgs_down = self.cl.active_pgs_without(o)

    def start(self, o: Osd, now: float) -> None:
        cl = self.cl
        o.phase, o.t_phase_end, o.started_at, o.veteran = LOADING, now + self.p.load_s, now, False
        if not self.p.heap_release:      # no tcmalloc: the target read at start sizes the caches
            o.steady = float(self.p.steady_for_target(self.start_target(o)))
        o.nonhist, o.hist_peak, o.hist_keep = float(o.load_bytes), 0.0, 0.0
        o.reload = self.p.reload_bytes(o.merged)
        o.starts.append(now)
        o.restart_at = None
        o.run_peak = 0.0
        cl.set_rss(o, o.nonhist + o.reload)
        cl.dirty_osds.add(o.id)
        self.dyn.add(o.id)

    def stop(self, o: Osd, now: float, failed: bool = False, killed: bool = False) -> None:
        """Process ends (kill, OOM, stop). The OSD is marked down; its history keeps growing.
        From the return on (now >= 0), the PGs it leaves re-peer: peer_base_s, after the mon's
        markdown_s if it was killed (a clean stop marks itself down)."""
        cl = self.cl
        if o.phase == RECOVERING and o.obj_total > 0:
            o.pending_writes *= o.obj_left / o.obj_total
            # peered: its PG log and missing set hold them (what fitted the log)
            o.merged = min(o.pending_writes, cl.history_cap(o))
        if o.backfill:
            o.merged = 0.0                   # a backfill merges no log entries
        if o.up_out:
            o.up_out, o.down_since = False, now
            cl.n_down += 1
            cl.epoch += 1
        was_up = o.cls != C_DOWN
        self.peering[o.host].discard(o.id)
        self.recovering[o.host].discard(o.id)
        cl.set_class(o, C_DOWN)
        if was_up and now >= 0:
            cl.repeer_after_stop(o, now, self.p.peer_base_s
                                 + (self.p.markdown_s if killed else 0.0))
        if was_up:
            o.active_pgs_down = cl.active_pgs_without(o)
            o.down_since = now
        elif o.down_since is None:
            o.down_since = now
        o.phase = FAILED if failed else STOPPED
        o.hist_peak = o.hist_keep = 0.0
        o.nonhist = 0.0
        cl.set_rss(o, 0.0)
        cl.dirty_osds.add(o.id)
        self.dyn.discard(o.id)

    def allow_boot(self, o: Osd, now: float) -> None:
        if o.phase == PREBOOT and not self.held(o):
            o.phase, o.t_phase_end = BOOTING, now + self.p.boot_s
            self.cl.dirty_osds.add(o.id)
            self.dyn.add(o.id)

    def _loaded(self, o: Osd, t: float) -> None:
        if self.held(o):
            o.phase = PREBOOT
            self.dyn.discard(o.id)
        else:
            o.phase, o.t_phase_end = BOOTING, t + self.p.boot_s
        self.cl.dirty_osds.add(o.id)

    def _boot(self, o: Osd, t: float) -> None:
        """Up in the OSD map: its PGs peer; missed writes set the peering work and memory."""
        p = self.p
        if not self.mon.boot_in(o):
            self._up_out(o)
            return
        if self._backfills(o, t):
            self._boot_backfill(o, t)
            return
        if o.sub == SUB_READY:           # in again, its log still overlaps: log recovery,
            self.cl.set_substitute(o, SUB_NONE, t)     # the substitute becomes a stray
        writes = self.cl.missed_writes(o, t)
        in_log = self.cl.unmerged_writes(o, t)
        o.pending_writes = writes
        o.hist_peak = in_log * p.bytes_per_missed_write
        o.peer_total = o.peer_left = in_log
        o.peer_base_left = p.peer_base_s
        o.obj_total = o.obj_left = min(writes * p.distinct_object_frac,
                                       float(p.pg_objects * len(o.pgs)))
        o.down_since = None
        o.phase = PEERING
        self.peering[o.host].add(o.id)
        self.cl.set_class(o, C_PEERING)

    def _backfills(self, o: Osd, t: float) -> bool:
        """In (again) at a boot at `t`: does `o` backfill rather than log-recover?"""
        return o.backfill or (o.sub == SUB_READY and self._log_moved_on(o, t))

    def will_backfill(self, o: Osd, t: float) -> bool:
        """Would `o`, booting at `t`, be marked in and backfill (the oracle's foresight)?"""
        return self.mon.would_mark_in(o) and self._backfills(o, t)

    def _log_moved_on(self, o: Osd, t: float) -> bool:
        """Its PGs went clean without it and trimmed their logs to log_entries_per_pg: more
        writes missed per PG than that leave no overlap with its own log (backfill)."""
        per_pg = self.cl.missed_writes(o, t) / max(1, len(o.pgs))
        return per_pg > self.p.log_entries_per_pg(len(o.pgs))

    def _boot_backfill(self, o: Osd, t: float, whole: bool = False) -> None:
        """In again after out: its PGs peer (remapped back to it), merge none of its missed
        entries and backfill it, their substitutes serving in pg_temp until it is done.
        `whole`: its copies were purged, every object of its PGs is pushed."""
        p = self.p
        writes = self.cl.missed_writes(o, t)
        o.backfill, o.pending_writes, o.merged = True, writes, 0.0
        o.hist_peak = 0.0
        o.peer_total = o.peer_left = 0.0
        o.peer_base_left = p.peer_base_s
        o.obj_total = o.obj_left = (float(p.pg_objects * len(o.pgs)) if whole else
                                    p.backfill_objects(writes * p.distinct_object_frac,
                                                       len(o.pgs)))
        o.down_since = None
        o.phase = PEERING
        self.peering[o.host].add(o.id)
        self.cl.set_substitute(o, SUB_TEMP, t)
        self.cl.set_class(o, C_PEERING)

    def _up_out(self, o: Osd) -> None:
        """Booted and not marked in (noin): up, in no PG (its strays are purged once their
        PGs are clean elsewhere); its caches refill."""
        cl = self.cl
        o.up_out, o.down_since, o.phase = True, None, ACTIVE
        o.pending_writes = o.merged = o.reload = 0.0
        o.hist_peak = o.hist_keep = 0.0
        cl.n_down -= 1
        cl.epoch += 1
        cl.dirty_osds.add(o.id)

    def mark_in(self, o: Osd, t: float) -> None:
        """`ceph osd in` of an OSD that booted out (noin): its PGs map back to it and peer. Its
        stray copies were purged while their PGs were clean without it (PG::purge_strays), so
        every object of its PGs is backfilled to it."""
        if not o.up_out:
            return
        o.noin = False
        self.mon.boot_in(o, explicit=True)
        o.up_out = False
        self.cl.n_down += 1              # still C_DOWN: the class change below counts it up
        self.cl.dirty_osds.add(o.id)
        self._boot_backfill(o, t, whole=True)

    def _peered(self, o: Osd, t: float) -> None:
        """`o` ends peering at `t`: its PGs, inactive while a member peers, are active again
        unless another member still peers (whose end comes later)."""
        self.peering[o.host].discard(o.id)
        self.cl.inactive_until(t)
        o.hist_peak += o.reload          # reloaded history recovers and trims like the rest
        o.hist_keep = o.hist_peak * self.p.retain_frac
        o.reload = 0.0
        o.released = False
        if o.obj_left > 0:
            o.phase = RECOVERING
            self.recovering[o.host].add(o.id)
            self.cl.set_class(o, C_OK)
        else:
            self._recovered(o)

    def _recovered(self, o: Osd) -> None:
        self.recovering[o.host].discard(o.id)
        o.phase, o.obj_left, o.pending_writes, o.merged = ACTIVE, 0.0, 0.0, 0.0
        self.cl.set_class(o, C_CLEAN)
        if o.backfill:                   # backfilled: its PGs' pg_temp members leave
            o.backfill = False
            self.cl.set_substitute(o, SUB_NONE)

    # ------------------------------------------------------------------ time
    def advance(self, t0: float, t1: float) -> None:
        """Advance every time-dependent OSD from t0 to t1. A host's peering and recovery
        rates are shared by the OSDs in that phase on it, so each host advances from event to
        event (a load or boot ending, a peering or recovery finishing) and its shares are
        recomputed at each: an OSD that boots or starts recovering within a tick gets its share
        from that moment, not the whole host's rate for the rest of the tick. Hosts do not
        share rates, so they advance one after another."""
        by_host: Dict[str, list] = {}
        for oid in sorted(self.dyn):
            o = self.cl.osds[oid]
            by_host.setdefault(o.host, []).append(o)
        for host, osds in by_host.items():
            t = t0
            while t < t1:
                peer_rate, rec_rate = self._rates(host)
                t_next = self._next_event(osds, t, t1, peer_rate, rec_rate)
                for o in osds:
                    self._advance_one(o, t, t_next, peer_rate, rec_rate)
                t = t_next
            for o in osds:
                self._memory(o, t0, t1)

    def _rates(self, host: str):
        """Entries/s each peering OSD on `host` merges, objects/s per recovery weight."""
        n = len(self.peering[host])
        peer = {host: self.p.peer_entries_per_s / n} if n else {}
        rec = {host: self.rec_share(host)} if self.recovering[host] else {}
        return peer, rec

    def _next_event(self, osds, t: float, t1: float, peer_rate, rec_rate) -> float:
        """The first moment in (t, t1] at which one of `osds` changes phase (at the rates
        of now), else t1."""
        ends = [t1]
        for o in osds:
            if o.phase in (LOADING, BOOTING):
                ends.append(o.t_phase_end)
            elif o.phase == PEERING and o.host in peer_rate:
                ends.append(t + max(o.peer_base_left, o.peer_left / peer_rate[o.host]))
            elif o.phase == RECOVERING and o.host in rec_rate:
                rate = self.rec_rate(o, rec_rate[o.host])
                if rate > 0:
                    ends.append(t + o.obj_left / rate)
        later = [e for e in ends if e > t + EPS_S]
        return min(later) if later else t1

    def rec_share(self, host: str) -> float:
        """Objects/s per unit of recovery weight on `host`: the host's link is shared by its
        recovering OSDs in proportion to their weights (1 unless throttled, levers.py); a
        paused one (paused()) takes no share."""
        w = sum(self.cl.osds[i].rec_w for i in self.recovering[host]
                if not self.paused(self.cl.osds[i]))
        return self.p.host_objects_per_s / w if w > 0 else 0.0

    def rec_buffers(self, o: Osd) -> float:
        """Data of the recovery ops in flight on a recovering OSD (levers.py): none while its
        recovery is paused (norecover/nobackfill, or a throttle of 0)."""
        if self.paused(o) or o.rec_w <= 0:
            return 0.0
        return o.rec_ops * self.p.recovery_op_bytes

    def paused(self, o: Osd) -> bool:
        """norecover/nobackfill pause every recovery; norebalance a backfill whose PGs are
        only misplaced (their substitutes serve: not degraded)."""
        return self.recovery_paused or (self.norebalance and o.backfill)

    def rec_rate(self, o: Osd, share: float) -> float:
        """Objects/s `o` recovers: its weighted share, capped by its osd_recovery_sleep, 0 while
        norecover/nobackfill is set (norebalance: a backfill, paused())."""
        if self.paused(o):
            return 0.0
        rate = share * o.rec_w
        return min(rate, o.rec_cap) if o.rec_cap > 0 else rate

    def _advance_one(self, o: Osd, t0: float, t1: float, peer_rate, rec_rate) -> None:
        t = t0
        while t < t1:
            if o.phase in (LOADING, BOOTING):
                if o.t_phase_end > t1:
                    return
                t = max(t, o.t_phase_end)
                if o.phase == LOADING:
                    self._loaded(o, t)
                else:
                    self._boot(o, t)
            elif o.phase == PEERING:
                rate = peer_rate.get(o.host) or \
                    self.p.peer_entries_per_s / max(1, len(self.peering[o.host]))
                need = max(o.peer_base_left, o.peer_left / rate)
                if need > t1 - t + EPS_S:
                    o.peer_base_left = max(0.0, o.peer_base_left - (t1 - t))
                    o.peer_left = max(0.0, o.peer_left - rate * (t1 - t))
                    return
                t += need
                o.peer_left = o.peer_base_left = 0.0
                self._peered(o, t)
            elif o.phase == RECOVERING:
                rate = self.rec_rate(o, rec_rate.get(o.host) or self.rec_share(o.host))
                if rate <= 0:
                    return
                if o.obj_left / rate > t1 - t + EPS_S:
                    o.obj_left -= rate * (t1 - t)
                    return
                t += o.obj_left / rate
                self._recovered(o)
            else:
                return

    def _memory(self, o: Osd, t0: float, t1: float) -> None:
        p, cl = self.p, self.cl
        if o.phase in (LOADING, PREBOOT, BOOTING, STOPPED, FAILED):
            return
        steady = self.cache_ceiling(o)
        if o.nonhist < steady:
            o.nonhist = min(steady, o.nonhist + max(0.0, o.steady - o.load_bytes)
                            / p.cache_fill_s * (t1 - t0))
        if o.phase == PEERING:
            done = 1.0 - (o.peer_left / o.peer_total if o.peer_total > 0 else
                          o.peer_base_left / max(p.peer_base_s, 1e-9))
            rss = o.nonhist + o.reload + (
                o.hist_peak + p.peering_peak_frac * (o.nonhist + o.hist_peak)) * done
        elif o.phase == RECOVERING:
            left = o.obj_left / o.obj_total if o.obj_total > 0 else 0.0
            rss = o.nonhist + o.hist_keep + (o.hist_peak - o.hist_keep) * left + \
                self.rec_buffers(o)
        else:
            rss = o.nonhist + o.hist_keep
            if o.nonhist >= steady:
                self.dyn.discard(o.id)
        cl.set_rss(o, rss)

    def start_target(self, o: Osd) -> int:
        """The osd_memory_target a process of `o` reads when it starts (its own setting, else
        the default)."""
        own = self.cl.own_memory_target(o)
        return own if own is not None else self.p.osd_memory_target

    def cache_ceiling(self, o: Osd) -> float:
        """Where a running OSD's caches stop refilling: its steady RSS, and with tcmalloc
        (Params.heap_release) also where the whole process reaches its osd_memory_target:
        PriorityCache::Manager::tune_memory (src/common/PriorityCache.cc) grows the caches
        only while the mapped heap is below the target and shrinks them above it, so the PG
        log and recovery memory an OSD holds squeeze its caches instead of adding to them.
        Without tcmalloc the caches grow to steady, sized by the target the process read
        when it started (start()): BlueStore's MempoolThread runs tune_memory only with
        tcmalloc, so the cache budget PriorityCache::Manager set at its construction
        (0.85 x target - osd_memory_base) is never revised."""
        if not self.p.heap_release:
            return o.steady
        target = o.steady / self.p.steady_frac_of_target
        return max(min(o.nonhist, o.steady), min(o.steady, target - (o.rss - o.nonhist)))

    def heap_release(self, o: Osd) -> bool:
        """tcmalloc returns its free pages once: heap_release_frac of the retained history
        heap (what peering freed but malloc kept). A second release frees nothing new."""
        if not self.p.heap_release or o.hist_keep <= 0 or not o.running or o.released:
            return False
        freed = o.hist_keep * self.p.heap_release_frac
        o.released = True
        o.hist_keep -= freed
        o.hist_peak = max(o.hist_keep, o.hist_peak - freed)
        self.cl.set_rss(o, max(0.0, o.rss - freed))
        self.dyn.add(o.id)              # room under its target: its caches may refill
        return True


__all__ = ["Lifecycle"]
