"""The four strategies on a small model cluster (60 OSDs, 5 hosts of 12, one host per rack,
rack:1 down 1 h): naive collapses at 4 GiB per OSD, controlled stays in budget without OOM
kills, unlimited is the floor, serial is slow; runs are deterministic per seed; plan()'s
invariants hold on every controlled tick. No timing assertions: only simulated outcomes."""
from __future__ import annotations

import pytest

from ceph_recovery_tools.sim.cli import parser, run

BASE = ["--osds", "60", "--hosts", "5", "--racks", "5", "--fail", "rack:1",
        "--downtime", "3600", "--horizon", "86400"]
VOLATILE = ("wall_s", "plan_median_ms", "plan_p99_ms")


def sim(strategy, *extra):
    return run(parser().parse_args(BASE + ["--strategy", strategy] + list(extra)))


@pytest.fixture(scope="module")
def results():
    # controlled one at a time (--concurrency 1): the serial comparison below is about that
    # mode
    return {s: sim(s, "--check-invariants", *(["--concurrency", "1"] if s == "controlled"
                                              else [])) for s in ("naive", "serial",
                                                                  "controlled", "unlimited")}


def test_naive_oom_cascade_at_4_gib_per_osd():
    """At Ceph's default osd_memory_target per OSD (48 GiB for 12) starting everything kills
    OSDs faster than systemd may restart them. (At this model's default 5.33 GiB per OSD naive
    now gets through with a few kills: an OSD killed while recovering comes back with part of
    its history only, as on the lab, see docs/memory-model.md.)"""
    r = sim("naive", "--host-ram", str(48 << 30))
    assert r["oom_kills"] > 0
    assert r["units_failed"] > 0                     # systemd gave up on some OSDs
    assert not r["converged"] and r["osds_down_at_end"] > 0


def test_controlled_no_oom_within_budget_and_converges(results):
    r = results["controlled"]
    assert r["oom_kills"] == 0
    assert r["peak_host_mem_over_budget"] <= 1.0
    assert r["converged"], (r["osds_down_at_end"], r["plan_last_health"])


def test_controlled_invariants_hold_on_every_tick(results):
    r = results["controlled"]
    assert r["decisions"] > 0
    assert r["invariant_violations"] == 0, r["invariant_examples"]


def test_unlimited_is_the_floor_for_service(results):
    """Unlimited starts everything at once and nothing kills it: no strategy has all OSDs up or
    all PGs active sooner. Not so for clean: its returning OSDs all peer and recover at once on
    their host's shared rate, and a staggered start can finish recovery first."""
    u = results["unlimited"]
    assert u["oom_kills"] == 0 and u["converged"]
    assert u["peak_host_mem_over_budget"] > 1.0      # what a naive start would need
    for name, r in results.items():
        for key in ("time_to_all_up_s", "time_to_all_pgs_active_s"):
            if r[key] is not None:
                assert u[key] <= r[key], (name, key)


def test_serial_is_slower_than_controlled(results):
    s, c = results["serial"], results["controlled"]
    assert s["oom_kills"] == 0                       # one at a time fits in RAM
    assert c["time_to_all_up_s"] is not None, c["plan_last_health"]
    assert s["time_to_all_up_s"] is None or s["time_to_all_up_s"] > c["time_to_all_up_s"]


@pytest.mark.parametrize("strategy", ["naive", "controlled"])
def test_deterministic_per_seed(strategy):
    a, b = sim(strategy, "--seed", "5"), sim(strategy, "--seed", "5")
    for k in VOLATILE:
        a.pop(k), b.pop(k)
    assert a == b


def test_seed_changes_the_workload():
    a, b = sim("unlimited", "--seed", "1"), sim("unlimited", "--seed", "2")
    assert a["peak_host_mem_bytes"] != b["peak_host_mem_bytes"]


def test_no_heap_release_means_no_release_effect():
    r = sim("controlled", "--no-heap-release")
    assert r["heap_release_supported"] is False
    assert r["oom_kills"] == 0


def test_deterministic_across_processes(tmp_path):
    """Same seed, different hash seeds (set/dict order) -> the same JSON."""
    import json
    import os
    import subprocess
    import sys
    outs = []
    for hashseed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hashseed)
        argv = BASE + ["--strategy", "naive", "--seed", "4", "--json"]
        p = subprocess.run([sys.executable, "-m", "ceph_recovery_tools.sim.cli"] + argv,
                           env=env, cwd=str(tmp_path), capture_output=True, text=True,
                           check=True)
        r = json.loads(p.stdout)
        for k in VOLATILE:
            r.pop(k)
        outs.append(r)
    assert outs[0] == outs[1]
