"""footprint policies: (osd, observations, now) -> predicted peak RSS (bytes) of this OSD from
process start until its PGs are active.

`static` is the conservative prior alone; `learned` scales the prior by what this cluster's
starts actually peaked at: k = the max of (Observation.peak_bytes / prior of that start) over
the last LEARN_WINDOW starts x LEARN_MARGIN; with fewer than LEARN_MIN_OBS observations k never
goes below 1 (the prior stays the floor). The max, not a high percentile: the first starts to
finish are the ones with the least history (they peer fastest), so the early observations are
biased low, and with concurrency > 1 an under-prediction is multiplied by the starts in flight
(simulator, 6,000 OSDs, concurrency 4: p90 gave 1.07 x budget, the max 1.02).

Where the prior's numbers come from:
- BASE_BYTES 360 MiB: on the lab (docs/design.md, Ceph 16.2.15 BlueStore) idle OSDs sit at ~70 MB,
  returning OSDs jump 200-240 MiB within 3-6 s of starting (PG log load + peering) and peak at
  370-401 MiB through recovery with ~16 PGs each. A start with little PG information must
  cover that; with the lab's PG count the prior gives ~455 MiB (> the 401 MiB peak).
- PG log: Ceph defaults osd_target_pg_log_entries_per_osd 300000, per PG clamped to
  [osd_min_pg_log_entries 250, osd_max_pg_log_entries 10000], plus osd_pg_log_dups_tracked
  3000 dup entries per PG. LOG_ENTRY_BYTES 400: a pg_log_entry_t with its object name and
  mempool overhead (osd_pglog mempool, a few hundred bytes each; dups are smaller, counted the
  same to stay conservative). When the snapshot has no log length, the default-derived
  estimate is used.
- PER_PG_BYTES 1 MiB: per-PG in-memory state (PG object, info, peering structures).
- Unknown PG count: mon_target_pg_per_osd default 100.
- History: when the snapshot knows the PG log entries written while the OSD was down
  (OsdState.missed_entries: what its PGs logged without it, capped by the log: past it Ceph
  backfills instead of building a missing set), peering and recovery add
  HISTORY_BYTES_PER_ENTRY per missed entry (lab: returning OSDs grew 401-71 = 330 MiB and
  370-68 = 302 MiB after missing ~39,000 writes each, 7.9-8.7 KiB per write, all-in), plus
  PEERING_PEAK (field: "peak about +20 % during peering"); the base is then BASE_KNOWN_BYTES
  (the history term carries the growth the 360 MiB base stands in for).
- Downtime, when the missed entries are unknown: missing sets grow with the history an OSD
  missed: +50 % at 1 h of downtime or more, linear before (field: "above all with how long
  the OSD was down").

The cluster's own size (`running_rss`, from the snapshot: the largest RSS of the cluster's up,
running OSDs that this run did not start) caps the prior: the same rules applied to what this
cluster's OSDs (same release, allocator, cache target and PG count class) actually weigh
instead of BASE_BYTES, i.e. running_rss x (1 + PEERING_PEAK) x the downtime factor, or with
missed entries known (running_rss + history) x (1 + PEERING_PEAK). The largest, not the median:
the survivors serve the outage's writes and a returning OSD re-peers every PG it holds. The
static numbers above come from Pacific's glibc heap (lab: 486 MiB predicted for Tentacle OSDs
that peaked at 106-166 MB, 487 MiB for a Pacific OSD of a small cluster that loaded 53 MiB),
so without the cap a first start under a tight budget was refused where it would have fit.
The cap only lowers the prior, never raises it; it is the floor of learned() below
LEARN_MIN_OBS observations (instead of the static prior), and an underestimate is bounded by
the core's other gates (the load bound at boot, the brake).
"""
from __future__ import annotations

from typing import Optional, Sequence

from ceph_recovery.growth import GROWTH_MARGIN
from ceph_recovery.model import Observation, OsdState

MiB = 1 << 20
BASE_BYTES = 360 * MiB
PER_PG_BYTES = 1 * MiB
LOG_ENTRY_BYTES = 400
TARGET_ENTRIES_PER_OSD = 300000
MIN_ENTRIES_PER_PG, MAX_ENTRIES_PER_PG = 250, 10000
DUPS_PER_PG = 3000
DEFAULT_PGS = 100
HISTORY_BYTES_PER_ENTRY = 8 * 1024
PEERING_PEAK = 0.2
BASE_KNOWN_BYTES = 128 * MiB
DOWNTIME_FULL_S = 3600.0
DOWNTIME_EXTRA = 0.5
MIN_FOOTPRINT = 64 * MiB
MAX_FOOTPRINT = 1 << 40         # sanity bound: 1 TiB

LEARN_WINDOW = 32       # most recent observations used
LEARN_MIN_OBS = 3       # below this many, learning may only raise the prior, never lower it
LEARN_QUANTILE_PCT = 100  # nearest-rank percentile of peak/prior: the max (see below)
LEARN_MARGIN = GROWTH_MARGIN  # safety margin over that ratio (the budget keeps its own
                              # headroom): gate 2's at boot, so that a start admitted at its
                              # grant is not held in preboot on the same evidence


def prior(pgs: int, pg_log_entries: int, downtime_s: float,
          missed_entries: Optional[int] = None, running_rss: Optional[int] = None) -> int:
    """The conservative prior in bytes (see the module docstring for every number), capped by
    the cluster's own size when `running_rss` (bytes, > 0) is known."""
    static = _static_prior(pgs, pg_log_entries, downtime_s, missed_entries)
    if not running_rss or running_rss <= 0:
        return static
    if missed_entries is not None and missed_entries >= 0:
        own = (running_rss + missed_entries * HISTORY_BYTES_PER_ENTRY) * (1.0 + PEERING_PEAK)
    else:
        own = running_rss * (1.0 + PEERING_PEAK) * _downtime_factor(downtime_s)
    return int(min(static, own))


def _downtime_factor(downtime_s: float) -> float:
    return 1.0 + DOWNTIME_EXTRA * min(max(downtime_s, 0.0), DOWNTIME_FULL_S) / DOWNTIME_FULL_S


def _static_prior(pgs: int, pg_log_entries: int, downtime_s: float,
                  missed_entries: Optional[int]) -> int:
    pgs = pgs if pgs > 0 else DEFAULT_PGS
    entries = pg_log_entries
    if entries <= 0:
        per_pg = min(MAX_ENTRIES_PER_PG, max(MIN_ENTRIES_PER_PG, TARGET_ENTRIES_PER_OSD // pgs))
        entries = per_pg * pgs
    entries += DUPS_PER_PG * pgs
    load = pgs * PER_PG_BYTES + entries * LOG_ENTRY_BYTES
    if missed_entries is not None and missed_entries >= 0:
        history = missed_entries * HISTORY_BYTES_PER_ENTRY
        return int((BASE_KNOWN_BYTES + load + history) * (1.0 + PEERING_PEAK))
    return int((BASE_BYTES + load) * _downtime_factor(downtime_s))


def _downtime(osd: OsdState, now: float) -> float:
    return max(0.0, now - osd.down_since) if osd.down_since is not None else 0.0


def _bound(n: float) -> int:
    return int(min(MAX_FOOTPRINT, max(MIN_FOOTPRINT, n)))


def static(osd: OsdState, observations: Sequence[Observation], now: float,
           running_rss: Optional[int] = None) -> int:
    """The prior alone (capped by the cluster's own size when known): no learning."""
    return _bound(prior(osd.pgs, osd.pg_log_entries, _downtime(osd, now), osd.missed_entries,
                        running_rss))


def _ratio(ob: Observation) -> float:
    return ob.peak_bytes / prior(ob.pgs, ob.pg_log_entries, ob.downtime_s, ob.missed_entries)


def learned(osd: OsdState, observations: Sequence[Observation], now: float,
            running_rss: Optional[int] = None) -> int:
    """Static prior x (largest peak/static-prior ratio of the recent starts) x margin; below
    LEARN_MIN_OBS observations never under the prior capped by the cluster's own size. An OSD
    with a settled start of its own (Observation.load_bytes set: a real peak, not a lower
    bound) takes the ratio of its latest one instead of the cluster's largest: the same PGs on
    the same device, the prior carrying what changed (downtime, missed entries)."""
    p = prior(osd.pgs, osd.pg_log_entries, _downtime(osd, now), osd.missed_entries)
    floor = prior(osd.pgs, osd.pg_log_entries, _downtime(osd, now), osd.missed_entries,
                  running_rss)
    recent = list(observations)[-LEARN_WINDOW:]
    own = [ob for ob in recent if ob.osd == osd.id and ob.peak_bytes > 0 and
           ob.load_bytes is not None]
    if own:
        return _bound(p * _ratio(own[-1]) * LEARN_MARGIN)
    ratios = [_ratio(ob) for ob in recent if ob.peak_bytes > 0]
    if not ratios:
        return _bound(floor)
    ratios.sort()
    pred = p * ratios[max(0, -(-len(ratios) * LEARN_QUANTILE_PCT // 100) - 1)] * LEARN_MARGIN
    if len(ratios) < LEARN_MIN_OBS:
        pred = max(pred, floor)
    return _bound(pred)


for _fn in (learned, static):
    _fn.takes_running_rss = True    # type: ignore[attr-defined]  # see policy_types
FOOTPRINT = {"learned": learned, "static": static}
