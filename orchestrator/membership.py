"""What PG membership (Snapshot.pg_map) tells the core: which starts restore service, and
which stops would take it away.

Rules:
- present: an OSD counts towards its PGs' min_size when it is up, or when its process is
  running while it is down (granted, loading or in preboot: it is on its way up and a second
  start of one of its partners buys nothing the first does not);
- shortfall: for each PG whose state is not active (PgMap.inactive), how many members it
  still needs to reach its pool's min_size; PGs that have min_size present and are only
  peering need nothing more;
- cover: a greedy weighted set cover of those needs by the down candidates: repeatedly the
  candidate that serves the most still-needed PG slots per byte of predicted footprint (ties:
  lower OSD id). Lazy greedy: a candidate's gain only falls as others are picked, so a heap
  entry is re-scored when popped;
- stop_breaks: the active PGs (not in PgMap.inactive) whose up members would drop below
  min_size if the OSD (and the others stopping in the same tick) stopped: the core never
  makes an active PG inactive, whatever ok-to-stop says (Ceph's own rule clears a returning OSD
  still recovering: it is in no degraded PG's avail_no_missing, docs/memory-model.md).

Cost: shortfall and cover look only at the inactive PGs; stop_breaks only at one OSD's PGs.
"""
from __future__ import annotations

import heapq
from typing import AbstractSet, Callable, Dict, Iterable, List, Mapping, Sequence, Set

from .model import PROC_RUNNING, OsdState, PgMap


def present(o: OsdState) -> bool:
    return o.up or o.process == PROC_RUNNING


def shortfall(pg_map: PgMap, by_id: Mapping[int, OsdState]) -> Dict[int, int]:
    """PG index -> members still needed to reach min_size (only PGs that need some)."""
    out: Dict[int, int] = {}
    for pg in pg_map.inactive:
        have = 0
        for m in pg_map.members[pg]:
            o = by_id.get(m)
            if o is not None and present(o):
                have += 1
        need = pg_map.min_size(pg) - have
        if need > 0:
            out[pg] = need
    return out


def cover(pg_map: PgMap, by_id: Mapping[int, OsdState], candidates: Sequence[OsdState],
          weight: Callable[[OsdState], float]) -> List[OsdState]:
    """The candidates that bring every PG they can to min_size, in greedy pick order."""
    need = shortfall(pg_map, by_id)
    cand = {o.id: o for o in candidates}
    serves: Dict[int, List[int]] = {}
    for pg in sorted(need):
        for m in pg_map.members[pg]:
            if m in cand:
                serves.setdefault(m, []).append(pg)
    w = {i: max(1.0, float(weight(cand[i]))) for i in serves}

    def gain(i: int) -> int:
        return sum(1 for pg in serves[i] if need[pg] > 0)

    heap = [(-gain(i) / w[i], i) for i in serves]
    heapq.heapify(heap)
    out: List[OsdState] = []
    while heap:
        score, i = heapq.heappop(heap)
        g = gain(i)
        if g == 0:
            continue
        if -g / w[i] != score:          # stale: others covered some of its PGs since
            heapq.heappush(heap, (-g / w[i], i))
            continue
        out.append(cand[i])
        for pg in serves[i]:
            if need[pg] > 0:
                need[pg] -= 1
    return out


def up_ids(by_id: Mapping[int, OsdState]) -> Set[int]:
    return {i for i, o in by_id.items() if o.up}


def stop_breaks(pg_map: PgMap, up: AbstractSet[int], osd_id: int,
                stopping: Iterable[int] = ()) -> List[int]:
    """Active PG indexes that would drop below min_size members up if `osd_id` and the OSDs
    in `stopping` stopped (`up`: the ids of the up OSDs, see up_ids). Empty for an OSD that
    is not up (its stop changes no PG). A PG already inactive (a member still peering) is
    left to ok-to-stop (Ceph refuses it: bad_already_inactive)."""
    if osd_id not in up:
        return []
    gone = set(stopping)
    gone.add(osd_id)
    inactive, members = pg_map.inactive, pg_map.members
    out = []
    for pg in pg_map.by_osd.get(osd_id, ()):
        if pg in inactive:
            continue
        n_up = n_left = 0
        for m in members[pg]:
            if m in up:
                n_up += 1
                if m not in gone:
                    n_left += 1
        ms = pg_map.min_size(pg)
        if n_left < ms <= n_up:
            out.append(pg)
    return out
