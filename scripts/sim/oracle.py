"""The `oracle` strategy: the real plan() driven like `controlled`, but its footprint policy
knows every OSD's true peak from the model, with budget 0.95 and concurrency auto.

A bound, not a product: it shows what a start order with perfect footprints achieves in the
same model, so that `controlled` can be compared with it where `unlimited` would not fit.

true_peak(o) is the largest RSS this OSD's process will reach until it has settled, computed
as lifecycle.py computes it:
  boot at t_b (now + load_s + boot_s + one tick of preboot observation, or its phase's end);
  missed writes W = pending + active_PGs_down x write_rate x load_mult x (t_b - down_since),
  H = min(W, PG-log cap) x bytes_per_missed_write; peering takes max(peer_base_s,
  entries / (peer_entries_per_s / n)) with n the OSDs peering on its host (it included), while
  its caches refill from its load; at the end of peering RSS = (nonhist + H) x 1.2; then
  recovery (host rate / m recovering) trims H to retain_frac x H while caches keep refilling,
  and it settles at steady + retained. A process that reloads merged history (Osd.reload,
  lifecycle.py) holds it on top from its start; recovery trims it like the rest. The maximum
  of that piecewise-linear curve is at one of its breakpoints: end of peering, caches full
  during recovery, settled.
Sharing is taken as it is at the call (the only part of the future the oracle guesses).
"""
from __future__ import annotations

import dataclasses

from ceph_recovery.model import Intent

from .cluster import ACTIVE, BOOTING, FAILED, LOADING, PEERING, PREBOOT, STOPPED, Osd
from .controlled import Controlled


class Oracle(Controlled):
    name = "oracle"

    def __init__(self, cfg):
        super().__init__(cfg)
        self.sim = None
        self.concurrency_note = None

    def make_intent(self, sim) -> Intent:
        self.sim = sim
        return dataclasses.replace(super().make_intent(sim), concurrency=0,
                                   run_id="oracle-%d" % sim.cfg.seed)

    def make_policies(self, sim, intent: Intent):
        """The production bundle with the footprint replaced (not added to the registry)."""
        base = super().make_policies(sim, intent)
        names = (base.names[:2] + ("oracle",) + base.names[3:]) if base.names else ()
        return dataclasses.replace(base, footprint=self.footprint, names=names)

    def plan(self, sim, snap):
        """Concurrency auto (0); a core that does not know 0 yet gets the host's OSD count
        (every OSD may be in flight: memory alone decides, like auto)."""
        try:
            return super().plan(sim, snap)
        except ValueError as e:
            if "concurrency" not in str(e) or self.intent.concurrency != 0:
                raise
            per_host = max(len(v) for v in sim.cl.host_osds.values())
            self.concurrency_note = "core rejects concurrency 0 (%s): used %d" % (e, per_host)
            self.intent = dataclasses.replace(self.intent, concurrency=per_host)
            return super().plan(sim, snap)

    def footprint(self, osd, observations, now) -> int:
        return int(true_peak(self.sim, self.sim.cl.osds[osd.id], now))


def _boot_state(sim, o: Osd, now: float):
    """(H, objects to recover, nonhist at boot, entries to peer, peer base left)."""
    p = sim.p
    if o.phase == BOOTING:
        t_b = o.t_phase_end
    elif o.phase == PREBOOT:
        t_b = now + p.boot_s
    elif o.phase == LOADING:
        t_b = o.t_phase_end + p.boot_s
    else:
        t_b = now + p.load_s + p.boot_s + sim.cfg.tick_s
    writes = sim.cl.missed_writes(o, t_b)
    if o.out and not sim.lc.mon.would_mark_in(o):     # up and out (noin): in no PG
        return 0.0, 0.0, float(o.load_bytes), 0.0, p.peer_base_s
    if sim.lc.will_backfill(o, t_b):      # out and in again: no history, a backfill
        return (0.0, p.backfill_objects(writes * p.distinct_object_frac, len(o.pgs)),
                float(o.load_bytes), 0.0, p.peer_base_s)
    in_log = sim.cl.unmerged_writes(o, t_b)
    objs = min(writes * p.distinct_object_frac, float(p.pg_objects * len(o.pgs)))
    return in_log * p.bytes_per_missed_write, objs, float(o.load_bytes), in_log, p.peer_base_s


def true_peak(sim, o: Osd, now: float) -> float:
    """The model's largest RSS of `o`'s process from now until it settles (see the module)."""
    p, lc = sim.p, sim.lc
    steady = o.steady
    fill = max(0.0, steady - o.load_bytes) / p.cache_fill_s
    n_peer = len(lc.peering[o.host] - {o.id}) + 1
    n_rec = len(lc.recovering[o.host] - {o.id}) + 1
    rec_rate = p.host_objects_per_s / n_rec
    if o.phase in (STOPPED, FAILED, LOADING, PREBOOT, BOOTING):
        h, objs, nh, left, base = _boot_state(sim, o, now)
        t_peer = max(base, left / (p.peer_entries_per_s / n_peer))
        reload = p.reload_bytes(o.merged) if o.phase in (STOPPED, FAILED) else o.reload
    elif o.phase == PEERING:
        h, objs, nh, reload = o.hist_peak, o.obj_total, o.nonhist, o.reload
        t_peer = max(o.peer_base_left, o.peer_left / (p.peer_entries_per_s / n_peer))
    else:
        keep = o.hist_keep
        if o.phase == ACTIVE:
            return max(o.run_peak, max(steady, o.nonhist) + keep)
        left = o.obj_left / o.obj_total if o.obj_total > 0 else 0.0
        return max(o.run_peak, _recovery_max(o.nonhist, steady, fill, o.hist_peak, keep, left,
                                             o.obj_left / rec_rate))
    nh_end = min(max(steady, nh), nh + fill * t_peer)
    at_peer_end = (nh_end + h) * (1.0 + p.peering_peak_frac) + reload
    keep = (h + reload) * p.retain_frac
    rec = _recovery_max(nh_end, steady, fill, h + reload, keep, 1.0 if objs > 0 else 0.0,
                        objs / rec_rate)
    return max(o.run_peak, at_peer_end, rec)


def _recovery_max(nh: float, steady: float, fill: float, h: float, keep: float, left: float,
                  t_rec: float) -> float:
    """Largest RSS while recovery trims the history from keep + (h - keep) x left to keep over
    t_rec seconds and caches refill from nh to steady at `fill` bytes/s; then settled."""
    best = max(nh + keep + (h - keep) * left, max(steady, nh) + keep)
    if fill > 0 and nh < steady and t_rec > 0:
        t_full = (steady - nh) / fill
        if t_full < t_rec:
            best = max(best, steady + keep + (h - keep) * left * (1.0 - t_full / t_rec))
    return best


__all__ = ["Oracle", "true_peak"]
