"""ceph-recovery-sim's command line: JSON keys, human output, clear errors."""
from __future__ import annotations

import errno
import json

import pytest

from ceph_recovery.policies import REGISTRY
from ceph_recovery_tools.sim.cli import main
from ceph_recovery_tools.sim.engine import RunConfig, Sim
from ceph_recovery_tools.sim.params import Params
from ceph_recovery_tools.sim.strategies import make
from ceph_recovery_tools.sim.topology import load

KEYS = {"time_to_all_up_s", "time_to_all_pgs_active_s", "time_to_all_pgs_clean_s",
        "peak_host_mem_bytes", "peak_host_mem_over_budget", "oom_kills", "restarts",
        "heap_releases", "decisions", "wall_s", "converged", "invariant_violations",
        "osds", "hosts", "racks", "fail", "downtime_s", "strategy", "seed", "budget_frac",
        "host_ram_bytes", "horizon_s", "tick_s", "pgs", "start_order"}
SMALL = ["--osds", "60", "--hosts", "5", "--racks", "5", "--horizon", "20000"]


def test_json_has_every_key(capsys):
    assert main(SMALL + ["--strategy", "unlimited", "--json", "--seed", "3"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert KEYS <= set(r)
    assert r["osds"] == 60 and r["strategy"] == "unlimited" and r["seed"] == 3
    assert r["budget_frac"] == 0.9 and r["host_ram_bytes"] == 64 * (1 << 30)


def test_human_output(capsys):
    assert main(SMALL + ["--strategy", "serial"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("serial: 60 OSDs / 5 hosts / 5 racks")
    assert "oom_kills" in out


def test_host_ram_and_param_overrides(capsys):
    assert main(SMALL + ["--strategy", "naive", "--json", "--host-ram", str(1 << 40),
                         "--param", "write_rate_per_pg=0.5"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["host_ram_bytes"] == 1 << 40 and r["oom_kills"] == 0


@pytest.mark.parametrize("argv,code,msg", [
    (["--osds", "61"], errno.EINVAL, "osds % hosts"),
    (["--fail", "rack:9"], errno.ENOENT, "no rack named rack9"),
    (["--fail", "row:1"], errno.EINVAL, "rack:N or host:N"),
    (["--budget", "1.5"], errno.EINVAL, "fraction of host RAM"),
    (["--param", "nonsense=1"], errno.EINVAL, "unknown model parameter"),
    (["--start-order", "fastest"], errno.EINVAL, "unknown --start-order 'fastest'"),
])
def test_bad_input_is_a_clear_error(capsys, argv, code, msg):
    assert main(SMALL + argv) == code
    assert msg in capsys.readouterr().err


def test_trace_writes_one_json_line_per_decision(tmp_path, capsys):
    path = tmp_path / "trace.jsonl"
    assert main(SMALL + ["--strategy", "controlled", "--json", "--trace", str(path)]) == 0
    r = json.loads(capsys.readouterr().out)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == r["decisions"] > 0
    assert lines[0]["t"] == 0.0 and "set_flag noout" in " ".join(lines[0]["actions"])
    assert set(lines[0]["used_gib"]) == {"host1"}


@pytest.mark.parametrize("name", ["service_first", "unblock_first"])
def test_start_order_option_reaches_plan(tmp_path, capsys, name):
    """Two hosts down (so some PGs are inactive and the policies disagree): the first tick's
    first grant on each failed host is the first OSD of that host in the chosen policy's order
    of the run's first snapshot."""
    cfg = RunConfig(strategy="controlled", fail="host:1,host:2", start_order=name)
    strategy = make(cfg)
    snap = strategy.snapshot(Sim(load(60, 5, 5, 0), Params(), cfg, strategy))
    first = {}
    for x in REGISTRY["start_order"][name]([x for x in snap.osds if not x.up], snap):
        first.setdefault(x.host, "osd.%d:" % x.id)
    path = tmp_path / "trace.jsonl"
    assert main(SMALL + ["--strategy", "controlled", "--fail", "host:1,host:2", "--json",
                         "--start-order", name, "--trace", str(path)]) == 0
    r = json.loads(capsys.readouterr().out)
    tick0 = json.loads(path.read_text().splitlines()[0])
    host = {"osd.%d:" % x.id: x.host for x in snap.osds}
    granted = {}
    for a in tick0["actions"]:
        if a.startswith("grant_start"):
            granted.setdefault(host[a.split()[1]], a.split()[1])
    assert r["start_order"] == name and granted == first
