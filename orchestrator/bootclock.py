"""A granted OSD's boot clock, read from the run's per-OSD records: when its boot_timeout
started, and how an allocator rebuild holds it.

Each function takes the records it reads (osd -> time maps: `granted`, `booting`,
`rebuild_seen`, `rebuild_from`) and the call's `now`, and changes none of them.
"""
from __future__ import annotations

from typing import Mapping, Optional

# The longest an OSD's allocator rebuild holds its boot clock (rebuild_clock): 2 h, the
# startup probe Rook had to allow for this phase (rook#10196). Long enough for the field's
# "minutes to hours"; past it the run may end incomplete, and it still never stops the OSD.
REBUILD_MAX_S = 7200.0

Times = Mapping[int, float]


def grant_clock(osd_id: int, granted: Times, booting: Times, rebuild_seen: Times,
                rebuild_from: Times) -> float:
    """When a granted OSD's boot_timeout started: its boot (AllowBoot), else its grant --
    or the end of its allocator rebuild, if later (rebuild_clock)."""
    base = booting.get(osd_id, granted[osd_id])
    rebuilt = rebuild_clock(osd_id, rebuild_seen, rebuild_from)
    return base if rebuilt is None else max(base, rebuilt)


def rebuild_clock(osd_id: int, rebuild_seen: Times, rebuild_from: Times) -> Optional[float]:
    """Where a granted OSD's allocator rebuild (BlueStore's scan of every onode after an
    unclean stop, before it loads any PG; model.DAEMON_REBUILDING) leaves its boot clock:
    the last tick it was seen rebuilding, so the clock restarts when the rebuild ends.
    The rebuild is the OSD's own work, minutes to hours on a large OSD, and a stop would
    only start it again (the stop is unclean too). At most REBUILD_MAX_S after it was
    first seen: past that the clock runs (inflight._timed_out names it, never stops it,
    and it is no progress: the stall rule ends the run). None if it was never seen."""
    seen = rebuild_seen.get(osd_id)
    if seen is None:
        return None
    return min(seen, rebuild_from.get(osd_id, seen) + REBUILD_MAX_S)


def rebuilding(osd_id: int, rebuild_seen: Times, now: float) -> bool:
    """Seen rebuilding its allocator in this tick's snapshot (the one taken at `now`)."""
    return rebuild_seen.get(osd_id) == now


def clock_bound(osd_id: int, granted: Times, booting: Times, rebuild_seen: Times,
                rebuild_from: Times, now: float) -> float:
    """The latest a granted OSD's boot clock can start if nothing else moves it: its
    grant_clock, or for one rebuilding now the end of its REBUILD_MAX_S."""
    clock = grant_clock(osd_id, granted, booting, rebuild_seen, rebuild_from)
    if rebuilding(osd_id, rebuild_seen, now):
        clock = max(clock, rebuild_from.get(osd_id, now) + REBUILD_MAX_S)
    return clock
