"""A mgr command lost in a mgr failover must not stop the helper for good (found by the fault
matrix: after a failover one helper's report never returned and its host reported nothing
again, so the run could not start that host's OSDs). librados' mgr_command has no timeout; the
helper bounds it and connects again on the next cycle."""
from __future__ import annotations

import threading

import pytest

from ceph_recovery_tools.helper import client, daemon


class StuckCluster(object):
    """A handle whose mgr commands never answer, as after a lost command."""

    def __init__(self):
        self.release = threading.Event()
        self.calls = 0

    def mgr_command(self, cmd, inbuf, timeout=0):
        self.calls += 1
        self.release.wait()
        return 0, b"{}", ""


def test_a_mgr_command_that_never_answers_is_abandoned_and_the_helper_reconnects(tmp_path):
    opts = daemon.Options(host="h2", conf="/nonexistent.conf", name="client.recovery-helper",
                          keyring=None, state_dir=str(tmp_path / "state"), probe_budget=0,
                          timeout=1.0)
    h = daemon.Helper(opts, launcher=None, read_memory=lambda: {})
    stuck = StuckCluster()
    h.cluster = stuck
    result = {}

    def cycle():
        try:
            h._mgr(daemon.REPORT_PREFIX, report="{}", host="h2")
        except client.ClusterUnreachable as exc:
            result["error"] = str(exc)
    t = threading.Thread(target=cycle, daemon=True)
    t.start()
    t.join(120)                      # a bound for the test itself, not a timing claim
    stuck.release.set()
    assert not t.is_alive(), "the helper is stuck in a mgr command"
    assert "no answer" in result.get("error", ""), result
    assert h.cluster is None and stuck.calls == 1    # the next cycle connects a new handle
