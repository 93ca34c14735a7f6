"""Drills through the mgr shell (engine + maint.py + drillcli.py) on recorded lab dumps with
the real plan(): mon commands, helper instructions, persisted drills across a restarted
module, `ceph recovery wait` and `drill report`. Ceph is the recording fake of the
maintenance shell tests."""
from __future__ import annotations

import errno
import json

import pytest

from recovery import drillcli, maint, state as state_mod  # see conftest.py

from ceph_recovery import drill as D

import maintcases as ME  # noqa: E402  (registered by conftest.py)

world = ME.world
make, tick, helpers, set_up = ME.make, ME.tick, ME.helpers, ME.set_up
HEALTH_OK = {"json": json.dumps({"status": "HEALTH_OK"})}


def observe(eng, world, health=HEALTH_OK):
    eng.observed = drillcli.observed(health, world["pgs"])


def enter_and_stop(eng, mon, world, t0=1000.0):
    """drill start h2, then ticks until both OSDs are down and stopped (window open)."""
    helpers(eng, t0)
    tick(eng, world, t0)                     # the hosts' memory is known before the start
    rc, out, err = drillcli.start(eng, "h2", "30s", "80%", None, "plain", t0)
    assert rc == 0, err
    assert out.startswith("drill d1000: requested; once ok-to-stop clears h2 (next tick): "
                          "stopping osd.2, osd.3 for 30s")
    assert mon.mutations() == [] and eng.run.drills[0].phase == D.REQUESTED
    observe(eng, world)
    helpers(eng, t0 + 1)
    tick(eng, world, t0 + 1)
    tick(eng, world, t0 + 2)
    ids = [i["id"] for i in eng.run.open_instructions()]
    assert [(i["op"], i["osd"]) for i in eng.run.open_instructions()] == [("stop", 2),
                                                                         ("stop", 3)]
    set_up(world, 2, False)
    set_up(world, 3, False)
    helpers(eng, t0 + 3, h2=(False, False), done=ids)
    tick(eng, world, t0 + 3)                 # the window opens
    tick(eng, world, t0 + 4)                 # the drill sees it open
    (d,) = eng.run.drills
    assert d.phase == D.DOWN and d.down_at == t0 + 4
    return d


def test_start_refused_unless_ok_to_stop_clears_the_bucket_and_changes_nothing(world):
    eng, mon = make(world, {"ok_to_stop": False, "osds": [2, 3],
                            "bad_become_inactive": ["1.3"]})
    rc, out, err = drillcli.start(eng, "h2", "30s", None, None, "plain", 1000.0)
    assert rc == 0 and out.startswith("drill d1000: requested") and mon.calls == []
    assert maint.wait(eng, None, "plain")[0] == -errno.ETIMEDOUT      # not decided yet
    tick(eng, world, 1001.0)                 # the tick asks ok-to-stop, for both together
    # (after Ceph's per-pool availability, the drill's baseline: poolavail.py)
    assert mon.calls[:2] == [{"prefix": "osd pool availability-status", "format": "json"},
                             {"prefix": "osd ok-to-stop", "format": "json", "ids": ["2", "3"]}]
    (d,) = eng.run.drills
    assert d.phase == D.ABORTED and d.reason.startswith("refused: ") and "1.3" in d.reason
    rc, _out, err = maint.wait(eng, None, "plain")
    assert rc == -errno.EBUSY and "1.3" in err and "refused" in err
    line = drillcli.report(eng, None, "plain")[1]
    assert line.startswith("drill d1000 on h2: aborted (refused: ") and "1.3" in line, line
    assert [e["result"] for e in eng.run.journal if e["action"]["kind"] == "request"] == [
        "refused"]
    tick(eng, world, 1003.0)
    assert eng.run.windows == [] and maint.holds(eng) == frozenset() and mon.mutations() == []


def test_abort_of_a_requested_drill_ends_it_without_asking_or_changing_anything(world):
    eng, mon = make(world)
    assert drillcli.start(eng, "h2", "30s", None, None, "plain", 1000.0)[0] == 0
    assert drillcli.abort(eng, "plain", 1000.5)[0] == 0
    tick(eng, world, 1001.0)
    (d,) = eng.run.drills
    assert d.phase == D.ABORTED and "before the drill began" in d.reason
    assert [c["prefix"] for c in mon.calls if c["prefix"] == "osd ok-to-stop"] == []
    assert mon.mutations() == [] and eng.run.windows == []
    assert maint.wait(eng, None, "plain")[0] == -errno.ECANCELED


@pytest.mark.parametrize("args,code", [(("nosuch", "30s", None), errno.ENOENT),
                                       (("h2", "soon", None), errno.EINVAL),
                                       (("h2", "30s", "200%"), errno.EINVAL)])
def test_start_bad_input(world, args, code):
    eng, mon = make(world)
    rc, _out, err = drillcli.start(eng, args[0], args[1], args[2], None, "plain", 1000.0)
    assert rc == -code and err and eng.run.drills == [] and eng.run.windows == []
    assert mon.mutations() == []


@pytest.mark.parametrize("grace,err_part", [("soon", "duration 'soon'"),
                                            ("2s", "--inactive-grace must be 5s to 3600s")])
def test_a_bad_inactive_grace_is_einval_and_changes_nothing(world, grace, err_part):
    eng, mon = make(world)
    rc, _out, err = drillcli.start(eng, "h2", "30s", None, None, "plain", 1000.0, None, None,
                                   grace)
    assert rc == -errno.EINVAL and err_part in err, err
    assert eng.run.drills == [] and eng.run.windows == [] and mon.mutations() == []


def test_inactive_grace_is_the_drills_and_in_its_report(world):
    eng, _mon = make(world)
    helpers(eng, 1000.0)
    tick(eng, world, 1000.0)
    rc, _out, err = drillcli.start(eng, "h2", "30s", None, None, "plain", 1000.0, None, None,
                                   "2m")
    assert rc == 0, err
    assert eng.run.drills[-1].inactive_grace_s == 120.0
    rc, out, _err = drillcli.report(eng, None, "json")
    assert json.loads(out)["inactive_grace_s"] == 120.0


def test_a_kill_drill_sends_its_stops_with_sigkill_and_a_bad_stop_changes_nothing(world):
    eng, mon = make(world)
    rc, _out, err = drillcli.start(eng, "h2", "30s", None, None, "plain", 1000.0, None, "off")
    assert rc == -errno.EINVAL and "clean or kill" in err and eng.run.drills == []
    assert mon.mutations() == []
    helpers(eng, 1000.0)
    tick(eng, world, 1000.0)
    rc, out, err = drillcli.start(eng, "h2", "30s", "80%", None, "plain", 1000.0, None, "kill")
    assert rc == 0 and out.startswith("drill d1000: requested; once ok-to-stop clears h2 "
                                      "(next tick): killing (SIGKILL) osd.2"), err
    observe(eng, world)
    helpers(eng, 1001.0)
    tick(eng, world, 1001.0)
    tick(eng, world, 1002.0)
    reply = eng.instructions_for("h2")
    assert [(i.op, i.osd, i.signal) for i in reply.instructions] == [("stop", 2, "KILL"),
                                                                     ("stop", 3, "KILL")]


def test_abort_and_report_without_a_drill(world):
    eng, _mon = make(world)
    assert drillcli.abort(eng, "plain", 1000.0)[0] == -errno.ENOENT
    assert drillcli.report(eng, None, "plain")[0] == -errno.ENOENT


def test_exit_run_survives_a_failover_then_an_operator_abort_keeps_the_bucket_in_maintenance(world):
    eng, mon = make(world)
    enter_and_stop(eng, mon, world)
    assert maint.wait(eng, 1, "plain")[0] == -errno.ETIMEDOUT
    tick(eng, world, 1020.0)                          # 17 s down: not yet
    assert not eng.active
    # failover: the new module resumes the drill from the persisted state
    eng2, mon2 = make(world)
    eng2.run = state_mod.RunState.loads(eng.run.dumps())
    observe(eng2, world)
    helpers(eng2, 1034.0, h2=(False, False))
    tick(eng2, world, 1033.0)                         # 29 s down: not yet
    assert not eng2.active
    tick(eng2, world, 1034.0)                         # 30 s down: the exit starts
    (d,) = eng2.run.drills
    assert d.phase == D.EXITING and eng2.active and d.exit_run == eng2.run.progress.run_id
    assert eng2.run.intent.scope == ("h2",)
    # the operator aborts: the exit's run is aborted, nothing is started outside its budget,
    # and the bucket goes back into maintenance (held, noout kept)
    rc, out, _ = drillcli.abort(eng2, "plain", 1035.0)
    assert rc == 0 and out.startswith("drill d1000: abort accepted")
    mon2.calls.clear()
    for k in range(10):
        now = 1036.0 + 2 * k
        reply = helpers(eng2, now, h2=(False, False))
        tick(eng2, world, now)
        assert not [i for i in eng2.run.open_instructions() if i["op"] == "start"]
        if eng2.run.drills[0].phase == D.ABORTED:
            break
    (d,) = eng2.run.drills
    assert d.phase == D.ABORTED and eng2.run.progress.phase == "aborted"
    assert d.reason.startswith("aborted (operator: operator abort): the exit failed")
    assert [w.bucket for w in eng2.run.windows] == ["h2"]
    assert "noout" in world["map"]["crush_node_flags"]["h2"]     # kept in maintenance
    for k in range(3):                     # the window settles back to open
        helpers(eng2, 1060.0 + k, h2=(False, False))
        tick(eng2, world, 1060.0 + k)
    assert [w.phase for w in eng2.run.windows] == ["open"]
    rc, _out, err = maint.wait(eng2, 1, "plain")
    assert rc == -errno.ECANCELED and "drill d1000" in err
    rc, line, _ = drillcli.report(eng2, None, "plain")
    assert rc == 0 and line.startswith("drill d1000 on h2: aborted") and "\n" not in line
    rep = json.loads(drillcli.report(eng2, "d1000", "json")[1])
    assert rep["outcome"] == "aborted" and rep["downtime_s"] == 30.0
    assert set(rep["timeline"][0]) == {"t", "phase", "osds_up", "osds_total", "bucket_up",
                                       "pgs_total", "pgs_active", "pgs_clean",
                                       "degraded_objects", "mem_used"}
    assert rep["timeline"][0]["degraded_objects"] == 300
    # 80% of the 8 GiB the helper reports; the peak is the helper's 200 MiB used
    assert rep["hosts"]["h2"] == {"budget_bytes": int(0.8 * (8 << 30)),
                                  "peak_bytes": 200 << 20, "peak_over_budget": False}


def test_health_err_aborts_the_drill_at_once(world):
    eng, mon = make(world)
    enter_and_stop(eng, mon, world)
    observe(eng, world, {"json": json.dumps({"status": "HEALTH_ERR"})})
    helpers(eng, 1005.0, h2=(False, False))
    tick(eng, world, 1005.0)
    (d,) = eng.run.drills
    assert d.phase == D.ABORTING and d.reason == "HEALTH_ERR appeared"
    assert sorted(i["osd"] for i in eng.run.open_instructions() if i["op"] == "start") == [2, 3], list(eng.run.journal)[-5:]


def test_operator_abort_instructs_each_start_once_though_the_helper_lags(world):
    """The helper answers `done` for both starts while its process states still say
    stopped (its report predates the start): no tick instructs a start again."""
    eng, mon = make(world)
    enter_and_stop(eng, mon, world)
    assert drillcli.abort(eng, "plain", 1010.0)[0] == 0
    created = []
    done = []
    for k in range(8):
        now = 1011.0 + 2 * k
        reply = helpers(eng, now, h2=(False, False), done=done)
        done = [i.id for i in reply.instructions]
        tick(eng, world, now)
        created += [i for i in eng.run.instructions.values()
                    if i["op"] == "start" and i not in created]
    assert sorted(i["osd"] for i in created) == [2, 3]
    assert all(i.get("done_at") is not None for i in created)
    assert eng.run.drills[0].phase == D.ABORTING


def test_budget_while_down_is_the_exits_budget_and_bad_input_changes_nothing(world):
    eng, mon = make(world)
    assert drillcli.budget(eng, "1G", "plain", 1000.0)[0] == -errno.ENOENT
    enter_and_stop(eng, mon, world)
    before = eng.run.dumps()
    for bad in ("200%", "lots", "0"):
        rc, out, err = drillcli.budget(eng, bad, "plain", 1010.0)
        assert rc == -errno.EINVAL and out == "" and "drill budget:" in err and bad in err, bad
        assert eng.run.dumps() == before
    rc, out, err = drillcli.budget(eng, "1G", "plain", 1010.0)
    assert rc == 0 and out == "drill d1000: exit budget 1G (h1 1024 MiB, h2 1024 MiB, " \
        "h3 1024 MiB)", err
    (d,) = eng.run.drills
    assert d.budget == "1G" and d.budgets["h2"] == 1 << 30 and d.phase == D.DOWN
    assert json.loads(drillcli.report(eng, None, "json")[1])["hosts"]["h2"][
        "budget_bytes"] == 1 << 30
    helpers(eng, 1034.0, h2=(False, False))
    tick(eng, world, 1034.0)                          # 30 s down: the exit starts under 1G
    assert eng.active and (eng.run.intent.budget.kind, eng.run.intent.budget.value) == (
        "bytes", 1 << 30)
    # the exit's run holds the budget it started with
    rc, _out, err = drillcli.budget(eng, "2G", "plain", 1035.0)
    assert rc == -errno.EBUSY and "exiting" in err and eng.run.drills[0].budget == "1G"
