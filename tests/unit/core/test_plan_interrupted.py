"""Interrupted plans: re-plan from every intermediate state of a run and still converge.

A run of the deterministic stepper model (tests/stepper.py) is recorded once; then, for
every tick k, the run is replayed to k and interrupted in one of four ways before it goes on:
  reload     progress goes through the JSON store (mgr failover with a fresh store)
  lost_save  the actions of tick k-1 were carried out but its new progress was never saved
             (the mgr resumes from the progress before tick k-1)
  dropped    the actions of tick k never reached the cluster (lost commands)
  stale      the next snapshot the planner sees is an old one (lower epoch)
Each continuation must end all-up with Done, without an OOM kill, restoring the cluster flags,
and check_invariants must hold on every tick.
"""
from __future__ import annotations

import copy

import pytest

from ceph_recovery.model import RUN_CLUSTER_FLAGS, Intent, Progress
from ceph_recovery.persist import progress_from_json, progress_to_json
from ceph_recovery.restore import RESTORE_RETRY_S
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policies import resolve
from stepper import drive, make_model

MiB = 1 << 20
DT = 5.0


def scenario(name):
    if name == "one_host_down":
        return make_model(hosts=2, per_host=3, down_hosts=(1,), ram=2048 * MiB), \
            Intent(mode="controlled", run_id="r1")
    if name == "rack_down_concurrency_2":
        return make_model(hosts=4, per_host=3, down_hosts=(1, 3), racks=2, ram=3072 * MiB), \
            Intent(mode="controlled", run_id="r1", concurrency=2)
    raise KeyError(name)


def record(model, intent):
    """Decision the planner to the end, keeping a copy of (model, progress) before every tick."""
    pol = resolve(intent)
    states = []
    progress = Progress()
    for _ in range(300):
        states.append((copy.deepcopy(model), progress))
        snap = model.snapshot()
        res = plan(snap, intent, progress, pol, model.now)
        progress = res.progress
        model.apply(res.actions)
        if any(a.kind == "done" for a in res.actions):
            return states
        model.step(DT)
    raise AssertionError("baseline run did not finish")


def finish_from(model, intent, progress, drop=None):
    pol = resolve(intent)
    final, hist = drive(model, intent, progress, pol, plan, check_invariants, ticks=400, dt=DT,
                        drop=drop)
    assert final.phase == "done", (final.phase, hist[-1][2].health)
    # after Done the planner still repairs lost flag restores (sent again every
    # RESTORE_RETRY_S until the OSD map shows them)
    for _ in range(int(RESTORE_RETRY_S / DT) + 2):
        model.step(DT)
        snap = model.snapshot()
        res = plan(snap, intent, final, pol, model.now)
        assert check_invariants(snap, intent, final, res, pol, now=model.now) == []
        assert all(a.kind in ("unset_flag",) for a in res.actions), res.actions
        final = res.progress
        model.apply(res.actions)
    assert not final.restoring_flags and not final.restoring
    assert model.all_up() and model.oom_kills == 0
    assert not (set(RUN_CLUSTER_FLAGS) & model.cluster_flags)
    assert not model.bucket_noup and not any(o.noup for o in model.osds.values())
    return final, hist


@pytest.mark.parametrize("name", ["one_host_down", "rack_down_concurrency_2"])
def test_baseline_run_converges(name):
    model, intent = scenario(name)
    final, hist = finish_from(model, intent, Progress())
    starts = [a for _, _, r in hist for a in r.actions if a.kind == "grant_start"]
    assert len({a.osd for a in starts}) == len(final.finished) > 0


@pytest.mark.parametrize("how", ["reload", "lost_save", "dropped", "stale"])
@pytest.mark.parametrize("name", ["one_host_down", "rack_down_concurrency_2"])
def test_interrupt_at_every_tick_converges(name, how):
    model, intent = scenario(name)
    states = record(model, intent)
    pol = resolve(intent)
    for k in range(1, len(states)):
        m, progress = copy.deepcopy(states[k][0]), states[k][1]
        if how == "reload":
            progress = progress_from_json(progress_to_json(progress))
        elif how == "lost_save":
            if k == 1:
                continue      # see test_lost_save_of_the_first_tick_loses_the_saved_flags
            progress = states[k - 1][1]   # tick k-1 was carried out, its progress not saved
        elif how == "dropped":
            finish_from(m, intent, progress, drop=lambda i, acts, k=k: () if i == 0 else acts)
            continue
        elif how == "stale":
            old = states[k - 1][0].snapshot()
            res = plan(old, intent, progress, pol, m.now)
            if old.epoch < progress.epoch:
                assert [a.kind for a in res.actions] == ["wait"] and res.progress is progress
        finish_from(m, intent, progress)


def test_resume_does_not_start_a_granted_osd_twice():
    """After a reload, an OSD granted before the failover is not granted again while its
    process runs: the stored `granted` marker keeps it in flight."""
    model, intent = scenario("one_host_down")
    states = record(model, intent)
    pol = resolve(intent)
    seen = 0
    for m, progress in states:
        if not progress.osd_map("granted"):
            continue
        back = progress_from_json(progress_to_json(progress))
        res = plan(m.snapshot(), intent, back, pol, m.now)
        running = {o.id for o in m.osds.values() if o.running}
        regrants = [a.osd for a in res.actions if a.kind == "grant_start" and a.osd in running]
        assert regrants == []
        seen += 1
    assert seen > 0


def test_lost_save_of_the_first_tick_loses_the_saved_flags():
    """Why shells must persist the new progress BEFORE carrying out the actions: if the first
    tick's SetFlag is carried out and its progress lost, the next first tick saves the run's
    own flags as the operator's and never restores them."""
    model, intent = scenario("one_host_down")
    states = record(model, intent)
    m = copy.deepcopy(states[1][0])
    assert set(RUN_CLUSTER_FLAGS) <= m.cluster_flags
    final, _ = drive(m, intent, Progress(), resolve(intent), plan, check_invariants,
                     ticks=400, dt=DT)
    assert final.phase == "done" and final.saved_flags == frozenset(RUN_CLUSTER_FLAGS)
    assert set(RUN_CLUSTER_FLAGS) <= m.cluster_flags
