"""Exactly-once instruction execution across a helper restart (state dir), the done/ack cycle,
and the boot gate's fallbacks when the mon is unreachable (a real rados connect to a loopback
port where nothing listens; no cluster needed).

The launcher here is a recorder standing in for the OS side (systemctl / spawning ceph-osd):
the code under test is the helper's bookkeeping, which is real.
"""
from __future__ import annotations

import json
import socket

import pytest

from ceph_recovery import protocol
from ceph_recovery_tools.helper import daemon, gatecheck
from ceph_recovery_tools.helper.state import StateDir
from gatecases import DUMP, TREE, dump_with  # registered by conftest.py




class RecordingLauncher:
    name = "recording"

    def __init__(self, stop_ok=True, start_result="started", running=()):
        self.calls = []
        self.running = set(running)
        self.stop_ok, self.start_result = stop_ok, start_result

    def pid(self, osd):
        return 1000 + osd if osd in self.running else None

    def asok_path(self, osd):
        return None

    def start(self, osd):
        self.calls.append(("start", osd))
        if self.start_result == "started":
            self.running.add(osd)
        return self.start_result

    def stop(self, osd, timeout=60.0):
        self.calls.append(("stop", osd))
        if self.stop_ok:
            self.running.discard(osd)
        return self.stop_ok

    def kill(self, osd, timeout=60.0):
        self.calls.append(("kill", osd))
        if self.stop_ok:
            self.running.discard(osd)
        return self.stop_ok


def helper(tmp_path, launcher, ok_to_stop=(True, "ok-to-stop: yes")):
    """A helper on tmp_path/state; ok_to_stop stands in for the mgr's `osd ok-to-stop`."""
    opts = daemon.Options(host="h2", conf="/nonexistent.conf", name="client.recovery-helper",
                          keyring=None, state_dir=str(tmp_path / "state"), probe_budget=0)
    return daemon.Helper(opts, launcher, read_memory=lambda: {},
                         ok_to_stop=lambda osd: ok_to_stop)


def ins(*items, epoch=10):
    return protocol.parse_instructions({
        "version": 1, "host": "h2", "epoch": epoch,
        "instructions": [{"id": i, "op": op, "osd": osd, "reason": "test"} for i, op, osd in items],
        "grants": sorted({osd for _, op, osd in items if op != "stop"}), "held": []})


def test_start_runs_once_even_after_a_helper_restart(tmp_path):
    first = RecordingLauncher()
    reply = ins(("run1:1", "start", 2))
    helper(tmp_path, first).execute(reply, {2, 3})
    helper(tmp_path, first).execute(reply, {2, 3})     # same reply again, same process
    restarted = RecordingLauncher()
    h = helper(tmp_path, restarted)                       # a new helper on the same state dir
    h.execute(reply, {2, 3})
    assert first.calls == [("start", 2)] and restarted.calls == []
    assert h.state.pending_done() == ["run1:1"]


@pytest.mark.parametrize("op,running,outcome", [
    ("start", True, "done"), ("start", False, "failed"),
    ("stop", False, "done"), ("stop", True, "failed"),
    ("restart", True, "failed")])
def test_instruction_interrupted_by_a_helper_kill_is_settled_from_the_process_table(
        tmp_path, op, running, outcome):
    """The helper was killed after recording the instruction as begun and before its outcome
    (a SIGKILL right after spawning the OSD): the restarted helper never carries it out
    again, and reports it done or failed from what runs, so the mgr closes it now instead of
    at its expiry."""
    reply = ins(("r:1", op, 2))
    h = helper(tmp_path, RecordingLauncher())
    h.state.mark_executed("r:1", ok=False)              # begun, outcome never recorded
    rec = RecordingLauncher(running={2} if running else ())
    again = helper(tmp_path, rec)
    again.execute(reply, {2, 3})
    assert rec.calls == []
    if outcome == "done":
        assert again.state.pending_done() == ["r:1"] and again.failed == []
    else:
        assert again.state.pending_done() == []
        assert [f["id"] for f in again.failed] == ["r:1"]
        assert "not carried out again" in again.failed[0]["error"]
    again.execute(reply, {2, 3})                          # the same reply again: said once
    assert len(again.failed) == (0 if outcome == "done" else 1)


def test_done_ids_are_reported_until_the_mgr_drops_them(tmp_path):
    h = helper(tmp_path, RecordingLauncher())
    h.execute(ins(("r:1", "start", 2), ("r:2", "restart", 3)), {2, 3})
    assert h.state.pending_done() == ["r:1", "r:2"]
    h.state.acknowledge(["r:2"])                          # the mgr still lists r:2 only
    assert h.state.pending_done() == ["r:2"]
    h.state.acknowledge([])
    assert h.state.pending_done() == [] and h.state.executed_ids() == ["r:1", "r:2"]


def test_restart_is_stop_then_start(tmp_path):
    rec = RecordingLauncher(running={3})
    helper(tmp_path, rec).execute(ins(("r:1", "restart", 3)), {2, 3})
    assert rec.calls == [("stop", 3), ("start", 3)]


def test_restart_without_fresh_ok_to_stop_does_nothing(tmp_path):
    rec = RecordingLauncher(running={3})
    h = helper(tmp_path, rec, ok_to_stop=(False, "ok-to-stop refused osd.3 (rc -16): EBUSY"))
    h.execute(ins(("r:1", "restart", 3), ("r:2", "stop", 3)), {2, 3})
    assert rec.calls == [] and h.state.pending_done() == []
    assert [f["error"] for f in h.failed] == ["ok-to-stop refused osd.3 (rc -16): EBUSY"] * 2


def kill_ins(osd):
    return protocol.parse_instructions({
        "version": 1, "host": "h2", "epoch": 10, "grants": [], "held": [osd],
        "instructions": [{"id": "d:1", "op": "stop", "osd": osd, "reason": "drill",
                          "signal": "KILL"}]})


def test_a_kill_stop_sigkills_after_ok_to_stop_and_never_without_it(tmp_path):
    rec = RecordingLauncher(running={3})
    h = helper(tmp_path, rec)
    h.execute(kill_ins(3), {2, 3})
    assert rec.calls == [("kill", 3)] and h.state.pending_done() == ["d:1"]
    rec = RecordingLauncher(running={3})
    h = helper(tmp_path / "refused", rec, ok_to_stop=(False, "ok-to-stop refused osd.3"))
    h.execute(kill_ins(3), {2, 3})
    assert rec.calls == [] and [f["error"] for f in h.failed] == ["ok-to-stop refused osd.3"]


def test_the_signal_travels_only_with_a_kill_and_only_on_a_stop():
    d = protocol.instructions_to_dict(kill_ins(3))
    assert d["instructions"][0]["signal"] == "KILL"
    clean = protocol.instructions_to_dict(ins(("r:1", "stop", 3)))
    assert "signal" not in clean["instructions"][0]          # read by helpers that predate it
    for op, sig in (("start", "KILL"), ("stop", "HUP")):
        with pytest.raises(protocol.ProtocolError, match="signal"):
            protocol.parse_instructions({"version": 1, "host": "h2", "epoch": 1, "instructions": [
                {"id": "x", "op": op, "osd": 3, "signal": sig}]})


def test_stop_of_a_stopped_osd_is_done_without_calls(tmp_path):
    rec = RecordingLauncher()
    h = helper(tmp_path, rec, ok_to_stop=(False, "must not be asked"))
    h.execute(ins(("r:1", "stop", 2)), {2, 3})
    assert rec.calls == [] and h.state.pending_done() == ["r:1"]


def test_failed_stop_does_not_start_and_is_not_done(tmp_path):
    rec = RecordingLauncher(stop_ok=False, running={3})
    h = helper(tmp_path, rec)
    h.execute(ins(("r:1", "restart", 3)), {2, 3})
    assert rec.calls == [("stop", 3)]
    assert h.state.pending_done() == [] and [f["id"] for f in h.failed] == ["r:1"]
    h.execute(ins(("r:1", "restart", 3)), {2, 3})       # not retried: at most once
    assert rec.calls == [("stop", 3)]


def test_instruction_for_another_hosts_osd_is_refused(tmp_path):
    rec = RecordingLauncher()
    h = helper(tmp_path, rec)
    h.execute(ins(("r:1", "start", 0)), {2, 3})
    assert rec.calls == [] and h.failed[0]["error"] == "osd.0 is not on host h2"


def test_held_start_is_a_failure_not_done(tmp_path):
    h = helper(tmp_path, RecordingLauncher(start_result="held"))
    h.execute(ins(("r:1", "start", 2)), {2, 3})
    assert h.state.pending_done() == [] and "held" in h.failed[0]["error"]


# -- boot gate fallbacks: real rados connect to a dead loopback port ---------------------------
@pytest.fixture(autouse=True)
def booted_long_ago(monkeypatch):
    """These caches use small clock values: the host booted before all of them."""
    monkeypatch.setattr(gatecheck, "_boot_time", lambda: 0.0)


@pytest.fixture()
def dead_conf(tmp_path):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                           # nothing listens there now
    conf = tmp_path / "dead.conf"
    conf.write_text("[global]\nfsid = 5b3c3c4e-0000-4000-8000-000000000001\n"
                    "mon_host = v2:127.0.0.1:%d\nauth_client_required = none\n" % port)
    return str(conf)


def _cache(state, dump, osds=(2, 3), grants=(), now=1000.0, held=(), reply_epoch=10):
    from ceph_recovery_tools.helper import gate
    small_dump, small_tree = gate.trim_view(list(osds), dump, TREE)
    state.save_view(small_dump, small_tree, "h2", list(osds), now)
    state.save_instructions({"version": 1, "host": "h2", "epoch": reply_epoch,
                             "instructions": [], "grants": list(grants), "held": list(held)},
                            now)


def test_gate_without_cache_follows_the_no_cache_policy(tmp_path, dead_conf):
    st = StateDir(str(tmp_path / "s"))
    res = gatecheck.check(2, dead_conf, "client.admin", None, st, timeout=1)
    assert (res.allowed, res.source) == (True, "no-cache")
    res = gatecheck.check(2, dead_conf, "client.admin", None, st, timeout=1, no_cache="hold")
    assert (res.allowed, res.source) == (False, "no-cache")


def test_gate_uses_cached_view_when_mon_unreachable(tmp_path, dead_conf):
    st = StateDir(str(tmp_path / "s")).ensure()
    _cache(st, dump_with(buckets={"h2": ["noup"]}))
    res = gatecheck.check(3, dead_conf, "client.admin", None, st, timeout=1, now=1001.0)
    assert (res.allowed, res.source) == (False, "cache")
    assert "noup on CRUSH bucket h2" in res.reason and "mon unreachable" in res.reason


def test_cached_grant_allows_until_it_expires(tmp_path, dead_conf):
    st = StateDir(str(tmp_path / "s")).ensure()
    _cache(st, dump_with(buckets={"h2": ["noup"]}), grants=[3], now=1000.0)
    fresh = gatecheck.check(3, dead_conf, "client.admin", None, st, timeout=1, now=1010.0,
                            grant_ttl=300)
    old = gatecheck.check(3, dead_conf, "client.admin", None, st, timeout=1, now=1400.0,
                          grant_ttl=300)
    assert (fresh.allowed, old.allowed) == (True, False)


def test_cached_mgr_hold_counts_only_if_not_older_than_the_cached_map(tmp_path, dead_conf):
    # the release reached the cached map (epoch 57) before the mgr's next reply: the mgr's
    # `held` list from epoch 50 must not keep the OSD held; from epoch 57 on it counts
    st = StateDir(str(tmp_path / "s")).ensure()
    _cache(st, dump_with(), held=[3], reply_epoch=DUMP["epoch"] - 7)
    stale = gatecheck.check(3, dead_conf, "client.admin", None, st, timeout=1, now=1001.0)
    _cache(st, dump_with(), held=[3], reply_epoch=DUMP["epoch"])
    current = gatecheck.check(3, dead_conf, "client.admin", None, st, timeout=1, now=1001.0)
    assert (stale.allowed, stale.source) == (True, "cache")
    assert (current.allowed, current.source) == (False, "cache")


def test_osd_missing_from_cache_is_the_no_cache_case(tmp_path, dead_conf):
    st = StateDir(str(tmp_path / "s")).ensure()
    _cache(st, dump_with(buckets={"default": ["noup"]}), osds=(2, 3))
    res = gatecheck.check(0, dead_conf, "client.admin", None, st, timeout=1, no_cache="hold")
    assert (res.allowed, res.source) == (False, "no-cache")


def test_state_files_are_json(tmp_path):
    st = StateDir(str(tmp_path / "s")).ensure()
    st.mark_done("a:1")
    with open(st._f("executed.json")) as f:
        assert json.load(f) == {"ids": ["a:1"], "pending_done": ["a:1"]}
    assert DUMP["epoch"] == 57


def test_cache_from_before_this_boot_holds_and_says_why(tmp_path, dead_conf):
    """Defect 5: after a power loss the cached 'not held' view is from before the failure;
    it must not let every OSD start at once."""
    st = StateDir(str(tmp_path / "s")).ensure()
    _cache(st, dump_with(), now=1000.0)                 # saved: osd.3 not held
    res = gatecheck.check(3, dead_conf, "client.admin", None, st, timeout=1, now=5000.0,
                          boot_time=2000.0)
    assert (res.allowed, res.source) == (False, "stale-cache")
    assert "before this boot" in res.reason and "mon unreachable" in res.reason
    same_boot = gatecheck.check(3, dead_conf, "client.admin", None, st, timeout=1,
                                now=5000.0, boot_time=500.0)
    assert (same_boot.allowed, same_boot.source) == (True, "cache")
