"""PG membership in the simulator's snapshots: the model's incremental inactive set is the set
of PGs whose state is not active, the snapshot's PgMap is the model's placement, and the
controlled run with Ceph's own ok-to-stop rule ends with every OSD up once the core has
membership (the min_size guard)."""
from __future__ import annotations

from ceph_recovery_tools.sim.cli import parser, run
from ceph_recovery_tools.sim.controlled import Controlled
from ceph_recovery_tools.sim.engine import RunConfig, Sim
from ceph_recovery_tools.sim.params import Params
from ceph_recovery_tools.sim.strategies import Unlimited


def brute_inactive(cl):
    return {pg for pg in range(len(cl.members)) if not cl._pg_state(pg)[0]}


def test_inactive_set_follows_the_pg_states(topo):
    cfg = RunConfig(strategy="unlimited", fail="rack:1", downtime_s=3600.0)
    sim = Sim(topo, Params(), cfg, Unlimited(cfg))
    cl = sim.cl
    assert cl.inactive_pgs == brute_inactive(cl)
    seen_some = False
    for o in sim.failed:
        sim.lc.start(o, 0.0)
    for t in range(0, 600, 5):
        sim.now = float(t)
        sim.lc.advance(float(t), float(t + 5))
        assert cl.inactive_pgs == brute_inactive(cl), t
        seen_some = seen_some or bool(cl.inactive_pgs)
    assert seen_some      # peering made some PGs inactive on the way


def test_snapshot_carries_the_models_placement(topo):
    cfg = RunConfig(strategy="controlled", fail="rack:1", downtime_s=3600.0)
    sim = Sim(topo, Params(), cfg, Controlled(cfg))
    snap = sim.strategy.snapshot(sim)
    pm = snap.pg_map
    assert pm.members == tuple(sim.cl.members) and pm.min_size(0) == sim.cl.min_size
    assert pm.by_osd[7] == tuple(sim.cl.osds[7].pgs)
    assert pm.inactive == frozenset(sim.cl.inactive_pgs)
    off = RunConfig(strategy="controlled", fail="rack:1", downtime_s=3600.0, membership=False)
    sim = Sim(topo, Params(), off, Controlled(off))
    assert sim.strategy.snapshot(sim).pg_map is None


def test_controlled_with_cephs_ok_to_stop_rule_brings_every_osd_back():
    base = ["--osds", "1200", "--hosts", "100", "--racks", "10", "--host-ram", str(48 << 30),
            "--seed", "1", "--horizon", "21600", "--param", "ok_to_stop_ceph=1"]
    res = run(parser().parse_args(base))
    assert res["oom_kills"] == 0 and res["osds_down_at_end"] == 0
    assert res["pgs_inactive_at_end"] == 0 and res["time_to_all_pgs_active_s"] is not None
