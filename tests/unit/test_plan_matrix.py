"""Exact ordered action lists of plan() for hand-made snapshots (one named case per row).

Cluster of every case unless said otherwise: hosts h0 (osd.0-2, up) and h1 (osd.3-5, down
an hour), both under rack r1, 8 GiB RAM, 1 GiB used, budget 80 % (6.4 GiB). The footprint
policy is a fixed 500 MiB so that the expected grants are exact; the others are the real
registered policies.
"""
from __future__ import annotations

import pytest

from ceph_recovery.model import (Budget, Finding, HostMem, Intent, Observation, OsdState,
                                 Progress, Snapshot)
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policies import REGISTRY, resolve
from ceph_recovery.policy_types import Policies

MiB, GiB = 1 << 20, 1 << 30
NOW = 10000.0
NOUP = frozenset({"noup"})
RUNF = frozenset({"noout", "norebalance"})


def fixed_500(osd, observations, now):
    return 500 * MiB


POL = Policies(start_order=REGISTRY["start_order"]["service_first"],
               budget=REGISTRY["budget"]["fraction"], footprint=fixed_500,
               over_budget=REGISTRY["over_budget"]["heap_then_restart"])


def osd(i, up=None, **kw):
    host = "h%d" % (i // 3)
    if up is None:
        up = i < 3
    base = dict(id=i, host=host, crush_path=("default", "r1", host), up=up, pgs=16,
                process="running" if up else "stopped", rss_bytes=300 * MiB if up else 0,
                pgs_inactive=0 if up else 4, down_since=None if up else NOW - 3600)
    base.update(kw)
    return OsdState(**base)


def snap(*changed, used=None, epoch=10, hosts=("h0", "h1"), **kw):
    by_id = {o.id: o for o in (osd(i) for i in range(6))}
    by_id.update({o.id: o for o in changed})
    used = used or {}
    hm = tuple(HostMem(name=h, mem_total=8 * GiB, mem_used=used.get(h, 1 * GiB),
                       mem_available=4 * GiB, reported_at=NOW) for h in hosts)
    kw.setdefault("helpers_seen", {h: NOW - 5 for h in hosts})
    return Snapshot(epoch=epoch, osds=tuple(by_id[i] for i in sorted(by_id)), hosts=hm, **kw)


RUN = Intent(mode="controlled", run_id="r1")
RUNNING = Progress(run_id="r1", phase="running", epoch=10, saved_flags=frozenset(),
                   held_osds=frozenset({3, 4, 5}), started_at=NOW - 100)
HELD = [osd(i, flags=NOUP) for i in (3, 4, 5)]
PRE3 = osd(3, flags=NOUP, process="running", rss_bytes=240 * MiB, process_started_at=NOW - 10)
FAT3 = osd(3, up=True, process="running", rss_bytes=2 * GiB, pgs_inactive=0)
OVER = {"h1": 7 * GiB}
FAT6 = osd(6, up=True, process="running", rss_bytes=2 * GiB, pgs_inactive=0)
HELD2 = [osd(i, up=False, flags=NOUP) for i in (7, 8)]
OBS3 = tuple(Observation(osd=9, pgs=16, downtime_s=60.0, pg_log_entries=0,
                         peak_bytes=400 * MiB) for _ in range(3))

ROOM = [osd(i, up=True, rss_bytes=1200 * MiB, pgs_inactive=0) for i in (3, 4)]
ROOMP = RUNNING.evolve(finished=frozenset({3, 4}), held_osds=frozenset({5}),
                       restarted={3: NOW - 4000, 4: NOW - 4000},
                       fresh_rss={3: 1000 * MiB, 4: 1000 * MiB},
                       heap_released={3: NOW - 30, 4: NOW - 30})


def sig(a):
    """What an action does, without its free-text reason."""
    d = a.to_dict()
    d.pop("reason")
    kind = d.pop("kind")
    return " ".join([kind] + ["%s=%s" % (k, d[k]) for k in sorted(d) if d[k] not in (None, "")])


G = "grant_start host=h1 osd=%d predicted_bytes=" + str(500 * MiB)
FLAGS = ["set_flag flag=noout", "set_flag flag=norebalance"]
HOLDS = ["hold_osd osd=3", "hold_osd osd=4", "hold_osd osd=5"]

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
                 RUNNING, [G % 3], (), "running", id="concurrency_2_warms_up_with_one"),
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
    pytest.param(snap(*HELD, used={"h1": 6 * GiB}, cluster_flags=RUNF), RUN, RUNNING,
                 ["wait"], ("RECOVERY_BUDGET_TOO_SMALL",), "running",
                 id="no_grant_when_budget_does_not_admit"),
    pytest.param(snap(PRE3, *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(granted={3: NOW - 15}), ["wait"], (), "running",
                 id="allow_boot_waits_for_a_second_rss_sample"),
    pytest.param(snap(osd(3, flags=NOUP, process="running", process_started_at=NOW - 2),
                      *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(granted={3: NOW - 3}), ["wait"], (), "running",
                 id="allow_boot_waits_for_rss"),
    # the load-time footprint must be known: rss flat (within 2 % of the peak seen in the
    # earlier snapshots) after BOOT_OBSERVE_S in preboot, not merely non-zero
    pytest.param(snap(PRE3, *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(granted={3: NOW - 15}, peaks={3: 100 * MiB}), ["wait"], (),
                 "running", id="allow_boot_waits_while_preboot_rss_grows"),
    pytest.param(snap(PRE3, *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(granted={3: NOW - 15}, peaks={3: 238 * MiB}),
                 ["allow_boot osd=3"], (), "running", id="allow_boot_once_preboot_rss_flat"),
    pytest.param(snap(osd(3, flags=NOUP, process="running", rss_bytes=240 * MiB,
                          process_started_at=NOW - 4), *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(granted={3: NOW - 5}, peaks={3: 240 * MiB}), ["wait"], (),
                 "running", id="allow_boot_waits_boot_observe_s_even_if_flat"),
    pytest.param(snap(osd(3, flags=NOUP, process="running", rss_bytes=240 * MiB,
                          process_started_at=NOW - 61), *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(granted={3: NOW - 62}, peaks={3: 100 * MiB}),
                 ["allow_boot osd=3"], (), "running",
                 id="allow_boot_after_boot_observe_max_s_even_if_growing"),
    pytest.param(snap(osd(3, flags=NOUP, process="running", rss_bytes=3 * GiB,
                          process_started_at=NOW - 15), *HELD[1:], used={"h1": 4 * GiB},
                      cluster_flags=RUNF), RUN,
                 RUNNING.evolve(granted={3: NOW - 15}, peaks={3: 3 * GiB}),
                 ["wait"], ("RECOVERY_BUDGET_TOO_SMALL",), "running",
                 id="no_boot_when_load_rss_voids_prediction_and_growth_does_not_fit"),
    pytest.param(snap(osd(3, flags=NOUP, process="running", rss_bytes=1 * GiB,
                          process_started_at=NOW - 15), *HELD[1:], used={"h1": 2 * GiB},
                      cluster_flags=RUNF), RUN,
                 RUNNING.evolve(granted={3: NOW - 15}, peaks={3: 1 * GiB}),
                 ["allow_boot osd=3"], (), "running",
                 id="boot_when_load_rss_voids_prediction_but_double_still_fits"),
    pytest.param(snap(osd(3, up=True, pgs_inactive=0), *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(granted={3: NOW - 60}, booting={3: NOW - 40}),
                 [G % 4], (), "running", id="finish_frees_slot_and_grants_next"),
    pytest.param(snap(osd(3, up=True, pgs_inactive=2), *HELD[1:], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(granted={3: NOW - 60}, booting={3: NOW - 40}),
                 ["wait"], (), "running", id="up_with_inactive_pgs_stays_in_flight"),
    pytest.param(snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF), RUN,
                 RUNNING.evolve(finished=frozenset({3})), ["heap_release osd=3"],
                 ("RECOVERY_BUDGET_EXCEEDED",), "running", id="over_budget_heap_release"),
    pytest.param(snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF), RUN,
                 RUNNING.evolve(finished=frozenset({3}), heap_released={3: NOW - 30}),
                 ["query_ok_to_stop osd=3"], ("RECOVERY_BUDGET_EXCEEDED",), "running",
                 id="over_budget_query_ok_to_stop"),
    pytest.param(snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF, ok_to_stop={3: True}),
                 RUN, RUNNING.evolve(finished=frozenset({3}), heap_released={3: NOW - 30}),
                 ["restart_osd host=h1 osd=3"], ("RECOVERY_BUDGET_EXCEEDED",), "running",
                 id="over_budget_restart_heaviest_ok_to_stop"),
    pytest.param(snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF, ok_to_stop={3: False}),
                 RUN, RUNNING.evolve(finished=frozenset({3}), heap_released={3: NOW - 30}),
                 ["wait"], ("RECOVERY_BUDGET_EXCEEDED",), "running",
                 id="over_budget_refused_when_ok_to_stop_false"),
    pytest.param(snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF, ok_to_stop={3: True}),
                 RUN, RUNNING.evolve(finished=frozenset({3}), heap_released={3: NOW - 30},
                                     restarted={3: NOW - 100}),
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
    pytest.param(snap(osd(3, up=True, rss_bytes=100 * MiB, pgs_inactive=0), ROOM[1], HELD[2],
                      used={"h1": 5300 * MiB}, cluster_flags=RUNF,
                      ok_to_stop={3: True, 4: True}),
                 RUN, ROOMP.evolve(restarted={3: NOW - 10, 4: NOW - 4000},
                                   fresh_rss={4: 1000 * MiB}),
                 ["wait"], (), "running", id="next_start_waits_while_the_restart_holds_the_slot"),
    # h1 and h2 both over budget, each with a fat finished OSD that ok-to-stop cleared: Ceph
    # clears each alone, not both (one PG of both at min_size would go inactive), so one
    # restart per tick; h2's waits for the next snapshot's answer.
    pytest.param(snap(FAT3, *HELD[1:], FAT6, *HELD2, used={"h1": 7 * GiB, "h2": 7 * GiB},
                      hosts=("h0", "h1", "h2"), cluster_flags=RUNF, ok_to_stop={3: True, 6: True}),
                 RUN, RUNNING.evolve(finished=frozenset({3, 6}),
                                     held_osds=frozenset({4, 5, 7, 8}),
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
                 RUNNING.evolve(granted={3: NOW - 15}), ["wait"], ("RECOVERY_PAUSED",),
                 "paused", id="pause_no_boot_no_grant"),
    pytest.param(snap(PRE3, *HELD[1:], cluster_flags=RUNF), Intent(mode="abort", run_id="r1"),
                 RUNNING.evolve(granted={3: NOW - 15}),
                 ["unset_flag flag=noout", "unset_flag flag=norebalance"],
                 ("RECOVERY_ABORTED",), "aborted", id="abort_restores_flags_keeps_holds"),
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
                 RUNNING.evolve(finished=frozenset({3, 4, 5}), settling={3: NOW - 60},
                                peaks={3: 800 * MiB}), ["wait"], (), "running",
                 id="done_waits_for_settling_osds"),
    pytest.param(snap(osd(3, up=True, pgs_degraded=0, rss_bytes=900 * MiB),
                      *[osd(i, up=True) for i in (4, 5)], cluster_flags=RUNF), RUN,
                 RUNNING.evolve(finished=frozenset({3, 4, 5}), settling={3: NOW - 60},
                                peaks={3: 800 * MiB}),
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
                 RUNNING.evolve(granted={3: NOW - 700}, booting={3: NOW - 650}),
                 ["wait"], ("RECOVERY_BOOT_TIMEOUT",), "running", id="boot_timeout_reported"),
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
    assert progress.granted == {3: NOW} and progress.held_osds == {3, 4, 5}
    assert progress.downtime == {3: 3600.0} and progress.saved_flags == frozenset()
    assert summary["hosts"]["h1"]["next_osd"] == 4
    assert summary["counts"]["candidates"] == 3


def test_stale_epoch_returns_progress_unchanged():
    res = plan(snap(epoch=9), RUN, RUNNING, POL, NOW)
    assert res.progress is RUNNING
    assert res.actions[0].reason == "stale osd map epoch 9 < 10"


def test_finish_records_observation_with_peak_and_downtime():
    s = snap(osd(3, up=True, pgs_inactive=0, rss_bytes=350 * MiB), *HELD[1:],
             cluster_flags=RUNF)
    p = RUNNING.evolve(granted={3: NOW - 60}, booting={3: NOW - 40}, peaks={3: 420 * MiB},
                       downtime={3: 3540.0})
    res = plan(s, RUN, p, POL, NOW)
    ob = res.progress.observations[-1]
    assert (ob.osd, ob.pgs, ob.peak_bytes) == (3, 16, 420 * MiB)
    assert ob.downtime_s == pytest.approx(3600 - 60)
    assert 3 in res.progress.finished and 3 not in res.progress.granted


def test_restart_marks_slot_busy_and_records_time():
    s = snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF, ok_to_stop={3: True})
    p = RUNNING.evolve(finished=frozenset({3}), heap_released={3: NOW - 30})
    res = plan(s, RUN, p, POL, NOW)
    assert res.progress.restarted == {3: NOW}
    assert res.summary["hosts"]["h1"]["waiting_on"] == "over budget"


def test_new_run_id_starts_a_new_run_after_done():
    s = snap(cluster_flags=frozenset())
    done = RUNNING.evolve(phase="done", finished=frozenset({3, 4, 5}))
    same = plan(s, RUN, done, POL, NOW)
    assert [sig(a) for a in same.actions] == [] and same.progress.phase == "done"
    new = plan(s, Intent(mode="controlled", run_id="r2"), done, POL, NOW)
    assert [sig(a) for a in new.actions] == FLAGS + HOLDS + [G % 3]
    assert new.progress.finished == frozenset() and new.progress.run_id == "r2"


@pytest.mark.parametrize("bad", [
    pytest.param(Intent(mode="controlled", concurrency=0), id="concurrency_0"),
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


def test_settling_osd_reserves_its_predicted_growth():
    """osd.3 finished (up, PGs recovering) at 300 MiB of a 500 MiB prediction: 200 MiB stay
    reserved on h1, so the next grant needs used + 200 MiB + 500 MiB <= budget (6553 MiB).
    At 5900 MiB used it does not fit: no grant, and no make-room either (a settling OSD is
    not restarted: it would come back with its missed history): the host waits for memory."""
    s = snap(osd(3, up=True, pgs_degraded=5), *HELD[1:], used={"h1": 5900 * MiB},
             cluster_flags=RUNF)
    p = RUNNING.evolve(finished=frozenset({3}), settling={3: NOW - 30}, observations=OBS3)
    res = plan(s, RUN, p, POL, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert res.summary["hosts"]["h1"]["waiting_on"] == "memory"
    stuck = plan(snap(osd(3, up=True, pgs_degraded=5, heap_release=False), *HELD[1:],
                      used={"h1": 5900 * MiB}, cluster_flags=RUNF, ok_to_stop={3: False}),
                 RUN, p, POL, NOW)
    assert [sig(a) for a in stuck.actions] == ["wait"]
    assert stuck.summary["hosts"]["h1"]["waiting_on"] == "memory"
    roomy = plan(snap(osd(3, up=True, pgs_degraded=5), *HELD[1:], used={"h1": 5500 * MiB},
                      cluster_flags=RUNF), RUN, p, POL, NOW)
    assert [sig(a) for a in roomy.actions] == [G % 4]


def test_settling_osd_past_its_peak_reserves_only_the_way_back():
    """osd.3 settles at 300 MiB after a 400 MiB peak (more than 5 % below it: its peak is
    behind it): h1 reserves 100 MiB for it, not the 200 MiB left to its 500 MiB prediction,
    so osd.4 (500 MiB) fits at 5950 MiB used (5950 + 100 + 500 <= 6553 MiB)."""
    s = snap(osd(3, up=True, pgs_degraded=5), *HELD[1:], used={"h1": 5950 * MiB},
             cluster_flags=RUNF)
    p = RUNNING.evolve(finished=frozenset({3}), settling={3: NOW - 30}, observations=OBS3,
                       peaks={3: 400 * MiB})
    assert [sig(a) for a in plan(s, RUN, p, POL, NOW).actions] == [G % 4]
    at_peak = p.evolve(peaks={3: 310 * MiB})
    assert [sig(a) for a in plan(s, RUN, at_peak, POL, NOW).actions] == ["wait"]

def test_restarting_osd_reserves_its_regrowth():
    """osd.4 was restarted 10 s ago to make room (it is in flight again: it reloads its PGs
    and peers) and sits at 100 MiB of a 500 MiB prediction: 400 MiB stay reserved on h1, so
    with a second slot free (concurrency 2, warmed up) osd.5 (500 MiB) is granted only when
    used + 400 + 500 MiB <= budget (6553 MiB)."""
    two = Intent(mode="controlled", run_id="r1", concurrency=2)
    back = osd(4, process="running", rss_bytes=100 * MiB, process_started_at=NOW - 10)
    p = RUNNING.evolve(finished=frozenset({3, 4}), held_osds=frozenset({5}),
                       restarted={4: NOW - 10}, observations=OBS3)
    tight = snap(osd(3, up=True, pgs_inactive=0), back, HELD[2], used={"h1": 5800 * MiB},
                 cluster_flags=RUNF)
    assert [sig(a) for a in plan(tight, two, p, POL, NOW).actions] == ["wait"]
    roomy = snap(osd(3, up=True, pgs_inactive=0), back, HELD[2], used={"h1": 5600 * MiB},
                 cluster_flags=RUNF)
    assert [sig(a) for a in plan(roomy, two, p, POL, NOW).actions] == [G % 5]

def test_settled_peak_replaces_the_observation_made_at_finish():
    """The observation made when osd.3 finished was provisional (its peak so far, at least its
    load bound); once settled, its real peak (700 MiB) replaces it, higher or lower."""
    s = snap(osd(3, up=True, pgs_degraded=0, rss_bytes=700 * MiB), *HELD[1:],
             cluster_flags=RUNF)
    other = Observation(osd=4, pgs=16, downtime_s=60.0, pg_log_entries=0, peak_bytes=MiB)
    for first in (400 * MiB, 900 * MiB):
        at_finish = Observation(osd=3, pgs=16, downtime_s=3600.0, pg_log_entries=0,
                                peak_bytes=first)
        p = RUNNING.evolve(finished=frozenset({3}), settling={3: NOW - 300},
                           peaks={3: 650 * MiB}, observations=(at_finish, other),
                           downtime={3: 3600.0})
        res = plan(s, RUN, p, POL, NOW)
        assert [(ob.osd, ob.peak_bytes) for ob in res.progress.observations] == [
            (3, 700 * MiB), (4, MiB)]
        assert res.progress.settling == {} and 3 not in res.progress.peaks


def test_settling_waits_for_pg_stats_that_count_the_osd():
    """Right after boot the mgr's PG stats may not list the OSD in any PG yet (pgs 0, so 0
    degraded): that is not 'recovered', it keeps settling (and its growth stays reserved)."""
    p = RUNNING.evolve(finished=frozenset({3}), settling={3: NOW - 2}, peaks={3: 300 * MiB})
    stale = plan(snap(osd(3, up=True, pgs=0, pgs_degraded=0), *HELD[1:], cluster_flags=RUNF),
                 RUN, p, POL, NOW)
    assert stale.progress.settling == {3: NOW - 2}
    fresh = plan(snap(osd(3, up=True, pgs=16, pgs_degraded=0), *HELD[1:], cluster_flags=RUNF),
                 RUN, p, POL, NOW)
    assert fresh.progress.settling == {}


def test_learned_prediction_follows_a_settling_osd_that_grew():
    """With the real `learned` policy, a settling OSD that already peaked at 2 GiB (far above
    the prior) raises the next OSD's prediction before its own observation is recorded."""
    pol = resolve(RUN)
    p = RUNNING.evolve(finished=frozenset({3}), settling={3: NOW - 30},
                       peaks={3: 300 * MiB}, downtime={3: 3600.0})

    def predicted(rss):
        s = snap(osd(3, up=True, pgs_degraded=5, rss_bytes=rss), *HELD[1:], cluster_flags=RUNF)
        return plan(s, RUN, p, pol, NOW).summary["hosts"]["h1"]["predicted"]
    assert predicted(300 * MiB) < 2 * GiB <= predicted(2 * GiB)


def test_health_detail_is_capped_but_counts_every_host():
    hosts = ["h%d" % h for h in range(2, 80)]
    osds = tuple(OsdState(id=i, host=h, crush_path=("default", "r9", h), up=False, pgs=16,
                          down_since=NOW - 60) for i, h in enumerate(hosts))
    s = Snapshot(epoch=10, osds=osds)          # no helper anywhere
    res = plan(s, RUN, Progress(), POL, NOW)
    hc = {h.code: h for h in res.health}["RECOVERY_HELPER_MISSING"]
    assert hc.count == len(hosts) and len(hc.detail) == 51
    assert hc.detail[-1] == "... and %d more" % (len(hosts) - 50)


def test_finish_waits_for_pg_stats_that_count_the_osd():
    """An OSD up with pgs 0 (stale PG stats: no PG lists it yet) is not finished: PGs active
    is only known once the stats count it (or after PEERING_GRACE_S)."""
    p = RUNNING.evolve(granted={3: NOW - 30}, booting={3: NOW - 10})
    stale = plan(snap(osd(3, up=True, pgs=0, pgs_inactive=0), *HELD[1:], cluster_flags=RUNF),
                 RUN, p, POL, NOW)
    assert 3 in stale.progress.granted and 3 not in stale.progress.finished
    fresh = plan(snap(osd(3, up=True, pgs=16, pgs_inactive=0), *HELD[1:], cluster_flags=RUNF),
                 RUN, p, POL, NOW)
    assert 3 in fresh.progress.finished and 3 not in fresh.progress.granted
