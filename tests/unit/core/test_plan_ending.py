"""plan() when memory cannot bring every OSD back: the run ends after STALL_END_S without a
start that fits, restores the flags it set, keeps the OSDs that did not fit held and names them
in RECOVERY_INCOMPLETE; and it records when service (every PG active) was restored.
On the cluster described in plancases.py; snapshots in, exact actions out."""
from __future__ import annotations

from ceph_recovery.ending import STALL_END_S
from ceph_recovery.plan import check_invariants, plan
from plancases import (FAT3, HELD, NOW, OVER, POL, ROOM, ROOMP, RUN, RUNF, RUNNING, GiB,  # conftest.py
                       MiB, sig, snap)

# h1 at 6.3 GiB used of its 6.4 GiB budget: no 500 MiB start fits, nothing to restart on it
# (its OSDs are all down), heap release impossible
FULL = snap(*HELD, used={"h1": int(6.3 * GiB)}, cluster_flags=RUNF, pgs_total=100,
            pgs_active=90)


def test_a_stalled_run_waits_then_ends_incomplete_restoring_its_flags():
    first = plan(FULL, RUN, RUNNING, POL, NOW)
    assert [sig(a) for a in first.actions] == ["wait"]
    assert first.progress.stalled_since == NOW
    assert "RECOVERY_BUDGET_TOO_SMALL" in [h.code for h in first.health]
    assert check_invariants(FULL, RUN, RUNNING, first, POL, NOW) == []
    later = plan(FULL, RUN, first.progress, POL, NOW + STALL_END_S - 1)
    assert [sig(a) for a in later.actions] == ["wait"]
    end = plan(FULL, RUN, first.progress, POL, NOW + STALL_END_S)
    assert [sig(a) for a in end.actions] == [
        "unset_flag flag=noout", "unset_flag flag=norebalance", "done"]
    assert end.progress.phase == "done"
    inc = [h for h in end.health if h.code == "RECOVERY_INCOMPLETE"]
    assert inc and inc[0].count == 3
    assert inc[0].detail[0].startswith("h1: osd.3,4,5 still down and held (noup): needs ")
    # the holds stay (no AllowBoot for 3, 4, 5), and the check stays raised after the run
    after = plan(FULL, RUN, end.progress, POL, NOW + STALL_END_S + 5)
    assert not [a for a in after.actions if a.kind in ("allow_boot", "grant_start")]
    assert [h.code for h in after.health if h.code == "RECOVERY_INCOMPLETE"] == [
        "RECOVERY_INCOMPLETE"]


def test_the_stall_limit_is_the_operators_and_survives_persistence():
    """The module's stall_limit (90 s here) ends the same stalled run at 90 s, not before."""
    from dataclasses import replace
    from ceph_recovery.persist import intent_from_dict, intent_to_dict
    run = replace(RUN, stall_limit_s=90.0)
    assert intent_from_dict(intent_to_dict(run)).stall_limit_s == 90.0
    first = plan(FULL, run, RUNNING, POL, NOW)
    assert [sig(a) for a in plan(FULL, run, first.progress, POL, NOW + 89).actions] == ["wait"]
    end = plan(FULL, run, first.progress, POL, NOW + 90)
    assert end.progress.phase == "done" and [sig(a) for a in end.actions][-1] == "done"


def test_leave_out_marks_the_osds_left_down_out_in_the_tick_that_ends_the_run():
    """--leave-out: the same stalled run ends with the flags restored, then osd.3,4,5 marked
    out (Ceph re-replicates), then Done; the holds stay and the health check says so."""
    from dataclasses import replace
    run = replace(RUN, leave_out=True)
    first = plan(FULL, run, RUNNING, POL, NOW)
    assert not [a for a in first.actions if a.kind == "mark_out"]
    end = plan(FULL, run, first.progress, POL, NOW + STALL_END_S)
    assert [sig(a) for a in end.actions] == [
        "unset_flag flag=noout", "unset_flag flag=norebalance",
        "mark_out osd=3", "mark_out osd=4", "mark_out osd=5", "done"]
    assert check_invariants(FULL, run, first.progress, end, POL, NOW + STALL_END_S) == []
    inc = [h for h in end.health if h.code == "RECOVERY_INCOMPLETE"][0]
    assert "marked out (--leave-out)" in inc.detail[0]
    # without the option the same end marks nothing out, and the invariant rejects a MarkOut
    plain = plan(FULL, RUN, first.progress, POL, NOW + STALL_END_S)
    assert check_invariants(FULL, RUN, first.progress, end, POL, NOW + STALL_END_S) == [
        "I8: MarkOut without --leave-out"]
    assert not [a for a in plain.actions if a.kind == "mark_out"]


def test_the_tick_that_ends_a_run_takes_back_its_make_room_restart():
    """At the stall limit a restart for room (h1's osd.3, cleared by ok-to-stop, for osd.5)
    would leave osd.3 down at the end for a start that will not come: the run ends without
    it, and its bookkeeping stays as it was."""
    room = snap(*ROOM, HELD[2], used={"h1": 6400 * MiB}, cluster_flags=RUNF,
                ok_to_stop={3: True, 4: True})
    running = plan(room, RUN, ROOMP, POL, NOW)
    assert [sig(a) for a in running.actions] == ["restart_osd host=h1 osd=3"]
    end = plan(room, RUN, ROOMP.evolve(stalled_since=NOW - STALL_END_S), POL, NOW)
    assert [sig(a) for a in end.actions] == [
        "unset_flag flag=noout", "unset_flag flag=norebalance", "done"]
    assert end.progress.osd_map("restarted") == ROOMP.osd_map("restarted")
    assert end.progress.osd_map("restart_rss") == {}
    assert end.progress.osd_map("fresh_rss") == ROOMP.osd_map("fresh_rss")


def test_the_tick_that_ends_a_run_keeps_a_restart_for_a_host_over_its_budget():
    """h1 over its budget (7 GiB, osd.3 fat, heap released, ok-to-stop cleared): that restart
    answers the budget, not a next start, and stays in the tick that ends the run."""
    over = snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF, ok_to_stop={3: True})
    p = RUNNING.evolve(finished=frozenset({3}), held_osds=frozenset({4, 5}),
                       stalled_since=NOW - STALL_END_S).with_columns(heap_released={3: NOW - 30})
    end = plan(over, RUN, p, POL, NOW)
    assert [sig(a) for a in end.actions] == [
        "restart_osd host=h1 osd=3", "unset_flag flag=noout", "unset_flag flag=norebalance",
        "done"]


def test_a_start_that_fits_resets_the_stall_clock():
    stalled = RUNNING.evolve(stalled_since=NOW - STALL_END_S + 10)
    roomy = snap(*HELD, used={"h1": 1 * GiB}, cluster_flags=RUNF)
    res = plan(roomy, RUN, stalled, POL, NOW)
    assert [sig(a) for a in res.actions] == [
        "grant_start host=h1 osd=3 predicted_bytes=%d" % (500 * MiB)]
    assert res.progress.stalled_since is None


def test_service_restored_is_recorded_once_every_pg_is_active():
    part = plan(FULL, RUN, RUNNING, POL, NOW)
    assert part.progress.service_at is None
    whole = snap(*HELD, used={"h1": int(6.3 * GiB)}, cluster_flags=RUNF, pgs_total=100,
                 pgs_active=100)
    res = plan(whole, RUN, part.progress, POL, NOW + 5)
    assert res.progress.service_at == NOW + 5
    assert res.summary["service_restored_at"] == NOW + 5
    again = plan(whole, RUN, res.progress, POL, NOW + 10)
    assert again.progress.service_at == NOW + 5


def test_service_lost_counts_each_ticks_inactive_pgs_until_the_next_tick():
    """PG-seconds without client I/O: a tick's PGs not active, held until the next tick; the
    first tick of a run only takes its count, a tick at the same time adds nothing."""
    def pgs(active):
        return snap(*HELD, used={"h1": int(6.3 * GiB)}, cluster_flags=RUNF, pgs_total=100,
                    pgs_active=active)
    first = plan(pgs(90), RUN, RUNNING, POL, NOW)
    assert (first.progress.inactive_pg_s, first.progress.inactive_seen) == (0.0, (NOW, 10))
    second = plan(pgs(97), RUN, first.progress, POL, NOW + 5)
    assert second.progress.inactive_pg_s == 50.0 and second.progress.inactive_seen == (NOW + 5, 3)
    same = plan(pgs(100), RUN, second.progress, POL, NOW + 5)
    assert same.progress.inactive_pg_s == 50.0
    third = plan(pgs(100), RUN, same.progress, POL, NOW + 9)
    assert third.progress.inactive_pg_s == 50.0 and third.summary["inactive_pg_s"] == 50.0
    fourth = plan(pgs(100), RUN, third.progress, POL, NOW + 14)
    assert fourth.progress.inactive_pg_s == 50.0


def test_heap_release_is_not_repeated_on_an_osd_that_did_not_grow():
    """osd.3 (up, 2 GiB) was released 200 s ago at 2 GiB: past the cooldown but it did not
    grow, so the policy moves on to ok-to-stop instead of releasing it again; once it grew
    100 MiB it may be released again."""
    from plancases import FAT3, OVER, osd
    s = snap(FAT3, *HELD[1:], used=OVER, cluster_flags=RUNF)
    p = RUNNING.with_columns(heap_released={3: NOW - 200}, heap_rss={3: 2 * GiB})
    res = plan(s, RUN, p, POL, NOW)
    assert [sig(a) for a in res.actions][:1] == ["query_ok_to_stop osd=3"]
    grown = snap(osd(3, up=True, process="running", rss_bytes=2 * GiB + 100 * MiB,
                     pgs_inactive=0), *HELD[1:], used=OVER, cluster_flags=RUNF)
    res = plan(grown, RUN, p, POL, NOW)
    assert [sig(a) for a in res.actions][:1] == ["heap_release osd=3"]
    assert res.progress.osd_map("heap_rss") == {3: 2 * GiB + 100 * MiB}


def test_an_osd_outgrowing_the_budget_is_stopped_before_the_kernel_kills_it():
    """osd.3, allowed to boot 9 s ago on a 500 MiB prediction, is at 1.6 GiB and h1 is over
    its budget and 90 % of its RAM (7.5 > 7.2 GiB) with nothing else to release or restart: with ok-to-stop True
    it is held and stopped, counted as a failed start, its peak learned; without an answer the
    run has asked for one already (watch) and does not stop it."""
    from ceph_recovery.model import Observation
    from plancases import osd
    grown = osd(3, up=True, process="running", rss_bytes=1600 * MiB, pgs_inactive=4)  # > 500
    p = RUNNING.evolve(held_osds=frozenset({4, 5})).with_columns(granted={3: NOW - 30},
                                                                 booting={3: NOW - 9},
                                                                 load_rss={3: 240 * MiB})
    s = snap(grown, *HELD[1:], used={"h1": int(7.5 * GiB)}, cluster_flags=RUNF,
             ok_to_stop={3: True})
    res = plan(s, RUN, p, POL, NOW)
    assert [sig(a) for a in res.actions] == ["hold_osd osd=3", "stop_osd host=h1 osd=3"]
    assert check_invariants(s, RUN, p, res, POL, NOW) == []
    assert res.progress.osd_map("failures") == {3: 1} and 3 not in res.progress.osd_map("granted")
    assert res.progress.observations[-1] == Observation(
        osd=3, pgs=16, downtime_s=0.0, pg_log_entries=0, peak_bytes=1600 * MiB)
    unknown = plan(snap(grown, *HELD[1:], used={"h1": int(7.5 * GiB)}, cluster_flags=RUNF),
                   RUN, p, POL, NOW)
    assert [sig(a) for a in unknown.actions] == ["query_ok_to_stop osd=3"]


def test_a_probe_whose_peak_does_not_fit_stays_in_preboot_and_the_run_still_ends():
    """osd.3 was started as a probe (its 500 MiB peak did not fit, its load did) and shows a
    flat 240 MiB load in preboot: 6.2 GiB used + 260 MiB to its peak > 6.4 GiB, so gate 2
    keeps it held (no allow_boot), says why, and the stall clock runs (a probe kept in preboot
    is not progress): the run ends after STALL_END_S instead of waiting on it forever."""
    from plancases import PRE3
    p = RUNNING.with_columns(granted={3: NOW - 30}, peaks={3: 240 * MiB})
    s = snap(PRE3, *HELD[1:], used={"h1": int(6.2 * GiB)}, cluster_flags=RUNF)
    res = plan(s, RUN, p, POL, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert any("osd.3 needs 260 MiB more to peak" in d for h in res.health
               if h.code == "RECOVERY_BUDGET_TOO_SMALL" for d in h.detail)
    assert res.progress.stalled_since == NOW
    end = plan(s, RUN, res.progress, POL, NOW + STALL_END_S)
    assert [sig(a) for a in end.actions][-1] == "done"
