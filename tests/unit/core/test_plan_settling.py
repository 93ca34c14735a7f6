"""plan() while returning OSDs settle: what stays reserved for them, when they count as
finished and settled (only once the mgr's PG stats count them), and what is learned from their
peaks. On the cluster described in plancases.py; snapshots in, exact actions out."""
from __future__ import annotations

from dataclasses import replace

from ceph_recovery.model import Intent, Observation
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policies import resolve
from plancases import (B80, G, HELD, NOW, OBS3, POL, RUN, RUNF, RUNNING, GiB, MiB,  # conftest.py
                       osd, sig, snap)

# osd.3 back and settling, 2 of its PGs still peering (not restartable), 5 degraded
PEERING3 = osd(3, up=True, pgs_degraded=5, pgs_inactive=2)


def test_settling_osd_reserves_its_predicted_growth():
    """osd.3 finished (up, 2 of its PGs still peering) at 300 MiB of a 500 MiB prediction:
    200 MiB stay reserved on h1, so the next grant needs used + 200 MiB + 500 MiB <= budget
    (6553 MiB). At 5900 MiB used it does not fit: no grant, and no make-room either (an OSD
    still peering is not restarted, view.still_peering): the host waits, and above 90 % of
    its budget keeps an ok-to-stop answer ready for osd.3 (brake.py)."""
    s = snap(PEERING3, *HELD[1:], used={"h1": 5900 * MiB}, cluster_flags=RUNF)
    p = RUNNING.evolve(finished=frozenset({3}), observations=OBS3).with_columns(
        settling={3: NOW - 30})
    res = plan(s, RUN, p, POL, NOW)
    assert [sig(a) for a in res.actions] == ["query_ok_to_stop osd=3"]
    assert res.summary["hosts"]["h1"]["waiting_on"] == "memory"
    stuck = plan(snap(replace(PEERING3, heap_release=False), *HELD[1:],
                      used={"h1": 5900 * MiB}, cluster_flags=RUNF, ok_to_stop={3: False}),
                 RUN, p, POL, NOW)
    assert [sig(a) for a in stuck.actions] == ["query_ok_to_stop osd=3"]
    assert stuck.summary["hosts"]["h1"]["waiting_on"] == "memory"
    roomy = plan(snap(PEERING3, *HELD[1:], used={"h1": 5500 * MiB}, cluster_flags=RUNF),
                 RUN, p, POL, NOW)
    assert [sig(a) for a in roomy.actions] == [G % 4]


def test_a_settling_osd_whose_pgs_are_all_active_makes_room_for_the_next_start():
    """The same osd.3 once all its PGs are active (5 still degraded: it recovers): it has
    peered, and a restart now reloads only part of what it merged (view.still_peering), so
    h1 makes room from it like from any OSD: its heap first (tcmalloc), else, where
    ok-to-stop clears it, a restart; with ok-to-stop refusing, the host waits as before."""
    p = RUNNING.evolve(finished=frozenset({3}), observations=OBS3).with_columns(
        settling={3: NOW - 30})

    def acts(o3, **kw):
        s = snap(o3, *HELD[1:], used={"h1": 5900 * MiB}, cluster_flags=RUNF, **kw)
        res = plan(s, RUN, p, POL, NOW)
        assert check_invariants(s, RUN, p, res, POL, NOW) == []
        return [sig(a) for a in res.actions]
    active = osd(3, up=True, pgs_degraded=5)
    assert acts(active) == ["query_ok_to_stop osd=3", "heap_release osd=3"]
    glibc = replace(active, heap_release=False)
    assert acts(glibc, ok_to_stop={3: True}) == [
        "query_ok_to_stop osd=3", "restart_osd host=h1 osd=3"]
    assert acts(glibc, ok_to_stop={3: False}) == ["query_ok_to_stop osd=3"]


def test_settling_osd_past_its_peak_reserves_only_the_way_back():
    """osd.3 (PGs still peering) settles at 300 MiB after a 400 MiB peak (more than 5 %
    below it: its peak is behind it): h1 reserves 100 MiB for it, not the 200 MiB left to its
    500 MiB prediction, so osd.4 (500 MiB) fits at 5950 MiB used (5950 + 100 + 500 <= 6553
    MiB)."""
    s = snap(PEERING3, *HELD[1:], used={"h1": 5950 * MiB}, cluster_flags=RUNF)
    p = RUNNING.evolve(finished=frozenset({3}), observations=OBS3).with_columns(
        settling={3: NOW - 30}, peaks={3: 400 * MiB})
    assert [sig(a) for a in plan(s, RUN, p, POL, NOW).actions] == [
        "query_ok_to_stop osd=3", G % 4]
    at_peak = p.with_columns(peaks={3: 310 * MiB})
    assert [sig(a) for a in plan(s, RUN, at_peak, POL, NOW).actions] == [
        "query_ok_to_stop osd=3"]


def test_past_its_peak_a_tcmalloc_osd_reserves_only_its_cache_refill_to_its_target():
    """osd.3 settles at 300 MiB after a 900 MiB peak. Its caches are autotuned (tcmalloc) to
    an osd_memory_target of 256 MiB the run set, so it grows back at most to 1.2 x 256 = 307
    MiB: h1 reserves 7 MiB, and osd.4 (500 MiB) fits at 5950 MiB used (5950 + 7 + 500 <=
    6553 MiB). With its target unknown or inherited, or without tcmalloc (the autotuner reads
    no heap), the whole way back up to 900 MiB stays reserved and osd.4 waits."""
    p = RUNNING.evolve(finished=frozenset({3}), observations=OBS3).with_columns(
        settling={3: NOW - 30}, peaks={3: 900 * MiB})

    def acts(**kw):
        s = snap(osd(3, up=True, pgs_degraded=5, **kw), *HELD[1:], used={"h1": 5950 * MiB},
                 cluster_flags=RUNF)
        return [sig(a) for a in plan(s, RUN, p, POL, NOW).actions]
    assert acts(heap_release=True, memory_target=256 * MiB) == [
        "query_ok_to_stop osd=3", G % 4]
    assert acts(heap_release=True, memory_target=None) == ["query_ok_to_stop osd=3"]
    # it inherits its target (0): the run lowers it to one it knows, and osd.4 waits meanwhile
    assert acts(heap_release=True, memory_target=0) == [
        "set_config name=osd_memory_target value=939524096 who=osd.3", "query_ok_to_stop osd=3"]
    assert acts(heap_release=False, memory_target=256 * MiB) == ["query_ok_to_stop osd=3"]


def test_restarting_osd_reserves_its_regrowth():
    """osd.4 was restarted 10 s ago to make room (it is in flight again: it reloads its PGs
    and peers) and sits at 100 MiB of a 500 MiB prediction: 400 MiB stay reserved on h1, so
    with a second slot free (concurrency 2, warmed up) osd.5 (500 MiB) is granted to boot as
    it loads only when used + 400 + 500 MiB <= budget (6553 MiB); below that, staged (it loads,
    at most a third of its peak, and boots once its growth fits) when used + 400 + 167 MiB
    fits; not at all beyond."""
    two = Intent(mode="controlled", run_id="r1", concurrency=2, budget=B80)
    back = osd(4, process="running", rss_bytes=100 * MiB, process_started_at=NOW - 10)
    p = RUNNING.evolve(finished=frozenset({3, 4}), held_osds=frozenset({5}),
                       observations=OBS3).with_columns(restarted={4: NOW - 10})
    def grants(used_mib):
        s = snap(osd(3, up=True, pgs_inactive=0), back, HELD[2], used={"h1": used_mib * MiB},
                 cluster_flags=RUNF)
        return plan(s, two, p, POL, NOW)
    assert [sig(a) for a in grants(6000).actions] == ["wait"]
    staged = grants(5800)
    assert [sig(a) for a in staged.actions] == [G % 5]
    assert "staged: its 1 waiting OSD(s) do not all fit" in staged.actions[0].reason
    assert dict(staged.progress.osd_map("staged")) == {5: NOW}
    roomy = grants(5600)
    assert [sig(a) for a in roomy.actions] == [G % 5]
    assert dict(roomy.progress.osd_map("staged")) == {}


def test_settled_peak_replaces_the_observation_made_at_finish():
    """The observation made when osd.3 finished was provisional (its peak so far, at least its
    load bound); once settled, its real peak (700 MiB) replaces it, higher or lower."""
    s = snap(osd(3, up=True, pgs_degraded=0, rss_bytes=700 * MiB), *HELD[1:],
             cluster_flags=RUNF)
    other = Observation(osd=4, pgs=16, downtime_s=60.0, pg_log_entries=0, peak_bytes=MiB)
    for first in (400 * MiB, 900 * MiB):
        at_finish = Observation(osd=3, pgs=16, downtime_s=3600.0, pg_log_entries=0,
                                peak_bytes=first)
        p = RUNNING.evolve(finished=frozenset({3}), observations=(at_finish, other)).with_columns(
            settling={3: NOW - 300}, peaks={3: 650 * MiB}, downtime={3: 3600.0})
        res = plan(s, RUN, p, POL, NOW)
        assert [(ob.osd, ob.peak_bytes) for ob in res.progress.observations] == [
            (3, 700 * MiB), (4, MiB)]
        assert res.progress.osd_map("settling") == {} and 3 not in res.progress.osd_map("peaks")


def test_settling_waits_for_pg_stats_that_count_the_osd():
    """Right after boot the mgr's PG stats may not list the OSD in any PG yet (pgs 0, so 0
    degraded): that is not 'recovered', it keeps settling (and its growth stays reserved)."""
    p = RUNNING.evolve(finished=frozenset({3})).with_columns(settling={3: NOW - 2},
                                                             peaks={3: 300 * MiB})
    stale = plan(snap(osd(3, up=True, pgs=0, pgs_degraded=0), *HELD[1:], cluster_flags=RUNF),
                 RUN, p, POL, NOW)
    assert stale.progress.osd_map("settling") == {3: NOW - 2}
    fresh = plan(snap(osd(3, up=True, pgs=16, pgs_degraded=0), *HELD[1:], cluster_flags=RUNF),
                 RUN, p, POL, NOW)
    assert fresh.progress.osd_map("settling") == {}


def test_learned_prediction_follows_a_settling_osd_that_grew():
    """With the real `learned` policy, a settling OSD that already peaked at 2 GiB (far above
    the prior) raises the next OSD's prediction before its own observation is recorded."""
    pol = resolve(RUN)
    p = RUNNING.evolve(finished=frozenset({3})).with_columns(settling={3: NOW - 30},
                                                             peaks={3: 300 * MiB},
                                                             downtime={3: 3600.0})

    def predicted(rss):
        s = snap(osd(3, up=True, pgs_degraded=5, rss_bytes=rss), *HELD[1:], cluster_flags=RUNF)
        return plan(s, RUN, p, pol, NOW).summary["hosts"]["h1"]["predicted"]
    assert predicted(300 * MiB) < 2 * GiB <= predicted(2 * GiB)


def test_finish_waits_for_pg_stats_that_count_the_osd():
    """An OSD up with pgs 0 (stale PG stats: no PG lists it yet) is not finished: PGs active
    is only known once the stats count it (or after PEERING_GRACE_S)."""
    p = RUNNING.with_columns(granted={3: NOW - 30}, booting={3: NOW - 10})
    stale = plan(snap(osd(3, up=True, pgs=0, pgs_inactive=0), *HELD[1:], cluster_flags=RUNF),
                 RUN, p, POL, NOW)
    assert 3 in stale.progress.osd_map("granted") and 3 not in stale.progress.finished
    assert [a.reason for a in stale.actions] == ["1 in flight, 0 settling, 2 waiting"]
    fresh = plan(snap(osd(3, up=True, pgs=16, pgs_inactive=0), *HELD[1:], cluster_flags=RUNF),
                 RUN, p, POL, NOW)
    assert 3 in fresh.progress.finished and 3 not in fresh.progress.osd_map("granted")


def test_a_settling_osd_the_kernel_killed_is_a_failed_start_and_its_peak_floors_its_next():
    """osd.3 finished and was settling at a 900 MiB peak when its process died (the kernel's
    OOM killer: down, process stopped, no restart of this run's). That is a failed start:
    counted, named, its peak observed, and its next grant predicts at least that 900 MiB
    whatever the footprint policy says (fixed_500 here). A mark-down with the process still
    running is not a failure: it only ends the settling."""
    p = RUNNING.evolve(finished=frozenset({3}), held_osds=frozenset({4, 5}),
                       observations=OBS3).with_columns(settling={3: NOW - 30},
                                                       peaks={3: 900 * MiB})
    killed = snap(osd(3, up=False), *HELD[1:], cluster_flags=RUNF)
    res = plan(killed, RUN, p, POL, NOW)
    assert res.progress.osd_map("failures") == {3: 1} and 3 not in res.progress.osd_map("settling")
    assert [h.code for h in res.health] == ["RECOVERY_START_FAILED"]
    assert [sig(a) for a in res.actions] == [
        "hold_osd osd=3", "grant_start host=h1 osd=3 predicted_bytes=%d" % (900 * MiB)]
    flapped = plan(snap(osd(3, up=False, process="running", rss_bytes=600 * MiB), *HELD[1:],
                        cluster_flags=RUNF), RUN, p, POL, NOW)
    assert flapped.progress.osd_map("failures") == {}
    assert 3 not in flapped.progress.osd_map("settling")
