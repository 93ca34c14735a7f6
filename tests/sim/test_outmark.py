"""The model's monitor: a host down past mon_osd_down_out_interval is marked out (a whole rack
is not, nor anything under noout), its data re-replicated; at boot it is marked in again
(not under noin) and backfills instead of a log recovery. Exact values from the model."""
from __future__ import annotations

import pytest

from ceph_recovery_tools.sim import levers
from ceph_recovery_tools.sim.cluster import C_DOWN, SUB_NONE, SUB_PENDING, SUB_READY, SUB_TEMP
from ceph_recovery_tools.sim.engine import RunConfig, Sim
from ceph_recovery_tools.sim.lifecycle import RECOVERING
from ceph_recovery_tools.sim.params import Params
from ceph_recovery_tools.sim.strategies import Unlimited, make


def _sim(topo, fail="host:1", downtime=3600.0, **params):
    cfg = RunConfig(strategy="unlimited", fail=fail, downtime_s=downtime)
    return Sim(topo, Params(**params), cfg, Unlimited(cfg))


def _out(sim):
    return sorted(o.id for o in sim.cl.osds if o.out)


def _host(sim, host="host1"):
    return sorted(o.id for o in sim.cl.osds if o.host == host)


def test_a_host_down_601_s_is_marked_out_and_counted(topo360):
    sim = _sim(topo360, downtime=601.0)
    sim.lc.mon.tick(0.0, sim.failed)
    assert _out(sim) == _host(sim) and len(_host(sim)) == 12
    res = sim.run()
    assert res["osds_marked_out"] == 12
    assert res["osds_marked_in"] == 12 and res["osds_out_at_end"] == 0


def test_a_host_down_599_s_is_not_out_yet_and_is_the_tick_after_600_s_while_it_loads(topo360):
    """Down 599 s at the return: not out. Its OSDs stay down in the map while they load and
    boot (load_s + boot_s), so the monitor's tick at 5 s (604 s down) marks them out."""
    sim = _sim(topo360, downtime=599.0)
    sim.lc.mon.tick(0.0, sim.failed)
    assert _out(sim) == []
    sim.lc.mon.tick(0.999, sim.failed)
    assert _out(sim) == []
    sim.lc.mon.tick(1.0, sim.failed)
    assert _out(sim) == _host(sim)
    booted_in_time = _sim(topo360, downtime=600.0 - 7.5)      # boots 599.5 s after the fail
    assert booted_in_time.p.load_s + booted_in_time.p.boot_s == 7.0
    assert booted_in_time.run()["osds_marked_out"] == 0


def test_a_whole_rack_down_is_not_marked_out(topo360, topo):
    sim = _sim(topo360, fail="rack:1")
    assert len(sim.failed) == 120
    sim.lc.mon.tick(0.0, sim.failed)
    assert _out(sim) == [] and sim.lc.mon.subtree_down_at == {"rack1": 0.0}
    one_host_racks = _sim(topo, fail="host:1")      # 5 hosts in 5 racks: the host is its rack
    one_host_racks.lc.mon.tick(0.0, one_host_racks.failed)
    assert _out(one_host_racks) == []


def test_a_rack_that_partly_came_back_marks_its_stragglers_out_from_the_last_tick_it_was_down(
        topo360):
    """OSDMonitor resets the timer of an OSD whose whole rack is down: a straggler is marked
    out down_out_interval_s after the last tick that saw the rack down."""
    sim = _sim(topo360, fail="rack:1")
    mon, lc = sim.lc.mon, sim.lc
    straggler = sim.failed[0]
    mon.tick(0.0, sim.failed)
    for o in sim.failed[1:]:
        lc.start(o, 0.0)
    lc.advance(0.0, 5.0)
    mon.tick(5.0, sim.failed)              # still loading: the rack is all down
    lc.advance(5.0, 10.0)                  # booted at load_s + boot_s = 7 s
    mon.tick(10.0, sim.failed)
    assert mon.subtree_down_at == {"rack1": 5.0}
    mon.tick(604.9, sim.failed)
    assert _out(sim) == []
    mon.tick(605.0, sim.failed)
    assert _out(sim) == [straggler.id]


def test_noout_prevents_out_marking(topo360):
    sim = _sim(topo360)
    levers.set_flags(sim, {"noout"})
    sim.lc.mon.tick(0.0, sim.failed)
    assert _out(sim) == []
    sim.lc.mon.group_flags["host1"] = {"noout"}
    levers.set_flags(sim, set())
    sim.lc.mon.tick(0.0, sim.failed)
    assert _out(sim) == []
    sim.lc.mon.group_flags.clear()
    sim.lc.mon.tick(0.0, sim.failed)
    assert _out(sim) == _host(sim)


def test_min_in_ratio_stops_out_marking(topo360):
    """mon_osd_min_in_ratio: no out that leaves fewer than that share of the OSDs in."""
    sim = _sim(topo360, fail="host:1,host:2", min_in_ratio=(360 - 18) / 360.0)
    sim.lc.mon.tick(0.0, sim.failed)
    assert len(_out(sim)) == 18


def test_re_replication_makes_the_pgs_clean_without_the_out_host(topo360):
    sim = _sim(topo360)
    p, cl, mon = sim.p, sim.cl, sim.lc.mon
    host = [o for o in sim.failed]
    objects = sum(p.pg_objects * len(o.pgs) for o in host)
    seconds = objects / (29 * p.host_objects_per_s * p.rereplicate_share)
    mon.tick(0.0, sim.failed)
    assert mon.rereplication_s(host) == pytest.approx(seconds)     # 29 hosts stay in
    ready = -3600.0 + p.down_out_interval_s + seconds
    assert ready < 0 and all(o.sub == SUB_READY for o in host)
    assert cl.n_clean_pgs == len(cl.members) and cl.n_active == len(cl.members)
    assert cl.n_down == 12


def test_at_boot_an_out_osd_is_marked_in_and_backfills(topo360):
    sim = _sim(topo360)
    res = sim.run()
    assert res["osds_marked_out"] == 12 and res["osds_marked_in"] == 12
    assert res["osds_out_at_end"] == 0 and res["pgs_remapped_at_end"] == 0
    assert all(not o.out and o.sub == SUB_NONE and not o.backfill for o in sim.failed)
    assert res["converged"]


def test_noin_keeps_an_osd_out_at_boot(topo360):
    sim = _sim(topo360)
    kept = sim.failed[0]
    kept.noin = True
    res = sim.run()
    assert res["osds_marked_out"] == 12 and res["osds_marked_in"] == 11
    assert res["osds_out_at_end"] == 1 and res["osds_down_at_end"] == 0
    assert kept.out and kept.up and kept.up_out and kept.cls == C_DOWN
    assert not res["converged"]
    everyone = _sim(topo360)
    levers.set_flags(everyone, {"noin"})
    res = everyone.run()
    assert res["osds_marked_in"] == 0 and res["osds_out_at_end"] == 12
    assert res["time_to_all_up_s"] == 10.0      # up at 7 s, the tick at 10 s sees it


def _boot_one(sim):
    """Start the first failed OSD alone at 0; advance until it recovers (or backfills)."""
    o = sim.failed[0]
    sim.lc.mon.tick(0.0, sim.failed)
    sim.lc.start(o, 0.0)
    t = 0.0
    while o.phase != RECOVERING and t < 3600.0:
        sim.lc.advance(t, t + 5.0)
        t += 5.0
    return o


def test_a_backfill_pushes_more_than_the_log_recovery_of_the_same_osd_and_holds_no_history(
        topo360):
    """The same OSD, the same 1 h: never out, it log-recovers the objects its missed writes
    touched and holds their history; out and in again, it backfills: those objects pushed,
    every other object of its PGs compared (backfill_scan_cost each), no history."""
    log = _sim(topo360, down_out_interval_s=0.0)
    bf = _sim(topo360)
    a, b = _boot_one(log), _boot_one(bf)
    p = bf.p
    booted = p.load_s + p.boot_s
    writes = a.active_pgs_down * p.write_rate_per_pg * a.write_mult * (3600.0 + booted)
    assert a.pending_writes == pytest.approx(writes) and b.pending_writes == pytest.approx(writes)
    changed = min(writes * p.distinct_object_frac, float(p.pg_objects * len(a.pgs)))
    whole = float(p.pg_objects * len(b.pgs))
    assert a.obj_total == pytest.approx(changed)
    assert b.obj_total == pytest.approx(changed + p.backfill_scan_cost * (whole - changed))
    assert b.obj_total > a.obj_total
    assert not a.backfill and a.hist_peak > 0
    assert b.backfill and b.hist_peak == 0.0 and b.sub == SUB_TEMP
    assert b.phase == RECOVERING and a.phase == RECOVERING
    # one OSD alone on its host recovers at the host's rate: the backfill takes longer
    assert b.obj_total / p.host_objects_per_s > a.obj_total / p.host_objects_per_s
    whole_pg = _sim(topo360, backfill_whole_pg=True)
    assert _boot_one(whole_pg).obj_total == pytest.approx(whole)


def test_a_backfill_keeps_its_pgs_not_degraded_but_remapped_until_it_ends(topo360):
    sim = _sim(topo360)
    o = _boot_one(sim)
    cl = sim.cl
    assert cl.remapped == set(o.pgs)
    assert cl.n_clean_total == len(cl.members)            # not degraded
    assert cl.n_clean_pgs == len(cl.members) - len(o.pgs)  # not clean: backfilling
    sim.lc._recovered(o)
    assert cl.remapped == set() and cl.n_clean_pgs == len(cl.members)
    assert o.sub == SUB_NONE and not o.backfill


def test_norebalance_pauses_an_out_osds_backfill_not_a_log_recovery(topo360):
    sim = _sim(topo360)
    o = _boot_one(sim)
    rate = sim.lc.rec_rate(o, sim.lc.rec_share(o.host))
    assert rate > 0
    levers.set_flags(sim, {"norebalance"})
    assert sim.lc.rec_rate(o, sim.lc.rec_share(o.host)) == 0.0
    log = _sim(topo360, down_out_interval_s=0.0)
    a = _boot_one(log)
    levers.set_flags(log, {"norebalance"})
    assert log.lc.rec_rate(a, log.lc.rec_share(a.host)) > 0


def test_in_again_before_its_re_replication_ended_it_log_recovers(topo360):
    """Marked out 1 s before the return, marked in at boot while its data is still being
    re-replicated: the re-replication stops and it recovers from the log."""
    sim = _sim(topo360, downtime=601.0)
    o = _boot_one(sim)
    assert sim.lc.mon.marked_in == 1 and o.sub == SUB_NONE and not o.backfill
    assert o.hist_peak > 0
    others = [x for x in sim.failed if x is not o]
    assert all(x.sub == SUB_PENDING for x in others)


def test_the_oracle_foresees_the_backfill_no_history_at_boot(topo360):
    from ceph_recovery_tools.sim.oracle import _boot_state
    sim = _sim(topo360)
    sim.lc.mon.tick(0.0, sim.failed)
    o = sim.failed[0]
    h, objs, _nh, entries, _base = _boot_state(sim, o, 0.0)
    assert h == 0.0 and entries == 0.0
    t_b = sim.p.load_s + sim.p.boot_s + sim.cfg.tick_s
    writes = sim.cl.missed_writes(o, t_b)
    assert objs == pytest.approx(sim.p.backfill_objects(
        writes * sim.p.distinct_object_frac, len(o.pgs)))
    o.noin = True                       # stays out at boot: in no PG, nothing to recover
    assert _boot_state(sim, o, 0.0)[:2] == (0.0, 0.0)
    fresh = _sim(topo360, down_out_interval_s=0.0)     # never out: its log recovery
    assert _boot_state(fresh, fresh.failed[0], 0.0)[0] > 0


def test_together_holds_them_out_with_noin_and_marks_them_in_at_once_to_backfill_whole_pgs(
        topo360):
    """out_return=together: noin on each out OSD of the failure; they boot out (up, in no
    PG); the tick that sees all of them up marks them in together, and each backfills every
    object of its PGs (its strays were purged)."""
    sim = _sim(topo360, out_return="together")
    sim.lc.mon.tick(0.0, sim.failed)
    sim.out_return.tick(sim)
    assert all(o.noin and o.out for o in sim.failed)
    for o in sim.failed[:-1]:
        sim.lc.start(o, 0.0)
    sim.lc.advance(0.0, 10.0)
    sim.out_return.tick(sim)                          # one still down: nobody is marked in
    assert all(o.up_out for o in sim.failed[:-1]) and sim.lc.mon.marked_in == 0
    last = sim.failed[-1]
    sim.lc.start(last, 10.0)
    sim.lc.advance(10.0, 20.0)
    sim.out_return.tick(sim)
    assert sim.lc.mon.marked_in == 12 and not any(o.out or o.noin for o in sim.failed)
    assert all(o.backfill and o.obj_total == float(sim.p.pg_objects * len(o.pgs))
               for o in sim.failed)
    assert sim.cl.n_down == 0


def test_the_controlled_start_returns_an_out_host_as_fast_as_naive_without_oom(topo360):
    """Host 1 down 1 h and marked out, 48 GiB hosts: the controlled start admits its OSDs on
    their backfill (no missed history), all in the first tick, like starting them all."""
    cfg = dict(fail="host:1", downtime_s=3600.0, host_ram=48 << 30)
    res = {}
    for name in ("naive", "controlled"):
        c = RunConfig(strategy=name, **cfg)
        res[name] = Sim(topo360, Params(), c, make(c)).run()
    ctl, naive = res["controlled"], res["naive"]
    assert ctl["osds_marked_out"] == 12 and ctl["oom_kills"] == 0
    assert ctl["time_to_all_up_s"] == naive["time_to_all_up_s"] == 10.0
    assert ctl["time_to_all_pgs_active_s"] == naive["time_to_all_pgs_active_s"]
