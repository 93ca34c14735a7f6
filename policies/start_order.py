"""start_order policies: (candidates, snapshot) -> the same OSDs in start order.

plan() grants per host in this order (strictly: a host waits for its next OSD to fit rather
than skipping to a smaller one), so the order decides which OSD of each host starts first and
what `ceph recovery status` shows as next.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

from ceph_recovery.model import OsdState, Snapshot


def _service_key(o: OsdState):
    # most inactive PGs first (its start restores service), then most degraded, then the
    # cheapest start (fewest PGs), then id for determinism
    return (-o.pgs_inactive, -o.pgs_degraded, o.pgs, o.id)


def service_first(candidates: Sequence[OsdState], snapshot: Snapshot) -> List[OsdState]:
    """The OSD whose start unblocks the most inactive PGs first, then degraded, then the rest."""
    return sorted(candidates, key=_service_key)


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


START_ORDER = {"service_first": service_first, "domain_round_robin": domain_round_robin}
