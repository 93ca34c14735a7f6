"""plan() and the recovery throttle (ceph_recovery.throttle): on a host over its budget the
returning OSDs still recovering get osd_recovery_max_active=1 and osd_max_backfills=1,
recorded write-ahead and restored when the host is back at 0.9 x budget, when the OSD
settles, at abort and after the run (also after a failover: the saved values come back from
the stored progress). And the ETA of a host waiting for memory. Snapshots in, exact actions
out (plancases.py)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from ceph_recovery.actions import Done, SetConfig
from ceph_recovery.model import HealthCheck, Intent
from ceph_recovery.persist import progress_from_json, progress_to_json
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policies import REGISTRY
from ceph_recovery.result import PlanResult
from ceph_recovery.throttle import memory_eta
from plancases import NOUP, NOW, POL, RUN, RUNF, RUNNING, GiB, MiB, osd, sig, snap

POLT = replace(POL, throttle=REGISTRY["throttle"]["recovery_min"])
ACT, BF = "osd_recovery_max_active", "osd_max_backfills"
# h1: osd.3 came back (settling, 8 PGs degraded, 2 GiB, its peak 2.5 GiB 50 s ago), osd.4/5 held
BACK3 = osd(3, up=True, rss_bytes=2 * GiB, pgs_inactive=0, pgs_degraded=8, recovery_config=())
HELD45 = [osd(i, flags=NOUP) for i in (4, 5)]
SETTLING = RUNNING.evolve(finished=frozenset({3}), held_osds=frozenset({4, 5})).with_columns(
    settling={3: NOW - 60}, peaks={3: 5 * GiB // 2}, grew_at={3: NOW - 50})
SAVED = {"osd.3 %s" % ACT: None, "osd.3 %s" % BF: None}
THROTTLED = SETTLING.evolve(saved_config=SAVED)
BUDGET = int(8 * GiB * 0.8)


def run(used, progress, *osds, intent=RUN, pol=POLT):
    s = snap(*(osds or (BACK3,) + tuple(HELD45)), cluster_flags=RUNF, used={"h1": used})
    res = plan(s, intent, progress, pol, NOW)
    assert check_invariants(s, intent, progress, res, pol, NOW) == []
    return res


OVER = 6 * GiB + 512 * MiB       # > budget 6554 MiB, < the brake's 0.9 x 8 GiB


def test_a_host_over_budget_throttles_its_recovering_osd_first():
    """h1 at 6656 MiB > budget 6554 MiB: both settings on osd.3, recorded with the value
    before (none: it had no setting of its own), then the over_budget policy's heap release
    and the ok-to-stop watch. Under the budget (6 GiB) nothing is throttled."""
    res = run(OVER, SETTLING)
    assert [sig(a) for a in res.actions] == [
        "set_config name=%s value=1 who=osd.3" % ACT,
        "set_config name=%s value=1 who=osd.3" % BF,
        "heap_release osd=3",
        "query_ok_to_stop osd=3"]
    assert res.progress.saved_config == SAVED
    assert "throttle its recovery first" in res.actions[0].reason
    again = run(OVER, res.progress, *(BACK3,) + tuple(HELD45))  # nothing is set twice
    assert not [a for a in again.actions if isinstance(a, SetConfig)]
    # under the budget osd.4 does not fit either: room is made (osd.3's PGs are all active)
    assert [sig(a) for a in run(6 * GiB, SETTLING).actions] == [
        "query_ok_to_stop osd=3", "heap_release osd=3"]


def test_the_value_before_is_the_osds_own_setting():
    own = replace(BACK3, recovery_config=((BF, "4"), ("osd_recovery_sleep", "0")))
    res = run(OVER, SETTLING, own, *HELD45)
    assert res.progress.saved_config == {"osd.3 %s" % ACT: None, "osd.3 %s" % BF: "4"}


def test_nothing_is_throttled_where_the_own_settings_are_unknown_or_nothing_recovers():
    unknown = replace(BACK3, recovery_config=None)
    assert [sig(a) for a in run(OVER, SETTLING, unknown, *HELD45).actions] == [
        "heap_release osd=3", "query_ok_to_stop osd=3"]
    clean = replace(BACK3, pgs_degraded=0)      # settled this tick: not recovering
    assert not [a for a in run(OVER, SETTLING, clean, *HELD45).actions
                if isinstance(a, SetConfig)]
    assert not [a for a in run(OVER, SETTLING, pol=POL).actions   # no throttle policy
                if isinstance(a, SetConfig)]


def test_restored_below_the_release_line_not_between_the_lines():
    """Below 0.9 x budget both come back (sorted keys), then osd.4 fits and is granted;
    between 0.9 x budget and the budget nothing flips."""
    low = run(4 * GiB, THROTTLED)
    assert [sig(a) for a in low.actions] == [
        "restore_config name=%s who=osd.3" % BF, "restore_config name=%s who=osd.3" % ACT,
        "grant_start host=h1 osd=4 predicted_bytes=%d" % (500 * MiB)]
    assert low.progress.saved_config == {}
    mid = run(int(0.95 * BUDGET), THROTTLED)
    assert not [a for a in mid.actions if a.kind in ("restore_config", "set_config")]
    assert mid.progress.saved_config == SAVED


def test_restored_when_the_osd_settles_even_on_a_tight_host():
    clean = replace(BACK3, pgs_degraded=0)
    res = run(OVER, THROTTLED, clean, *HELD45)
    assert [sig(a) for a in res.actions][:2] == [
        "restore_config name=%s who=osd.3" % BF, "restore_config name=%s who=osd.3" % ACT]
    assert res.progress.saved_config == {}


def test_over_budget_throttle_comes_before_restart_and_brake():
    """glibc host over budget (7 GiB > 6554 MiB) and over the kernel line (0.9 x 8 GiB):
    the throttle first, then, osd.3 being still peering (not restartable), the brake stops
    it (it outgrew its 500 MiB prediction; ok-to-stop cleared it), held again. The stopped
    OSD no longer recovers: its settings come back in the next tick. With all its PGs
    active the over_budget policy restarts it instead (it is not held: it comes back)."""
    glibc = replace(BACK3, heap_release=False, rss_bytes=3 * GiB, pgs_inactive=2)
    s = snap(glibc, *HELD45, cluster_flags=RUNF, used={"h1": 7 * GiB + 512 * MiB},
             ok_to_stop={3: True})
    res = plan(s, RUN, SETTLING, POLT, NOW)
    assert check_invariants(s, RUN, SETTLING, res, POLT, NOW) == []
    assert [sig(a) for a in res.actions] == [
        "hold_osd osd=3",
        "set_config name=%s value=1 who=osd.3" % ACT,
        "set_config name=%s value=1 who=osd.3" % BF,
        "stop_osd host=h1 osd=3"]
    stopped = replace(glibc, up=False, process="stopped", rss_bytes=0, flags=NOUP)
    nxt = plan(snap(stopped, *HELD45, cluster_flags=RUNF), RUN, res.progress, POLT, NOW + 5)
    assert [sig(a) for a in nxt.actions if "config" in a.kind] == [
        "restore_config name=%s who=osd.3" % BF, "restore_config name=%s who=osd.3" % ACT]
    active = replace(s, osds=tuple(replace(o, pgs_inactive=0) if o.id == 3 else o
                                   for o in s.osds))
    res = plan(active, RUN, SETTLING, POLT, NOW)
    assert check_invariants(active, RUN, SETTLING, res, POLT, NOW) == []
    assert [sig(a) for a in res.actions] == [
        "set_config name=%s value=1 who=osd.3" % ACT,
        "set_config name=%s value=1 who=osd.3" % BF,
        "restart_osd host=h1 osd=3"]


@pytest.mark.parametrize("mode", ["abort", "idle"])
def test_saved_settings_survive_a_failover_and_are_restored_at_abort(mode):
    """The stored progress (JSON, as the mgr keeps it) carries the values before; a new mgr
    that reads it and is told to abort (or stop: idle) restores them with the flags."""
    stored = progress_from_json(progress_to_json(THROTTLED))
    assert stored.saved_config == SAVED
    res = run(6 * GiB, stored, intent=replace(RUN, mode=mode))
    assert [sig(a) for a in res.actions] == [
        "restore_config name=%s who=osd.3" % BF, "restore_config name=%s who=osd.3" % ACT,
        "unset_flag flag=noout", "unset_flag flag=norebalance"]
    assert res.progress.saved_config == {} and res.progress.phase == "aborted"


def test_a_run_done_before_its_restore_went_out_restores_after_the_run():
    """Done was stored, the mgr failed over before the RestoreConfig ran: the next tick (no
    run any more) restores what is still saved."""
    done = THROTTLED.evolve(phase="done", finished_at=NOW - 600).with_columns(settling={})
    s = snap(replace(BACK3, pgs_degraded=0), *[replace(o, up=True, flags=frozenset(),
                                                        process="running") for o in HELD45])
    res = plan(s, RUN, progress_from_json(progress_to_json(done)), POLT, NOW)
    assert [sig(a) for a in res.actions] == [
        "restore_config name=%s who=osd.3" % BF, "restore_config name=%s who=osd.3" % ACT]


def test_invariant_i9_names_a_setting_left_changed_at_the_end():
    s = snap(cluster_flags=RUNF)
    bad = PlanResult((Done(reason="x"),), RUNNING.evolve(phase="done", saved_config=SAVED), (),
                     {"time": NOW})
    errs = check_invariants(s, RUN, RUNNING, bad, POLT, NOW)
    assert [e for e in errs if e.startswith("I9")] == [
        "I9: osd.3 %s left changed at the end and not named by RECOVERY_SETTING_KEPT" % x
        for x in (BF, ACT)]
    kept = HealthCheck("RECOVERY_SETTING_KEPT", "warning", "s",
                       ("h1: osd_memory_target kept lowered on osd.3: ...",))
    ok = bad._replace(health=(kept,)) if hasattr(bad, "_replace") else PlanResult(
        bad.actions, bad.progress, (kept,), bad.summary)
    assert not [e for e in check_invariants(s, RUN, RUNNING, ok, POLT, NOW) if "I9" in e]
    ahead = PlanResult((SetConfig(reason="x", who="osd.3", name=ACT, value="1"),), RUNNING,
                       (), {"time": NOW})
    assert "I9: osd.3 %s set without its value before in saved_config" % ACT in \
        check_invariants(s, RUN, RUNNING, ahead, POLT, NOW)


def test_memory_eta_from_the_measured_shrink():
    # 0.5 GiB shed in 50 s = 10.24 MiB/s; 100 MiB to go: ~9.8 s
    e = memory_eta(100 * MiB, [(2 * GiB, 5 * GiB // 2, NOW - 50, NOW - 60)], NOW, 900.0)
    assert e["rate"] == pytest.approx(512 * MiB / 50)
    assert e["eta_s"] == pytest.approx(100 * 50 / 512)
    assert e["latest_s"] == 840.0
    assert memory_eta(-1, [(2 * GiB, 2 * GiB, NOW - 50, NOW - 60)], NOW, 900.0) == {
        "rate": 0.0, "eta_s": 0.0, "latest_s": 840.0}        # fits once it settles
    assert memory_eta(GiB, [(2 * GiB, 2 * GiB, NOW - 50, NOW - 60)], NOW, 900.0)["eta_s"] \
        is None                                                # nothing sheds: no ETA
    assert memory_eta(GiB, [], NOW, 900.0) == {"rate": 0.0, "eta_s": None, "latest_s": None}


def test_a_host_waiting_for_memory_says_what_and_when_in_the_summary():
    """osd.3 settles with PGs still peering (not restartable): h1 waits for it."""
    res = run(6 * GiB, THROTTLED, replace(BACK3, pgs_inactive=2), *HELD45)
    need = 6 * GiB + 500 * MiB - BUDGET
    eta = need / (512 * MiB / 50.0)
    h1 = res.summary["hosts"]["h1"]
    assert (h1["waiting_on"], h1["waiting_for"]) == ("memory", "settling osd.3")
    assert h1["eta_s"] == pytest.approx(eta)
    line = [r for r in res.summary["reasons"] if r.startswith("h1 waits for")]
    assert line == ["h1 waits for settling osd.3 to fit osd.4 (needs %.0f MiB more): ETA ~%.0f "
                    "s at the measured shrink of 10 MiB/s, they settle within 840 s at the "
                    "latest" % (need / MiB, eta)]


def test_intent_has_no_throttle_name_and_resolve_gives_the_default():
    from ceph_recovery.policies import resolve
    assert resolve(Intent()).throttle is REGISTRY["throttle"]["recovery_min"]


OVR, PROF = "osd_mclock_override_recovery_settings", "osd_mclock_profile"
MCLOCK3 = replace(BACK3, op_queue="mclock_scheduler")


def test_an_mclock_osd_gets_the_override_before_the_settings_it_makes_count():
    """Under mClock the two settings count only behind the override on that OSD: it goes
    first, each is recorded (none of its own), and all three come back below the line."""
    res = run(OVER, SETTLING, MCLOCK3, *HELD45)
    assert [sig(a) for a in res.actions] == [
        "set_config name=%s value=true who=osd.3" % OVR,
        "set_config name=%s value=1 who=osd.3" % ACT,
        "set_config name=%s value=1 who=osd.3" % BF,
        "heap_release osd=3",
        "query_ok_to_stop osd=3"]
    assert res.progress.saved_config == dict(SAVED, **{"osd.3 %s" % OVR: None})
    low = run(4 * GiB, res.progress, MCLOCK3, *HELD45)
    assert [sig(a) for a in low.actions if "config" in a.kind] == [
        "restore_config name=%s who=osd.3" % BF,
        "restore_config name=%s who=osd.3" % OVR,
        "restore_config name=%s who=osd.3" % ACT]


def test_an_mclock_osds_own_override_and_profile_are_what_comes_back():
    own = replace(MCLOCK3, recovery_config=((OVR, "false"), (PROF, "balanced")))
    pol = replace(POL, throttle=REGISTRY["throttle"]["recovery_min_sleep"])
    res = run(OVER, SETTLING, own, *HELD45, pol=pol)
    assert [sig(a) for a in res.actions if a.kind == "set_config"] == [
        "set_config name=%s value=true who=osd.3" % OVR,
        "set_config name=%s value=1 who=osd.3" % ACT,
        "set_config name=%s value=1 who=osd.3" % BF,
        "set_config name=%s value=high_client_ops who=osd.3" % PROF]
    assert res.progress.saved_config == {"osd.3 %s" % OVR: "false", "osd.3 %s" % ACT: None,
                                         "osd.3 %s" % BF: None, "osd.3 %s" % PROF: "balanced"}


@pytest.mark.parametrize("op_queue", ["wpq", None])
def test_a_wpq_or_unknown_scheduler_never_gets_an_mclock_option(op_queue):
    """Pacific's mon does not know the override (the lab's 16.2.15: `option not found`):
    only the settings wpq reads, which an mClock OSD would ignore."""
    pol = replace(POL, throttle=REGISTRY["throttle"]["recovery_min_sleep"])
    res = run(OVER, SETTLING, replace(BACK3, op_queue=op_queue), *HELD45, pol=pol)
    assert [sig(a) for a in res.actions if a.kind == "set_config"] == [
        "set_config name=%s value=1 who=osd.3" % ACT,
        "set_config name=%s value=1 who=osd.3" % BF,
        "set_config name=osd_recovery_sleep value=0.1 who=osd.3"]
