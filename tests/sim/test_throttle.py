"""The recovery throttle in the model: a controlled run with and without it on tight hosts
(one rack of 10 hosts x 12 OSDs down 1 h, 360 OSDs, seed 1). It prints the failed hosts' peak
memory, OOM kills, the brake's stops and the time to all PGs active (printed, never asserted)
for two cells:
  44 GiB per host (3.7 GiB per OSD), recovery settings raised as operators do to speed
     recovery (the lab drill's osd_recovery_max_active 8, osd_max_backfills 4): a recovering
     OSD holds (8 + 4 x 8) x 4 MiB = 160 MiB of recovery ops in flight, throttled
     (1 + 1 x 8) x 4 MiB = 36 MiB (scripts/sim/levers.py);
  48 GiB per host (4 GiB per OSD, Ceph's default osd_memory_target), Ceph's defaults:
     24 MiB in flight, throttled 16 MiB: the throttle has little to take there.
The throttle acts only on a host over its budget. Since auto concurrency opens only on real
peaks (warmup.concurrency), the failed hosts stay within the budget in both cells, so it
has nothing to do there (before, with starts admitted on load floors, the 44 GiB cell went
over the budget and the throttle lowered its peak from 41.07 to 40.52 GiB). Its actions are
tested on snapshots in tests/unit/core/test_plan_throttle.py.
Asserted: no OOM kill and no invariant violation either way, the failed hosts' peak within
the budget, every setting restored by the end but the lowered osd_memory_target the host
cannot hold, and with no host over its budget the throttle sets nothing."""
from __future__ import annotations

from ceph_recovery_tools.sim.controlled import Controlled
from ceph_recovery_tools.sim.engine import RunConfig, Sim
from ceph_recovery_tools.sim.params import GiB, Params

RAISED = {"recovery_max_active_default": 8, "max_backfills_default": 4}
CELLS = [("44 GiB, raised settings", 44 * GiB, RAISED), ("48 GiB, Ceph defaults", 48 * GiB, {})]


class FailedHostPeak(Controlled):
    """The controlled strategy, noting the largest used memory of the failed hosts after
    every tick (the survivors' hosts do not depend on the run)."""

    def __init__(self, cfg):
        super().__init__(cfg)
        self.peak = 0.0

    def tick(self, sim):
        super().tick(sim)
        hosts = {o.host for o in sim.failed}
        self.peak = max([self.peak] + [sim.cl.host_used[h] for h in hosts])


def run(topo, ram, params, throttle):
    cfg = RunConfig(strategy="controlled", fail="rack:1", downtime_s=3600.0, host_ram=ram,
                    seed=1, throttle=throttle, horizon_s=6 * 3600.0, check_invariants=True)
    st = FailedHostPeak(cfg)
    res = Sim(topo, Params(**params), cfg, st).run()
    res["failed_host_peak"] = st.peak
    return res


def _line(name, ram, thr, r):
    act = r["time_to_all_pgs_active_s"]
    return "%-24s %-8s peak %6.2f GiB (%.3f of RAM)  oom %d  stops %d  sets %3d  active %s" % (
        name, "throttle" if thr else "off", r["failed_host_peak"] / GiB,
        r["failed_host_peak"] / ram, r["oom_kills"], r["stops"], r["config_sets"],
        "%.0f s" % act if act is not None else "never")


def test_throttle_on_tight_hosts_with_and_without(topo360, capsys):
    out = {}
    for name, ram, params in CELLS:
        for thr in (True, False):
            out[name, thr] = r = run(topo360, ram, params, thr)
            with capsys.disabled():
                print("\n" + _line(name, ram, thr, r), end="")
            assert r["oom_kills"] == 0 and r["invariant_violations"] == 0
            assert all(k.endswith("osd_memory_target") for k in r["config_left_changed"])
            assert r["failed_host_peak"] <= r["budget_bytes"]
        assert out[name, True]["config_sets"] == out[name, False]["config_sets"]
