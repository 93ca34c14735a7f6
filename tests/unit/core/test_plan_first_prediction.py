"""The first prediction on a cluster with no start history: the footprint prior capped by the
cluster's own size (policies/footprint.py: the largest rss of the up OSDs the run did not
start x (1 + PEERING_PEAK) x the downtime factor).

Replays the Tentacle lab stall (docs/releases.md): h2's osd.2 and osd.3 down 20 s, the other
hosts' OSDs at 120-140 MiB, h2 budget 200 MiB. The static prior (486 MiB, calibrated on
Pacific's glibc heap) refused osd.2 although Tentacle OSDs peaked at 106-166 MB there.
Snapshots in, exact ordered actions out.
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial

from ceph_recovery.actions import AllowBoot, GrantStart
from ceph_recovery.inflight import BOOT_OBSERVE_MAX_S
from ceph_recovery.model import Budget, Intent, Progress, Snapshot
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policies import resolve
from ceph_recovery.policies.footprint import DOWNTIME_EXTRA, DOWNTIME_FULL_S, PEERING_PEAK, prior
from ceph_recovery.predict import Predictor
import labh2cases  # see conftest.py

MiB = 1 << 20
NOW = 50000.0
DOWN_S = 20.0
RSS = {0: 120 * MiB, 1: 140 * MiB, 4: 130 * MiB, 5: 125 * MiB}
INTENT = Intent(mode="controlled", run_id="r1", scope=("h2",),
                budget=Budget(kind="bytes", value=200 * MiB))
RUNNING = Progress(run_id="r1", phase="running", epoch=149, saved_flags=frozenset(),
                   held_osds=frozenset({2, 3}), started_at=NOW - 5)


# the lab h2 of labh2cases with this stall's downtime, running sizes and 222 MiB hosts
osd = partial(labh2cases.osd, down_s=DOWN_S, rss=RSS)
snap = partial(labh2cases.snap, used=2 * MiB, host_bytes=222 * MiB, down_s=DOWN_S, rss=RSS)


def own_size_prior(largest_rss: int) -> int:
    """The rule, written out: largest running rss x (1 + PEERING_PEAK) x downtime factor."""
    return int(largest_rss * (1 + PEERING_PEAK) * (1 + DOWNTIME_EXTRA * DOWN_S / DOWNTIME_FULL_S))


def run(s: Snapshot, progress: Progress = RUNNING):
    res = plan(s, INTENT, progress, resolve(INTENT), NOW)
    assert check_invariants(s, INTENT, progress, res) == []
    return res


def test_the_first_start_is_predicted_from_the_largest_running_osd_and_granted():
    want = own_size_prior(140 * MiB)
    assert want < 200 * MiB - 2 * MiB < prior(16, 0, DOWN_S)     # the static prior did not fit
    res = run(snap())
    assert res.actions == (GrantStart(
        osd=2, host="h2", predicted_bytes=want,
        reason="used 2 MiB + reserved 0 MiB + predicted %.0f MiB <= budget 200 MiB"
        % (want / MiB)),)


def probe(predicted: int) -> GrantStart:
    return GrantStart(osd=2, host="h2", predicted_bytes=predicted, reason=(
        "probe: predicted peak %.0f MiB does not fit budget 200 MiB (used 2 MiB), its load (at "
        "most 0.33 of the peak) does; it boots only if its peak, re-predicted from the load it "
        "shows in preboot, fits" % (predicted / MiB)))


def test_a_larger_running_osd_on_another_host_raises_the_first_prediction():
    """175 MiB x 1.2 = 211 MiB does not fit 198 MiB of room: only a probe start (its load)."""
    res = run(snap(osd(5, rss_bytes=175 * MiB)))
    assert res.actions == (probe(own_size_prior(175 * MiB)),)


def test_with_no_running_osd_the_static_prior_stays():
    down = [osd(i, up=False, process="stopped", rss_bytes=0, down_since=NOW - DOWN_S)
            for i in (0, 1, 4, 5)]
    res = run(snap(*down))
    assert res.actions == (probe(prior(16, 0, DOWN_S)),)


def test_the_first_start_boots_on_its_load_where_the_static_prior_kept_it_in_preboot():
    """Gate 2 on the calibrated prediction (168 MiB): osd.2 loaded 60 MiB, 62 MiB used, so
    62 + (168 - 60) <= 200 and it boots; on the static prior (457 MiB) it stayed in preboot."""
    s = snap(osd(2, process="running", rss_bytes=60 * MiB,
                 process_started_at=NOW - BOOT_OBSERVE_MAX_S - 1), used=62 * MiB)
    progress = replace(RUNNING).with_columns(granted={2: NOW - BOOT_OBSERVE_MAX_S - 2},
                                             downtime={2: DOWN_S})
    res = run(s, progress)
    want = own_size_prior(140 * MiB)
    assert res.actions == (AllowBoot(osd=2, predicted_bytes=want, reason=(
        "preboot: load-time rss 60 MiB not flat yet after %.0fs in preboot (allowed anyway), "
        "predicted peak %.0f MiB" % (BOOT_OBSERVE_MAX_S + 1, want / MiB))),)


def test_an_osd_this_run_started_is_not_the_clusters_own_size():
    """osd.2 granted and running (its rss is the start under way, not a steady size), osd.1
    (140 MiB) down: the cluster's own size is the largest survivor left, 130 MiB."""
    s = snap(osd(2, process="running", rss_bytes=190 * MiB),
             osd(1, up=False, process="stopped", rss_bytes=0))
    t = Predictor.of(s, INTENT, RUNNING.with_columns(granted={2: NOW - 4}), resolve(INTENT), NOW)
    assert t.running_rss() == 130 * MiB
    assert t.predict(3) == own_size_prior(130 * MiB)
