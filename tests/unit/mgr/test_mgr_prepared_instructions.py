"""A tick's helper instructions ride in its one write-ahead, prepared, and reach a helper only
once the tick carries their action out (instruct.py): tested from states a failover or a map
going back leaves, with the real plan() and a recording Ceph."""
from __future__ import annotations

import copy

from mgrcases import STOPPED, all_helpers, make_engine, tick
from mgrcases import world  # noqa: F401  (the fixture)
from recovery import engine as engine_mod, state as state_mod  # see conftest.py
from cephfake import FakeCeph


def _saving_engine(world):
    """An engine whose mon applies its commands to a map of its own: `world` stays the map
    from before the first tick (what a successor sees when the mgr died right after its
    write-ahead)."""
    saved = []
    eng = engine_mod.Engine(FakeCeph(copy.deepcopy(world["map"])), lambda *a, **k: None,
                            lambda: saved.append(eng.run.dumps()))
    all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.begin(eng.start("80%", [], 1, 1000.0), 1000.0)
    return eng, saved


def _grants(eng):
    return [j for j in eng.run.journal if j["action"]["kind"] == "grant_start"]


def test_mgr_killed_after_the_write_ahead_releases_the_start_only_after_its_first_tick(world):
    eng, saved = _saving_engine(world)
    tick(eng, world, 1001.0)
    ahead = saved[0]                   # the mgr dies right after its write-ahead
    eng2, ceph2 = make_engine(world["map"])
    eng2.run = state_mod.RunState.loads(ahead)
    prepared = eng2.run.open_instructions()
    assert [(i["op"], i["osd"], i["prepared"]) for i in prepared] == [("start", 4, True)]
    # before its first tick has re-issued the holds the start rests on, no helper gets it
    assert all_helpers(eng2, 1010.0, [STOPPED(4), STOPPED(5)]).instructions == ()
    tick(eng2, world, 1011.0)
    assert {"prefix": "osd add-noup", "ids": ["osd.4", "osd.5"]} in ceph2.calls
    reply = all_helpers(eng2, 1012.0, [STOPPED(4), STOPPED(5)])
    assert [(i.id, i.op, i.osd) for i in reply.instructions] == [
        (prepared[0]["id"], "start", 4)]                     # the same id: carried out once
    assert len(_grants(eng2)) == 1                           # the grant was not repeated


def test_a_map_going_back_mid_tick_closes_the_prepared_start_unsent(world):
    eng, saved = _saving_engine(world)
    epochs = iter([world["map"]["epoch"], world["map"]["epoch"] - 1])
    eng.tick(world["map"], world["tree"], world["pgs"], 1001.0,
             lambda: next(epochs, world["map"]["epoch"] - 1))
    assert [(i["op"], i["osd"]) for i in state_mod.RunState.loads(saved[0])
            .open_instructions()] == [("start", 4)]          # written ahead, prepared
    assert eng.run.open_instructions() == []
    closed = [i for i in eng.run.instructions.values() if i.get("closed")]
    assert [(i["osd"], i["closed"]) for i in closed] == [(4, "withdrawn")]
    assert all_helpers(eng, 1002.0, [STOPPED(4), STOPPED(5)]).instructions == ()
    assert _grants(eng)[-1]["result"].startswith("not carried out")


def test_an_abort_while_the_tick_acts_withdraws_the_prepared_start(world):
    eng, saved = _saving_engine(world)
    mon = eng.executor.ceph.mon_command

    def abort_on_hold(cmd, *a):
        if cmd.get("prefix") == "osd add-noup":
            eng.set_mode("abort", 1001.0)
        return mon(cmd, *a)
    eng.executor.ceph.mon_command = abort_on_hold
    tick(eng, world, 1001.0)
    assert [(i["osd"], i["closed"]) for i in eng.run.instructions.values()] == [
        (4, "withdrawn")]
    assert _grants(eng)[-1]["result"] == "not instructed: the run is aborted"
    assert all_helpers(eng, 1002.0, [STOPPED(4), STOPPED(5)]).instructions == ()


def test_a_successor_whose_first_tick_stops_on_an_older_map_keeps_the_start_prepared(world):
    eng, saved = _saving_engine(world)
    tick(eng, world, 1001.0)
    eng2, ceph2 = make_engine(world["map"])
    eng2.run = state_mod.RunState.loads(saved[0])
    eng2.tick(world["map"], world["tree"], world["pgs"], 1011.0,
              lambda: world["map"]["epoch"] - 1)
    assert ceph2.calls == []
    assert [(i["osd"], i.get("prepared")) for i in eng2.run.open_instructions()] == [(4, True)]
    assert all_helpers(eng2, 1012.0, [STOPPED(4), STOPPED(5)]).instructions == ()
