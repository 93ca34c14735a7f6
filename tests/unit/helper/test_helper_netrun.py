"""The network probe inside the helper's cycle: time budget, failures, and the context dict the
helper hands to the network engineer's netprobe.probe_cycle (contract with its parser)."""
from __future__ import annotations

import threading

import pytest

from ceph_recovery_tools.helper import daemon, netrun


def test_zero_budget_disables_the_probe():
    assert netrun.ProbeRunner(0, probe=lambda ctx: {"x": 1}).run({}) == {}


def test_load_probe_finds_netprobe_when_installed():
    netprobe = pytest.importorskip("ceph_recovery_tools.helper.netprobe")
    assert netrun.load_probe() is netprobe.probe_cycle


def test_probe_result_is_passed_through():
    r = netrun.ProbeRunner(5.0, probe=lambda ctx: {"host": ctx["host"], "ok": True})
    try:
        assert r.run({"host": "h1"}) == {"host": "h1", "ok": True}
    finally:
        r.close()


def test_over_budget_probe_is_cut_off_and_not_restarted_while_running():
    release = threading.Event()
    calls = []

    def slow(ctx):
        calls.append(ctx)
        release.wait(10)
        return {"late": True}
    r = netrun.ProbeRunner(0.1, probe=slow)
    try:
        assert r.run({}) == {"error": "probe over budget (0.1s)"}
        assert r.run({})["error"].startswith("previous probe still running")
        assert len(calls) == 1
    finally:
        release.set()
        r.close()


def test_failing_probe_becomes_an_error_entry():
    def broken(ctx):
        raise RuntimeError("no raw socket")
    r = netrun.ProbeRunner(2.0, probe=broken)
    try:
        assert r.run({}) == {"error": "probe failed: no raw socket"}
    finally:
        r.close()


def test_helper_context_is_accepted_by_netprobe(tmp_path):
    netprobe = pytest.importorskip("ceph_recovery_tools.helper.netprobe")
    opts = daemon.Options(host="h2", conf="/nonexistent.conf", name="client.x", keyring=None,
                          state_dir=str(tmp_path), probe_budget=0.5)
    h = daemon.Helper(opts, launcher=None, read_memory=lambda: {})
    dump = {"epoch": 3, "osds": [
        {"osd": 0, "state": ["exists", "up"],
         "public_addrs": {"addrvec": [{"type": "v2", "addr": "10.1.0.11:6800", "nonce": 1}]}},
        {"osd": 2, "state": ["exists", "up"],
         "public_addrs": {"addrvec": [{"type": "v2", "addr": "10.1.0.12:6800", "nonce": 2}]}}]}
    tree = {"nodes": [{"id": -2, "name": "h1", "type": "host", "children": [0]},
                      {"id": -3, "name": "h2", "type": "host", "children": [2]},
                      {"id": 0, "name": "osd.0", "type": "osd"},
                      {"id": 2, "name": "osd.2", "type": "osd"}]}
    h.full_map = (dump, tree)
    h.probe_request = {"throughput_to": ["h1"]}
    ctx = netprobe.ProbeContext.from_mapping(h.probe_context(100.0))
    assert ctx.host == "h2" and dict(ctx.peers) == {"h1": "10.1.0.11"}
    assert tuple(ctx.throughput_to) == ("h1",) and ctx.budget_s == 0.5
    h.close()
