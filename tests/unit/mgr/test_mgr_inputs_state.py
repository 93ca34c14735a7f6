"""Unit tests of the mgr module's pure pieces: input validation, run-state persistence,
snapshot building from recorded lab dumps, and the action -> command mapping."""
from __future__ import annotations

import errno
import json
import os

import pytest

from ceph_recovery import actions as A
from ceph_recovery.model import Budget, Intent, Observation, Progress
from ceph_recovery.protocol import parse_report
from cephfake import FakeCeph  # see conftest.py
from recovery import cluster, executor, inputs, state  # see conftest.py

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "mgr")


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


@pytest.mark.parametrize("text,kind,value", [
    ("80%", "fraction", 0.8), ("100%", "fraction", 1.0), ("0.5%", "fraction", 0.005),
    ("24G", "bytes", 24 * 2**30), ("512MiB", "bytes", 512 * 2**20), ("1048576", "bytes", 2**20),
    ("1.5g", "bytes", int(1.5 * 2**30)), ("300M", "bytes", 300 * 2**20)])
def test_budget_parses(text, kind, value):
    b = inputs.parse_budget(text)
    assert (b.kind, b.value) == (kind, pytest.approx(value))


@pytest.mark.parametrize("text", ["abc", "0%", "150%", "", "  ", "-5G", "0", "12X", "%"])
def test_bad_budget_is_einval(text):
    with pytest.raises(inputs.InputError) as e:
        inputs.parse_budget(text)
    assert e.value.errno == errno.EINVAL
    assert "budget" in e.value.message


def test_buckets_unknown_is_enoent_and_osd_is_einval():
    known = {"default": "root", "r1": "rack", "h1": "host", "osd.0": "osd"}
    assert inputs.check_buckets(["r1", "h1", "r1"], known) == ("r1", "h1")
    with pytest.raises(inputs.InputError) as e:
        inputs.check_buckets(["nosuch"], known)
    assert e.value.errno == errno.ENOENT and "nosuch" in e.value.message
    with pytest.raises(inputs.InputError) as e:
        inputs.check_buckets(["osd.0"], known)
    assert e.value.errno == errno.EINVAL
    assert inputs.split_scope(["r1,h2", " h3 "]) == ("r1", "h2", "h3")


@pytest.mark.parametrize("n", [0, -1, 65, True, "0", "two", "", "1.5"])
def test_bad_concurrency(n):
    with pytest.raises(inputs.InputError):
        inputs.check_concurrency(n)


@pytest.mark.parametrize("n,want", [(1, 1), ("3", 3), ("auto", 0), (" AUTO ", 0), (64, 64)])
def test_concurrency_auto_or_a_count(n, want):
    assert inputs.check_concurrency(n) == want


def test_config_actions_map_to_config_set_and_rm():
    m = executor.mon_cmd_for
    assert m(A.SetConfig(reason="", who="osd.4", name="osd_memory_target", value="2147483648")) \
        == {"prefix": "config set", "who": "osd.4", "name": "osd_memory_target",
            "value": "2147483648"}
    assert m(A.RestoreConfig(reason="", who="osd.4", name="osd_memory_target", value=None)) \
        == {"prefix": "config rm", "who": "osd.4", "name": "osd_memory_target"}
    assert m(A.RestoreConfig(reason="", who="osd.4", name="osd_memory_target", value="3G")) \
        == {"prefix": "config set", "who": "osd.4", "name": "osd_memory_target", "value": "3G"}

    assert m(A.MarkOut(reason="", osd=7)) == {"prefix": "osd out", "ids": ["7"]}


def test_memory_targets_are_the_osds_own_settings_only():
    dump = [{"section": "osd", "name": "osd_memory_target", "value": "3221225472"},
            {"section": "osd.2", "name": "osd_memory_target", "value": "2147483648"},
            {"section": "osd.3", "name": "osd_max_backfills", "value": "2"},
            {"section": "osd.x", "name": "osd_memory_target", "value": "1"},
            {"section": "osd.5", "name": "osd_memory_target", "value": "junk"}]
    assert executor.memory_targets(dump) == {2: 2147483648}
    assert executor.memory_targets({"not": "a list"}) == {}


def test_recovery_configs_are_the_osds_own_recovery_settings_only():
    dump = [{"section": "osd", "name": "osd_max_backfills", "value": "3"},
            {"section": "osd.3", "name": "osd_max_backfills", "value": "2"},
            {"section": "osd.3", "name": "osd_recovery_max_active", "value": "5"},
            {"section": "osd.4", "name": "osd_memory_target", "value": "2147483648"},
            {"section": "osd.x", "name": "osd_recovery_sleep", "value": "1"}]
    assert executor.recovery_configs(dump) == {
        3: (("osd_max_backfills", "2"), ("osd_recovery_max_active", "5"))}
    assert executor.recovery_configs({"not": "a list"}) == {}


def test_run_state_round_trip():
    st = state.RunState(journal_len=20)
    st.intent = Intent(mode="controlled", budget=Budget("bytes", 3e8), scope=("r1",),
                       holds=frozenset({"h2"}), leave_out=True, run_id="r1")
    st.progress = Progress(run_id="r1", phase="running", epoch=42, finished=frozenset({5}),
                           held_osds=frozenset({4}), held_buckets=frozenset({"h3"}),
                           saved_flags=frozenset({"noout"}),
                           observations=(Observation(4, 20, 60.0, 1000, 300 << 20),),
                           started_at=1.0).with_columns(
        granted={4: 10.0}, booting={4: 12.0}, restarted={1: 3.0}, peaks={4: 123})
    st.add_instruction("h3", "start", 4, "granted", 11.0, 42)
    st.heap_support[1] = False
    for i in range(30):
        st.record(float(i), 42, {"kind": "wait", "reason": str(i)}, "noted")
    again = state.RunState.loads(st.dumps(), journal_len=20)
    assert again.intent == st.intent
    assert again.progress == st.progress
    assert again.instructions == st.instructions and again.seq == 1
    assert again.heap_support == {1: False}
    assert len(again.journal) == 20 and again.journal[-1]["action"]["reason"] == "29"


def test_run_state_rejects_other_schema():
    with pytest.raises(ValueError, match="schema"):
        state.RunState.loads(json.dumps({"schema": 99}))


def test_instructions_done_once():
    st = state.RunState()
    st.progress = Progress(run_id="r7")
    a = st.add_instruction("h3", "start", 4, "x", 1.0, 5)
    b = st.add_instruction("h2", "restart", 2, "y", 2.0, 5)
    assert (a["id"], b["id"]) == ("r7:1", "r7:2")
    assert [i["id"] for i in st.open_instructions(host="h3")] == ["r7:1"]
    assert st.mark_done("h2", ("r7:1",), 3.0) == []          # another host's id: ignored
    assert [i["id"] for i in st.mark_done("h3", ("r7:1", "r7:1"), 3.0)] == ["r7:1"]
    assert st.mark_done("h3", ("r7:1",), 4.0) == []          # reported twice: counted once
    assert st.starts == {4: 1}
    assert st.open_instructions(osd=4) == []


def test_snapshot_from_recorded_lab_dumps():
    osd_map, tree, pgs = load("osdmap_h3down.json"), load("tree_h3down.json"), \
        load("pgdump_h3down.json")
    rep = parse_report({"version": 1, "host": "h3", "time": 100.0, "seq": 1,
                        "memory": {"total": 10 << 30, "used": 1 << 20, "available": 9 << 30,
                                   "limit": 1 << 30, "source": "cgroup"},
                        "osds": [{"id": 4, "process": "running", "rss": 5 << 20,
                                  "started_at": 99.0, "state": "preboot"},
                                 {"id": 5, "process": "stopped", "state": "stopping"}]})
    snap = cluster.build_snapshot(osd_map, tree, pgs, {"h3": (rep, 100.0)}, now=101.0,
                                  stale_after=30.0, down_seen={4: 50.0, 5: 51.0})
    assert snap.epoch == osd_map["epoch"]
    by = {o.id: o for o in snap.osds}
    assert sorted(by) == [0, 1, 2, 3, 4, 5]
    assert [o.id for o in snap.osds if not o.up] == [4, 5]
    assert by[4].host == "h3" and by[4].crush_path == ("default", "r1", "h3")
    assert by[4].pgs == 20 and by[5].pgs == 13          # last num_pgs from osd_stats
    assert (by[4].down_since, by[5].down_since, by[0].down_since) == (50.0, 51.0, None)
    assert (by[4].process, by[4].rss_bytes, by[4].process_started_at) == ("running", 5 << 20, 99.0)
    assert (by[5].process, by[0].process) == ("stopped", "unknown")
    # the daemon's own state only for a running process of a fresh report
    assert (by[4].daemon_state, by[5].daemon_state, by[0].daemon_state) == ("preboot", None, None)
    assert snap.pgs_total == 33 and snap.pgs_active == 33 and snap.pgs_clean == 0
    assert snap.host("h3").mem_total == 1 << 30 and snap.host("h1") is None
    assert snap.buckets["r1"] == "rack" and "osd.4" not in snap.buckets
    assert "sortbitwise" in snap.cluster_flags
    # the same report, stale: the host's memory and processes are unknown again
    stale = cluster.build_snapshot(osd_map, tree, pgs, {"h3": (rep, 10.0)}, now=101.0,
                                   stale_after=30.0)
    assert stale.hosts == () and stale.osd(4).process == "unknown"
    assert stale.osd(4).daemon_state is None
    assert stale.helpers_seen == {"h3": 10.0}


def test_pg_counts_exact():
    dump = {"pg_stats": [
        {"state": "active+clean", "up": [0, 1], "acting": [0, 1], "log_size": 10},
        {"state": "active+undersized+degraded", "up": [0, 2], "acting": [0, 2], "log_size": 5},
        {"state": "peering", "up": [1], "acting": [1], "blocked_by": [3], "log_size": 7}],
        "osd_stats": [{"osd": 3, "num_pgs": 2}]}
    per, tot = cluster.pg_counts(dump, down=[3], host_osds={3: [3]})
    assert tot == {"total": 3, "active": 2, "clean": 1}
    assert per[0] == {"pgs": 2, "pgs_inactive": 0, "pgs_degraded": 1, "pg_log_entries": 15}
    assert per[1] == {"pgs": 2, "pgs_inactive": 1, "pgs_degraded": 0, "pg_log_entries": 17}
    assert per[3] == {"pgs": 2, "pgs_inactive": 1, "pgs_degraded": 1, "pg_log_entries": 0}


def test_down_osd_without_stats_gets_even_share():
    osd_map = {"osds": [{"osd": i, "in": 1} for i in range(6)],
               "pools": [{"pg_num": 32, "size": 3}, {"pg_num": 1, "size": 3}]}
    assert cluster.even_share(osd_map) == {i: 16 for i in range(6)}   # 99 replicas / 6 OSDs


def test_action_to_mon_command_mapping():
    m = executor.mon_cmd_for
    assert m(A.HoldOsd(reason="", osd=4)) == {"prefix": "osd add-noup", "ids": ["osd.4"]}
    assert m(A.AllowBoot(reason="", osd=4)) == {"prefix": "osd rm-noup", "ids": ["osd.4"]}
    assert m(A.HoldBucket(reason="", bucket="h3")) == {
        "prefix": "osd set-group", "flags": "noup", "who": ["h3"]}
    assert m(A.ReleaseBucket(reason="", bucket="h3")) == {
        "prefix": "osd unset-group", "flags": "noup", "who": ["h3"]}
    assert m(A.SetFlag(reason="", flag="noout")) == {"prefix": "osd set", "key": "noout"}
    assert m(A.UnsetFlag(reason="", flag="noout")) == {"prefix": "osd unset", "key": "noout"}
    assert m(A.GrantStart(reason="", osd=4, host="h3")) is None


def test_ok_to_stop_ebusy_still_parses_json():
    verdict = json.dumps({"ok_to_stop": False, "osds": [0], "bad_become_inactive": ["2.0"]})
    ex = executor.Executor(FakeCeph(answers={
        "osd ok-to-stop": [(-errno.EBUSY, verdict, "unsafe")]}))
    ok, why = ex.ok_to_stop(0)
    assert ok is False and "2.0" in why
    ex = executor.Executor(FakeCeph(answers={"osd ok-to-stop": [(0, json.dumps(
        {"ok_to_stop": True, "osds": [0]}), "")]}))
    assert ex.ok_to_stop(0)[0] is True


def test_heap_release_detects_missing_tcmalloc():
    fake = FakeCeph(answers={"tell": [(-errno.EOPNOTSUPP, "", "could not issue heap profiler "
                                         "command -- not using tcmalloc!")]})
    assert executor.Executor(fake).heap_release(3)[0] is False
    assert fake.calls == [{"prefix": "heap", "heapcmd": "release", "osd": 3}]
    ok, _ = executor.Executor(FakeCeph(answers={"tell": [(0, "", "")]})).heap_release(3)
    assert ok is True


def test_transient_mon_errors_are_retried_definite_ones_not():
    fake = FakeCeph(answers={
        "osd set": [(-errno.EAGAIN, "", ""), (-errno.EAGAIN, "", ""), (0, "", "")]})
    assert executor.Executor(fake).run_mon_action(A.SetFlag(reason="", flag="noout"))[0]
    assert len(fake.calls) == 3
    fake = FakeCeph(answers={"osd set": [(-errno.EINVAL, "", "bad")]})
    ok, why = executor.Executor(fake).run_mon_action(A.SetFlag(reason="", flag="noout"))
    assert not ok and "rc=-22" in why and len(fake.calls) == 1
