"""A grant's peak from loads this cluster showed (Predictor.grant_from_load): where the OSD's
missed entries are known, the load of the OSDs booted before it (or its own last settled
load) and growth.peak_from_load decide, not the footprint policy's prior. Fresh labs
(docs/releases.md "Growth per missed entry"): the second start of a run was granted on the
prior capped by the cluster's own size, +76 % to +112 % over its peak. Snapshots in, exact
values out, on the lab's h2 (osd.2 and osd.3, budget 237 MiB: tests/unit/core/labh2cases.py)."""
from __future__ import annotations

from dataclasses import replace

from ceph_recovery.growth import GROWTH_MARGIN, by_missed
from ceph_recovery.model import Observation
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policies import resolve

from ceph_recovery.model import Progress

from labh2cases import BUDGET, MiB, NOW, osd, sig, snap

GRANTED2 = Progress(run_id="r1", phase="running", epoch=149, saved_flags=frozenset(),
                    held_osds=frozenset({2, 3}), started_at=NOW - 20).with_columns(
                        granted={2: NOW - 12}, peaks={2: 112 * MiB}, downtime={2: 48.0})
PRE2 = osd(2, process="running", rss_bytes=112 * MiB, process_started_at=NOW - 11)

POL = resolve(BUDGET)        # the default policies: the footprint prior, learned


def test_the_next_start_is_predicted_from_the_load_the_first_showed_and_what_it_missed():
    pre2 = replace(PRE2, missed_entries=3570)
    waiting3 = osd(3, missed_entries=1430)
    s = snap(pre2, waiting3, used=112 * MiB)
    before = plan(s, BUDGET, GRANTED2.with_columns(load_rss={}), POL, NOW - 5)   # not loaded yet
    prior3 = before.summary["hosts"]["h2"]["predicted"]
    first = plan(s, BUDGET, GRANTED2, POL, NOW)
    assert [sig(a) for a in first.actions][0] == "allow_boot osd=2 predicted_bytes=%d" % \
        by_missed(112 * MiB, 3570)
    h2 = first.summary["hosts"]["h2"]
    assert (h2["next_osd"], h2["predicted"]) == (3, by_missed(112 * MiB, 1430))
    assert by_missed(112 * MiB, 1430) < prior3       # the prior said more than the load does
    assert check_invariants(s, BUDGET, GRANTED2, first) == []


def test_unknown_missed_entries_leave_the_policy_in_charge():
    first = plan(snap(PRE2, used=112 * MiB), BUDGET, GRANTED2, POL, NOW)
    pred3 = first.summary["hosts"]["h2"]["predicted"]
    with_missed = plan(snap(PRE2, osd(3, missed_entries=1430), used=112 * MiB), BUDGET,
                       GRANTED2, POL, NOW)
    assert with_missed.summary["hosts"]["h2"]["predicted"] == by_missed(112 * MiB, 1430)
    assert pred3 != by_missed(112 * MiB, 1430)


def test_its_own_settled_load_and_the_learned_growth_predict_its_next_start():
    """osd.3 settled before at load 103 MiB, peak 179 MiB, 5,593 missed; now it missed 1,430:
    103 + (76 MiB - 4,163 x 8 KiB) x GROWTH_MARGIN, floored at 1.2 x 103 (peering alone).
    Its own past peak (179 MiB, more history) is no floor: it missed less this time."""
    past = (Observation(osd=3, pgs=16, downtime_s=30.0, pg_log_entries=0,
                        peak_bytes=179 * MiB, load_bytes=103 * MiB, missed_entries=5593),
            Observation(osd=2, pgs=16, downtime_s=30.0, pg_log_entries=0,
                        peak_bytes=286 * MiB, load_bytes=119 * MiB, missed_entries=14407))
    start = GRANTED2.evolve(observations=past).with_columns(granted={}, peaks={}, downtime={},
                                                            load_rss={})
    s = snap(osd(2, missed_entries=3570), osd(3, missed_entries=1430))
    res = plan(s, BUDGET, start, POL, NOW)
    from ceph_recovery.predict import Predictor
    d = Predictor.of(s, BUDGET, start, POL, NOW)
    growth3 = 76 * MiB - (5593 - 1430) * 8 * 1024
    growth2 = 167 * MiB - (14407 - 1430) * 8 * 1024
    want3 = int(103 * MiB + max(growth3, growth2) * GROWTH_MARGIN)
    assert d.predict(3) == max(want3, int(103 * MiB * 1.2))
    assert d.own_peak(3) == 0
    assert [sig(a) for a in res.actions if sig(a).startswith("grant_start")]
