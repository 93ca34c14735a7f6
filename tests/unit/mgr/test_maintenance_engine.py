"""Maintenance windows through the mgr shell (engine + maint.py) on recorded lab dumps with the
real plan(): the mon commands sent, the helper instructions, the persisted windows across a
restarted module, and `ceph recovery wait`'s answers. Ceph is a recording fake
(maintcases.Mon)."""
from __future__ import annotations

import copy
import errno
import json

import pytest
from maintcases import Mon, helpers, load, make, set_up, tick
from maintcases import world  # noqa: F401  (the fixture)

from recovery import engine as engine_mod, maint, state as state_mod  # see conftest.py


def test_enter_refused_names_the_pgs_and_changes_nothing(world):
    eng, mon = make(world, {"ok_to_stop": False, "osds": [2, 3],
                            "bad_become_inactive": ["1.0", "1.5"]})
    rc, out, err = maint.enter(eng, "h2", "patch", "1h", "plain", 1000.0)
    # the handler asks no mon: the request is recorded, nothing held
    assert rc == 0 and out.startswith("maintenance enter h2: requested") and mon.calls == []
    assert [w.phase for w in eng.run.windows] == ["requested"]
    assert maint.holds(eng) == frozenset()
    assert maint.wait(eng, None, "plain")[0] == -errno.ETIMEDOUT
    tick(eng, world, 1001.0)
    # asked for both OSDs together in the tick, refused: nothing else sent
    assert mon.calls[0] == {"prefix": "osd ok-to-stop", "format": "json", "ids": ["2", "3"]}
    assert mon.mutations() == [] and eng.run.windows == [] and maint.holds(eng) == frozenset()
    rc, _out, err = maint.wait(eng, None, "plain")
    assert rc == -errno.EBUSY and "1.0 1.5" in err and "maintenance enter h2 refused" in err
    rc, out, _ = maint.ls(eng, "plain", 1031.0)
    assert out.startswith("h2: refused 30s ago: maintenance enter h2 refused: stopping h2 "
                          "(osd.2, osd.3) is not safe: 2 PG(s) would become inactive: "
                          "1.0 1.5"), out
    assert json.loads(maint.ls(eng, "json", 1031.0)[1])["refused"][0]["errno"] == errno.EBUSY
    assert [e["result"] for e in eng.run.journal if e["action"]["kind"] == "request"] == [
        "refused"]
    tick(eng, world, 1003.0)
    assert mon.mutations() == []
    # a later enter of the bucket replaces its refusal in `ls`
    mon.verdict = {"ok_to_stop": True}
    assert maint.enter(eng, "h2", None, None, "plain", 1004.0)[0] == 0
    tick(eng, world, 1005.0)
    assert maint.ls(eng, "plain", 1006.0)[1].startswith("h2: entering"), maint.ls(
        eng, "plain", 1006.0)


def test_exit_withdraws_a_requested_enter_before_it_is_asked(world):
    eng, mon = make(world)
    assert maint.enter(eng, "h2", None, None, "plain", 1000.0)[0] == 0
    rc, out, _ = maint.exit_(eng, "h2", None, None, "plain", 1000.5)
    assert rc == 0 and "withdrawn" in out and eng.run.windows == [] and not eng.active
    tick(eng, world, 1001.0)
    assert mon.calls == [] or all(c["prefix"] != "osd ok-to-stop" for c in mon.calls)
    assert mon.mutations() == [] and eng.run.windows == []
    assert maint.wait(eng, None, "plain")[0] == -errno.ECANCELED


def test_a_request_is_persisted_and_settled_by_the_next_module(world):
    eng, _mon = make(world)
    assert maint.enter(eng, "h2", None, None, "plain", 1000.0)[0] == 0
    eng2, mon2 = make(world)
    eng2.run = state_mod.RunState.loads(eng.run.dumps())
    assert [w.phase for w in eng2.run.windows] == ["requested"]
    helpers(eng2, 1001.0)
    tick(eng2, world, 1001.0)
    assert [w.phase for w in eng2.run.windows] == ["entering"]
    assert {"prefix": "osd set-group", "flags": "noout", "who": ["h2"]} in mon2.mutations()


@pytest.mark.parametrize("args,code", [(("nosuch", None, None), errno.ENOENT),
                                       (("h2", None, "soon"), errno.EINVAL),
                                       (("osd.2", None, None), errno.ENOENT)])
def test_enter_bad_input(world, args, code):
    eng, mon = make(world)
    rc, _out, err = maint.enter(eng, args[0], args[1], args[2], "plain", 1000.0)
    assert rc == -code and err and eng.run.windows == []


def test_enter_open_exit_with_a_failover_in_each_half(world):
    eng, mon = make(world)
    rc, out, _ = maint.enter(eng, "h2", "kernel", "4h", "plain", 1000.0)
    assert rc == 0 and out.startswith("maintenance enter h2: requested; the next tick asks "
                                      "ok-to-stop for osd.2, osd.3"), out
    helpers(eng, 1001.0)
    mon.calls.clear()
    tick(eng, world, 1001.0)           # ok-to-stop cleared h2: the window enters
    # plan() holds the bucket (noup, the gate reads it), the window sets noout; no stop yet
    assert mon.mutations() == [{"prefix": "osd set-group", "flags": "noup", "who": ["h2"]},
                               {"prefix": "osd set-group", "flags": "noout", "who": ["h2"]}]
    assert eng.run.open_instructions() == []
    tick(eng, world, 1003.0)
    assert [(i["op"], i["osd"]) for i in eng.run.open_instructions()] == [("stop", 2),
                                                                         ("stop", 3)]
    # failover mid-enter: the new module loads the state; osd.2 stopped, osd.3 not yet
    eng2, mon2 = make(world)
    eng2.run = state_mod.RunState.loads(eng.run.dumps())
    reply = helpers(eng2, 1005.0, h2=(False, True))
    assert [(i.op, i.osd) for i in reply.instructions] == [("stop", 2), ("stop", 3)]
    set_up(world, 2, False)
    tick(eng2, world, 1005.0)
    assert mon2.mutations() == [] and len(eng2.run.open_instructions()) == 2
    ids = [i["id"] for i in eng2.run.open_instructions()]
    set_up(world, 3, False)
    helpers(eng2, 1007.0, h2=(False, False), done=ids)
    tick(eng2, world, 1007.0)
    (w,) = eng2.run.windows
    assert w.phase == "open" and eng2.run.outcomes[-1].what == "maintenance enter h2"
    assert maint.wait(eng2, 1, "plain") == (0, "2 OSD(s) of h2 down and held", "")
    # exit: a controlled run over h2; the bucket hold becomes per-OSD holds
    rc, out, _ = maint.exit_(eng2, "h2", "80%", None, "plain", 1010.0)
    assert rc == 0 and "controlled start run" in out
    run_id = eng2.run.progress.run_id
    mon2.calls.clear()
    tick(eng2, world, 1011.0)
    m = mon2.mutations()
    # both per-OSD holds in one command (batch.py), before the bucket's hold goes
    assert m.index({"prefix": "osd add-noup", "ids": ["osd.2", "osd.3"]}) < m.index(
        {"prefix": "osd unset-group", "flags": "noup", "who": ["h2"]})
    assert all(c.get("flags") != "noout" for c in m)          # noout stays until the end
    # failover mid-exit
    eng3, mon3 = make(world)
    eng3.run = state_mod.RunState.loads(eng2.run.dumps())
    starts, start_ids = [], set()
    for k in range(60):
        now = 1013.0 + 30 * k      # the recorded PG dump stays degraded: they settle by time
        reply = helpers(eng3, now, h2=tuple(o in starts for o in (2, 3)))
        for ins in reply.instructions:
            if ins.op == "start" and ins.id not in start_ids:
                start_ids.add(ins.id)
                starts.append(ins.osd)
        for o in starts:
            ent = next(x for x in world["map"]["osds"] if x["osd"] == o)
            if not ent["up"] and "noup" not in ent["state"]:
                set_up(world, o, True)
        tick(eng3, world, now)
        if not eng3.run.windows:
            break
    assert sorted(starts) == [2, 3]             # one start instruction each, never two
    assert eng3.run.windows == [], (eng3.run.progress, list(eng3.run.journal)[-6:])
    assert "h2" not in world["map"]["crush_node_flags"]
    unset = [c for c in mon3.mutations() if c["prefix"] == "osd unset-group"
             and c["flags"] == "noout"]
    assert unset == [{"prefix": "osd unset-group", "flags": "noout", "who": ["h2"]}]
    assert [o.what for o in eng3.run.outcomes] == [
        "maintenance enter h2", "run %s" % run_id, "maintenance exit h2"]
    assert maint.wait(eng3, 1, "plain")[0] == 0


def test_wait_answers_at_once_while_going_and_reports_an_abort(world):
    eng, mon = make(world)
    maint.enter(eng, "h2", None, None, "plain", 1000.0)
    rc, _o, err = maint.wait(eng, 2, "plain")
    assert rc == -errno.ETIMEDOUT and "maintenance enter (requested" in err
    tick(eng, world, 1000.0)
    for timeout in (None, 0, 60):        # accepted for old callers, never waited on
        rc, _o, err = maint.wait(eng, timeout, "plain")
        assert rc == -errno.ETIMEDOUT and "still going: maintenance enter h2" in err
    # window open, exit started, then aborted: non-zero with the reason, window back open
    w = eng.run.windows[0]
    eng.run.windows = [w.__class__(**dict(w.__dict__, phase="open"))]
    for i in (2, 3):
        set_up(world, i, False)
    helpers(eng, 1001.0, h2=(False, False))
    assert maint.exit_(eng, "h2", None, None, "json", 1002.0)[0] == 0
    assert eng.run.intent.concurrency == 1            # exit's default: one at a time per host
    assert maint.exit_(eng, "h2", None, None, "plain", 1002.0)[0] == -errno.EBUSY
    tick(eng, world, 1003.0)
    eng.set_mode("abort", 1004.0)
    tick(eng, world, 1005.0)
    tick(eng, world, 1007.0)
    assert eng.run.windows[0].phase == "entering" and maint.holds(eng) == frozenset({"h2"})
    tick(eng, world, 1009.0)            # the hold goes back into the map
    tick(eng, world, 1010.0)            # its OSDs are all down: back to open
    assert eng.run.windows[0].phase == "open"
    rc, _o, err = maint.wait(eng, 1, "plain")
    assert rc == -errno.ECANCELED and "aborted" in err and "back in maintenance" in err
    rc, out, _e = maint.ls(eng, "plain", 1010.0)
    assert rc == 0 and out.startswith("h2: open for 10s (max 4h00m), osds 2,3"), out
    assert "last exit: exit run r1002 aborted" in out


def test_status_carries_the_schema_and_the_windows(world):
    eng, mon = make(world)
    maint.enter(eng, "h2", "disk swap", "2h", "plain", 1000.0)
    tick(eng, world, 1000.0)
    st = eng.status(1060.0)
    assert st["schema"] == maint.STATUS_SCHEMA == 1
    (w,) = st["maintenance"]
    assert (w["bucket"], w["reason"], w["elapsed_s"], w["overdue"]) == (
        "h2", "disk swap", 60.0, False)
    rc, out, _ = maint.ls(eng, "json", 1060.0)
    assert json.loads(out)["windows"][0]["osds"] == [2, 3]
    ev = maint.progress_events(eng, 1060.0)
    assert list(ev) == ["recovery-maintenance-h2"]
    assert ev["recovery-maintenance-h2"][0] == \
        "Maintenance of h2 (entering, 1m00s of 2h00m: disk swap)"


def test_recovery_maintenance_past_max_duration_in_health(world):
    eng, mon = make(world)
    maint.enter(eng, "h2", "x", "60s", "plain", 1000.0)
    helpers(eng, 1001.0)
    tick(eng, world, 1001.0)
    assert "RECOVERY_MAINTENANCE" not in [h.code for h in eng.health_checks()]
    helpers(eng, 1100.0)
    tick(eng, world, 1100.0)
    assert "RECOVERY_MAINTENANCE" in [h.code for h in eng.health_checks()]


def test_nothing_to_wait_for():
    eng = engine_mod.Engine(Mon(copy.deepcopy(load("osdmap_h3down.json"))),
                            lambda *a, **k: None)
    assert maint.wait(eng, 1, "plain") == (0, "nothing to wait for", "")
