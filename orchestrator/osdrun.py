"""A run's per-OSD records (a part of model.py's vocabulary: Progress keeps one OsdRun per OSD
it touched; a plan() call reads and changes them as one plain dict per field, columns(), and
builds records back from those, records_from()). Re-exported by model.py.
Python >= 3.9 (runs inside ceph-mgr)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Dict, Mapping, Optional, Tuple


@dataclass(frozen=True)
class OsdRun:
    """What a run knows of one OSD it touched. None = not known / not set. Progress keeps one
    per OSD (Progress.osds), so that forgetting an OSD is one deletion; the per-field maps
    (Progress.osd_map("granted"), ...) are read from these records."""

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
    rebuild_seen: Optional[float] = None   # ... and last seen so (bootclock.grant_clock)


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


Columns = Dict[str, Dict[int, Any]]


def columns(records: Mapping[int, OsdRun]) -> Columns:
    """The records as one osd -> value dict per map name (OSD_FIELDS), each in the records'
    order: what a plan() call reads and changes, as plain dicts."""
    cols: Columns = {name: {} for name in OSD_FIELDS}
    for osd, rec in records.items():
        for name, fld in OSD_FIELDS.items():
            v = getattr(rec, fld)
            if v is not None:
                cols[name][osd] = v
    return cols


def records_from(base: Mapping[int, OsdRun], cols: Mapping[str, Mapping[int, Any]]
                 ) -> Dict[int, OsdRun]:
    """`base` with each of `cols` (map name -> osd -> value) replacing its field entirely; an
    OSD left with no field has no record. Order: `base`'s OSDs first, then new ones as the
    maps name them."""
    order = dict.fromkeys(base)
    for m in cols.values():
        order.update(dict.fromkeys(m))
    out = {}
    for osd in order:
        old = base.get(osd, NO_RUN)
        rec = replace(old, **{OSD_FIELDS[n]: m.get(osd) for n, m in cols.items()})
        if rec != NO_RUN:
            out[osd] = rec
    return out


def clear_osd(cols: Columns, osd: int, names: Tuple[str, ...]) -> None:
    """Forget the `names` maps' entries of one OSD."""
    for n in names:
        cols[n].pop(osd, None)
