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
UP_BYTES_PER_ENTRY = 16 * 1024  # a learned growth extrapolated to more missed entries while no
                            # rate is fitted: above the largest growth over 1.2 x the load per
                            # entry measured (15.6 KiB, Pacific; 48 lab starts,
                            # docs/data/growth-per-entry)
FIT_SAMPLES = 4             # fit a rate on at least this many samples with known missed entries
FIT_SPREAD = 1.3            # ... spanning this factor: closer ones turn noise into a slope
                            # (Pacific lab, 2,247 and 2,753 entries: 4 KiB; the same OSDs over
                            # 2,247 to 11,261: 11.3-11.8)
FIT_SE = 2.0                # the rate's bounds: slope +- this x its standard error (two
                            # lab starts 1,100 entries apart fitted a slope 12 % under the
                            # peaks of starts with 7,500-12,500 entries)


def settled(observations: Sequence[Observation]) -> List[Observation]:
    """The GROWTH_WINDOW most recent observations that carry a load (settled starts: their
    peak is real, see Observation.load_bytes): what growth and load predictions learn from."""
    return [ob for ob in observations if ob.load_bytes][-GROWTH_WINDOW:]


def growth_samples(observations: Sequence[Observation]) -> List[Tuple[int, Optional[int]]]:
    """(peak - load, missed entries) of the settled() observations."""
    return [(max(0, ob.peak_bytes - ob.load_bytes), ob.missed_entries)
            for ob in settled(observations)]


def entry_rate(samples: Sequence[Tuple[int, Optional[int]]]) -> Optional[Tuple[float, float]]:
    """Bounds (low, high) of the growth per missed entry fitted on this cluster's samples:
    the least-squares slope of growth on missed entries +- FIT_SE x its standard error, low
    at least 0. None unless FIT_SAMPLES samples carry their missed entries and those span
    FIT_SPREAD. The slope, not growth / missed: the growth also holds peering's share, about
    constant between starts (lab: 4.7-15.6 KiB per entry that way, 10.5-12.0 fitted within
    one cluster; simulator: 7-11.5 +- 0.6-2.1)."""
    pts = [(m, g) for g, m in samples if m is not None and m > 0]
    if len(pts) < FIT_SAMPLES or max(m for m, _g in pts) < FIT_SPREAD * min(m for m, _g in pts):
        return None
    n = len(pts)
    mean_m, mean_g = sum(m for m, _g in pts) / n, sum(g for _m, g in pts) / n
    var = sum((m - mean_m) ** 2 for m, _g in pts)
    slope = sum((m - mean_m) * (g - mean_g) for m, g in pts) / var
    resid = sum((g - mean_g - slope * (m - mean_m)) ** 2 for m, g in pts)
    se = (resid / (n - 2) / var) ** 0.5
    return max(0.0, slope - FIT_SE * se), max(0.0, slope + FIT_SE * se)


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
    rate = entry_rate(samples)
    grown = max(g + _history(missed - m, rate) if missed is not None and m is not None else g
                for g, m in samples)
    return int(load + max(grown * GROWTH_MARGIN, load * GROWTH_FLOOR))


def _history(more: int, rate: Optional[Tuple[float, float]] = None) -> int:
    """What `more` missed entries than a sample's (fewer, if negative) add to its growth.
    With a fitted rate (entry_rate): its high bound going up (at least the all-in
    HISTORY_BYTES_PER_ENTRY; a cluster that grows more per entry than the labs did is not
    capped), its low bound going down (at most UP_BYTES_PER_ENTRY). Without:
    UP_BYTES_PER_ENTRY going up, HISTORY_BYTES_PER_ENTRY going down. Either way the error
    lies on the side of a larger peak (Pacific lab: +6,201 entries at 8 KiB left a
    20,000-object start 17 % under its peak at boot)."""
    if more > 0:
        per = UP_BYTES_PER_ENTRY if rate is None else max(HISTORY_BYTES_PER_ENTRY, rate[1])
    else:
        per = HISTORY_BYTES_PER_ENTRY if rate is None else min(UP_BYTES_PER_ENTRY, rate[0])
    return int(more * per)


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
           "BOOT_BYTES_PER_ENTRY", "UP_BYTES_PER_ENTRY", "FIT_SAMPLES", "FIT_SPREAD", "FIT_SE",
           "by_missed", "entry_rate", "settled",
           "GROWTH_FLOOR", "growth_samples", "peak_from_load", "floor_from_load"]
