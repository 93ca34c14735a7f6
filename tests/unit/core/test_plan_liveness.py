"""Every run ends, and leaves nothing behind: a grant whose OSD never comes up, a helper that
dies after a grant, a restore the mon refuses, an abort with a loaded OSD, a leftover flag
the next run finds. Model cluster (stepper.py) and plancases.py snapshots; no mocks."""
from __future__ import annotations

from dataclasses import replace

from ceph_recovery.model import RUN_CLUSTER_FLAGS, Intent, Progress
from ceph_recovery.persist import progress_from_json, progress_to_json
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policies import resolve
from ceph_recovery.restore import RESTORE_RETRY_S
from plancases import (HELD, NOW, POL, PRE3, RUN, RUNF, RUNNING, MiB, osd, sig,  # conftest.py
                       snap)
from stepper import make_model

DT = 5.0
LIVE = Intent(mode="controlled", run_id="r1", concurrency=1, boot_timeout_s=120.0,
              stall_limit_s=60.0)


def _run(model, intent, until, on_tick=None):
    """plan() against the model for `until` seconds of model time (invariants every tick);
    returns (final progress, [(now, result)])."""
    pol, progress, hist = resolve(intent), Progress(), []
    end = model.now + until
    while model.now < end:
        snap_ = model.snapshot()
        res = plan(snap_, intent, progress, pol, model.now)
        assert check_invariants(snap_, intent, progress, res, pol, now=model.now) == []
        hist.append((model.now, res))
        progress = res.progress
        if on_tick is not None:
            on_tick(model, res)
        model.apply(res.actions)
        model.step(DT)
    return progress, hist


def _kill_helper_at_first_grant(model, res):
    """The host's helper (and with it the start) dies the moment a start is granted there."""
    if any(a.kind == "grant_start" for a in res.actions):
        model.dead_helpers.add("h1")


def test_a_grant_whose_helper_dies_ends_the_run_by_its_ends_by_with_flags_restored():
    model = make_model(hosts=2, per_host=2, down_hosts=(1,))
    progress, hist = _run(model, LIVE, 600.0, _kill_helper_at_first_grant)
    grant_at = next(now for now, r in hist if any(a.kind == "grant_start" for a in r.actions))
    # the bound the run stated right after its grant holds, and is the options' sum
    stated = next(r.summary["ends_by"] for now, r in hist if now > grant_at)
    assert stated == grant_at + LIVE.boot_timeout_s + LIVE.stall_limit_s
    ended = next(now for now, r in hist if any(a.kind == "done" for a in r.actions))
    assert ended <= stated
    assert progress.phase == "done" and not progress.osd_map("granted")
    assert not set(RUN_CLUSTER_FLAGS) & model.cluster_flags
    last = hist[-1][1]
    assert "RECOVERY_INCOMPLETE" in [h.code for h in last.health]
    # the OSDs it could not bring back stay held, and no grant outlives the run
    assert all(model.osds[i].noup for i in (2, 3))


def test_an_osd_allowed_to_boot_that_never_comes_up_is_failed_stopped_and_held():
    p = RUNNING.with_columns(granted={3: NOW - 700}, booting={3: NOW - 650})
    s = snap(osd(3, process="running", rss_bytes=300 * MiB), *HELD[1:], cluster_flags=RUNF)
    res = plan(s, RUN, p, POL, NOW)
    assert [sig(a) for a in res.actions][:2] == ["hold_osd osd=3", "stop_osd host=h1 osd=3"]
    assert 3 not in res.progress.osd_map("granted") and res.progress.osd_map("failures") == {3: 1}
    assert res.progress.osd_map("stopped") == {3: NOW}
    # still running 30 s later (a lost stop): sent again; once stopped, granted again
    later = replace(s, epoch=s.epoch + 1)
    again = plan(later, RUN, res.progress, POL, NOW + 30)
    assert "stop_osd host=h1 osd=3" in [sig(a) for a in again.actions]
    gone = snap(osd(3, process="stopped", flags=frozenset({"noup"})), *HELD[1:],
                cluster_flags=RUNF, epoch=s.epoch + 2)
    after = plan(gone, RUN, again.progress, POL, NOW + 35)
    assert 3 not in after.progress.osd_map("stopped")


def test_a_grant_kept_in_preboot_for_room_is_named_not_failed():
    """Loaded, waiting in preboot for room to peak: the run's own wait, not the OSD's fault."""
    p = RUNNING.with_columns(granted={3: NOW - 700})
    big = snap(replace(PRE3, rss_bytes=450 * MiB), *HELD[1:], used={"h1": int(6.35 * 1024 * MiB)},
               cluster_flags=RUNF)
    res = plan(big, RUN, p, POL, NOW)
    assert 3 in res.progress.osd_map("granted") and "stop_osd host=h1 osd=3" not in [
        sig(a) for a in res.actions]
    assert any("kept in preboot" in line for h in res.health
               if h.code == "RECOVERY_BOOT_TIMEOUT" for line in h.detail)


def test_an_abort_stops_a_loaded_grant_and_leaves_no_grant():
    s = snap(PRE3, *HELD[1:], cluster_flags=RUNF)
    res = plan(s, Intent(mode="abort", run_id="r1"), RUNNING.with_columns(granted={3: NOW - 15}),
               POL, NOW)
    assert "stop_osd host=h1 osd=3" in [sig(a) for a in res.actions]
    assert not res.progress.osd_map("granted") and res.progress.phase == "aborted"


def test_a_restore_the_mon_refuses_is_sent_again_and_named_until_the_config_shows_it():
    before = str(1536 * MiB)          # three OSDs at 1.5 GiB fit the 8 GiB host again
    p = RUNNING.evolve(finished=frozenset({3, 4, 5}),
                       saved_config={"osd.3 osd_memory_target": before})
    low = snap(*[osd(i, up=True, memory_target=1 << 30) for i in (3, 4, 5)],
               cluster_flags=RUNF)
    end = plan(low, RUN, p, POL, NOW)
    assert [sig(a) for a in end.actions] == [
        "restore_config name=osd_memory_target value=%s who=osd.3" % before, "unset_flag flag=noout",
        "unset_flag flag=norebalance", "done"]
    assert end.progress.restoring == {"osd.3 osd_memory_target": (before, NOW)}
    assert end.progress.restoring_flags == {"noout": NOW, "norebalance": NOW}
    # the mon refused everything: the next tick names it, 30 s later it is sent again
    refused = replace(low, epoch=low.epoch + 1)
    tick = plan(refused, RUN, end.progress, POL, NOW + 5)
    pending = [h for h in tick.health if h.code == "RECOVERY_RESTORE_PENDING"]
    assert pending and pending[0].count == 3
    assert "ceph config set osd.3 osd_memory_target %s" % before in pending[0].detail[0]
    assert not [a for a in tick.actions if a.kind in ("restore_config", "unset_flag")]
    retry = plan(refused, RUN, progress_from_json(progress_to_json(tick.progress)), POL,
                 NOW + RESTORE_RETRY_S)
    assert sorted(a.kind for a in retry.actions) == ["restore_config", "unset_flag",
                                                     "unset_flag"]
    # allowed at last: the snapshot shows the default back and the flags gone
    back = snap(osd(3, up=True, memory_target=1536 * MiB),
                *[osd(i, up=True, memory_target=1 << 30) for i in (4, 5)], epoch=low.epoch + 2)
    done = plan(back, RUN, retry.progress, POL, NOW + RESTORE_RETRY_S + 5)
    assert not done.progress.restoring and not done.progress.restoring_flags
    assert "RECOVERY_RESTORE_PENDING" not in [h.code for h in done.health]


def test_the_next_run_does_not_adopt_a_leftover_noout_as_the_operators():
    ended = RUNNING.evolve(phase="done", finished_at=NOW - 100,
                           restoring_flags={"noout": NOW - 100})
    s = snap(cluster_flags=frozenset({"noout"}))
    res = plan(s, Intent(mode="controlled", run_id="r2"), ended, POL, NOW)
    assert res.progress.saved_flags == frozenset()
    assert not res.progress.restoring_flags
    # so the new run's end unsets it
    assert "noout" not in res.progress.saved_flags
