"""What a returning OSD grows to after its load: the rule that turns the RSS it loaded in
preboot into a predicted peak, learned from the growth of settled starts."""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from .model import Observation

LOAD_TO_PEAK_MIN = 2.0      # prior of peak_from_load while no growth is learned: peering +
                            # recovery add about the load-time rss again (docs/design.md: lab
                            # 3.3x, 112 MiB preboot -> 200+ MiB; memory model 5x)
GROWTH_WINDOW = 8           # settled observations with a load that peak_from_load learns from
GROWTH_MARGIN = 1.10        # over the largest learned growth (policies/footprint LEARN_MARGIN too)
HISTORY_BYTES_PER_ENTRY = 8 * 1024  # growth per missed PG log entry (lab: (401-71) MiB and
                            # (370-68) MiB after ~39,000 missed writes; policies/footprint.py)
GROWTH_FLOOR = 0.2          # of the load: peering alone adds about +20 % (field, docs/design.md)
BOOT_BYTES_PER_ENTRY = 12 * 1024  # growth after the load per missed PG log entry while nothing
                            # is learned: peak = load x (1 + GROWTH_FLOOR) + missed x this.
                            # Fresh Tentacle 20.2.4 and Pacific 16.2.15 labs, 12 starts with
                            # 1,430-14,407 missed entries: 0 to +13 %, where 2 x the load was
                            # -30 % to +69 % (docs/data/growth-per-entry, docs/releases.md
                            # "Growth per missed entry")
UP_BYTES_PER_ENTRY = 16 * 1024  # a learned growth extrapolated to more missed entries: above
                            # the largest growth over 1.2 x the load per entry measured (15.6
                            # KiB, Pacific; 48 lab starts, docs/data/growth-per-entry)


def growth_samples(observations: Sequence[Observation]) -> List[Tuple[int, Optional[int]]]:
    """(peak - load, missed entries) of the GROWTH_WINDOW most recent observations that carry
    a load (settled starts: their peak is real, see Observation.load_bytes)."""
    out = [(max(0, ob.peak_bytes - ob.load_bytes), ob.missed_entries)
           for ob in observations if ob.load_bytes]
    return out[-GROWTH_WINDOW:]


def by_missed(load: int, missed: Optional[int]) -> Optional[int]:
    """The peak of an OSD that loaded `load` bytes and missed `missed` PG log entries while
    nothing is learned: load x (1 + GROWTH_FLOOR) + missed x BOOT_BYTES_PER_ENTRY. None when
    its missed entries are unknown (an mgr that started after the OSD went down)."""
    if missed is None or missed < 0:
        return None
    return int(load * (1.0 + GROWTH_FLOOR) + missed * BOOT_BYTES_PER_ENTRY)


def peak_from_load(load: int, samples: Sequence[Tuple[int, Optional[int]]] = (),
                   missed: Optional[int] = None) -> int:
    """The peak of an OSD that loaded `load` bytes in preboot: load + the learned growth;
    while `samples` (growth_samples) is empty, by_missed() where its missed entries are known,
    else LOAD_TO_PEAK_MIN x load.

    Learned growth = the largest recent growth x GROWTH_MARGIN, at least GROWTH_FLOOR x load.
    On the lab the growth after the load is about constant while the load varies run to run
    (loads 81-218 MiB, growths 110-155 MiB; 2 x the load under-predicted 81-88 MiB loads by
    22 % and over-predicted 203-218 MiB ones by 20 %): it is added, not multiplied. Where this
    start's and a sample's missed entries are known, that growth moves with the difference
    (_history: only the history part depends on them). The largest, not a median:
    an under-prediction lets a peak past the budget (the brake is the last line), an
    over-prediction only delays a start."""
    if load <= 0:
        return 0
    if not samples:
        known = by_missed(load, missed)
        return int(load * LOAD_TO_PEAK_MIN) if known is None else known
    grown = max(g + _history(missed - m) if missed is not None and m is not None else g
                for g, m in samples)
    return int(load + max(grown * GROWTH_MARGIN, load * GROWTH_FLOOR))


def _history(more: int) -> int:
    """What `more` missed entries than a sample's (fewer, if negative) add to its growth:
    UP_BYTES_PER_ENTRY going up, the all-in 8 KiB going down, so that neither way
    under-predicts (Pacific lab: +6,201 entries at 8 KiB left a 20,000-object start 17 %
    under its peak at boot)."""
    return more * (UP_BYTES_PER_ENTRY if more > 0 else HISTORY_BYTES_PER_ENTRY)


def floor_from_load(load: int, samples: Sequence[Tuple[int, Optional[int]]] = (),
                    missed: Optional[int] = None) -> int:
    """The least peak assumed for an OSD that loaded `load` bytes while its real peak is not
    known: LOAD_TO_PEAK_MIN x load, or by_missed() or load + the smallest learned growth where
    lower. A floor, not a prediction, for what is learned from unsettled starts: the margin of
    peak_from_load must not feed back into learning (it inflated the ratio policy)."""
    if load <= 0:
        return 0
    floor = int(load * LOAD_TO_PEAK_MIN)
    known = by_missed(load, missed)
    if known is not None:
        floor = min(floor, known)
    if samples:
        floor = min(floor, load + min(g for g, _m in samples))
    return floor


__all__ = ["LOAD_TO_PEAK_MIN", "GROWTH_WINDOW", "GROWTH_MARGIN", "HISTORY_BYTES_PER_ENTRY",
           "BOOT_BYTES_PER_ENTRY", "UP_BYTES_PER_ENTRY", "by_missed",
           "GROWTH_FLOOR", "growth_samples", "peak_from_load", "floor_from_load"]
