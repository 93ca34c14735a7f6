"""concurrency auto opens only on real peaks (Decision.concurrency): load floors of OSDs that
booted are lower bounds of their peaks, and several starts admitted beside each other on a
prediction only lower bounds shaped each add their under-prediction to the host (simulator,
one rack down 1 h, 1,200 OSDs: 1.14 x the budget while load floors opened it).

Lab shape of test_plan_load_bound.py (h2: osd.2 and osd.3, budget 237 MiB), footprint 107 MiB:
osd.2 booted with a 60 MiB load and is peering; osd.0 and osd.4 on the other hosts booted
with 60 MiB loads too. Three load floors, no settled start: osd.3 waits for osd.2 although
60 + (120 - 60) + 107 <= 237 MiB would admit it. Three settled starts: it is granted.
"""
from __future__ import annotations

from dataclasses import replace

from ceph_recovery.model import Observation, Progress
from ceph_recovery.plan import plan

from labh2cases import BUDGET, MiB, NOW, POL, osd, sig, snap


AUTO = replace(BUDGET, concurrency=0)
PEERING2 = osd(2, up=True, flags=frozenset(), process="running", rss_bytes=60 * MiB,
               pgs_inactive=16, pgs_degraded=16, down_since=None)
BOOTED = Progress(run_id="r1", phase="running", epoch=149, saved_flags=frozenset(),
                  held_osds=frozenset({3}), started_at=NOW - 60,
                  granted={2: NOW - 20}, booting={2: NOW - 10}, peaks={2: 60 * MiB},
                  downtime={2: 48.0}, load_rss={0: 60 * MiB, 2: 60 * MiB, 4: 60 * MiB})


def test_auto_stays_at_one_start_per_host_while_only_load_floors_are_known():
    res = plan(snap(PEERING2, used=60 * MiB), AUTO, BOOTED, POL, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert res.summary["hosts"]["h2"]["gate"] == "1 in flight"


def test_auto_opens_once_three_real_peaks_are_known():
    settled = tuple(Observation(osd=o, pgs=16, downtime_s=48.0, pg_log_entries=0,
                                peak_bytes=100 * MiB, load_bytes=60 * MiB) for o in (0, 4, 5))
    res = plan(snap(PEERING2, used=60 * MiB), AUTO, BOOTED.evolve(observations=settled), POL,
               NOW)
    assert [sig(a) for a in res.actions] == ["grant_start host=h2 osd=3 predicted_bytes=%d"
                                             % (107 * MiB)]
