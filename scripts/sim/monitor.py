"""The model's monitor: marking down OSDs out, and in again at their boot.

OSDMonitor::tick (Ceph's rules, docs/memory-model.md "Out-marking"):
- an OSD down for `down_out_interval_s` (mon_osd_down_out_interval) is marked out unless
  `noout` is set (cluster-wide, on the OSD, or on a bucket above it) or the monitor would keep
  fewer than `min_in_ratio` of the OSDs in (mon_osd_min_in_ratio);
- while its whole subtree at `down_out_subtree_limit` (a rack) is down it is not marked out,
  and its timer restarts: an OSD of a rack that partly came back is marked out
  down_out_interval_s after the last tick that saw the whole rack down;
- at its boot an OSD the monitor marked out is marked in again (`auto_mark_in`,
  mon_osd_auto_mark_auto_out_in) unless `noin` is set (cluster-wide, on the OSD or a bucket).
While it is out, its data is re-replicated to the hosts that stay in: after
rereplication_s() its PGs count a substitute member (cluster.set_substitute) instead of it.
"""
from __future__ import annotations

from typing import Dict, List, Set, Tuple

from .cluster import C_DOWN, SUB_NONE, SUB_PENDING, SUB_READY, Cluster, Osd

NEVER = float("-inf")


class Monitor:
    """Out-marking, auto mark-in and re-replication of one run."""

    def __init__(self, cl: Cluster):
        self.cl, self.p = cl, cl.p
        self.cluster_flags: Set[str] = set()         # noout / noin set cluster-wide
        self.group_flags: Dict[str, Set[str]] = {}   # bucket -> noout / noin
        self.marked_out = 0                          # OSDs this monitor marked out
        self.marked_in = 0                           # of those, marked in again at boot
        self.n_out = 0
        self.pending: List[Tuple[float, int]] = []   # (ready at, osd): re-replications
        self.ready_at: Dict[int, float] = {}         # osd -> its latest re-replication's end
        self.subtree_down_at: Dict[str, float] = {}  # subtree -> last tick it was all down
        self.subtree_osds: Dict[str, List[Osd]] = {}
        for o in cl.osds:
            key = self._subtree(o)
            if key:
                self.subtree_osds.setdefault(key, []).append(o)

    # ------------------------------------------------------------------ flags
    def _subtree(self, o: Osd) -> str:
        limit = self.p.down_out_subtree_limit
        return {"host": o.host, "rack": o.rack, "root": self.cl.topo.root}.get(limit, "")

    def flagged(self, o: Osd, flag: str) -> bool:
        """`flag` on the cluster, on the OSD (noin only: Osd.noin) or on a bucket above it."""
        if flag in self.cluster_flags or (flag == "noin" and o.noin):
            return True
        return any(flag in self.group_flags.get(b, ()) for b in
                   (o.host, o.rack, self.cl.topo.root))

    # ------------------------------------------------------------------ tick
    def tick(self, now: float, osds) -> None:
        """Mark out those of `osds` down long enough at `now`; finish re-replications due."""
        p = self.p
        if p.down_out_interval_s > 0:
            batch = []
            all_down: Dict[str, bool] = {}
            for o in osds:
                if o.out or o.cls != C_DOWN or o.up_out or o.down_since is None:
                    continue
                key = self._subtree(o)
                if key and self._all_down(key, all_down):
                    self.subtree_down_at[key] = now
                    continue
                since = max(o.down_since, self.subtree_down_at.get(key, NEVER))
                if now - since >= p.down_out_interval_s and not self.flagged(o, "noout") \
                        and self._may_mark_out():
                    self._mark_out(o)
                    batch.append((since + p.down_out_interval_s, o))
            self._rereplicate(batch)
        self._finish(now)

    def busy(self, osds) -> bool:
        """Something will change without a decision: a re-replication is going on, or one
        of `osds` is down and will be marked out (no noout, its subtree not all down)."""
        if any(self.cl.osds[oid].sub == SUB_PENDING for _, oid in self.pending):
            return True
        if self.p.down_out_interval_s <= 0:
            return False
        cache: Dict[str, bool] = {}
        for o in osds:
            if o.out or o.cls != C_DOWN or o.up_out or o.down_since is None:
                continue
            key = self._subtree(o)
            if not (key and self._all_down(key, cache)) and not self.flagged(o, "noout") \
                    and self._may_mark_out():
                return True
        return False

    def _all_down(self, key: str, cache: Dict[str, bool]) -> bool:
        if key not in cache:
            cache[key] = all(x.cls == C_DOWN and not x.up_out for x in self.subtree_osds[key])
        return cache[key]

    def _may_mark_out(self) -> bool:
        n = len(self.cl.osds)
        return (n - self.n_out - 1) / float(n) >= self.p.min_in_ratio

    def _mark_out(self, o: Osd) -> None:
        o.out = True
        self.n_out += 1
        self.marked_out += 1
        self.cl.epoch += 1
        self.cl.dirty_osds.add(o.id)

    def rereplication_s(self, osds: List[Osd]) -> float:
        """[A] The data of `osds` (their PGs' objects) re-replicated by the hosts with no out
        OSD, each at rereplicate_share x host_objects_per_s."""
        objects = sum(self.p.pg_objects * len(o.pgs) for o in osds)
        out_hosts = {o.host for o in self.cl.osds if o.out}
        hosts = max(1, len(self.cl.hosts) - len(out_hosts))
        rate = hosts * self.p.host_objects_per_s * self.p.rereplicate_share
        return objects / rate if rate > 0 else float("inf")

    def _rereplicate(self, batch) -> None:
        if not batch:
            return
        seconds = self.rereplication_s([o for _, o in batch])
        for at, o in batch:
            o.sub = SUB_PENDING
            self.pending.append((at + seconds, o.id))
            self.ready_at[o.id] = at + seconds
        self.pending.sort()

    def _finish(self, now: float) -> None:
        while self.pending and self.pending[0][0] <= now:
            at, oid = self.pending.pop(0)
            o = self.cl.osds[oid]
            if o.sub == SUB_PENDING and self.ready_at.get(oid) == at:
                self.cl.set_substitute(o, SUB_READY, at)

    # ------------------------------------------------------------------ boot
    def would_mark_in(self, o: Osd) -> bool:
        """`o` is in, or would be marked in at a boot now."""
        return not o.out or (self.p.auto_mark_in and not self.flagged(o, "noin"))

    def boot_in(self, o: Osd, explicit: bool = False) -> bool:
        """`o` boots: True if it is (or is marked) in, False if it stays out (noin, or
        auto_mark_in off). An OSD marked in while its re-replication is still going on
        cancels it (its own copy is back). `explicit`: `ceph osd in`, whatever the flags."""
        if not o.out:
            return True
        if not explicit and not self.would_mark_in(o):
            return False
        o.out = False
        self.n_out -= 1
        self.marked_in += 1
        if o.sub == SUB_PENDING:
            o.sub = SUB_NONE
        self.cl.epoch += 1
        self.cl.dirty_osds.add(o.id)
        return True


__all__ = ["Monitor"]
