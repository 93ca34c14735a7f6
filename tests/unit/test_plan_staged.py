"""Staged starts (admission.py, inflight.peer_wait): where a host's whole queue does not fit
its budget, a start beside others in flight is granted as staged: its process loads and waits
in preboot, and it boots only while fewer than PEERING_PER_HOST OSDs this run let boot on its
host still peer. Memory admission is unchanged (its full prediction is reserved from the
grant on); what changes is when it peers, so that a host's peaks come in turn.

Lab shape of labh2cases.py (h2: budget 237 MiB), footprint 65 MiB: four OSDs waiting on h2
need 260 MiB together, so the host's queue does not fit."""
from __future__ import annotations

from dataclasses import replace

from ceph_recovery.actions import AllowBoot
from ceph_recovery.model import DAEMON_PREBOOT, Progress
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
                   held_osds=frozenset({2, 3, 6, 7}), started_at=NOW - 60,
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
    assert dict(res.progress.staged) == {3: NOW}
    assert dict(progress_from_dict(progress_to_dict(res.progress)).staged) == {3: NOW}


def test_a_start_beside_others_where_the_queue_fits_is_not_staged():
    small = replace(POL, footprint=lambda o, obs, now: 50 * MiB)
    res = run(snap(STARTING2, on_h2(6), on_h2(7)), GRANTED, small)
    assert [sig(a) for a in res.actions] == ["grant_start host=h2 osd=3 predicted_bytes=%d"
                                             % (50 * MiB)]
    assert "the host's 3 waiting OSD(s) fit" in res.actions[0].reason
    assert dict(res.progress.staged) == {}


# osd.2 and osd.3 were let boot; osd.6 was staged 20 s ago and its daemon is in preboot with
# 40 MiB loaded; osd.7 waits. 100 MiB used on h2. Let boot, osd.6's peak is re-predicted from
# its load (Decision.boot_peak: twice 40 MiB, above its 65 MiB prediction).
PEERING = dict(up=True, flags=frozenset(), process="running", rss_bytes=30 * MiB,
               pgs_inactive=16, pgs_degraded=16, down_since=None)
PRE6 = on_h2(6, process="running", rss_bytes=40 * MiB, daemon_state=DAEMON_PREBOOT,
             process_started_at=NOW - 20)
THREE = GRANTED.evolve(granted={2: NOW - 60, 3: NOW - 50, 6: NOW - 20},
                       booting={2: NOW - 50, 3: NOW - 40}, staged={6: NOW - 20},
                       held_osds=frozenset({6, 7}),
                       peaks={2: 30 * MiB, 3: 30 * MiB, 6: 40 * MiB},
                       downtime={2: 55.0, 3: 55.0, 6: 55.0})


def test_a_staged_osd_stays_in_preboot_while_two_osds_peer_on_its_host():
    res = run(snap(osd(2, **PEERING), osd(3, **PEERING), PRE6, on_h2(7), used=100 * MiB),
              THREE)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert "h2: staged osd.6 waits in preboot for osd.2,3 to peer" in res.summary["reasons"]
    assert dict(res.progress.staged) == {6: NOW - 20}


def test_a_staged_osd_boots_once_an_osd_before_it_peered_and_waits_only_for_partners():
    """osd.3 is up with 2 of its 16 PGs not active (they wait for members on other hosts,
    not for its peering): one OSD peers on h2, osd.6 boots and is no longer staged."""
    done3 = dict(PEERING, pgs_inactive=2)
    res = run(snap(osd(2, **PEERING), osd(3, **done3), PRE6, on_h2(7), used=100 * MiB), THREE)
    assert [sig(a) for a in res.actions] == ["allow_boot osd=6 predicted_bytes=%d"
                                                 % (80 * MiB)]
    assert dict(res.progress.staged) == {}
    assert 6 in res.progress.booting


def test_an_osd_granted_while_its_hosts_queue_fitted_boots_beside_two_peering():
    res = run(snap(osd(2, **PEERING), osd(3, **PEERING), PRE6, on_h2(7), used=100 * MiB),
              THREE.evolve(staged={}))
    assert [sig(a) for a in res.actions] == ["allow_boot osd=6 predicted_bytes=%d"
                                                 % (80 * MiB)]


def test_a_staged_osd_waiting_its_turn_is_no_boot_timeout():
    old = THREE.evolve(granted={2: NOW - 60, 3: NOW - 50, 6: NOW - 900}, staged={6: NOW - 900})
    res = run(snap(osd(2, **PEERING), osd(3, **PEERING), PRE6, on_h2(7), used=100 * MiB), old)
    assert not [h for h in res.health if h.code == "RECOVERY_BOOT_TIMEOUT"]
    assert dict(res.progress.staged) == {6: NOW - 900}


def test_the_invariants_refuse_a_staged_boot_beside_two_peering_osds():
    s = snap(osd(2, **PEERING), osd(3, **PEERING), PRE6, on_h2(7), used=100 * MiB)
    res = plan(s, AUTO, THREE, P65, NOW)
    booted = res._replace(actions=(AllowBoot(osd=6, reason="test"),),
                          progress=res.progress.evolve(booting={2: NOW - 50, 3: NOW - 40,
                                                                6: NOW}))
    assert check_invariants(s, AUTO, THREE, booted, P65, NOW) == [
        "I10: staged osd.6 let boot while osd.2,3 peer on h2"]
