"""Each tick's time split by phase in `recovery perf` (the core's plan() apart from the shell's
view, acting and persisting), and the run state written as one entry while it fits one."""
from __future__ import annotations

from mgrlab import LabModule  # see conftest.py


def tick(m, woken=True):
    m.meter.tick_begin()
    m._tick(woken)
    m.meter.tick_end(active=m.engine.active)
    return m.meter.doc()["ticks"][-1]


def test_a_runs_tick_times_its_phases_and_writes_its_state_once_per_write():
    m = LabModule()
    keys = []
    m.set_store = lambda key, value: (keys.append(key), m.store.__setitem__(key, value))
    assert m.cmd_start(scope=["h3"])[0] == 0
    t = tick(m)
    assert m.engine.plan_out.actions
    phases = t["phases"]
    # the first tick read the map (each OSD's release: osd_versions) and the PG stats
    # (pg_slim: from get()'s answer to the kept stats)
    assert set(phases) == {"osd_versions", "pg_slim", "view", "plan", "act", "persist"}, phases
    assert all(v >= 0 for v in phases.values())
    assert sum(phases.values()) <= t["tick_s"] + 1e-3
    # each state write of the tick is one config-key entry, the state's (it fits one), plus
    # its marks when what the run set changed
    assert t["state_writes"] >= 1
    assert keys.count("run_state") == t["state_writes"], keys
    assert set(keys) <= {"run_state", "run_state.marks"}, keys


def test_an_idle_tick_that_does_not_plan_times_no_phase():
    m = LabModule()
    tick(m)
    t = tick(m, False)              # same dumps, nothing acted, no command: no plan
    assert "plan" not in t.get("phases", {})
