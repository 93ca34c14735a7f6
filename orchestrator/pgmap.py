"""PG membership values of a snapshot: which OSDs each PG lives on, and its pool's replica
counts. Frozen values, no I/O (see model.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Mapping, Sequence, Tuple


@dataclass(frozen=True)
class PoolInfo:
    """A pool's replica counts (`osd dump` pools[].size / min_size) and its name
    (pools[].pool_name; "" where the shell does not know it)."""

    size: int
    min_size: int
    name: str = ""


@dataclass(frozen=True)
class PgMap:
    """PG membership: which OSDs each PG lives on, and which PGs are not active now.

    Cheap by design (a 10,000-OSD cluster has ~320,000 PGs): parallel sequences indexed by a
    PG index 0..n-1 (tuples, or a shell's packed arrays that read back as them). Shells keep
    `members`, `pool_of`, `pools`, `by_osd` and `ids` between ticks while the placement does
    not change and rebuild only `inactive` (the PGs whose state changes are few); plan() only
    ever looks at the inactive PGs and at the PGs of the few OSDs it considers stopping,
    never at all of them.
    """

    members: Sequence[Tuple[int, ...]]       # PG index -> its OSDs: the acting set plus the
                                             # down OSDs it maps to (they are left out of the
                                             # acting set while down, see the shells)
    pool_of: Sequence[int]                   # PG index -> pool id
    pools: Mapping[int, PoolInfo]            # pool id -> size / min_size
    by_osd: Mapping[int, Sequence[int]]      # OSD id -> indexes of its PGs
    inactive: FrozenSet[int] = frozenset()   # PG indexes whose state is not active now
    ids: Tuple[str, ...] = ()                # PG index -> "pool.seed" for messages (may be empty)
    unknown: FrozenSet[int] = frozenset()    # PG indexes in state unknown or creating: whether
                                             # clients reach them is not known (availability.py)

    def min_size(self, pg: int) -> int:
        return self.pools[self.pool_of[pg]].min_size

    def name(self, pg: int) -> str:
        return self.ids[pg] if pg < len(self.ids) else "pg#%d" % pg
