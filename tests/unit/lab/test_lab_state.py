"""D/lab.json: atomic save, load, version check, locked read-modify-write; cgroup readers."""
import json
import os

import pytest

from ceph_recovery_tools.lab import cgroups
from ceph_recovery_tools.lab.state import load_state, save_state, update_state


def test_save_load_roundtrip_leaves_no_temp_files(tmp_path):
    state = {"version": 1, "dir": str(tmp_path), "pids": {"mon.a": 1}}
    save_state(str(tmp_path), state)
    assert load_state(str(tmp_path)) == state
    assert sorted(os.listdir(tmp_path)) == ["lab.json"]


def test_load_rejects_other_versions_and_missing(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_state(str(tmp_path))
    (tmp_path / "lab.json").write_text(json.dumps({"version": 2}))
    with pytest.raises(ValueError):
        load_state(str(tmp_path))


def test_update_state_merges_into_current_file(tmp_path):
    save_state(str(tmp_path), {"version": 1, "pids": {"mon.a": 1}})
    update_state(str(tmp_path), lambda s: s["pids"].__setitem__("mgr.x", 2))
    assert load_state(str(tmp_path))["pids"] == {"mon.a": 1, "mgr.x": 2}


def test_cgroup_v1_memory_reading(tmp_path):
    (tmp_path / "memory.usage_in_bytes").write_text("1000\n")
    (tmp_path / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    (tmp_path / "memory.max_usage_in_bytes").write_text("3000\n")
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 4\n")
    assert cgroups.memory(1, str(tmp_path)) == {"usage": 1000, "limit": None, "oom_kill": 4,
                                                 "max_usage": 3000}
    (tmp_path / "memory.limit_in_bytes").write_text("629145600\n")
    assert cgroups.memory(1, str(tmp_path))["limit"] == 629145600


def test_cgroup_v2_memory_reading(tmp_path):
    (tmp_path / "memory.current").write_text("2000\n")
    (tmp_path / "memory.max").write_text("max\n")
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 2\noom_kill 1\n")
    assert cgroups.memory(2, str(tmp_path)) == {"usage": 2000, "limit": None, "oom_kill": 1,
                                                 "max_usage": 2000}
    (tmp_path / "memory.max").write_text("1073741824\n")
    (tmp_path / "memory.peak").write_text("5000\n")
    got = cgroups.memory(2, str(tmp_path))
    assert (got["limit"], got["max_usage"]) == (1 << 30, 5000)


def test_group_paths():
    assert cgroups.group_path(1, "L", "h1") == "/sys/fs/cgroup/memory/L/h1"
    assert cgroups.group_path(2, "L", "h1") == "/sys/fs/cgroup/L/h1"
    assert cgroups.group_path(2, "L") == "/sys/fs/cgroup/L"
