"""Exact ordered action lists of plan() for hand-made snapshots (one named case per row), on
the cluster described in plancases.py.
"""
from __future__ import annotations

import pytest

from ceph_recovery.model import (Budget, Finding, Intent, Observation, OsdState, Progress,
                                 Snapshot)
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policies import REGISTRY
from ceph_recovery.policy_types import Policies
from plancases import (B80, FAT3, FAT6, FLAGS, G, HELD, HELD2, HOLDS, NOUP, NOW, OBS3,  # conftest.py
                       OVER, POL, PRE3, ROOM, ROOMP, RUN, RUNF, RUNNING, GiB, MiB, fixed_500,
                       osd, sig, snap)

# ROOMP, and osd.3's first start loaded 300 MiB in preboot (its peak was 1300 MiB)
ROOMP_LOAD3 = ROOMP.evolve(observations=(Observation(
    osd=3, pgs=16, downtime_s=60.0, pg_log_entries=0, peak_bytes=1300 * MiB,
    load_bytes=300 * MiB),))

CASES = [
    pytest.param(snap(), RUN, Progress(), FLAGS + HOLDS + [G % 3], (), "running",
                 id="first_tick_sets_flags_holds_then_grants"),
    pytest.param(snap(cluster_flags=frozenset({"noout"})), RUN, Progress(),
                 ["set_flag flag=norebalance"] + HOLDS + [G % 3], (), "running",
                 id="first_tick_keeps_flag_already_set"),
    pytest.param(snap(bucket_flags={"h1": NOUP}), RUN,
                 Progress(held_buckets=frozenset({"h1"}), auto_held=frozenset({"h1"})),
                 FLAGS + HOLDS + ["release_bucket bucket=h1", G % 3], (), "running",
                 id="first_tick_converts_bucket_noup_after_osd_holds"),
    pytest.param(snap(*HELD, cluster_flags=RUNF), Intent(mode="controlled", run_id="r1",
                                                         concurrency=2),
                 RUNNING.evolve(observations=OBS3), [G % 3, G % 4], (), "running",
                 id="concurrency_2_grants_two"),
    pytest.param(snap(*HELD, cluster_flags=RUNF), Intent(mode="controlled", run_id="r1",
                                                         concurrency=2),
                 RUNNING, [G % 3, G % 4], (), "running",
                 id="concurrency_2_warms_up_with_the_margin"),
    # before real peaks a start beside another is charged 500 MiB x 1.7, and so is the one in
    # flight: 4.9 GiB used + 2 x 850 MiB > 6.4 GiB (plain, 4.9 GiB + 2 x 500 MiB, it would
    # fit; the queue of three, 4.9 GiB + 3 x 500 MiB, fits)
    pytest.param(snap(*HELD, used={"h1": int(4.9 * GiB)}, cluster_flags=RUNF),
                 Intent(mode="controlled", run_id="r1", concurrency=2, budget=B80), RUNNING, [G % 3], (),
                 "running", id="concurrency_2_margin_keeps_one_where_only_plain_fits"),
    pytest.param(snap(osd(4, up=True, process="running", rss_bytes=3 * GiB, pgs_inactive=0),
                      HELD[0], HELD[2], cluster_flags=RUNF), RUN, RUNNING,
                 ["grant_start host=h1 osd=3 predicted_bytes=%d" % int(3 * GiB * 1.2)], (),
                 "running",
                 id="peer_floor_from_same_host_raises_a_low_prediction"),
    # h0's survivors grew serving the outage's writes (3 GiB): they say nothing about h1's
    # returning OSDs (all down: no floor), the footprint policy alone predicts.
    pytest.param(snap(*[osd(i, rss_bytes=3 * GiB) for i in range(3)], *HELD,
                      cluster_flags=RUNF), RUN, RUNNING, [G % 3], (), "running",
                 id="peer_floor_ignores_fat_survivors_on_other_hosts"),
    # 6.4 GiB used of 6.4 GiB: neither the 500 MiB peak nor its load (<= 167 MiB) fits
    pytest.param(snap(*HELD, used={"h1": int(6.4 * GiB)}, cluster_flags=RUNF), RUN, RUNNING,
                 ["wait"], ("RECOVERY_BUDGET_TOO_SMALL",), "running",
                 id="no_grant_when_budget_does_not_admit"),
    # 6 GiB used: the 500 MiB peak does not fit, its load does, and no OSD runs on h1: a
    # probe start (it boots only if the peak re-predicted from its load fits)
    pytest.param(snap(*HELD, used={"h1": 6 * GiB}, cluster_flags=RUNF), RUN, RUNNING,
                 [G % 3], (), "running", id="probe_start_when_only_the_load_fits"),
    pytest.param(snap(PRE3, *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.with_columns(granted={3: NOW - 15}), ["wait"], (), "running",
                 id="allow_boot_waits_for_a_second_rss_sample"),
    pytest.param(snap(osd(3, flags=NOUP, process="running", process_started_at=NOW - 2),
                      *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.with_columns(granted={3: NOW - 3}), ["wait"], (), "running",
                 id="allow_boot_waits_for_rss"),
    # the load-time footprint must be known: rss flat (within 2 % of the peak seen in the
    # earlier snapshots) after BOOT_OBSERVE_S in preboot, not merely non-zero
    pytest.param(snap(PRE3, *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.with_columns(granted={3: NOW - 15}, peaks={3: 100 * MiB}), ["wait"], (),
                 "running", id="allow_boot_waits_while_preboot_rss_grows"),
    pytest.param(snap(PRE3, *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.with_columns(granted={3: NOW - 15}, peaks={3: 238 * MiB}),
                 ["allow_boot osd=3 predicted_bytes=%d" % (500 * MiB)], (), "running",
                 id="allow_boot_once_preboot_rss_flat"),
    pytest.param(snap(osd(3, flags=NOUP, process="running", rss_bytes=240 * MiB,
                          process_started_at=NOW - 4), *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.with_columns(granted={3: NOW - 5}, peaks={3: 240 * MiB}), ["wait"], (),
                 "running", id="allow_boot_waits_boot_observe_s_even_if_flat"),
    pytest.param(snap(osd(3, flags=NOUP, process="running", rss_bytes=240 * MiB,
                          process_started_at=NOW - 61), *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.with_columns(granted={3: NOW - 62}, peaks={3: 100 * MiB}),
                 ["allow_boot osd=3 predicted_bytes=%d" % (500 * MiB)], (), "running",
                 id="allow_boot_after_boot_observe_max_s_even_if_growing"),
    pytest.param(snap(osd(3, flags=NOUP, process="running", rss_bytes=3 * GiB,
                          process_started_at=NOW - 15), *HELD[1:], used={"h1": 4 * GiB},
                      cluster_flags=RUNF), RUN,
                 RUNNING.with_columns(granted={3: NOW - 15}, peaks={3: 3 * GiB}),
                 ["wait"], ("RECOVERY_BUDGET_TOO_SMALL",), "running",
                 id="no_boot_when_load_rss_voids_prediction_and_growth_does_not_fit"),
    pytest.param(snap(osd(3, flags=NOUP, process="running", rss_bytes=1 * GiB,
                          process_started_at=NOW - 15), *HELD[1:], used={"h1": 2 * GiB},
                      cluster_flags=RUNF), RUN,
                 RUNNING.with_columns(granted={3: NOW - 15}, peaks={3: 1 * GiB}),
                 ["allow_boot osd=3 predicted_bytes=%d" % (2 * GiB)], (), "running",
                 id="boot_when_load_rss_voids_prediction_but_double_still_fits"),
    pytest.param(snap(osd(3, up=True, pgs_inactive=0), *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.with_columns(granted={3: NOW - 60}, booting={3: NOW - 40}),
                 [G % 4], (), "running", id="finish_frees_slot_and_grants_next"),
    pytest.param(snap(osd(3, up=True, pgs_inactive=2), *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.with_columns(granted={3: NOW - 60}, booting={3: NOW - 40}),
                 ["wait"], (), "running", id="up_with_inactive_pgs_stays_in_flight"),
    pytest.param(snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF), RUN,
                 RUNNING.evolve(finished=frozenset({3})), ["heap_release osd=3"],
                 ("RECOVERY_BUDGET_EXCEEDED",), "running", id="over_budget_heap_release"),
    pytest.param(snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF), RUN,
                 RUNNING.evolve(finished=frozenset({3})).with_columns(heap_released={3: NOW - 30}),
                 ["query_ok_to_stop osd=3"], ("RECOVERY_BUDGET_EXCEEDED",), "running",
                 id="over_budget_query_ok_to_stop"),
    pytest.param(snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF, ok_to_stop={3: True}),
                 RUN, RUNNING.evolve(finished=frozenset({3})).with_columns(
                     heap_released={3: NOW - 30}),
                 ["restart_osd host=h1 osd=3"], ("RECOVERY_BUDGET_EXCEEDED",), "running",
                 id="over_budget_restart_heaviest_ok_to_stop"),
    pytest.param(snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF, ok_to_stop={3: False}),
                 RUN, RUNNING.evolve(finished=frozenset({3})).with_columns(
                     heap_released={3: NOW - 30}),
                 ["wait"], ("RECOVERY_BUDGET_EXCEEDED",), "running",
                 id="over_budget_refused_when_ok_to_stop_false"),
    pytest.param(snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF, ok_to_stop={3: True}),
                 RUN, RUNNING.evolve(finished=frozenset({3})).with_columns(
                     heap_released={3: NOW - 30}, restarted={3: NOW - 100}),
                 ["wait"], ("RECOVERY_BUDGET_EXCEEDED",), "running",
                 id="over_budget_no_restart_within_cooldown"),
    pytest.param(snap(osd(3, up=True, rss_bytes=60 * MiB, pgs_inactive=0), *HELD[1:],
                      used={"h1": 6300 * MiB}, cluster_flags=RUNF, ok_to_stop={3: True}),
                 RUN, RUNNING.evolve(finished=frozenset({3})), ["wait"],
                 ("RECOVERY_BUDGET_TOO_SMALL",), "running",
                 id="quiescent_host_nothing_worth_restarting_reports_too_small"),
    pytest.param(snap(osd(3, up=True, rss_bytes=GiB, pgs_inactive=0), *HELD[1:],
                      used={"h1": 6300 * MiB}, cluster_flags=RUNF),
                 RUN, RUNNING.evolve(finished=frozenset({3})), ["heap_release osd=3"],
                 ("RECOVERY_BUDGET_TOO_SMALL",), "running",
                 id="quiescent_host_makes_room_for_next_start"),
    # make room for the next start: h1's osd.3/4 are up and fat (1200 MiB; they came back at
    # 1000 MiB after an old restart: 200 MiB expected gain each), osd.5 needs 500 MiB and
    # 6400 + 500 MiB > 6554 MiB budget: a 346 MiB deficit that no single restart closes but
    # two do, one at a time.
    pytest.param(snap(*ROOM, HELD[2], used={"h1": 6400 * MiB}, cluster_flags=RUNF,
                      ok_to_stop={3: True, 4: True}),
                 RUN, ROOMP, ["restart_osd host=h1 osd=3"], ("RECOVERY_BUDGET_TOO_SMALL",),
                 "running", id="next_start_needs_several_restarts_restart_heaviest_first"),
    pytest.param(snap(*ROOM, HELD[2], used={"h1": 6400 * MiB}, cluster_flags=RUNF),
                 RUN, ROOMP, ["query_ok_to_stop osd=3"], ("RECOVERY_BUDGET_TOO_SMALL",),
                 "running", id="next_start_needs_several_restarts_asks_ok_to_stop_first"),
    pytest.param(snap(*ROOM, HELD[2], used={"h1": 6400 * MiB}, cluster_flags=RUNF,
                      ok_to_stop={3: False, 4: True}),
                 RUN, ROOMP, ["wait"], ("RECOVERY_BUDGET_TOO_SMALL",),
                 "running", id="next_start_no_restart_when_cleared_ones_cannot_make_room"),
    # the same, but this run restarted osd.3 and osd.4 at the rss they have again (1200 MiB):
    # they grew back, a restart frees nothing lasting, so none is made (else one every
    # cooldown until the stall limit); at 1400 MiB then, osd.3 still gives 200 MiB back
    pytest.param(snap(*ROOM, HELD[2], used={"h1": 6400 * MiB}, cluster_flags=RUNF,
                      ok_to_stop={3: True, 4: True}),
                 RUN, ROOMP.with_columns(restart_rss={3: 1200 * MiB, 4: 1200 * MiB}),
                 ["wait"], ("RECOVERY_BUDGET_TOO_SMALL",),
                 "running", id="osds_grown_back_to_their_rss_at_their_last_restart_free_nothing"),
    pytest.param(snap(*ROOM, HELD[2], used={"h1": 6400 * MiB}, cluster_flags=RUNF,
                      ok_to_stop={3: True, 4: True}),
                 RUN, ROOMP.with_columns(restart_rss={3: 1400 * MiB, 4: 1400 * MiB}),
                 ["restart_osd host=h1 osd=3"], ("RECOVERY_BUDGET_TOO_SMALL",),
                 "running", id="osds_below_their_rss_at_their_last_restart_still_free_memory"),
    # the same, but osd.3's PGs are clean now and its first start loaded 300 MiB in preboot:
    # its restart 4000 s ago came back at 1000 MiB with its missed history, one now reloads its
    # PG logs only, so it frees 900 MiB and closes the 346 MiB deficit alone
    pytest.param(snap(*ROOM, HELD[2], used={"h1": 6400 * MiB}, cluster_flags=RUNF,
                      ok_to_stop={3: True, 4: False}),
                 RUN, ROOMP_LOAD3,
                 ["restart_osd host=h1 osd=3"], ("RECOVERY_BUDGET_TOO_SMALL",), "running",
                 id="a_clean_osd_restart_frees_down_to_its_load_not_its_restart_while_recovering"),
    pytest.param(snap(osd(3, up=True, rss_bytes=1200 * MiB, pgs_inactive=0, pgs_degraded=4),
                      ROOM[1], HELD[2], used={"h1": 6400 * MiB}, cluster_flags=RUNF,
                      ok_to_stop={3: True, 4: False}),
                 RUN, ROOMP_LOAD3,
                 ["wait"], ("RECOVERY_BUDGET_TOO_SMALL",), "running",
                 id="a_still_degraded_osd_keeps_its_own_measured_restart"),
    pytest.param(snap(osd(3, up=True, rss_bytes=100 * MiB, pgs_inactive=0), ROOM[1], HELD[2],
                      used={"h1": 5300 * MiB}, cluster_flags=RUNF,
                      ok_to_stop={3: True, 4: True}),
                 RUN, ROOMP.with_columns(restarted={3: NOW - 10, 4: NOW - 4000},
                                         fresh_rss={4: 1000 * MiB}),
                 ["wait"], (), "running", id="next_start_waits_while_the_restart_holds_the_slot"),
    # h1 and h2 both over budget, each with a fat finished OSD that ok-to-stop cleared: Ceph
    # clears each alone, not both (one PG of both at min_size would go inactive), so one
    # restart per tick; h2's waits for the next snapshot's answer.
    pytest.param(snap(FAT3, *HELD[1:], FAT6, *HELD2, used={"h1": 7 * GiB, "h2": 7 * GiB},
                      hosts=("h0", "h1", "h2"), cluster_flags=RUNF, ok_to_stop={3: True, 6: True}),
                 RUN, RUNNING.evolve(finished=frozenset({3, 6}),
                                     held_osds=frozenset({4, 5, 7, 8})).with_columns(
                                         heap_released={3: NOW - 30, 6: NOW - 30}),
                 ["restart_osd host=h1 osd=3", "wait host=h2"], ("RECOVERY_BUDGET_EXCEEDED",),
                 "running", id="over_budget_on_two_hosts_one_restart_per_tick"),
    pytest.param(snap(), Intent(mode="controlled", run_id="r1", holds=frozenset({"h1"})),
                 Progress(), FLAGS + ["hold_bucket bucket=h1"] + HOLDS,
                 ("RECOVERY_DOMAIN_HELD",), "running", id="held_bucket_never_granted"),
    pytest.param(snap(*HELD, bucket_flags={"h1": NOUP}, cluster_flags=RUNF), RUN,
                 RUNNING.evolve(held_buckets=frozenset({"h1"})),
                 ["release_bucket bucket=h1", G % 3], (), "running",
                 id="operator_release_then_grant"),
    pytest.param(snap(), Intent(auto_hold=True), Progress(), ["hold_bucket bucket=h1"],
                 ("RECOVERY_DOMAIN_HELD",), "idle", id="auto_hold_when_host_all_down"),
    pytest.param(snap(bucket_flags={"h1": NOUP}), Intent(auto_hold=True),
                 Progress(held_buckets=frozenset({"h1"}), auto_held=frozenset({"h1"})), [],
                 ("RECOVERY_DOMAIN_HELD",), "idle", id="auto_hold_is_idempotent"),
    pytest.param(snap(PRE3, *HELD[1:], cluster_flags=RUNF), Intent(mode="paused", run_id="r1"),
                 RUNNING.with_columns(granted={3: NOW - 15}), ["wait"], ("RECOVERY_PAUSED",),
                 "paused", id="pause_no_boot_no_grant"),
    pytest.param(snap(PRE3, *HELD[1:], cluster_flags=RUNF), Intent(mode="abort", run_id="r1"),
                 RUNNING.with_columns(granted={3: NOW - 15}),
                 ["stop_osd host=h1 osd=3", "unset_flag flag=noout",
                  "unset_flag flag=norebalance"],
                 ("RECOVERY_ABORTED",), "aborted",
                 id="abort_stops_a_loaded_grant_restores_flags_keeps_holds"),
    pytest.param(snap(*[osd(i, up=True) for i in (3, 4, 5)], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(finished=frozenset({3, 4, 5})),
                 ["unset_flag flag=noout", "unset_flag flag=norebalance", "done"], (), "done",
                 id="done_restores_flags"),
    pytest.param(snap(*[osd(i, up=True) for i in (3, 4, 5)], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(finished=frozenset({3, 4, 5}), saved_flags=frozenset({"noout"})),
                 ["unset_flag flag=norebalance", "done"], (), "done",
                 id="done_keeps_flags_that_were_set_before"),
    pytest.param(snap(osd(3, up=True, pgs_degraded=5, rss_bytes=900 * MiB),
                      *[osd(i, up=True) for i in (4, 5)], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(finished=frozenset({3, 4, 5})).with_columns(
                     settling={3: NOW - 60}, peaks={3: 800 * MiB}), ["wait"], (), "running",
                 id="done_waits_for_settling_osds"),
    pytest.param(snap(osd(3, up=True, pgs_degraded=0, rss_bytes=900 * MiB),
                      *[osd(i, up=True) for i in (4, 5)], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(finished=frozenset({3, 4, 5})).with_columns(
                     settling={3: NOW - 60}, peaks={3: 800 * MiB}),
                 ["unset_flag flag=noout", "unset_flag flag=norebalance", "done"], (), "done",
                 id="settled_when_pgs_no_longer_degraded"),
    pytest.param(snap(epoch=9), RUN, RUNNING, ["wait"], (), "running",
                 id="stale_epoch_only_waits"),
    pytest.param(snap(hosts=("h0",)), RUN, Progress(), FLAGS + HOLDS,
                 ("RECOVERY_HELPER_MISSING",), "running", id="helper_missing_no_hostmem"),
    pytest.param(snap(helpers_seen={"h0": NOW, "h1": NOW - 60}), RUN, Progress(),
                 FLAGS + HOLDS, ("RECOVERY_HELPER_MISSING",), "running",
                 id="helper_stale_report"),
    pytest.param(snap(findings=(Finding(hosts=("h0", "h1"), kind="jumbo_loss", since=NOW - 60,
                                        value=0.3),)), RUN, Progress(), FLAGS + HOLDS,
                 ("RECOVERY_NETWORK_DEGRADED",), "running", id="network_finding_holds_host"),
    pytest.param(snap(osd(3, process="running", rss_bytes=300 * MiB), *HELD[1:],
                      cluster_flags=RUNF), RUN,
                 RUNNING.with_columns(granted={3: NOW - 700}, booting={3: NOW - 650}),
                 ["hold_osd osd=3", "stop_osd host=h1 osd=3", "wait host=h1",
                  "grant_start host=h1 osd=4 predicted_bytes=524288000"],
                 ("RECOVERY_BOOT_TIMEOUT", "RECOVERY_START_FAILED"), "running",
                 id="boot_timeout_fails_the_start_stops_holds_and_moves_on"),
    pytest.param(snap(osd(3, process="running", rss_bytes=450 * MiB, flags=NOUP), *HELD[1:],
                      used={"h1": 6 * GiB}, cluster_flags=RUNF), RUN, RUNNING,
                 [G % 3], (), "running", id="preboot_process_needs_only_the_rest"),
    pytest.param(snap(), Intent(mode="controlled", run_id="r1", scope=("rack9",)), Progress(),
                 ["done"], ("RECOVERY_SCOPE_UNKNOWN",), "done", id="unknown_scope_is_reported"),
    pytest.param(snap(*HELD, cluster_flags=RUNF), Intent(mode="controlled", run_id="r1",
                                                         scope=("h0",)),
                 RUNNING.evolve(held_osds=frozenset()),
                 ["unset_flag flag=noout", "unset_flag flag=norebalance", "done"], (), "done",
                 id="scope_excludes_other_hosts"),
]


@pytest.mark.parametrize("snapshot,intent,progress,expected,codes,phase", CASES)


def test_plan_case(snapshot, intent, progress, expected, codes, phase):
    res = plan(snapshot, intent, progress, POL, NOW)
    assert [sig(a) for a in res.actions] == expected
    assert tuple(h.code for h in res.health) == tuple(codes)
    assert res.progress.phase == phase
    assert check_invariants(snapshot, intent, progress, res, POL, now=NOW) == []


def test_plan_result_unpacks_as_four_tuple():
    actions, progress, health, summary = plan(snap(), RUN, Progress(), POL, NOW)
    assert progress.osd_map("granted") == {3: NOW} and progress.held_osds == {3, 4, 5}
    assert progress.osd_map("downtime") == {3: 3600.0} and progress.saved_flags == frozenset()
    assert summary["hosts"]["h1"]["next_osd"] == 4
    assert summary["counts"]["candidates"] == 3


def test_stale_epoch_returns_progress_unchanged():
    res = plan(snap(epoch=9), RUN, RUNNING, POL, NOW)
    assert res.progress is RUNNING
    assert res.actions[0].reason == "stale osd map epoch 9 < 10"


def test_finish_records_observation_with_peak_and_downtime():
    s = snap(osd(3, up=True, pgs_inactive=0, rss_bytes=350 * MiB), *HELD[1:],
             cluster_flags=RUNF)
    p = RUNNING.with_columns(granted={3: NOW - 60}, booting={3: NOW - 40}, peaks={3: 420 * MiB},
                             downtime={3: 3540.0})
    res = plan(s, RUN, p, POL, NOW)
    ob = res.progress.observations[-1]
    assert (ob.osd, ob.pgs, ob.peak_bytes) == (3, 16, 420 * MiB)
    assert ob.downtime_s == pytest.approx(3600 - 60)
    assert 3 in res.progress.finished and 3 not in res.progress.osd_map("granted")


def test_restart_marks_slot_busy_and_records_time():
    s = snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF, ok_to_stop={3: True})
    p = RUNNING.evolve(finished=frozenset({3})).with_columns(heap_released={3: NOW - 30})
    res = plan(s, RUN, p, POL, NOW)
    assert res.progress.osd_map("restarted") == {3: NOW}
    assert res.summary["hosts"]["h1"]["waiting_on"] == "over budget"


def test_new_run_id_starts_a_new_run_after_done():
    s = snap(cluster_flags=frozenset())
    done = RUNNING.evolve(phase="done", finished=frozenset({3, 4, 5}))
    same = plan(s, RUN, done, POL, NOW)
    assert [sig(a) for a in same.actions] == [] and same.progress.phase == "done"
    new = plan(s, Intent(mode="controlled", run_id="r2"), done, POL, NOW)
    assert [sig(a) for a in new.actions] == FLAGS + HOLDS + [G % 3, G % 4, G % 5]
    assert new.progress.finished == frozenset() and new.progress.run_id == "r2"


def test_a_restart_made_by_an_earlier_run_does_not_keep_the_osd_out_of_a_new_run():
    """Lab CI: run A restarted osd.2 (it came back; run A finished); 4 min later the drill
    killed h2 again and run B started. B's view counted osd.2 as "restarting" (down, restarted
    < boot_timeout_s ago): not a candidate, not held, its slot busy - B waited 10 minutes on a
    restart that had ended long before. An earlier run's restart counts for the cooldown only;
    a restart of the run itself (or of the run a new run_id takes over) still holds its slot."""
    s = snap(cluster_flags=frozenset())
    done = RUNNING.evolve(phase="done", finished=frozenset({3, 4, 5}),
                          started_at=NOW - 400).with_columns(restarted={3: NOW - 240})
    new = plan(s, Intent(mode="controlled", run_id="r2"), done, POL, NOW)
    assert [sig(a) for a in new.actions] == FLAGS + HOLDS + [G % 3, G % 4, G % 5]
    assert new.progress.osd_map("restarted") == {3: NOW - 240} and new.progress.started_at == NOW
    going = RUNNING.evolve(started_at=NOW - 400,
                           saved_flags=frozenset()).with_columns(restarted={3: NOW - 240})
    taken = plan(snap(*HELD, cluster_flags=RUNF),
                 Intent(mode="controlled", run_id="r2", concurrency=1), going, POL, NOW)
    assert [sig(a) for a in taken.actions] == ["wait"]
    assert taken.summary["hosts"]["h1"]["in_flight_osds"] == [3]
    assert taken.progress.started_at == NOW - 400


def test_an_earlier_runs_restart_does_not_cool_down_an_osd_this_run_brought_up_again():
    """Lab CI: run A restarted osd.2; the next drill killed h2 and run B started osd.2 again
    (a fresh process); its second OSD did not fit and osd.2 - 318 MiB, 148 MiB after its last
    restart - was "0 MiB restartable": run A's restart still cooled it down, and run B stalled
    with RECOVERY_BUDGET_TOO_SMALL. Here osd.3 is that osd.2: B makes room by restarting it.
    An OSD this run did not bring up stays in its cooldown."""
    three = osd(3, up=True, process="running", rss_bytes=1200 * MiB, pgs_inactive=0)
    s = snap(three, osd(4, flags=NOUP), osd(5, flags=NOUP), used={"h1": int(6.2 * GiB)},
             cluster_flags=RUNF, ok_to_stop={3: True})
    p = RUNNING.evolve(finished=frozenset({3}), held_osds=frozenset({4, 5}),
                       started_at=NOW - 200).with_columns(
        restarted={3: NOW - 240}, fresh_rss={3: 200 * MiB}, heap_released={3: NOW - 30})
    res = plan(s, RUN, p, POL, NOW)
    assert [sig(a) for a in res.actions] == ["restart_osd host=h1 osd=3"]
    assert check_invariants(s, RUN, p, res, POL, NOW) == []
    assert res.progress.osd_map("restarted") == {3: NOW}
    cooled = plan(s, RUN, p.evolve(finished=frozenset()), POL, NOW)
    assert [sig(a) for a in cooled.actions] == ["wait"]
    assert [h.code for h in cooled.health] == ["RECOVERY_BUDGET_TOO_SMALL"]


@pytest.mark.parametrize("bad", [
    pytest.param(Intent(mode="controlled", concurrency=-1), id="concurrency_negative"),
    pytest.param(Intent(mode="sideways"), id="unknown_mode"),
    pytest.param(Intent(mode="controlled", boot_timeout_s=0), id="boot_timeout_0"),
    pytest.param(Intent(mode="controlled", budget=Budget(value=80)), id="fraction_over_1"),
    pytest.param(Intent(mode="controlled", budget=Budget(kind="bytes", value=-1)),
                 id="negative_bytes"),
])


def test_invalid_intent_is_a_clear_error(bad):
    with pytest.raises(ValueError):
        plan(snap(), bad, Progress(), POL, NOW)


def test_budget_bytes_policy_gates_the_grant():
    intent = Intent(mode="controlled", run_id="r1", budget=Budget(kind="bytes", value=1.6 * GiB))
    pol = Policies(POL.start_order, REGISTRY["budget"]["bytes"], fixed_500, POL.over_budget)
    fits = plan(snap(*HELD, cluster_flags=RUNF), intent, RUNNING, pol, NOW)
    assert [sig(a) for a in fits.actions] == [G % 3]
    tight = Intent(mode="controlled", run_id="r1", budget=Budget(kind="bytes", value=1.6 * GiB,
                                                                  reserve_bytes=GiB // 2))
    nofit = plan(snap(*HELD, cluster_flags=RUNF), tight, RUNNING, pol, NOW)
    assert [sig(a) for a in nofit.actions] == ["wait"]


def test_health_detail_is_capped_but_counts_every_host():
    hosts = ["h%d" % h for h in range(2, 80)]
    osds = tuple(OsdState(id=i, host=h, crush_path=("default", "r9", h), up=False, pgs=16,
                          down_since=NOW - 60) for i, h in enumerate(hosts))
    s = Snapshot(epoch=10, osds=osds)          # no helper anywhere
    res = plan(s, RUN, Progress(), POL, NOW)
    hc = {h.code: h for h in res.health}["RECOVERY_HELPER_MISSING"]
    assert hc.count == len(hosts) and len(hc.detail) == 51
    assert hc.detail[-1] == "... and %d more" % (len(hosts) - 50)


def test_helper_missing_names_a_host_whose_only_down_osd_is_granted():
    """h1's one down OSD (5) is granted and its helper went silent 60 s ago: nothing else
    waits there, yet the grant waits for that helper, so the check must name h1 (and say
    when it last reported, not "ever")."""
    s = snap(osd(3, up=True), osd(4, up=True), osd(5, flags=NOUP),
             helpers_seen={"h0": NOW - 5, "h1": NOW - 60}, cluster_flags=RUNF)
    p = RUNNING.evolve(held_osds=frozenset({5})).with_columns(granted={5: NOW - 20})
    res = plan(s, RUN, p, POL, NOW)
    detail = {h.code: h.detail for h in res.health}.get("RECOVERY_HELPER_MISSING", ())
    assert detail == ("h1: last helper report 60s ago (stale after 30s) (osd.5 granted "
                      "there)",), res.health
