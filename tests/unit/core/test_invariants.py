"""check_invariants() finds each kind of violation in a hand-made (wrong) PlanResult, and
nothing in plan()'s own answer for the same inputs."""
from __future__ import annotations

import pytest

from ceph_recovery.actions import (AllowBoot, Done, GrantStart, HoldOsd, ReleaseBucket,
                                   RestartOsd, UnsetFlag, Wait)
from ceph_recovery.model import (OSD_FIELDS, HealthCheck, HostMem, Intent, OsdState, Progress,
                                 Snapshot)
from ceph_recovery.plan import PlanResult, check_invariants, plan
from ceph_recovery.policies import resolve

MiB, GiB = 1 << 20, 1 << 30
NOW = 5000.0
NOUP = frozenset({"noup"})


def osd(i, up, **kw):
    host = "h%d" % (i // 2)
    kw.setdefault("flags", frozenset() if up else NOUP)
    return OsdState(id=i, host=host, crush_path=("default", "r1", host), up=up,
                    process="running" if up else "stopped", rss_bytes=800 * MiB if up else 0,
                    pgs=10, **kw)


SNAP = Snapshot(epoch=20, osds=(osd(0, True), osd(1, True), osd(2, False), osd(3, False)),
                hosts=tuple(HostMem(name=h, mem_total=4 * GiB, mem_used=GiB,
                                    mem_available=3 * GiB) for h in ("h0", "h1")),
                ok_to_stop={0: True, 1: False}, cluster_flags=frozenset({"noout"}))
# osd.3 logged the PG log dups warning at its last start (ceph_recovery.dups)
SNAP_DUPS = Snapshot(epoch=20, osds=SNAP.osds[:3] + (osd(3, False, pglog_dups=1),),
                     hosts=SNAP.hosts, ok_to_stop=SNAP.ok_to_stop,
                     cluster_flags=SNAP.cluster_flags)
INTENT = Intent(mode="controlled", run_id="r", concurrency=1)   # one at a time
PROG = Progress(run_id="r", phase="running", epoch=20, saved_flags=frozenset(),
                held_osds=frozenset({2, 3}))
POL = resolve(INTENT)


def result(actions, progress=None, health=(), **changes):
    maps = {k: changes.pop(k) for k in list(changes) if k in OSD_FIELDS}
    p = progress or PROG.evolve(**changes).with_columns(**maps)
    return PlanResult(tuple(actions), p, tuple(health), {"time": NOW})


def grant(i, predicted=500 * MiB):
    return GrantStart(osd=i, host="h%d" % (i // 2), predicted_bytes=predicted, reason="t")


HEALTH = (HealthCheck(code="RECOVERY_X", severity="warning", summary="why"),)

BAD = [
    pytest.param(SNAP, PROG.evolve(epoch=21), result([grant(2)], progress=PROG.evolve(epoch=21)),
                 "I1: stale epoch", id="acts_on_stale_epoch"),
    pytest.param(SNAP, PROG, result([], health=HEALTH, epoch=19), "I1: new progress epoch",
                 id="epoch_not_recorded"),
    pytest.param(SNAP, PROG, result([grant(2), grant(3)], granted={2: NOW, 3: NOW}),
                 "I2: host h1 has 2 in flight", id="two_in_flight_concurrency_1"),
    pytest.param(SNAP, PROG, result([grant(2, 40 * GiB)], granted={2: NOW}),
                 "I3: grants on h1 need", id="grant_over_budget"),
    pytest.param(SNAP, PROG, result([grant(0)], granted={0: NOW}), "I3: osd.0 granted but is not",
                 id="grant_of_up_osd"),
    pytest.param(Snapshot(epoch=20, osds=SNAP.osds, hosts=SNAP.hosts[:1]), PROG,
                 result([grant(2)], granted={2: NOW}), "I3: osd.2 granted on h1 without a fresh",
                 id="grant_without_helper"),
    pytest.param(SNAP, PROG, result([RestartOsd(osd=1, host="h0", reason="t")],
                                    restarted={1: NOW}), "I4: restart of osd.1 without",
                 id="restart_with_ok_to_stop_false"),
    pytest.param(SNAP, PROG.with_columns(restarted={0: NOW - 10}),
                 result([RestartOsd(osd=0, host="h0", reason="t")], restarted={0: NOW}),
                 "I4: osd.0 restarted again", id="restart_within_cooldown"),
    pytest.param(Snapshot(epoch=20, osds=SNAP.osds, hosts=SNAP.hosts,
                          ok_to_stop={0: True, 1: True}, cluster_flags=SNAP.cluster_flags),
                 PROG, result([RestartOsd(osd=0, host="h0", reason="t"),
                               RestartOsd(osd=1, host="h0", reason="t")],
                              restarted={0: NOW, 1: NOW}),
                 "I4: more than one restart in one tick", id="two_restarts_in_one_tick"),
    pytest.param(Snapshot(epoch=20, osds=(osd(0, True), osd(1, True), osd(2, False, flags=()),
                                          osd(3, False, flags=())), hosts=SNAP.hosts,
                          bucket_flags={"h1": NOUP}),
                 PROG, result([ReleaseBucket(bucket="h1", reason="t"), HoldOsd(osd=2, reason="t"),
                               HoldOsd(osd=3, reason="t")], health=HEALTH),
                 "I5: hold_osd at #1 comes after a ReleaseBucket", id="release_before_holds"),
    pytest.param(Snapshot(epoch=20, osds=(osd(0, True), osd(1, True), osd(2, False, flags=()),
                                          osd(3, False)), hosts=SNAP.hosts), PROG,
                 result([grant(2)], granted={2: NOW}), "I5: osd.2 granted without a per-OSD",
                 id="grant_without_noup"),
    pytest.param(SNAP, PROG, result([grant(2)], granted={2: NOW}), None, id="valid_grant"),
    pytest.param(SNAP, PROG.with_columns(granted={2: NOW - 20}),
                 result([AllowBoot(osd=2, reason="t")], granted={2: NOW - 20}, booting={2: NOW}),
                 None, id="valid_allow_boot"),
    pytest.param(SNAP, PROG, result([AllowBoot(osd=3, reason="t")], health=HEALTH),
                 "I6: AllowBoot osd.3 that this run did not grant", id="allow_boot_not_granted"),
    pytest.param(SNAP, PROG, result([UnsetFlag(flag="noout", reason="t"), Wait(reason="t")],
                                    health=HEALTH), "I6: UnsetFlag noout outside Done",
                 id="unset_flag_mid_run"),
    pytest.param(SNAP, PROG.evolve(saved_flags=frozenset({"noout"})),
                 result([UnsetFlag(flag="noout", reason="t"), Done(reason="t")], phase="done",
                        saved_flags=frozenset({"noout"})),
                 "I6: UnsetFlag noout that the run did not set", id="unset_operator_flag"),
    pytest.param(SNAP, PROG, result([Done(reason="t"), Wait(reason="t")], phase="done"),
                 "I6: Done is not the last", id="done_not_last"),
    pytest.param(SNAP, PROG, result([Wait(reason="t")]), "I7: 2 candidate(s) left",
                 id="stuck_without_health"),
    pytest.param(SNAP_DUPS, PROG.with_columns(granted={2: NOW - 10}),
                 result([grant(3)], granted={2: NOW - 10, 3: NOW}),
                 "I11: osd.3 may load inflated PG log dups, in flight on h1 beside osd.2",
                 id="dups_suspect_granted_beside_a_start"),
    pytest.param(SNAP_DUPS, PROG.with_columns(granted={3: NOW - 10}),
                 result([grant(2)], granted={2: NOW, 3: NOW - 10}),
                 "I11: osd.3 may load inflated PG log dups, in flight on h1 beside osd.2",
                 id="start_granted_beside_a_dups_suspect"),
]


@pytest.mark.parametrize("snap,progress,res,needle", BAD)
def test_checker_finds_violation(snap, progress, res, needle):
    errs = check_invariants(snap, INTENT, progress, res, POL, now=NOW)
    if needle is None:
        assert errs == []
    else:
        assert any(e.startswith(needle) for e in errs), errs


def test_grant_while_paused_is_a_violation():
    paused = Intent(mode="paused", run_id="r")
    errs = check_invariants(SNAP, paused, PROG, result([grant(2)], granted={2: NOW}), POL,
                            now=NOW)
    assert any(e.startswith("I6: grant_start osd.2 while mode is paused") for e in errs), errs


def test_operator_held_bucket_release_is_a_violation():
    held = Intent(mode="controlled", run_id="r", holds=frozenset({"h1"}))
    res = result([ReleaseBucket(bucket="h1", reason="t")], health=HEALTH)
    errs = check_invariants(SNAP, held, PROG, res, POL, now=NOW)
    assert "I5: operator-held bucket h1 released" in errs


@pytest.mark.parametrize("snap,progress", [(b.values[0], b.values[1]) for b in BAD])
def test_plan_itself_passes_on_the_same_inputs(snap, progress):
    res = plan(snap, INTENT, progress, POL, NOW)
    assert check_invariants(snap, INTENT, progress, res, POL, now=NOW) == []
