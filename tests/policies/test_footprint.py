"""The footprint prior capped by the cluster's own size (running_rss) and its learned floor."""
from __future__ import annotations

from ceph_recovery.model import Observation, OsdState
from ceph_recovery.policies.footprint import (DOWNTIME_EXTRA, HISTORY_BYTES_PER_ENTRY,
                                              LEARN_MARGIN, PEERING_PEAK, learned, prior, static)

MiB = 1 << 20
NOW = 10000.0


def osd(down_s=600.0, missed=None):
    return OsdState(id=7, host="h1", crush_path=("default", "h1"), up=False, pgs=16,
                    down_since=NOW - down_s, missed_entries=missed)


def test_the_clusters_own_size_caps_the_prior_with_the_same_downtime_rule():
    static_p = prior(16, 0, 1800.0)
    own = int(150 * MiB * (1 + PEERING_PEAK) * (1 + DOWNTIME_EXTRA * 0.5))
    assert own < static_p
    assert prior(16, 0, 1800.0, running_rss=150 * MiB) == own


def test_the_cap_never_raises_the_prior():
    assert prior(16, 0, 60.0, running_rss=4 << 30) == prior(16, 0, 60.0)
    assert prior(16, 0, 60.0, running_rss=0) == prior(16, 0, 60.0)
    assert prior(16, 0, 60.0, running_rss=None) == prior(16, 0, 60.0)


def test_known_missed_entries_add_their_history_to_the_clusters_own_size():
    got = prior(16, 0, 60.0, missed_entries=5000, running_rss=100 * MiB)
    assert got == int((100 * MiB + 5000 * HISTORY_BYTES_PER_ENTRY) * (1 + PEERING_PEAK))


def test_static_and_learned_without_history_use_the_capped_prior():
    o = osd()
    want = prior(16, 0, 600.0, running_rss=120 * MiB)
    assert static(o, (), NOW, running_rss=120 * MiB) == want
    assert learned(o, (), NOW, running_rss=120 * MiB) == want
    assert learned(o, (), NOW) == prior(16, 0, 600.0)


def test_below_three_observations_the_capped_prior_is_the_floor_not_the_static_one():
    o = osd()
    floor = prior(16, 0, 600.0, running_rss=120 * MiB)
    low = Observation(osd=2, pgs=16, downtime_s=600.0, pg_log_entries=0, peak_bytes=90 * MiB)
    assert learned(o, [low], NOW, running_rss=120 * MiB) == floor          # 1.10 x 90 < floor
    high = Observation(osd=2, pgs=16, downtime_s=600.0, pg_log_entries=0, peak_bytes=160 * MiB)
    assert learned(o, [high], NOW, running_rss=120 * MiB) == int(160 * MiB * LEARN_MARGIN)
