"""The model's mechanics on a small real placement: PG counters, ok-to-stop, OOM killer,
systemd restart limits, memory of returning and restarted OSDs."""
from __future__ import annotations

import random

import pytest

from ceph_recovery_tools.sim.cluster import (ACTIVE, C_CLEAN, C_DOWN, C_OK, C_PEERING, FAILED,
                                             LOADING, PEERING, PREBOOT, STOPPED, Cluster)
from ceph_recovery_tools.sim.engine import RunConfig, Sim
from ceph_recovery_tools.sim.lifecycle import Lifecycle
from ceph_recovery_tools.sim.params import GiB, Params
from ceph_recovery_tools.sim.strategies import Naive, Unlimited


def recount(cl: Cluster):
    """PG states from scratch (what the incremental counters must equal)."""
    active = clean = 0
    inactive = [0] * len(cl.osds)
    degraded = [0] * len(cl.osds)
    for pg, up in enumerate(cl.members):
        cls = [cl.osds[o].cls for o in up]
        a = sum(c >= C_OK for c in cls) >= cl.min_size and C_PEERING not in cls
        c = all(x == C_CLEAN for x in cls)
        active += a
        clean += c
        for o in up:
            inactive[o] += not a
            degraded[o] += not c
    return active, clean, inactive, degraded


def test_incremental_pg_counters_match_recount(topo):
    cl = Cluster(topo, Params(), 64 * GiB)
    rng = random.Random(7)
    for step in range(400):
        o = cl.osds[rng.randrange(len(cl.osds))]
        cl.set_class(o, rng.choice((C_DOWN, C_PEERING, C_OK, C_CLEAN)))
        if step % 50 == 0:
            active, clean, inactive, degraded = recount(cl)
            assert (cl.n_active, cl.n_clean_total) == (active, clean)
            assert cl.n_available == sum(
                sum(cl.osds[m].cls >= C_OK for m in up) >= cl.min_size for up in cl.members)
            assert [x.inactive for x in cl.osds] == inactive
            assert [x.degraded for x in cl.osds] == degraded
    assert cl.n_down == sum(o.cls == C_DOWN for o in cl.osds)


def _active_pgs(cl: Cluster):
    out = set()
    for pg, up in enumerate(cl.members):
        cls = [cl.osds[o].cls for o in up]
        if sum(c >= C_OK for c in cls) >= cl.min_size and C_PEERING not in cls:
            out.add(pg)
    return out


def test_ok_to_stop_matches_brute_force(topo):
    cl = Cluster(topo, Params(), 64 * GiB)
    rng = random.Random(3)
    for o in rng.sample(cl.osds, 20):
        cl.set_class(o, rng.choice((C_DOWN, C_PEERING, C_OK)))
    answers = set()
    for o in cl.osds:
        before = _active_pgs(cl)
        old = o.cls
        cl.set_class(o, C_DOWN)
        lost = before - _active_pgs(cl)
        cl.set_class(o, old)
        assert cl.ok_to_stop(o) == (not lost), o.id
        answers.add(not lost)
    assert answers == {True, False}        # the sample exercises both answers


def _sim(topo, strategy_cls, **cfg):
    c = RunConfig(strategy=strategy_cls.name, fail="rack:1", **cfg)
    return Sim(topo, Params(), c, strategy_cls(c))


def test_failed_domain_starts_down_and_survivors_grow(topo):
    sim = _sim(topo, Naive)
    failed = {o.id for o in sim.failed}
    assert failed == set(range(12, 24))                # rack1 = host1 = osd.12..23
    assert all(sim.cl.osds[i].phase == STOPPED and not sim.cl.osds[i].up for i in failed)
    survivor = next(o for o in sim.cl.osds if o.id not in failed and o.degraded)
    assert survivor.rss > Params().steady_rss          # serving degraded writes grew it
    assert sim.cl.host_used["host1"] == pytest.approx(Params().host_system_bytes)


def test_oom_killer_kills_largest_and_systemd_gives_up_after_burst(topo):
    sim = _sim(topo, Naive)
    host = sim.cl.host_osds["host1"]
    big = host[3]
    for o in host:
        sim.lc.start(o, 0.0)
    sim.cl.set_rss(big, 80 * GiB)                      # over the host's 64 GiB alone
    sim._oom()
    assert sim.m.oom_kills == 1 and big.phase == STOPPED and big.restart_at == 10.0
    assert all(o.phase == LOADING for o in host if o is not big)
    # two more failures inside StartLimitInterval -> the unit stays failed
    for t in (20.0, 40.0):
        sim.now = t
        sim.lc.start(big, t)
        sim.cl.set_rss(big, 80 * GiB)
        sim._oom()
    assert big.phase == FAILED and sim.m.units_failed == 1 and sim.m.oom_kills == 3


def test_unlimited_never_kills(topo):
    sim = _sim(topo, Unlimited)
    o = sim.failed[0]
    sim.lc.start(o, 0.0)
    sim.cl.set_rss(o, 500 * GiB)
    sim._oom()
    assert sim.m.oom_kills == 0 and o.running


def test_returning_osd_memory_phases_and_restart_sheds(topo):
    sim = _sim(topo, Naive)
    o = sim.failed[0]
    o.noup = True
    sim.lc.start(o, 0.0)
    sim.lc.advance(0.0, 10.0)
    assert o.phase == PREBOOT and o.rss == o.load_bytes      # load-time footprint under noup
    o.noup = False
    sim.lc.allow_boot(o, 10.0)
    peak, t = 0.0, 10.0
    while o.phase != ACTIVE and t < 20000:
        sim.lc.advance(t, t + 5.0)
        t += 5.0
        peak = max(peak, o.rss)
    settled = o.rss
    assert peak > 2 * o.load_bytes                 # history: missing sets after 1 h down
    assert settled < peak                          # recovered objects free their entries
    assert settled > Params().steady_rss * 0.3     # ... but part of it stays
    # a quick restart: comes back small, little history
    sim.lc.stop(o, t)
    sim.lc.start(o, t + 1.0)
    sim.lc.advance(t + 1.0, t + 60.0)
    assert o.phase in (ACTIVE,) and o.rss < settled * 0.6


@pytest.mark.parametrize("downtime,overflows", [(3600.0, True), (600.0, False)])
def test_default_host_ram_tells_the_field_story(topo, downtime, overflows):
    """After 1 h, a host's 12 OSDs peaking together overflow its RAM while one at a time
    fits; after 10 min even all at once fits (history grows with downtime)."""
    from ceph_recovery_tools.sim.calibrate import host_footprints
    f = host_footprints(topo, Params(), downtime)
    assert f["osds_on_host"] == 12 and f["host_ram"] == 64 * GiB
    assert (f["all_at_once"] > f["host_ram"]) == overflows
    assert f["one_at_a_time_worst"] < f["host_ram"]
    assert f["peak_max"] > f["load_bytes"]
    if overflows:
        assert f["settled_mean"] < f["peak_mean"]      # the +20 % and most of H went after clean


def _ceph_ok_to_stop(cl: Cluster, o) -> bool:
    """mgr DaemonServer::_check_offlines_pgs for {o}, from each PG's member classes."""
    for up in cl.members:
        cls = {m: cl.osds[m].cls for m in up}
        active = sum(c >= C_OK for c in cls.values()) >= cl.min_size and C_PEERING not in \
            cls.values()
        degraded = any(c != C_CLEAN for c in cls.values())
        counted = [m for m in up if (cls[m] == C_CLEAN if degraded else cls[m] != C_DOWN)]
        if o.id not in counted:
            continue
        if not active or len(counted) - 1 < cl.min_size:
            return False
    return True


def test_ok_to_stop_ceph_rule_matches_brute_force(topo):
    cl = Cluster(topo, Params(ok_to_stop_ceph=True), 64 * GiB)
    rng = random.Random(5)
    for o in rng.sample(cl.osds, 24):
        cl.set_class(o, rng.choice((C_DOWN, C_PEERING, C_OK)))
    answers = set()
    for o in cl.osds:
        assert cl.ok_to_stop(o) == _ceph_ok_to_stop(cl, o), o.id
        answers.add(cl.ok_to_stop(o))
    assert answers == {True, False}


def _pg_with_members(cl: Cluster):
    pg = 0
    a, b, c = cl.members[pg]
    return pg, cl.osds[a], cl.osds[b], cl.osds[c]


@pytest.mark.parametrize("ceph", [False, True], ids=["model_rule", "ceph_rule"])
def test_ok_to_stop_recovering_member_of_a_min_size_pg(topo, ceph):
    """PG with one member down, one returned and still recovering (C_OK), one clean: the PG
    is active with exactly min_size members. The model's rule refuses stopping the recovering
    member (the PG would go inactive); Ceph's rule clears it (it is not in avail_no_missing)
    and refuses the clean one."""
    cl = Cluster(topo, Params(ok_to_stop_ceph=ceph), 64 * GiB)
    pg, clean, recovering, down = _pg_with_members(cl)
    cl.set_class(down, C_DOWN)
    cl.set_class(recovering, C_OK)
    assert cl._pg_state(pg) == (True, False)
    assert cl.ok_to_stop(clean) is False
    assert cl.ok_to_stop(recovering) is ceph


@pytest.mark.parametrize("ceph", [False, True], ids=["model_rule", "ceph_rule"])
def test_ok_to_stop_member_of_a_peering_pg(topo, ceph):
    """A member is peering (the PG is not active): the model's rule clears stopping a clean
    member (no active PG is lost), Ceph's refuses it (bad_already_inactive)."""
    cl = Cluster(topo, Params(ok_to_stop_ceph=ceph), 64 * GiB)
    pg, clean, peering, _ = _pg_with_members(cl)
    cl.set_class(peering, C_PEERING)
    assert cl._pg_state(pg)[0] is False
    assert cl.ok_to_stop(clean) is (not ceph)


def test_a_stop_from_the_return_on_costs_its_active_pgs_one_re_peering(topo):
    """Every PG of a stopped OSD that stays active re-peers among the members left:
    peer_base_s after a clean stop (the OSD marks itself down), markdown_s more after a kill
    (the mon must see it). PGs the stop takes below min_size are inactive in the PG state, for
    the engine's integral; before the return (t < 0) nothing counts."""
    p = Params()
    cl = Cluster(topo, p, 64 * GiB)
    lc = Lifecycle(cl)
    first = cl.osds[0]
    lc.stop(first, -10.0)
    assert cl.inactive_pg_s == 0.0
    lc.start(first, -5.0)
    cl.set_class(first, C_CLEAN)          # up again and recovered, as the others
    lc.stop(first, 10.0)
    assert cl.inactive_pg_s == pytest.approx(p.peer_base_s * len(first.pgs))
    second = next(cl.osds[m] for pg in first.pgs for m in cl.members[pg] if m != first.id)
    shared = len(set(first.pgs) & set(second.pgs))
    before = cl.inactive_pg_s
    lc.stop(second, 20.0, killed=True)
    assert 0 < shared < len(second.pgs)
    assert cl.inactive_pg_s - before == pytest.approx(
        (p.peer_base_s + p.markdown_s) * (len(second.pgs) - shared))


def test_inactive_pg_seconds_count_the_pgs_of_the_returning_host_while_they_peer(topo):
    """One host back: its PGs keep min_size on the other hosts and are inactive only while
    a returning member peers, so the integral is positive and at most those PGs x the time
    to all PGs active (plus the tick it is integrated over)."""
    cfg = RunConfig(strategy="unlimited", fail="host:1", downtime_s=3600.0)
    sim = Sim(topo, Params(), cfg, Unlimited(cfg))
    res = sim.run()
    touched = len({pg for o in sim.failed for pg in o.pgs})
    assert res["oom_kills"] == 0
    assert 0 < res["inactive_pg_s"] <= touched * (res["time_to_all_pgs_active_s"] + cfg.tick_s)


def test_a_hosts_peering_rate_is_shared_from_the_moment_each_osd_boots(topo):
    """Twelve OSDs that boot into an idle host share its peering rate from their boot on:
    each finishes when processor sharing says it does (the smallest history first), within
    the tick it is observed in, and the host never merges more than peer_entries_per_s."""
    sim = _sim(topo, Naive)
    p = sim.p
    host = [o for o in sim.failed if o.host == "host1"]
    for o in host:
        sim.lc.start(o, 0.0)
    done, t = {}, 0.0
    while len(done) < len(host) and t < 3600:
        sim.lc.advance(t, t + 5.0)
        t += 5.0
        done.update({o.id: t for o in host if o.id not in done and o.phase != PEERING
                     and o.peer_total > 0})
    booted = p.load_s + p.boot_s
    entries = sorted((o.peer_total, o.id) for o in host)
    assert entries[0][0] / p.peer_entries_per_s * len(host) > p.peer_base_s
    for k, (e, oid) in enumerate(entries):
        # sharing: the k smaller ones done, the n - k others merged e each by then
        finish = booted + (sum(x for x, _ in entries[:k]) + (len(host) - k) * e) \
            / p.peer_entries_per_s
        assert finish <= done[oid] < finish + 5.0, oid


def test_time_to_all_pgs_active_ends_with_the_last_peering_not_at_the_tick_that_saw_it(topo):
    """All PGs are active from the moment the last returning member ends peering, exact to
    the event, not from the first tick that read them all active."""
    cfg = RunConfig(strategy="unlimited", fail="host:1", downtime_s=3600.0)
    sim = Sim(topo, Params(), cfg, Unlimited(cfg))
    ends = []
    peered = sim.lc._peered

    def record(o, t):
        ends.append(t)
        peered(o, t)
    sim.lc._peered = record
    res = sim.run()
    assert len(ends) == len(sim.failed)
    assert res["time_to_all_pgs_active_s"] == max(ends)
    assert max(ends) % cfg.tick_s > 1e-3


def test_a_kill_after_all_pgs_are_active_counts_until_its_re_peering_ends(topo):
    """A kill's re-peering (markdown_s + peer_base_s) is shorter than a tick and no tick
    reads it, yet its PGs are without client I/O until it ends: the time to all PGs active
    moves to that end."""
    p = Params()
    cfg = RunConfig(strategy="unlimited", fail="host:1", downtime_s=3600.0)
    sim = Sim(topo, p, cfg, Unlimited(cfg))
    first = sim.run()["time_to_all_pgs_active_s"]
    sim.now = (first // cfg.tick_s + 20) * cfg.tick_s
    victim = sim.failed[0]
    assert sim.cl.active_pgs_without(victim) == len(victim.pgs)
    sim.lc.stop(victim, sim.now, killed=True)
    sim._milestones()
    assert sim.cl.n_active == len(sim.cl.members)      # no tick reads the re-peering
    assert sim.m.t_all_active == pytest.approx(sim.now + p.markdown_s + p.peer_base_s)
