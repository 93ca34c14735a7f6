"""A mgr command lost in a mgr failover or a network cut must neither stop the helper for good
nor corrupt its memory. librados (Pacific) mgr_command with `rados_mon_op_timeout` returns
ETIMEDOUT while MgrClient still holds the caller's buffers, and the late reply writes into freed
memory; so mgr commands run on their own handle without an op timeout, blocking in a worker
thread that the helper bounds, and a stuck handle is abandoned (kept referenced, never shut
down) and replaced."""
from __future__ import annotations

import threading

import pytest

from ceph_recovery_tools.helper import client, daemon


class StuckCluster(object):
    """A handle whose mgr commands never answer, as after a lost command."""

    def __init__(self):
        self.release = threading.Event()
        self.calls = 0
        self.timeouts = []
        self.shut_down = False

    def mgr_command(self, cmd, inbuf, timeout=0):
        self.calls += 1
        self.timeouts.append(timeout)
        self.release.wait()
        return 0, b"{}", ""

    def shutdown(self):
        self.shut_down = True


def _helper(tmp_path):
    opts = daemon.Options(host="h2", conf="/nonexistent.conf", name="client.recovery-helper",
                          keyring=None, state_dir=str(tmp_path / "state"), probe_budget=0,
                          timeout=1.0)
    h = daemon.Helper(opts, launcher=None, read_memory=lambda: {})
    h.mgr_deadline = 0.5
    return h


def _mgr_in_thread(h):
    result = {}

    def cycle():
        try:
            h._mgr(daemon.REPORT_PREFIX, report="{}", host="h2")
        except client.ClusterUnreachable as exc:
            result["error"] = str(exc)
    t = threading.Thread(target=cycle, daemon=True)
    t.start()
    t.join(120)                      # a bound for the test itself, not a timing claim
    return t, result


def test_a_mgr_command_that_never_answers_is_abandoned_and_the_helper_reconnects(tmp_path):
    h = _helper(tmp_path)
    stuck, mon = StuckCluster(), StuckCluster()
    h.mgr_cluster, h.cluster = stuck, mon
    t, result = _mgr_in_thread(h)
    try:
        assert not t.is_alive(), "the helper is stuck in a mgr command"
        assert "no answer" in result.get("error", ""), result
        assert h.mgr_cluster is None and stuck.calls == 1   # the next command connects anew
        assert stuck.timeouts == [0]          # blocking: librados' own timeout is unsafe
        # the stuck handle stays referenced and is never shut down, even by a reconnect
        assert [c for c, _w in h.abandoned] == [stuck]
        h._disconnect()
        assert not stuck.shut_down and mon.shut_down and h.cluster is None
    finally:
        stuck.release.set()


def test_too_many_stuck_mgr_handles_stop_the_helper_with_an_error(tmp_path):
    h = _helper(tmp_path)
    handles = []
    try:
        for _ in range(daemon.MAX_ABANDONED + 1):
            assert not h.stop_requested
            stuck = StuckCluster()
            handles.append(stuck)
            h.mgr_cluster = stuck
            t, result = _mgr_in_thread(h)
            assert not t.is_alive() and "no answer" in result.get("error", "")
        assert h.stop_requested and h.exit_code == 1
        assert len(h.abandoned) == daemon.MAX_ABANDONED + 1
        assert not any(c.shut_down for c in handles)
    finally:
        for c in handles:
            c.release.set()


def test_an_answered_handle_is_dropped_from_the_abandoned_list(tmp_path):
    h = _helper(tmp_path)
    first = StuckCluster()
    h.mgr_cluster = first
    _mgr_in_thread(h)
    first.release.set()
    h.abandoned[0][1].join(120)
    second = StuckCluster()
    h.mgr_cluster = second
    try:
        _mgr_in_thread(h)
        assert [c for c, _w in h.abandoned] == [second]
    finally:
        second.release.set()


class FakeRados(object):
    made = []

    def __init__(self, conffile=None, name=None, conf=None):
        self.conf = dict(conf or {})
        FakeRados.made.append(self)

    def connect(self, timeout=0):
        pass


@pytest.mark.parametrize("op_timeout, want", [(True, "5"), (False, "0")])
def test_the_mgr_handle_has_no_mon_op_timeout(monkeypatch, op_timeout, want):
    monkeypatch.setattr(client.rados, "Rados", FakeRados)
    handle = client.connect("/c.conf", "client.x", None, 5.0, op_timeout=op_timeout)
    assert handle.conf["rados_mon_op_timeout"] == want
    assert handle.conf["client_mount_timeout"] == "5"     # connecting stays bounded


class _Replaced(daemon.Helper):
    """A helper whose mgr answers its first report ESTALE (another process reported for its
    host since, as `ceph-recovery-helper run --once` does), then accepts."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.sent = []

    def refresh_view(self, now, want_epoch=None):
        return {"osds": []}

    def build(self, now, osds):
        return {"seq": self.seq + 1, "instance": self.instance}

    def _mgr(self, prefix, **args):
        import errno
        import json
        rep = json.loads(args["report"])
        self.sent.append((rep["instance"], rep["seq"]))
        self.seq = rep["seq"]
        if len(self.sent) == 1:
            return -errno.ESTALE, None, ("helper-report: stale report from h2: helper instance "
                                         "'%s' was replaced by 'x'; ignored" % rep["instance"])
        return -errno.EIO, None, "stop here"


def test_a_live_helper_whose_instance_was_replaced_takes_a_new_one(tmp_path):
    opts = daemon.Options(host="h2", conf="/nonexistent.conf", name="client.recovery-helper",
                          keyring=None, state_dir=str(tmp_path / "state"), probe_budget=0,
                          timeout=1.0)
    h = _Replaced(opts, launcher=None, read_memory=lambda: {})
    first = h.instance
    h.run_cycle(0.0)
    h.run_cycle(5.0)
    assert h.sent[0] == (first, 1)
    assert h.sent[1][0] != first and h.sent[1][1] == 1     # a new instance, from 1 again
