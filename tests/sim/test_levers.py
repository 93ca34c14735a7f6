"""The run's levers in the model (scripts/sim/levers.py) and the oracle's true peak: each lever's
effect on memory and recovery rate, with the numbers the model's formulas give."""
from __future__ import annotations

import pytest

from ceph_recovery import actions as A
from ceph_recovery_tools.sim import levers
from ceph_recovery_tools.sim.cli import concurrency_arg
from ceph_recovery_tools.sim.cluster import ACTIVE, BOOTING, LOADING, PREBOOT, RECOVERING, STOPPED
from ceph_recovery_tools.sim.controlled import Controlled
from ceph_recovery_tools.sim.engine import RunConfig, Sim
from ceph_recovery_tools.sim.oracle import true_peak
from ceph_recovery_tools.sim.params import GiB, MiB, Params
from ceph_recovery_tools.sim.strategies import Unlimited


def make_sim(topo, **params) -> Sim:
    cfg = RunConfig(strategy="unlimited", fail="host:1", downtime_s=3600.0)
    return Sim(topo, Params(**params), cfg, Unlimited(cfg))


def survivor(sim):
    return next(o for o in sim.cl.osds if not o.in_scope and o.phase == ACTIVE)


def test_memory_target_shrinks_a_running_osd_with_tcmalloc(topo):
    sim = make_sim(topo)
    o = survivor(sim)
    host_before, rss_before, nonhist_before = sim.cl.host_used[o.host], o.rss, o.nonhist
    levers.set_config(sim, "osd.%d" % o.id, "osd_memory_target", str(2 * GiB))
    new = max(int(2 * GiB * 0.875), o.load_bytes)
    assert o.steady == int(2 * GiB * 0.875)
    assert o.nonhist == new
    assert o.rss == pytest.approx(rss_before - (nonhist_before - new))
    assert sim.cl.host_used[o.host] == pytest.approx(host_before - (nonhist_before - new))


def test_memory_target_never_below_the_load(topo):
    sim = make_sim(topo)
    o = survivor(sim)
    levers.set_config(sim, "osd.%d" % o.id, "osd_memory_target", str(896 * MiB))
    assert o.steady < o.load_bytes
    assert o.nonhist == o.load_bytes


def test_without_tcmalloc_the_target_sizes_the_caches_of_the_next_start_only(topo):
    sim = make_sim(topo, heap_release=False)
    o = survivor(sim)
    rss, steady = o.rss, o.steady
    levers.set_config(sim, "osd.%d" % o.id, "osd_memory_target", str(2 * GiB))
    assert (o.rss, o.steady) == (rss, steady)          # the running process keeps its caches
    assert sim.cl.config[("osd.%d" % o.id, "osd_memory_target")] == str(2 * GiB)
    sim.lc.stop(o, sim.now)
    sim.lc.start(o, sim.now)
    assert o.steady == int(2 * GiB * 0.875)
    levers.set_config(sim, "osd.%d" % o.id, "osd_memory_target", None)   # the restore
    assert o.steady == int(2 * GiB * 0.875)            # until its next start
    sim.lc.stop(o, sim.now)
    sim.lc.start(o, sim.now)
    assert o.steady == steady


def test_restored_target_refills_caches_at_the_model_rate(topo):
    sim = make_sim(topo)
    o = survivor(sim)
    who = "osd.%d" % o.id
    levers.set_config(sim, who, "osd_memory_target", str(2 * GiB))
    low = o.nonhist
    levers.set_config(sim, who, "osd_memory_target", None)        # RestoreConfig value None
    p = sim.p
    assert o.steady == p.steady_rss and (who, "osd_memory_target") not in sim.cl.config
    sim.lc.advance(0.0, 100.0)
    assert o.nonhist == pytest.approx(low + (p.steady_rss - o.load_bytes) / p.cache_fill_s * 100)


@pytest.mark.parametrize("tcmalloc", [True, False])
def test_caches_refill_only_below_the_target_while_history_is_held(topo, tcmalloc):
    """A running OSD holding 1 GiB of PG-log history, caches at 2 GiB, target 4 GiB (steady
    3.5 GiB): with tcmalloc the autotuner (PriorityCache tune_memory) lets its caches grow only
    until the whole process reaches the target, 4 - 1 = 3 GiB of cache; without tcmalloc it
    reads no heap size and the caches refill to steady as if no history were held."""
    sim = make_sim(topo, heap_release=tcmalloc)
    o = survivor(sim)
    o.hist_keep, o.nonhist = float(GiB), float(2 * GiB)
    o.rss = o.nonhist + o.hist_keep
    sim.lc.dyn.add(o.id)
    sim.lc.advance(0.0, sim.p.cache_fill_s * 2)
    assert o.nonhist == pytest.approx(3 * GiB if tcmalloc else sim.p.steady_rss)
    assert o.rss == pytest.approx(o.nonhist + GiB)
    assert o.id not in sim.lc.dyn                       # nothing more changes: quiescent


def recovering_pair(sim):
    host = sim.failed[0].host
    a, b = [o for o in sim.failed if o.host == host][:2]
    for o in (a, b):
        o.phase, o.obj_left, o.obj_total = RECOVERING, 1000.0, 1000.0
        sim.lc.recovering[host].add(o.id)
        sim.lc.dyn.add(o.id)
    return host, a, b


def test_recovery_throttle_weights_the_hosts_rate(topo):
    sim = make_sim(topo)
    host, a, b = recovering_pair(sim)
    levers.set_config(sim, "osd.%d" % a.id, "osd_recovery_max_active", "1")
    assert a.rec_w == pytest.approx(1 / 3)
    share = sim.lc.rec_share(host)
    assert share == pytest.approx(300.0 / (1 + 1 / 3))
    assert sim.lc.rec_rate(a, share) == pytest.approx(75.0)
    assert sim.lc.rec_rate(b, share) == pytest.approx(225.0)
    levers.set_config(sim, "osd.%d" % a.id, "osd_max_backfills", "0")
    assert a.rec_w == 0.0 and sim.lc.rec_rate(a, sim.lc.rec_share(host)) == 0.0
    levers.set_config(sim, "osd.%d" % b.id, "osd_recovery_sleep", "0.5")
    assert sim.lc.rec_rate(b, sim.lc.rec_share(host)) == pytest.approx(2.0)


def test_norecover_pauses_recovery_until_unset(topo):
    sim = make_sim(topo)
    host, a, b = recovering_pair(sim)
    levers.set_flags(sim, {"noout", "norecover"})
    sim.lc.advance(0.0, 2.0)
    assert (a.obj_left, b.obj_left) == (1000.0, 1000.0)
    levers.set_flags(sim, {"noout"})
    sim.lc.advance(2.0, 4.0)
    assert a.obj_left == pytest.approx(1000.0 - 150.0 * 2)


def test_stop_osd_keeps_it_down(topo):
    sim = make_sim(topo)
    o = sim.failed[0]
    sim.lc.start(o, 0.0)
    levers.stop_osd(sim, o)
    assert (o.phase, o.rss, sim.m.stops, o.restart_at) == (STOPPED, 0.0, 1, None)
    for t in range(0, 60, 5):
        sim.now = float(t)
        sim.lc.advance(float(t), float(t + 5))
    assert o.phase == STOPPED and not o.up


def test_bad_lever_is_refused_and_counted_by_controlled(topo):
    sim = make_sim(topo)
    with pytest.raises(ValueError):
        levers.set_config(sim, "osd", "osd_memory_target", "1")
    with pytest.raises(ValueError):
        levers.set_config(sim, "osd.0", "bluestore_cache_size", "1")
    c = Controlled(sim.cfg)
    c.apply(sim, A.SetConfig(reason="r", who="osd.0", name="bluestore_cache_size", value="1"))
    c.apply(sim, A.SetConfig(reason="r", who="osd.0", name="osd_max_backfills", value="1"))
    assert len(sim.m.unmodelled) == 1 and sim.m.config_sets == 1
    assert c.config_changed == {("osd.0", "osd_max_backfills")}
    c.apply(sim, A.RestoreConfig(reason="r", who="osd.0", name="osd_max_backfills"))
    assert c.config_changed == set()


def test_concurrency_auto_is_zero():
    assert concurrency_arg("auto") == 0 and concurrency_arg("3") == 3
    for bad in ("0", "-1", "x"):
        with pytest.raises(Exception):
            concurrency_arg(bad)


def test_oracle_true_peak_is_the_peak_the_osd_reaches(topo):
    """A returning OSD alone on its host: the oracle's prediction at its start is the largest
    RSS the model then gives it until it settles. The model samples RSS at tick ends, so the
    peak at the exact end of peering (~35 s alone) is seen up to one 1-s tick early: at most
    ~3 % of the growth below it, never above."""
    sim = make_sim(topo)
    o = sim.failed[0]
    sim.lc.start(o, 0.0)
    assert o.phase == LOADING
    predicted = true_peak(sim, o, 0.0)
    t = 0.0
    while (o.phase != ACTIVE or o.nonhist < o.steady) and t < 20000:
        sim.lc.advance(t, t + 1.0)
        t += 1.0
    assert predicted * 0.97 <= o.run_peak <= predicted
    assert predicted > 2 * o.load_bytes


def run_until(sim, o, t, done):
    while not done() and t < 20000:
        sim.lc.advance(t, t + 1.0)
        t += 1.0
    return t


def test_a_restart_while_recovering_reloads_part_of_its_history_and_does_not_peak_again(topo):
    """Reef 18.2.7 and Pacific 16.2.15 labs (docs/memory-model.md, "A restart while
    recovering"): an OSD restarted with its PGs still degraded loads its PG log and missing
    set from disk, comes back at 0.3-0.5 of its first return's growth and peers without a
    second peak. In the model: it loads restart_hist_frac (restart_hist_frac_no_tcmalloc
    here) x the history of what it merged and did not recover, peers only the writes it
    missed while restarting, and the oracle predicts that (without tcmalloc here: the oracle
    leaves out the autotuner's cache ceiling, which holds a tcmalloc OSD's reloaded history
    plus caches at its target, so there it predicts up to ~5 % high)."""
    sim = make_sim(topo, heap_release=False)
    o = sim.failed[0]
    sim.lc.start(o, 0.0)
    t = run_until(sim, o, 0.0, lambda: o.phase == RECOVERING and o.obj_left < 0.5 * o.obj_total)
    first_peak, before, left = o.run_peak, o.rss, o.obj_left
    merged = o.pending_writes * o.obj_left / o.obj_total
    sim.lc.stop(o, t)
    assert o.merged == pytest.approx(merged)
    sim.lc.start(o, t + 1.0)
    assert o.rss == pytest.approx(o.load_bytes + 0.5 * 8 * 1024 * merged)   # no tcmalloc: 0.5
    predicted = true_peak(sim, o, t + 1.0)
    t = run_until(sim, o, t + 1.0, lambda: o.phase not in (LOADING, PREBOOT, BOOTING))
    assert o.peer_total < 0.01 * merged           # only the writes of the seconds it was down
    assert o.obj_left == pytest.approx(left, rel=0.01)   # its missing set: recovery goes on
    run_until(sim, o, t, lambda: o.phase == ACTIVE and o.nonhist >= o.steady)
    assert o.run_peak < before < first_peak
    assert predicted * 0.97 <= o.run_peak <= predicted


def test_under_mclock_the_settings_count_only_behind_the_override(topo):
    """mClock ignores an OSD's max_active/backfills until its override is true, and forces
    every recovery sleep to 0; the throttle's order (override first) makes them count."""
    sim = make_sim(topo, op_queue="mclock_scheduler")
    host, a, b = recovering_pair(sim)
    who = "osd.%d" % a.id
    levers.set_config(sim, who, "osd_recovery_max_active", "1")
    assert (a.rec_w, a.rec_ops) == (1.0, 3 + 1 * 3)                 # ignored
    levers.set_config(sim, who, "osd_mclock_override_recovery_settings", "true")
    assert a.rec_w == pytest.approx(1 / 3) and a.rec_ops == 1 + 1 * 3
    levers.set_config(sim, who, "osd_mclock_override_recovery_settings", None)   # restored
    assert (a.rec_w, a.rec_ops) == (1.0, 3 + 1 * 3)
    levers.set_config(sim, "osd.%d" % b.id, "osd_recovery_sleep", "0.5")
    assert b.rec_cap == 0.0                                          # no sleep under mClock
    with pytest.raises(ValueError):
        levers.set_config(sim, who, "osd_mclock_profile", "fastest")


def test_the_client_profile_weights_recovery_by_the_measured_ratio(topo):
    sim = make_sim(topo, op_queue="mclock_scheduler", mclock_client_profile_rate=0.5)
    host, a, b = recovering_pair(sim)
    levers.set_config(sim, "osd.%d" % a.id, "osd_mclock_profile", "high_client_ops")
    assert a.rec_w == pytest.approx(0.5)
    wpq = make_sim(topo, mclock_client_profile_rate=0.5)
    host, a, b = recovering_pair(wpq)
    levers.set_config(wpq, "osd.%d" % a.id, "osd_mclock_profile", "high_client_ops")
    assert a.rec_w == 1.0                                            # wpq: no mClock profile
