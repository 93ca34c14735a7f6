"""The end of a rack's controlled start on the 1,200-OSD model (100 hosts of 12, 10 racks,
rack:1 = 10 hosts down 1 h, budget 0.9 (auto's base, fixed: raised, it leaves the room
these levers make), concurrency 1): the last OSDs of every host need
room made for them, by heap release where tcmalloc frees it, else by restarts of their host's
settled OSDs, which ok-to-stop refuses while PG partners on the other failed hosts are down.
With the default start order (unblock_first) the run gets every OSD back even without tcmalloc
heap release (Debian's build), with no OOM kill, within the budget and with plan()'s invariants
holding on every tick.
Only simulated outcomes are asserted, never timings."""
from __future__ import annotations

import pytest

from ceph_recovery_tools.sim.cli import parser, run

BASE = ["--osds", "1200", "--hosts", "100", "--racks", "10", "--fail", "rack:1",
        "--downtime", "3600", "--horizon", "86400", "--strategy", "controlled",
        "--check-invariants", "--budget", "0.9"]
ONE = ["--concurrency", "1"]      # the module's default is auto since the hosts x RAM sweep


@pytest.mark.parametrize("extra, lever", [([], "heap_releases"),
                                          (["--no-heap-release"], "restarts")],
                         ids=["heap", "no_heap_release"])
def test_default_order_brings_the_whole_rack_back(extra, lever):
    r = run(parser().parse_args(BASE + ONE + extra))
    assert r["start_order"] == "unblock_first"
    assert r["converged"] and r["osds_down_at_end"] == 0 and r["pgs_inactive_at_end"] == 0
    assert r["time_to_all_pgs_active_s"] is not None
    assert r["oom_kills"] == 0 and r["invariant_violations"] == 0
    # without tcmalloc the caches of OSDs whose PGs are clean still refill (no autotuner, no
    # reservation for that): a host may creep past its budget by that refill until the
    # over-budget response (a restart) answers on the next tick
    assert r["peak_in_run_over_budget"] <= (1.0 if lever == "heap_releases" else 1.01)
    # Without tcmalloc nothing holds a process's caches under its target: OSDs started in the
    # run refill them after Done while their PGs still recover (1.005 x the budget here,
    # docs/memory-model.md "A restart while recovering")
    assert r["peak_host_mem_over_budget"] <= (1.0 if lever == "heap_releases" else 1.01)
    # the tail did need room made: heap releases, or without them restarts ok-to-stop cleared
    assert r[lever] > 0, {k: r[k] for k in ("heap_releases", "restarts")}
    if lever == "restarts":
        assert r["heap_releases"] == 0


def test_auto_concurrency_brings_the_whole_rack_back_within_the_budget():
    """The default, concurrency auto: every OSD back, no OOM kill, invariants hold, and the
    0.8 budget holds (before auto waited for real peaks, warmup.concurrency, starts
    admitted on load floors took a failed host to 1.14 x the budget)."""
    r = run(parser().parse_args(BASE))
    assert r["concurrency"] == 0
    assert r["converged"] and r["osds_down_at_end"] == 0 and r["pgs_inactive_at_end"] == 0
    assert r["oom_kills"] == 0 and r["invariant_violations"] == 0
    assert r["peak_host_mem_over_budget"] <= 1.0
