"""Boot as soon as the daemon says its PGs are loaded (OsdState.daemon_state "preboot"),
instead of waiting BOOT_OBSERVE_S for two flat rss samples; a daemon that says it is still
initializing is not booted however flat its rss looks; without a reported state the flat rule
holds as before. Snapshots in, exact ordered actions out (the lab's h2: osd.2 granted 3 s
ago, 112 MiB loaded, budget 237 MiB)."""
from __future__ import annotations

import pytest

from ceph_recovery.inflight import BOOT_OBSERVE_MAX_S, BOOT_OBSERVE_S
from ceph_recovery.model import Progress
from ceph_recovery.persist import progress_from_json, progress_to_json
from ceph_recovery.plan import check_invariants, plan

from labh2cases import BUDGET, MiB, NOW, POL, osd, sig, snap

GRANTED = Progress(run_id="r1", phase="running", epoch=149, saved_flags=frozenset(),
                   held_osds=frozenset({2, 3}), started_at=NOW - 10).with_columns(
                       granted={2: NOW - 3}, downtime={2: 48.0})


def preboot2(state, ran=3.0, rss=112 * MiB):
    return osd(2, process="running", rss_bytes=rss, process_started_at=NOW - ran,
               daemon_state=state)


def test_a_daemon_in_preboot_is_allowed_to_boot_at_its_first_report():
    s = snap(preboot2("preboot"), used=112 * MiB)
    r = plan(s, BUDGET, GRANTED, POL, NOW)
    assert [sig(a) for a in r.actions] == ["allow_boot osd=2 predicted_bytes=%d" % (224 * MiB)]
    assert r.actions[0].reason == ("preboot: load-time rss 112 MiB in preboot (the daemon's "
                                   "state) after 3s, predicted peak 224 MiB")
    assert r.progress.osd_map("load_rss") == {2: 112 * MiB}
    assert check_invariants(s, BUDGET, GRANTED, r) == []


@pytest.mark.parametrize("state", [None, "initializing"])
def test_without_preboot_from_the_daemon_the_first_report_boots_nothing(state):
    r = plan(snap(preboot2(state), used=112 * MiB), BUDGET, GRANTED, POL, NOW)
    assert [sig(a) for a in r.actions] == ["wait"]
    assert r.progress.osd_map("booting") == {}


def test_an_initializing_daemon_is_not_booted_on_a_flat_rss():
    """Two equal samples BOOT_OBSERVE_S apart boot an OSD that reports no state; one that
    says it is still initializing (a pause while it reads its PGs) waits."""
    ran = BOOT_OBSERVE_S - 2          # at NOW; the same process, 2 s later, at `later`
    first = plan(snap(preboot2(None, ran=ran), used=112 * MiB), BUDGET, GRANTED, POL, NOW)
    assert [sig(a) for a in first.actions] == ["wait"]
    state = progress_from_json(progress_to_json(first.progress))
    later = NOW + 2
    no_state = plan(snap(preboot2(None, ran=ran), used=112 * MiB, at=later),
                    BUDGET, state, POL, later)
    assert [sig(a) for a in no_state.actions] == [
        "allow_boot osd=2 predicted_bytes=%d" % (224 * MiB)]
    assert "flat after 10s in preboot" in no_state.actions[0].reason
    loading = plan(snap(preboot2("initializing", ran=ran), used=112 * MiB, at=later),
                   BUDGET, state, POL, later)
    assert [sig(a) for a in loading.actions] == ["wait"]


def test_a_daemon_still_initializing_at_the_limit_is_allowed_anyway_and_says_so():
    r = plan(snap(preboot2("initializing", ran=BOOT_OBSERVE_MAX_S), used=112 * MiB), BUDGET,
             GRANTED, POL, NOW)
    assert [sig(a) for a in r.actions] == ["allow_boot osd=2 predicted_bytes=%d" % (224 * MiB)]
    assert "still initializing after 60s (allowed anyway)" in r.actions[0].reason


def test_a_daemon_in_preboot_whose_load_leaves_no_room_stays_in_preboot():
    """Gate 2 is unchanged: the state says when the load is known, not that it fits."""
    r = plan(snap(preboot2("preboot", rss=150 * MiB), used=150 * MiB), BUDGET, GRANTED, POL,
             NOW)
    assert [sig(a) for a in r.actions] == ["wait"]
    assert [c.code for c in r.health] == ["RECOVERY_BUDGET_TOO_SMALL"]
    assert "kept in preboot (noup), not booted" in r.health[0].detail[0]


def test_an_osd_kept_in_preboot_gets_room_made_on_its_host():
    """osd.3 came back earlier (this run brought it up; 100 MiB, PGs clean). osd.2's load of
    112 MiB says it peaks at 224 MiB: 112 MiB more at 212 MiB used does not fit the 237 MiB
    budget, so gate 2 keeps it in preboot. What osd.3 holds covers the 87 MiB missing: the
    over_budget policy makes room for the boot as it does for a next start (heap release
    first). Where nothing could cover it (osd.3 at 50 MiB) the OSD only waits, as before."""
    done3 = GRANTED.evolve(finished=frozenset({3}), held_osds=frozenset({2}))

    def acts(rss3):
        s = snap(preboot2("preboot"), osd(3, up=True, process="running", rss_bytes=rss3,
                                           pgs_degraded=0, flags=frozenset(),
                                           down_since=None), used=212 * MiB)
        r = plan(s, BUDGET, done3, POL, NOW)
        assert check_invariants(s, BUDGET, done3, r) == []
        assert "kept in preboot (noup), not booted" in r.health[0].detail[0]
        return [sig(a) for a in r.actions]
    assert acts(100 * MiB) == ["heap_release osd=3"]
    assert acts(50 * MiB) == ["wait"]
