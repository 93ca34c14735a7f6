"""Staged starts (admission.py, staging.py): where a host's whole queue does not fit
its budget, a start beside others in flight is granted as staged: its process loads and waits
in preboot, and it boots only while fewer than PEERING_PER_HOST OSDs this run let boot on its
host still peer. It is admitted on its load (at least a third of its predicted peak: its
process holds only that in preboot), and it boots only once its growth to its peak fits beside
what the host's other OSDs in flight are still expected to grow (staging.room_to_peak): it
loads while the ones before it peer, and the host's peaks come in turn.

Lab shape of labh2cases.py (h2: budget 237 MiB), footprint 65 MiB: four OSDs waiting on h2
need 260 MiB together, so the host's queue does not fit."""
from __future__ import annotations

from dataclasses import replace

from ceph_recovery.actions import AllowBoot, GrantStart
from ceph_recovery.model import BUDGET_RAISED, DAEMON_PREBOOT, Progress
from ceph_recovery.persist import progress_from_dict, progress_to_dict
from ceph_recovery.plan import check_invariants, plan

from labh2cases import BUDGET, MiB, NOW, POL, osd, sig, snap

AUTO = replace(BUDGET, concurrency=0)


def fixed_65(o, observations, now):
    return 65 * MiB


P65 = replace(POL, footprint=fixed_65)
NOUP = frozenset({"noup"})


def on_h2(i, **kw):
    base = dict(host="h2", crush_path=("default", "r1", "h2"), up=False, process="stopped",
                rss_bytes=0, flags=NOUP, pgs_inactive=0, pgs_degraded=16, down_since=NOW - 60)
    base.update(kw)
    return osd(i, **base)


STARTING2 = osd(2, process="running", rss_bytes=0)      # granted 5 s ago, no rss reported yet
GRANTED = Progress(run_id="r1", phase="running", epoch=149, saved_flags=frozenset(),
                   held_osds=frozenset({2, 3, 6, 7}), started_at=NOW - 60).with_columns(
                       granted={2: NOW - 5}, downtime={2: 55.0})


def run(s, progress, pol=P65, intent=AUTO):
    res = plan(s, intent, progress, pol, NOW)
    assert check_invariants(s, intent, progress, res, pol, NOW) == []
    return res


def test_a_start_beside_others_where_the_queue_does_not_fit_is_granted_staged():
    # 65 x 1.7 x 2 = 221 MiB <= 237 MiB admits osd.3 beside osd.2; the four at 65 MiB (260)
    # do not fit: osd.3 is staged; osd.6 would need 331 MiB with the margin
    res = run(snap(STARTING2, on_h2(6), on_h2(7)), GRANTED)
    assert [sig(a) for a in res.actions] == ["grant_start host=h2 osd=3 predicted_bytes=%d"
                                             % (65 * MiB)]
    assert "staged: its 3 waiting OSD(s) do not all fit" in res.actions[0].reason
    assert dict(res.progress.osd_map("staged")) == {3: NOW}
    assert dict(progress_from_dict(progress_to_dict(res.progress)).osd_map("staged")) == {3: NOW}


def test_a_staged_start_is_admitted_on_its_load_where_its_peak_does_not_fit_yet():
    # 85 MiB used: osd.3's peak (65 x 1.7 beside osd.2's 110 MiB) does not fit, its load
    # (a third of 65 MiB, x 1.7: 37 MiB) does
    res = run(snap(STARTING2, on_h2(6), on_h2(7), used=85 * MiB), GRANTED)
    assert [sig(a) for a in res.actions] == ["grant_start host=h2 osd=3 predicted_bytes=%d"
                                             % (65 * MiB)]
    assert "its load 37 MiB, each x margin 1.70" in res.actions[0].reason
    assert dict(res.progress.osd_map("staged")) == {3: NOW}
    # 100 MiB used: not even its load fits
    res = run(snap(STARTING2, on_h2(6), on_h2(7), used=100 * MiB), GRANTED)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert "waiting for in-flight OSDs: h2: osd.3's load needs 37 MiB" in \
        " ".join(res.summary["reasons"])


def test_a_start_beside_others_where_the_queue_fits_is_not_staged():
    small = replace(POL, footprint=lambda o, obs, now: 50 * MiB)
    res = run(snap(STARTING2, on_h2(6), on_h2(7)), GRANTED, small)
    assert [sig(a) for a in res.actions] == ["grant_start host=h2 osd=3 predicted_bytes=%d"
                                             % (50 * MiB)]
    assert "the host's 3 waiting OSD(s) fit" in res.actions[0].reason
    assert dict(res.progress.osd_map("staged")) == {}


# osd.2 and osd.3 were let boot; osd.6 was staged 20 s ago and its daemon is in preboot with
# 40 MiB loaded; osd.7 waits. 100 MiB used on h2. Let boot, osd.6's peak is re-predicted from
# its load (Predictor.boot_peak: twice 40 MiB, above its 65 MiB prediction).
PEERING = dict(up=True, flags=frozenset(), process="running", rss_bytes=30 * MiB,
               pgs_inactive=16, pgs_degraded=16, down_since=None)
PRE6 = on_h2(6, process="running", rss_bytes=40 * MiB, daemon_state=DAEMON_PREBOOT,
             process_started_at=NOW - 20)
THREE = GRANTED.evolve(held_osds=frozenset({6, 7})).with_columns(
    granted={2: NOW - 60, 3: NOW - 50, 6: NOW - 20}, booting={2: NOW - 50, 3: NOW - 40},
    staged={6: NOW - 20}, peaks={2: 30 * MiB, 3: 30 * MiB, 6: 40 * MiB},
    downtime={2: 55.0, 3: 55.0, 6: 55.0})
# the run's own evidence ended its warm-up (warmup.warmed_up): predictions without a margin
WARM = THREE.evolve(budget_state=BUDGET_RAISED)


def test_a_staged_osd_stays_in_preboot_while_two_osds_peer_on_its_host():
    res = run(snap(osd(2, **PEERING), osd(3, **PEERING), PRE6, on_h2(7), used=100 * MiB),
              THREE)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert "h2: staged osd.6 waits in preboot for osd.2,3 to peer" in res.summary["reasons"]
    assert dict(res.progress.osd_map("staged")) == {6: NOW - 20}


def test_a_staged_osd_boots_once_an_osd_before_it_peered_and_waits_only_for_partners():
    """osd.3 is up with 2 of its 16 PGs not active (they wait for members on other hosts,
    not for its peering): one OSD peers on h2, osd.6 boots and is no longer staged."""
    done3 = dict(PEERING, pgs_inactive=2)
    res = run(snap(osd(2, **PEERING), osd(3, **done3), PRE6, on_h2(7), used=100 * MiB), WARM)
    assert [sig(a) for a in res.actions] == ["allow_boot osd=6 predicted_bytes=%d"
                                                 % (80 * MiB)]
    assert dict(res.progress.osd_map("staged")) == {}
    assert 6 in res.progress.osd_map("booting")


def test_a_staged_osd_waits_in_preboot_until_its_growth_to_its_peak_fits():
    """As above, but 150 MiB used: the rest of osd.6's 65 MiB prediction (40 MiB loaded)
    beside osd.2's and osd.3's (65 - 30 MiB each) does not fit 237 MiB; a planned wait while
    they grow, not a budget too small."""
    done3 = dict(PEERING, pgs_inactive=2)
    res = run(snap(osd(2, **PEERING), osd(3, **done3), PRE6, on_h2(7), used=150 * MiB), WARM)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert [r for r in res.summary["reasons"] if "room to peak" in r] == [
        "h2: staged osd.6 waits in preboot for room to peak: needs 25 MiB (peak 65 MiB x "
        "margin 1.00), used 150 MiB + reserved 70 MiB, budget 237 MiB"]
    assert not [h for h in res.health if h.code == "RECOVERY_BUDGET_TOO_SMALL"]
    assert dict(res.progress.osd_map("staged")) == {6: NOW - 20}


def test_an_osd_granted_while_its_hosts_queue_fitted_boots_beside_two_peering():
    res = run(snap(osd(2, **PEERING), osd(3, **PEERING), PRE6, on_h2(7), used=100 * MiB),
              THREE.with_columns(staged={}))
    assert [sig(a) for a in res.actions] == ["allow_boot osd=6 predicted_bytes=%d"
                                                 % (80 * MiB)]


def test_a_staged_osd_waiting_its_turn_is_no_boot_timeout():
    old = THREE.with_columns(granted={2: NOW - 60, 3: NOW - 50, 6: NOW - 900},
                             staged={6: NOW - 900})
    res = run(snap(osd(2, **PEERING), osd(3, **PEERING), PRE6, on_h2(7), used=100 * MiB), old)
    assert not [h for h in res.health if h.code == "RECOVERY_BOOT_TIMEOUT"]
    assert dict(res.progress.osd_map("staged")) == {6: NOW - 900}


def test_the_invariants_refuse_a_staged_boot_beside_two_peering_osds():
    s = snap(osd(2, **PEERING), osd(3, **PEERING), PRE6, on_h2(7), used=100 * MiB)
    res = plan(s, AUTO, THREE, P65, NOW)
    booted = res._replace(actions=(AllowBoot(osd=6, reason="test"),),
                          progress=res.progress.with_columns(booting={2: NOW - 50, 3: NOW - 40,
                                                                6: NOW}))
    assert check_invariants(s, AUTO, THREE, booted, P65, NOW) == [
        "I10: staged osd.6 let boot while osd.2,3 peer on h2"]


# osd.2 and osd.3 came back earlier in the run and are done (up, PGs active, not settling):
# osd.6, staged, is the only OSD in flight on h2
DONE = dict(up=True, flags=frozenset(), process="running", rss_bytes=100 * MiB,
            pgs_inactive=0, pgs_degraded=16, down_since=None, heap_release=True)
ALONE = WARM.evolve(finished=frozenset({2, 3}),
                    held_osds=frozenset({6, 7})).with_columns(granted={6: NOW - 20}, booting={})


def test_a_staged_osd_alone_on_its_host_without_room_is_kept_in_preboot_and_room_is_made():
    """230 MiB used: the rest of its 65 MiB does not fit, and nothing else on h2 will change
    (a next start that does not fit, admission._no_fit): RECOVERY_BUDGET_TOO_SMALL, and the
    over_budget policy makes room (room.room_for_boots: a heap release of the larger OSD)."""
    res = run(snap(osd(2, **DONE), osd(3, **DONE), PRE6, on_h2(7), used=230 * MiB), ALONE)
    assert [sig(a) for a in res.actions] == ["heap_release osd=2"]
    assert [(h.code, h.detail) for h in res.health] == [("RECOVERY_BUDGET_TOO_SMALL", (
        "h2: staged osd.6 waits in preboot for room to peak: needs 25 MiB (peak 65 MiB x "
        "margin 1.00), used 230 MiB + reserved 0 MiB, budget 237 MiB",))]
    # with 150 MiB used it boots, and osd.7 (the host's last) starts beside it
    res = run(snap(osd(2, **DONE), osd(3, **DONE), PRE6, on_h2(7), used=150 * MiB), ALONE)
    assert [sig(a) for a in res.actions] == ["allow_boot osd=6 predicted_bytes=%d" % (80 * MiB),
                                             "grant_start host=h2 osd=7 predicted_bytes=%d"
                                             % (65 * MiB)]


def test_the_invariants_charge_a_staged_grant_its_load_and_a_plain_one_its_peak():
    """I3 at 200 MiB used of 237: a grant of osd.3 predicted 65 MiB fits as a staged start
    (its load, a third: 22 MiB), not as a plain one."""
    s = snap(STARTING2, on_h2(6), on_h2(7), used=200 * MiB)
    res = plan(s, AUTO, GRANTED, P65, NOW)
    grant = GrantStart(osd=3, host="h2", predicted_bytes=65 * MiB, reason="test")
    staged = res._replace(actions=(grant,), progress=res.progress.with_columns(
        granted={2: NOW - 5, 3: NOW}, staged={3: NOW}))
    assert check_invariants(s, AUTO, GRANTED, staged, P65, NOW) == []
    plain = staged._replace(progress=staged.progress.with_columns(staged={}))
    assert check_invariants(s, AUTO, GRANTED, plain, P65, NOW) == [
        "I3: grants on h2 need %d + used %d > budget %d" % (65 * MiB, 200 * MiB, 237 * MiB)]
