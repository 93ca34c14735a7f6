"""The mgr module's engine on recorded lab dumps with the real plan(): what it sends to the
mon, what it tells the helper, and that a restarted module never starts an OSD twice.
The Ceph side is a recording fake (mgrcases.FakeCeph); everything else is real."""
from __future__ import annotations

import copy
import errno

import pytest
from mgrcases import RUNNING, STOPPED, FakeCeph, all_helpers, make_engine, report, tick
from mgrcases import world  # noqa: F401  (the fixture)
from recovery import engine as engine_mod, inputs, state as state_mod  # see conftest.py


def test_start_order_is_the_operators_choice_checked_against_the_policies(world):
    eng, ceph = make_engine(world["map"])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    assert eng.start("80%", [], 1, 1000.0).start_order == "unblock_first"     # the default
    intent = eng.start("80%", [], 1, 1000.0, start_order="cover_first")
    assert intent.start_order == "cover_first"
    with pytest.raises(inputs.InputError) as e:
        eng.start("80%", [], 1, 1000.0, start_order="fastest")
    assert e.value.errno == errno.EINVAL and "cover_first" in str(e.value)
    assert eng.run.progress.run_id == "" and ceph.calls == []          # nothing changed
    eng.begin(intent, 1000.0)
    assert "start order cover_first" in eng.run.journal[-1]["action"]["reason"]


def test_controlled_start_sequence(world):
    eng, ceph = make_engine(world["map"])
    all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    intent = eng.start("80%", [], 1, 1000.0, leave_out=True)
    assert intent.leave_out and not eng.start("80%", [], 1, 1000.0).leave_out
    eng.begin(intent, 1000.0)
    assert "leave-out" in eng.run.journal[-1]["action"]["reason"]
    with pytest.raises(inputs.InputError) as e:          # a run is active now
        eng.start("80%", [], 1, 1000.0)
    assert e.value.errno == errno.EBUSY
    tick(eng, world, 1001.0)
    assert ceph.calls == [{"prefix": "osd set", "key": "noout"},
                          {"prefix": "osd set", "key": "norebalance"},
                          {"prefix": "osd add-noup", "ids": ["osd.4", "osd.5"]}]
    # the helper of h3 gets exactly one start instruction, for the first OSD in order
    reply = all_helpers(eng, 1002.0, [STOPPED(4), STOPPED(5)])
    assert [(i.op, i.osd) for i in reply.instructions] == [("start", 4)]
    assert reply.grants == (4,)
    iid = reply.instructions[0].id
    # it reports the start done (process in preboot) before the map changed: no repeat
    ceph.calls.clear()
    reply = all_helpers(eng, 1003.0, [RUNNING(4, 200 << 20), STOPPED(5)], done=[iid])
    assert reply.instructions == () and reply.grants == (4,) and reply.held == (5,)
    # the next tick's snapshot still has the OSD map with osd.4 down, without noup
    # (the fake mon does not apply commands): plan lets it boot, nothing is started twice
    tick(eng, world, 1004.0)
    kinds = [j["action"]["kind"] for j in eng.run.journal]
    assert kinds.count("grant_start") == 1
    assert eng.run.starts == {4: 1}
    assert all(c.get("prefix") != "osd add-noup" or c["ids"] != ["osd.4"] for c in ceph.calls)


def test_restarted_module_resumes_without_second_start(world):
    eng, ceph = make_engine()
    all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.begin(eng.start("80%", [], 1, 1000.0), 1000.0)
    tick(eng, world, 1001.0)
    saved = eng.run.dumps()
    open_before = eng.run.open_instructions()
    assert [(i["op"], i["osd"]) for i in open_before] == [("start", 4)]
    # the mgr dies; a new one loads the persisted state and gets the helper's next report
    eng2, ceph2 = make_engine()
    eng2.run = state_mod.RunState.loads(saved)
    reply = all_helpers(eng2, 1010.0, [STOPPED(4), STOPPED(5)])
    assert [i.id for i in reply.instructions] == [open_before[0]["id"]]   # same id: once
    tick(eng2, world, 1011.0)
    assert len(eng2.run.open_instructions()) == 1
    assert [j["action"]["kind"] for j in eng2.run.journal].count("grant_start") == 1


def test_stale_epoch_changes_nothing(world):
    eng, ceph = make_engine()
    all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.begin(eng.start("80%", [], 1, 1000.0), 1000.0)
    eng.run.progress = eng.run.progress.evolve(epoch=world["map"]["epoch"] + 5)
    tick(eng, world, 1001.0)
    assert ceph.calls == []
    assert eng.run.journal[-1]["action"]["kind"] == "stale_map"


def test_epoch_going_back_mid_list_stops_acting(world):
    eng, ceph = make_engine()
    all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.begin(eng.start("80%", [], 1, 1000.0), 1000.0)
    eng.tick(world["map"], world["tree"], world["pgs"], 1001.0,
             lambda: world["map"]["epoch"] - 1)
    assert ceph.calls == []


def test_bad_input_changes_nothing(world):
    eng, ceph = make_engine()
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    before = eng.run.dumps()
    for budget, scope, conc, code in [("abc", [], 1, errno.EINVAL), ("80%", ["nosuch"], 1,
                                      errno.ENOENT), ("80%", [], 0, errno.EINVAL)]:
        with pytest.raises(inputs.InputError) as e:
            eng.start(budget, scope, conc, 1000.0)
        assert e.value.errno == code
    with pytest.raises(inputs.InputError) as e:
        eng.hold("nosuch", True, 1000.0)
    assert e.value.errno == errno.ENOENT
    with pytest.raises(inputs.InputError):
        eng.set_mode("pause", 1000.0)
    assert eng.run.dumps() == before and ceph.calls == []


def test_hold_and_release_go_through_plan(world):
    eng, ceph = make_engine()
    all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.hold("h3", True, 1000.0)
    tick(eng, world, 1001.0)
    assert {"prefix": "osd set-group", "flags": "noup", "who": ["h3"]} in ceph.calls
    reply = all_helpers(eng, 1002.0, [STOPPED(4), STOPPED(5)])
    assert reply.instructions == () and reply.grants == ()
    held_map = copy.deepcopy(world)
    held_map["map"]["crush_node_flags"] = {"h3": ["noup"]}
    eng.observe(held_map["map"], held_map["tree"], held_map["pgs"], 1003.0)
    assert eng.instructions_for("h3").held == (4, 5)
    ceph.calls.clear()
    eng.hold("h3", False, 1004.0)
    tick(eng, held_map, 1005.0)
    assert {"prefix": "osd unset-group", "flags": "noup", "who": ["h3"]} in ceph.calls


def test_repeated_queries_do_not_flood_the_journal(world):
    from ceph_recovery import actions as A
    eng, ceph = make_engine()
    snap = eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    q = A.QueryOkToStop(reason="h1 over budget: may heaviest osd.0 stop?", osd=0)
    for t in (1000.0, 1002.0, 1004.0):
        eng.carry_out(q, snap, t)
    eng.carry_out(A.QueryOkToStop(reason="h1 over budget", osd=1), snap, 1005.0)
    eng.carry_out(q, snap, 1000.0 + 200)          # outside the window: a new entry
    entries = [(j["action"]["osd"], j.get("repeats", 0)) for j in eng.run.journal]
    assert entries == [(0, 2), (1, 0), (0, 0)]
    assert len([c for c in ceph.calls if c["prefix"] == "osd ok-to-stop"]) == 5
    assert eng.ok_to_stop == (snap.epoch, {0: (True, 1200.0), 1: (True, 1005.0)})


def test_ok_to_stop_no_expires_within_one_epoch_and_is_asked_again(world):
    """Ceph's ok-to-stop says no while a PG of the OSD peers; peering ends without a new OSD
    map epoch. An answer must not outlive OK_TO_STOP_TTL_S, or a "no" given during peering
    keeps the over-budget restart from ever being tried again."""
    from ceph_recovery import actions as A
    from ceph_recovery.view import OK_TO_STOP_TTL_S
    eng, ceph = make_engine()
    snap = eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.executor.ok_to_stop = lambda osd: (False, "ok_to_stop=False")
    eng.carry_out(A.QueryOkToStop(reason="h1 short of memory", osd=0), snap, 1000.0)
    within = eng.observe(world["map"], world["tree"], world["pgs"], 1000.0 + OK_TO_STOP_TTL_S - 1)
    assert within.epoch == snap.epoch and dict(within.ok_to_stop) == {0: False}
    later = eng.observe(world["map"], world["tree"], world["pgs"], 1000.0 + OK_TO_STOP_TTL_S)
    assert later.epoch == snap.epoch and dict(later.ok_to_stop) == {}


def test_state_is_persisted_once_per_tick_before_its_first_action_with_its_instructions(world):
    saved, woken, sent = [], [], []
    ceph = FakeCeph(world["map"])
    mon = ceph.mon_command
    ceph.mon_command = lambda cmd, *a: (sent.append((len(saved), cmd)), mon(cmd, *a))[1]
    eng = engine_mod.Engine(ceph, lambda *a, **k: None,
                            lambda: saved.append(eng.run.dumps()), lambda: woken.append(1))
    all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.begin(eng.start("80%", [], 1, 1000.0), 1000.0)
    tick(eng, world, 1001.0)
    # set noout, set norebalance, hold 4 and 5, grant 4: ONE save, before the first of them
    # went out (write-ahead), every one of them journaled "in progress" in it, the start
    # instruction among them (prepared: a failover must not lose it)
    assert len(saved) == 1 and all(n == 1 for n, _cmd in sent)
    ahead = state_mod.RunState.loads(saved[0])
    assert [(i["op"], i["osd"], i.get("prepared")) for i in ahead.open_instructions()] == [
        ("start", 4, True)]
    assert [(j["action"]["kind"], j["result"]) for j in ahead.journal][-5:] == [
        ("set_flag", "in progress"), ("set_flag", "in progress"),
        ("hold_osd", "in progress"), ("hold_osd", "in progress"),
        ("grant_start", "in progress")]
    assert ahead.progress == eng.run.progress
    # carried out, it is released: the helper gets it
    assert [(i.op, i.osd) for i in all_helpers(eng, 1001.2, [STOPPED(4), STOPPED(5)])
            .instructions] == [("start", 4)]
    # the results are in the next tick's one save
    tick(eng, world, 1001.5)
    assert len(saved) == 2
    last = state_mod.RunState.loads(saved[-1])
    assert [(i["op"], i["osd"]) for i in last.open_instructions()] == [("start", 4)]
    assert [j["result"] for j in last.journal if j["action"]["kind"] == "hold_osd"] == \
        ["ok", "ok"]
    all_helpers(eng, 1002.0, [RUNNING(4, 100 << 20), STOPPED(5)],
                done=[last.open_instructions()[0]["id"]])
    # a command never writes the store itself (set_store waits for the mon): it wakes the
    # tick thread, whose tick persists the helper's `done`
    assert len(saved) == 2 and woken == [1]
    tick(eng, world, 1003.0)
    assert state_mod.RunState.loads(saved[-1]).starts == {4: 1}


def test_run_only_health_checks_dropped_when_idle(world):
    from ceph_recovery.model import HealthCheck
    from recovery import core
    eng, ceph = make_engine()
    checks = (HealthCheck("RECOVERY_BUDGET_EXCEEDED", "warning", "h1 over"),
              HealthCheck("RECOVERY_DOMAIN_HELD", "warning", "h3 held"))
    eng.plan_out = core.PlanOutput((), eng.run.progress, checks, {})
    assert [h.code for h in eng.health_checks()] == ["RECOVERY_DOMAIN_HELD"]
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.begin(eng.start("80%", [], 1, 1000.0), 1000.0)
    assert [h.code for h in eng.health_checks()] == ["RECOVERY_BUDGET_EXCEEDED",
                                                     "RECOVERY_DOMAIN_HELD"]


def test_throughput_probe_request_rides_on_the_next_reply_once(world):
    eng, _ = make_engine(world["map"])
    tick(eng, world, 1000.0)
    all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    with pytest.raises(KeyError, match="h9"):
        eng.request_throughput(["h2", "h9"])
    assert eng.tput_requests == {}                       # bad input changed nothing
    assert eng.request_throughput(["h2"]) == {"h2": ["h1", "h3"]}
    first = eng.helper_report(report("h2", [RUNNING(2, 70 << 20)], t=1002.0), 1002.0)
    again = eng.helper_report(report("h2", [RUNNING(2, 70 << 20)], t=1004.0), 1004.0)
    other = eng.helper_report(report("h1", [RUNNING(0, 70 << 20)], t=1004.0), 1004.0)
    assert first.probe == {"throughput_to": ["h1", "h3"]}
    assert again.probe == {} and other.probe == {}
    assert sorted(eng.request_throughput([])) == ["h1", "h2", "h3"]


def test_observe_remembers_pg_members_seen_complete(world):
    """A PG seen with all its pool's members keeps them when one of them goes down (the OSD
    map drops a down OSD from every up/acting set): the snapshot's membership still names it."""
    eng, _ = make_engine(world["map"])
    full = {"pg_stats": [{"pgid": "1.0", "state": "active+clean", "up": [0, 2, 4],
                          "acting": [0, 2, 4]}]}
    snap = eng.observe(world["map"], world["tree"], full, 1000.0)
    assert snap.pg_map.members == ((0, 2, 4),)
    short = {"pg_stats": [{"pgid": "1.0", "state": "active+undersized+degraded",
                           "up": [0, 2], "acting": [0, 2]}]}
    snap = eng.observe(world["map"], world["tree"], short, 1005.0)
    assert snap.pg_map.members == ((0, 2, 4),) and snap.pg_map.by_osd[4] == (0,)
    fresh, _ = make_engine(world["map"])        # an mgr that started after the failure
    assert fresh.observe(world["map"], world["tree"], short, 1005.0).pg_map.members == ((0, 2),)


def test_the_osds_own_settings_reach_the_snapshot(world):
    """`config dump` read (dicts given): an OSD without an entry has none of its own (0, ());
    not read (None): unknown, and the core changes none of its settings."""
    eng, _ceph = make_engine(world["map"])
    snap = eng.observe(world["map"], world["tree"], world["pgs"], 1000.0, {4: 1 << 31},
                       {4: (("osd_max_backfills", "2"),)})
    by = {o.id: o for o in snap.osds}
    assert (by[4].memory_target, by[4].recovery_config) == (1 << 31,
                                                            (("osd_max_backfills", "2"),))
    assert (by[5].memory_target, by[5].recovery_config) == (0, ())
    unknown = eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    assert {(o.memory_target, o.recovery_config) for o in unknown.osds} == {(None, None)}


def test_without_budget_a_run_gets_the_cores_default_the_brakes_line(world):
    """start-controlled without --budget: the engine's budget_default is auto, which starts
    at the core's DEFAULT_BUDGET_FRACTION, the brake's line: admission may use what lies below
    the line where the brake acts (the module option's default: test_docs_consistency)."""
    from ceph_recovery.brake import BRAKE_AT
    from ceph_recovery.model import DEFAULT_BUDGET_FRACTION, KERNEL_HEADROOM, Budget
    eng, _ceph = make_engine(world["map"])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    intent = eng.start(None, [], 1, 1000.0)
    assert intent.budget == Budget("auto", DEFAULT_BUDGET_FRACTION) == Budget()
    assert eng.options["budget_default"] == "auto"
    assert BRAKE_AT == DEFAULT_BUDGET_FRACTION == 1.0 - KERNEL_HEADROOM == 0.9
