"""A maintenance window survives a lost or corrupt run state: the state's marks name it, so
the module that finds the state unreadable keeps the window (its bucket held, noout kept) and
`maintenance exit` still ends it. Before, the window vanished and exit answered ENOENT while
the bucket's group noup and noout stayed set."""
from __future__ import annotations

import importlib.util
import os

import pytest

from recovery import maint, state as state_mod, statestore  # see conftest.py

_spec = importlib.util.spec_from_file_location(
    "maint_engine_cases", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                       "test_maintenance_engine.py"))
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)
world = cases.world


def store():
    return statestore.ChunkedStore("run_state", chunk_bytes=2000, marks=state_mod.marks_of,
                                   lost=lambda m: bool(state_mod.leftovers_from(m)
                                                       or state_mod.windows_from(m)))


def open_window(world):
    """h2 in maintenance: entered, its OSDs stopped, the window open; its state in kv."""
    eng, mon = cases.make(world)
    assert maint.enter(eng, "h2", "kernel", "4h", "plain", 1000.0)[0] == 0
    cases.helpers(eng, 1001.0)
    cases.tick(eng, world, 1001.0)
    cases.tick(eng, world, 1003.0)
    ids = [i["id"] for i in eng.run.open_instructions()]
    cases.set_up(world, 2, False)
    cases.set_up(world, 3, False)
    cases.helpers(eng, 1005.0, h2=(False, False), done=ids)
    cases.tick(eng, world, 1005.0)
    assert [w.phase for w in eng.run.windows] == ["open"]
    kv = {}
    kv.update({k: v for k, v in store().writes(eng.run.dumps()) if v is not None})
    return kv


def corrupt(kv):
    kv["run_state.a.0"] = "x" * 10


def lose(kv):
    del kv["run_state"]


@pytest.mark.parametrize("damage", [corrupt, lose])
def test_a_window_survives_a_lost_state_and_still_exits(world, damage):
    kv = open_window(world)
    damage(kv)
    reader = store()
    with pytest.raises(statestore.StateCorrupt):
        reader.read(kv.get)
    eng, mon = cases.make(world)
    eng.state_unreadable("damaged", 2000.0, reader.found_marks)
    assert [(w.bucket, w.phase, w.osds) for w in eng.run.windows] == [("h2", "open", (2, 3))]
    assert "h2" in maint.holds(eng)
    cases.helpers(eng, 2001.0, h2=(False, False))
    cases.tick(eng, world, 2001.0)
    assert "noout" in world["map"]["crush_node_flags"].get("h2", [])
    rc, out, err = maint.exit_(eng, "h2", "80%", None, "plain", 2010.0)
    assert rc == 0 and "controlled start run" in out, err
