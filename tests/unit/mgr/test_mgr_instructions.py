"""Helper instructions end: they expire after instruction_ttl, the helper's `failed` list
closes them, and abort withdraws unfinished start instructions (defect 2). Each end is a
structured journal entry (kind, id, osd, op)."""
from __future__ import annotations

import json

import pytest

from recovery import state as state_mod  # see conftest.py

import mgrcases as cases  # noqa: E402  (registered by conftest.py)
STOPPED, RUNNING, all_helpers, tick = cases.STOPPED, cases.RUNNING, cases.all_helpers, cases.tick


@pytest.fixture
def world():
    return {"map": cases.load("osdmap_h3down.json"), "tree": cases.load("tree_h3down.json"),
            "pgs": cases.load("pgdump_h3down.json")}


def started(world):
    """A run whose first tick queued one start instruction for osd.4 on h3."""
    eng, ceph = cases.make_engine(world["map"])
    all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.begin(eng.start("80%", [], 1, 1000.0), 1000.0)
    tick(eng, world, 1001.0)
    reply = all_helpers(eng, 1002.0, [STOPPED(4), STOPPED(5)])
    assert [(i.op, i.osd) for i in reply.instructions] == [("start", 4)]
    return eng, reply.instructions[0].id


def test_start_is_instructed_though_the_last_report_shows_the_process_running(world):
    """The report before the grant was built before h3's OSDs were killed (the helper was
    paused): it still says running. The start goes to the helper anyway, which checks its own
    process table; a start skipped on that report would never be instructed."""
    eng, ceph = cases.make_engine(world["map"])
    all_helpers(eng, 1000.0, [RUNNING(4, 90 << 20), RUNNING(5, 90 << 20)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.begin(eng.start("80%", [], 1, 1000.0), 1000.0)
    tick(eng, world, 1001.0)
    (g,) = entries(eng, "grant_start")
    assert g["action"]["osd"] == 4 and g["result"].startswith("instruction "), g["result"]
    reply = all_helpers(eng, 1002.0, [STOPPED(4), STOPPED(5)])
    assert [(i.op, i.osd) for i in reply.instructions] == [("start", 4)]


def entries(eng, kind):
    return [j for j in eng.run.journal if j["action"].get("kind") == kind]


def test_instruction_expires_after_its_ttl(world):
    eng, iid = started(world)
    ttl = eng.options["instruction_ttl"]
    tick(eng, world, 1001.0 + ttl - 1)
    assert [i["id"] for i in eng.run.open_instructions()] == [iid]
    tick(eng, world, 1001.0 + ttl + 1)
    assert not any(i["id"] == iid for i in eng.run.open_instructions())
    (e,) = [e for e in entries(eng, "instruction_expired") if e["action"]["id"] == iid]
    assert (e["action"]["osd"], e["action"]["op"], e["result"]) == (4, "start", "expired")


def test_helper_failed_list_closes_the_instruction(world):
    eng, iid = started(world)
    rep = {"version": 1, "host": "h3", "time": 1003.0, "seq": 2,
           "memory": {"total": 8 << 30, "used": 50 << 20, "available": 6 << 30,
                      "limit": None, "source": "host"},
           "osds": [STOPPED(4), STOPPED(5)], "done": [],
           "failed": [{"id": iid, "error": "ok-to-stop refused osd.4"}]}
    reply = eng.handle_report(json.dumps(rep), "h3", 1003.0)
    assert reply.instructions == ()
    (e,) = entries(eng, "helper_failed")
    assert (e["action"]["id"], e["action"]["osd"], e["action"]["error"]) == \
        (iid, 4, "ok-to-stop refused osd.4")
    assert e["result"] == "failed"


def test_failed_list_of_another_host_changes_nothing(world):
    eng, iid = started(world)
    eng.run.mark_failed("h1", [{"id": iid, "error": "x"}], 1003.0)
    assert [i["id"] for i in eng.run.open_instructions()] == [iid]


def test_abort_withdraws_unfinished_start_instructions(world):
    eng, iid = started(world)
    eng.set_mode("abort", 1003.0)
    reply = all_helpers(eng, 1004.0, [STOPPED(4), STOPPED(5)])
    assert reply.instructions == ()
    (e,) = entries(eng, "instruction_withdrawn")
    assert (e["action"]["id"], e["action"]["osd"], e["result"]) == (iid, 4, "withdrawn")


def test_late_done_of_an_expired_instruction_still_counts(world):
    eng, iid = started(world)
    eng.run.expire(2000.0, 10.0)
    all_helpers(eng, 2001.0, [RUNNING(4, 1 << 20), STOPPED(5)], done=[iid])
    assert eng.run.starts == {4: 1}


def test_closed_instructions_survive_persistence(world):
    eng, iid = started(world)
    eng.run.expire(2000.0, 10.0)
    back = state_mod.RunState.loads(eng.run.dumps())
    assert back.open_instructions() == [] and back.instructions[iid]["closed"] == "expired"


def test_journal_entries_carry_structured_facts(world):
    """Claims about the run are checked on fields, not on reason text (defect 11)."""
    from ceph_recovery import actions as A
    eng, _iid = started(world)
    holds = entries(eng, "hold_osd")
    assert holds and all(e["observed"]["up"] is False for e in holds)
    eng.carry_out(A.QueryOkToStop(reason="room", osd=0), eng.snapshot, 1003.0)
    eng.carry_out(A.HeapRelease(reason="room", osd=0), eng.snapshot, 1003.0)
    (q,) = entries(eng, "query_ok_to_stop")
    (h,) = entries(eng, "heap_release")
    assert q["answer"] == {"ok_to_stop": True} and q["observed"]["process"] == "running"
    assert h["answer"] == {"heap_supported": True}


def test_run_shows_its_end_only_after_the_flags_are_restored(world):
    """Status answers while the tick acts (no lock during mon I/O): while the ending tick
    restores noout/norebalance, the run must not yet show as aborted."""
    eng, _iid = started(world)
    seen = []
    real = eng.ceph.mon_command

    def watching(cmd):
        if cmd["prefix"] == "osd unset":
            seen.append((cmd["key"], eng.run.progress.phase, eng.active))
        return real(cmd)
    eng.ceph.mon_command = watching
    eng.set_mode("abort", 1003.0)
    for t in range(4):
        tick(eng, world, 1004.0 + t)
    assert eng.run.progress.phase == "aborted", eng.run.progress.phase
    assert seen and all(active and phase != "aborted" for _k, phase, active in seen), seen


def test_a_grant_entry_carries_the_pgs_and_missed_log_entries_the_snapshot_showed():
    """Prediction-quality tables (drill measures) read what a start had missed from here."""
    from ceph_recovery import actions as A
    from ceph_recovery.model import OsdState, Progress, Snapshot
    from recovery import executor
    down = OsdState(id=2, host="h2", crush_path=("default", "h2"), up=False, process="stopped",
                    pgs=20, missed_entries=24210)
    unknown = OsdState(id=3, host="h2", crush_path=("default", "h2"), up=False,
                       process="stopped", pgs=13)
    snap = Snapshot(epoch=5, osds=(down, unknown))
    grant = executor.journal_facts(A.GrantStart(reason="r", osd=2, host="h2"), None, snap,
                                   Progress())
    assert grant["observed"] == {"up": False, "process": "stopped", "rss_bytes": 0, "pgs": 20,
                                 "missed_entries": 24210}
    other = executor.journal_facts(A.GrantStart(reason="r", osd=3, host="h2"), None, snap,
                                   Progress())
    assert "missed_entries" not in other["observed"] and other["observed"]["pgs"] == 13
