"""Flags and per-OSD noup left by a run whose state was lost or corrupt are not taken for the
operator's by the next run: the next run takes that run over and restores them (defect 9,
second half). The state's marks (a small entry of their own) tell what the lost run set."""
from __future__ import annotations

import copy

import pytest

from recovery import state as state_mod, statestore  # see conftest.py

import mgrcases as cases  # noqa: E402  (registered by conftest.py)
STOPPED, RUNNING, all_helpers, tick = cases.STOPPED, cases.RUNNING, cases.all_helpers, cases.tick


def store():
    return statestore.ChunkedStore("run_state", chunk_bytes=2000, marks=state_mod.marks_of,
                                   lost=lambda m: bool(state_mod.leftovers_from(m)))


def persist(eng, kv):
    cs = store()
    writes = cs.writes(eng.run.dumps())
    kv.update({k: v for k, v in writes if v is not None})


def lost_run(world, kv):
    """A run that set noout/norebalance and noup on osd.4/5, its state persisted in kv."""
    eng, ceph = cases.make_engine(world["map"])
    all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.begin(eng.start("80%", [], 1, 1000.0), 1000.0)
    tick(eng, world, 1001.0)
    persist(eng, kv)
    m = world["map"]
    assert {"noout", "norebalance"} <= set(m["flags_set"])
    assert all("noup" in o["state"] for o in m["osds"] if o["osd"] in (4, 5))


def both_up(m, keep_noup_on=5):
    """The lost run's OSDs came up; osd.5's noup was not cleared (it would keep it down at
    its next restart)."""
    for o in m["osds"]:
        if o["osd"] in (4, 5):
            o["up"] = 1
            o["state"] = ["exists", "up"] + (["noup"] if o["osd"] == keep_noup_on else [])
    m["epoch"] += 1


def corrupt(kv):
    kv["run_state.a.0"] = "x" * 10


def lose(kv):
    del kv["run_state"]


@pytest.fixture
def world():
    return {"map": cases.load("osdmap_h3down.json"), "tree": cases.load("tree_h3down.json"),
            "pgs": cases.load("pgdump_h3down.json")}


@pytest.mark.parametrize("damage", [corrupt, lose])
def test_next_run_restores_what_a_lost_run_set(world, damage):
    kv = {}
    lost_run(world, kv)
    damage(kv)
    both_up(world["map"])
    eng, ceph = cases.make_engine(world["map"])
    with pytest.raises(statestore.StateCorrupt):
        reader = store()
        reader.read(kv.get)
    eng.state_unreadable("damaged", 2000.0, reader.found_marks)
    assert "RECOVERY_STATE_UNREADABLE" in eng.shell_health()
    all_helpers(eng, 2000.0, [RUNNING(4, 70 << 20), RUNNING(5, 70 << 20)])
    eng.observe(world["map"], world["tree"], world["pgs"], 2000.0)
    eng.begin(eng.start("80%", [], 1, 2000.0), 2000.0)
    for t in range(3):
        tick(eng, world, 2001.0 + t)
    m = world["map"]
    assert eng.run.progress.phase == "done", eng.run.progress
    assert not {"noout", "norebalance"} & set(m["flags_set"]), m["flags_set"]
    assert not [o["osd"] for o in m["osds"] if "noup" in o["state"]]
    took = [j for j in eng.run.journal if j["action"].get("kind") == "leftovers_taken_over"]
    assert took and took[0]["action"]["flags"] == ["noout", "norebalance"]
    assert took[0]["action"]["noup"] == [4, 5]


def test_operator_flags_set_before_the_lost_run_stay(world):
    """noout the operator had set before the lost run started is among its saved flags: the
    next run leaves it."""
    world["map"]["flags_set"] = sorted(set(world["map"]["flags_set"]) | {"noout"})
    kv = {}
    lost_run(world, kv)
    corrupt(kv)
    both_up(world["map"], keep_noup_on=None)
    eng, ceph = cases.make_engine(world["map"])
    reader = store()
    with pytest.raises(statestore.StateCorrupt):
        reader.read(kv.get)
    eng.state_unreadable("damaged", 2000.0, reader.found_marks)
    all_helpers(eng, 2000.0, [RUNNING(4, 70 << 20), RUNNING(5, 70 << 20)])
    eng.observe(world["map"], world["tree"], world["pgs"], 2000.0)
    eng.begin(eng.start("80%", [], 1, 2000.0), 2000.0)
    for t in range(3):
        tick(eng, world, 2001.0 + t)
    assert eng.run.progress.phase == "done"
    assert "noout" in world["map"]["flags_set"]
    assert "norebalance" not in world["map"]["flags_set"]


def test_leftovers_survive_another_failover_before_the_next_run(world):
    kv = {}
    lost_run(world, kv)
    corrupt(kv)
    eng, _ceph = cases.make_engine(copy.deepcopy(world["map"]))
    reader = store()
    with pytest.raises(statestore.StateCorrupt):
        reader.read(kv.get)
    eng.state_unreadable("damaged", 2000.0, reader.found_marks)
    kv2 = {}
    persist(eng, kv2)                              # the idle state the new mgr writes
    again = state_mod.RunState.loads(store().read(kv2.get))
    assert again.leftovers == {"run_id": eng.run.leftovers["run_id"],
                               "flags": ["noout", "norebalance"], "noup": [4, 5]}


def test_no_marks_no_leftovers():
    assert state_mod.leftovers_from(None) is None
    assert state_mod.leftovers_from("not json") is None
    idle = state_mod.marks_of(state_mod.RunState().dumps())
    assert state_mod.leftovers_from(idle) is None
    assert store().read({}.get) is None
