"""concurrency auto before real peaks are known (warmup.concurrency, warmup.margin): a
host's first start in flight is admitted on its plain prediction; a start beside it only where
the admission rule holds with every prediction x WARMUP_MARGIN (load floors of OSDs that booted
are lower bounds of their peaks, and starts admitted beside each other on predictions only
lower bounds shaped each add their under-prediction to the host: simulator, one rack down 1 h,
1,200 OSDs, 1.14 x the budget when load floors opened concurrency without a margin).

Lab shape of test_plan_load_bound.py (h2: osd.2 and osd.3, budget 237 MiB), footprint 107 MiB:
osd.2 booted with a 60 MiB load and is peering; osd.0 and osd.4 on the other hosts booted
with 60 MiB loads too. Three load floors, no settled start: osd.3 waits for osd.2 because
60 + (120 x 1.7 - 60) + 107 x 1.7 = 385 MiB > 237 MiB, although 60 + (120 - 60) + 107 <= 237
MiB would admit it. Three settled starts: it is granted on its plain prediction.
"""
from __future__ import annotations

from dataclasses import replace

from ceph_recovery.model import Budget, Observation, Progress
from ceph_recovery.plan import plan
from ceph_recovery.policies import REGISTRY

from labh2cases import BUDGET, MiB, NOW, POL, osd, sig, snap


AUTO = replace(BUDGET, concurrency=0)
PEERING2 = osd(2, up=True, flags=frozenset(), process="running", rss_bytes=60 * MiB,
               pgs_inactive=16, pgs_degraded=16, down_since=None)
BOOTED = Progress(run_id="r1", phase="running", epoch=149, saved_flags=frozenset(),
                  held_osds=frozenset({3}), started_at=NOW - 60).with_columns(
                      granted={2: NOW - 20}, booting={2: NOW - 10}, peaks={2: 60 * MiB},
                      downtime={2: 48.0}, load_rss={0: 60 * MiB, 2: 60 * MiB, 4: 60 * MiB})


def test_auto_charges_a_second_start_the_margin_while_only_load_floors_are_known():
    res = plan(snap(PEERING2, used=60 * MiB), AUTO, BOOTED, POL, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
    h2 = res.summary["hosts"]["h2"]
    assert (h2["gate"], h2["waiting_on"], h2["next_osd"]) == (None, "memory", 3)


def test_auto_opens_once_three_real_peaks_are_known():
    settled = tuple(Observation(osd=o, pgs=16, downtime_s=48.0, pg_log_entries=0,
                                peak_bytes=100 * MiB, load_bytes=60 * MiB) for o in (0, 4, 5))
    res = plan(snap(PEERING2, used=60 * MiB), AUTO, BOOTED.evolve(observations=settled), POL,
               NOW)
    assert [sig(a) for a in res.actions] == ["grant_start host=h2 osd=3 predicted_bytes=%d"
                                             % (107 * MiB)]


def fixed_50(o, observations, now):
    return 50 * MiB


SMALL = replace(POL, footprint=fixed_50)
STARTING2 = osd(2, process="running", rss_bytes=0)      # granted 5 s ago, no rss reported yet
GRANTED = Progress(run_id="r1", phase="running", epoch=149, saved_flags=frozenset(),
                   held_osds=frozenset({2, 3}), started_at=NOW - 60).with_columns(
                       granted={2: NOW - 5}, downtime={2: 55.0})


def test_auto_grants_a_second_start_that_fits_with_the_margin_before_any_real_peak():
    # 0 used + (50 x 1.7 - 0) reserved for osd.2 + 50 x 1.7 for osd.3 = 170 MiB <= 237 MiB
    res = plan(snap(STARTING2), AUTO, GRANTED, SMALL, NOW)
    assert [sig(a) for a in res.actions] == ["grant_start host=h2 osd=3 predicted_bytes=%d"
                                             % (50 * MiB)]
    assert "margin 1.70" in res.actions[0].reason


def test_concurrency_one_never_grants_beside_a_start_in_flight():
    res = plan(snap(STARTING2), replace(AUTO, concurrency=1), GRANTED, SMALL, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert res.summary["hosts"]["h2"]["gate"] == "1 in flight"


def test_auto_opens_once_the_runs_auto_budget_was_raised_and_closes_when_it_is_held():
    """Raised (three OSDs this run let boot peaked within their predictions): the run's
    predictions held on this cluster, osd.3 is granted beside osd.2 on its plain prediction
    (60 used + 60 reserved + 107 = 227 MiB <= 0.95 x 263 MiB) before any start settled. Held
    (a prediction failed since): the margin again, and osd.3 waits."""
    auto, pol = replace(AUTO, budget=Budget()), replace(POL, budget=REGISTRY["budget"]["auto"])
    res = plan(snap(PEERING2, used=60 * MiB), auto, BOOTED.evolve(budget_state="raised"), pol,
               NOW)
    assert [sig(a) for a in res.actions] == ["grant_start host=h2 osd=3 predicted_bytes=%d"
                                             % (107 * MiB)]
    assert "margin" not in res.actions[0].reason
    res = plan(snap(PEERING2, used=60 * MiB), auto, BOOTED.evolve(budget_state="held"), pol,
               NOW)
    assert [sig(a) for a in res.actions] == ["wait"]


def test_a_fixed_budget_once_validated_opens_too_without_moving():
    """`--budget 237M`: "validated" (the evidence that raises an auto budget) ends the warm-up
    as a raise does, and osd.3 is granted beside osd.2 on its plain prediction within the same
    237 MiB; before it, the margin keeps osd.3 waiting."""
    res = plan(snap(PEERING2, used=60 * MiB), AUTO, BOOTED.evolve(budget_state="validated"),
               POL, NOW)
    assert [sig(a) for a in res.actions] == ["grant_start host=h2 osd=3 predicted_bytes=%d"
                                             % (107 * MiB)]
    assert res.summary["hosts"]["h2"]["budget"] == 237 * MiB
    res = plan(snap(PEERING2, used=60 * MiB), AUTO, BOOTED, POL, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
