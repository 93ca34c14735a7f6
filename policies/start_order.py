"""start_order policies: (candidates, snapshot) -> the same OSDs in start order.

plan() grants per host in this order (strictly: a host waits for its next OSD to fit rather
than skipping to a smaller one), so the order decides which OSD of each host starts first and
what `ceph recovery status` shows as next. Hosts advance in parallel (one slot each), so only
the order WITHIN a host matters: it decides which OSDs are left for the end of the run.

unblock_first (the default) vs service_first: a down OSD's PGs are either inactive (another
member is down too) or active with one replica short. Every active-but-short PG makes
`ok-to-stop` refuse both of its up members (stopping either drops it below min_size), so the
OSDs that hold many of them keep their partners on the other hosts of the failed domain from
being restarted to make room. unblock_first starts those first and leaves for the end the OSDs
whose PGs wait for other down OSDs too (pgs - pgs_inactive small): at the end of the run their
PGs block few restarts. service_first does the opposite (most inactive PGs first), which
restores min_size sooner but leaves, on every host, OSDs whose PGs pin the restarts the last
starts need. Simulator, 1,200 OSDs, one rack of 10 hosts down 1 h, budget 0.8, concurrency 1,
seeds 0-5 (docs/memory-model.md): with heap release all PGs active after 1,735-1,960 s vs
2,000-2,070 s (and seed 5 never); without heap release 6 of 6 runs converge (2,015-2,445 s) vs
1 of 6. Cost: the integral of inactive PGs over the run is ~19 % larger (1,200 OSDs, seed 0).
"""
from __future__ import annotations

from typing import Dict, List, Sequence

from ceph_recovery.membership import cover
from ceph_recovery.model import OsdState, Snapshot

from .footprint import static as _prior


def _service_key(o: OsdState):
    # most inactive PGs first (its start restores service), then most degraded, then the
    # cheapest start (fewest PGs), then id for determinism
    return (-o.pgs_inactive, -o.pgs_degraded, o.pgs, o.id)


def service_first(candidates: Sequence[OsdState], snapshot: Snapshot) -> List[OsdState]:
    """The OSD whose start unblocks the most inactive PGs first, then degraded, then the rest."""
    return sorted(candidates, key=_service_key)


def _unblock_key(o: OsdState):
    # most PGs left active (one replica short) by this OSD's absence first: each of them makes
    # ok-to-stop refuse its up members; then most inactive PGs (service), then id
    return (-(o.pgs - o.pgs_inactive), -o.pgs_inactive, o.id)


def unblock_first(candidates: Sequence[OsdState], snapshot: Snapshot) -> List[OsdState]:
    """The OSD whose absence keeps the most active PGs one replica short first (they make
    ok-to-stop refuse the restarts that make room), then most inactive PGs, then id."""
    return sorted(candidates, key=_unblock_key)


def _interleave(groups: List[List[OsdState]]) -> List[OsdState]:
    out: List[OsdState] = []
    k = 0
    while True:
        row = [g[k] for g in groups if k < len(g)]
        if not row:
            return out
        out.extend(row)
        k += 1


def domain_round_robin(candidates: Sequence[OsdState], snapshot: Snapshot) -> List[OsdState]:
    """Alternate failure domains: one OSD per rack (parent of the host) in turn, and within a
    rack one per host in turn; each host's OSDs in service_first order."""
    racks: Dict[str, Dict[str, List[OsdState]]] = {}
    for o in sorted(candidates, key=_service_key):
        rack = o.crush_path[-2] if len(o.crush_path) >= 2 and o.crush_path[-1] == o.host \
            else (o.crush_path[-1] if o.crush_path else "")
        racks.setdefault(rack, {}).setdefault(o.host, []).append(o)
    per_rack = [_interleave([hosts[h] for h in sorted(hosts)])
                for _, hosts in sorted(racks.items())]
    return _interleave(per_rack)


def _weight(o: OsdState) -> float:
    # relative cost of a start: the footprint prior (learning scales every OSD by the same
    # factor, so the prior orders them as the learned prediction does); now = 0 leaves the
    # downtime out, which the OSDs of one failure share
    return float(_prior(o, (), 0.0))


def cover_first(candidates: Sequence[OsdState], snapshot: Snapshot) -> List[OsdState]:
    """Service first, from PG membership: the down OSDs that bring every inactive PG to its
    min_size (ceph_recovery.membership.cover: a greedy set cover weighted by predicted
    footprint) in cover order, then the rest in unblock_first order. Without membership
    (snapshot.pg_map None) or with every PG active, this is unblock_first."""
    rest = unblock_first(candidates, snapshot)
    pm = snapshot.pg_map
    if pm is None or not pm.inactive:
        return rest
    by_id = {o.id: o for o in snapshot.osds}
    first = cover(pm, by_id, rest, _weight)
    picked = {o.id for o in first}
    return first + [o for o in rest if o.id not in picked]


START_ORDER = {"unblock_first": unblock_first, "service_first": service_first,
               "domain_round_robin": domain_round_robin, "cover_first": cover_first}
