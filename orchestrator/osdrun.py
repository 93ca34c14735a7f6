"""A run's per-OSD records (a part of model.py's vocabulary: Progress keeps one OsdRun per OSD
it touched; its per-field maps are read as OsdColumn views of them, and built into them by
Progress.with_columns). Re-exported by model.py.
Python >= 3.9 (runs inside ceph-mgr)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Iterator, Mapping, MutableMapping, Optional, Tuple


@dataclass(frozen=True)
class OsdRun:
    """What a run knows of one OSD it touched. None = not known / not set. Progress keeps one
    per OSD (Progress.osds), so that forgetting an OSD is one deletion; the per-field maps
    (Progress.osd_map("granted"), ...) are views of these records."""

    granted: Optional[float] = None        # when its start was granted
    booting: Optional[float] = None        # when it was allowed to boot
    restarted: Optional[float] = None      # its last restart
    heap_released: Optional[float] = None  # its last heap release
    peak: Optional[int] = None             # peak rss seen while in flight or settling
    downtime: Optional[float] = None       # seconds down at grant
    fresh_rss: Optional[int] = None        # rss once back after a restart
    failures: Optional[int] = None         # failed starts this run
    settling: Optional[float] = None       # finished at, still recovering
    grew_at: Optional[float] = None        # settling: last grew by 1 %
    load_rss: Optional[int] = None         # preboot rss when allowed to boot
    missed: Optional[int] = None           # missed PG log entries at grant
    heap_rss: Optional[int] = None         # rss at its last heap release
    restart_rss: Optional[int] = None      # rss when this run last restarted it
    shrink_at: Optional[float] = None      # settled, PGs still recovering: since (shrink.py)
    shrink_rss: Optional[int] = None       # ... and its rss then, the shrink's reference
    staged: Optional[float] = None         # granted beside others as staged (admission.py)
    stopped: Optional[float] = None        # a start the run withdrew: its process is being
                                           # stopped (instructed at; inflight.withdraw)
    rebuild_from: Optional[float] = None   # granted, first seen rebuilding its allocator
    rebuild_seen: Optional[float] = None   # ... and last seen so (Decision.grant_clock)


NO_RUN = OsdRun()
# Progress's per-OSD map name -> the OsdRun field it views (the map names are the persisted
# JSON keys); the float-valued ones first
OSD_FIELDS = {"granted": "granted", "booting": "booting", "restarted": "restarted",
              "heap_released": "heap_released", "downtime": "downtime",
              "settling": "settling", "grew_at": "grew_at", "peaks": "peak",
              "fresh_rss": "fresh_rss", "failures": "failures", "load_rss": "load_rss",
              "missed": "missed", "heap_rss": "heap_rss",
              "restart_rss": "restart_rss", "shrink_at": "shrink_at",
              "shrink_rss": "shrink_rss", "staged": "staged", "stopped": "stopped",
              "rebuild_from": "rebuild_from", "rebuild_seen": "rebuild_seen"}
# what a start measured: cleared when the start is forgotten and when the OSD settled
START_MEASURES = ("peaks", "downtime", "missed", "load_rss")
START_MARKERS = ("granted", "booting", "staged", "rebuild_from", "rebuild_seen") + START_MEASURES
SETTLE_MARKERS = ("settling", "grew_at") + START_MEASURES


class OsdColumn(MutableMapping):
    """One OsdRun field of every OSD, seen as an osd -> value map; writes go to the records
    (an OSD whose record becomes empty is dropped)."""

    def __init__(self, records: Dict[int, OsdRun], name: str) -> None:
        self._records, self._field = records, OSD_FIELDS[name]

    def __getitem__(self, osd: int) -> Any:
        v = getattr(self._records.get(osd, NO_RUN), self._field)
        if v is None:
            raise KeyError(osd)
        return v

    def __contains__(self, osd: object) -> bool:
        r = self._records.get(osd)  # type: ignore[call-overload]
        return r is not None and getattr(r, self._field) is not None

    def __setitem__(self, osd: int, value: Any) -> None:
        self._records[osd] = replace(self._records.get(osd, NO_RUN), **{self._field: value})

    def __delitem__(self, osd: int) -> None:
        if osd not in self:
            raise KeyError(osd)
        rec = replace(self._records[osd], **{self._field: None})
        if rec == NO_RUN:
            del self._records[osd]
        else:
            self._records[osd] = rec

    def __iter__(self) -> Iterator[int]:
        return iter([o for o, r in self._records.items() if getattr(r, self._field) is not None])

    def __len__(self) -> int:
        return sum(1 for r in self._records.values() if getattr(r, self._field) is not None)


def clear_osd(records: Dict[int, OsdRun], osd: int, names: Tuple[str, ...]) -> None:
    """Forget the `names` maps' entries of one OSD (its record goes once empty)."""
    rec = replace(records.get(osd, NO_RUN), **{OSD_FIELDS[n]: None for n in names})
    if rec == NO_RUN:
        records.pop(osd, None)
    else:
        records[osd] = rec


def _osd_records(base: Mapping[int, OsdRun], maps: Mapping[str, Mapping[int, Any]]):
    """`base` with each of `maps` (map name -> osd -> value) replacing its field entirely."""
    records = dict(base)
    for name, m in maps.items():
        col = OsdColumn(records, name)
        for osd in list(col):
            del col[osd]
        for osd, v in m.items():
            col[osd] = v
    return records
