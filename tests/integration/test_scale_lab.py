"""A small scale lab end to end: a real Tentacle mon and mgr with the module, 300 OSDs that exist
only in the map (root/rack/host from crushtool), 6,000 PGs, and 50 synthetic helpers, each with
its own per-host key, speaking the real helper protocol (scaleload.py).

It asserts the protocol, not timings: every report is taken; a controlled run of rack0 holds
its down OSDs with noup (batched), its instructions reach the helpers of rack0 only, each
started OSD is granted in turn and shown in preboot by its helper, its boot is allowed (noup
removed) and, since no daemon exists to boot, it times out and is stopped; a key of one host
cannot report for another, by command or at the report endpoint.
"""
from __future__ import annotations

import json
import os
import tempfile
import time

import pytest

from ceph_recovery import reportauth
from ceph_recovery_tools.bench.mgrscale import Load
from ceph_recovery_tools.helper import endpoint
from ceph_recovery_tools.lab import launch, release, scale, teardown
from ceph_recovery_tools.lab.launch import CephError

OPTS = dict(osds=300, hosts=50, racks=5, pgs=6000)
RUN_S = 75.0


@pytest.fixture(scope="module")
def scale_lab():
    if os.geteuid() != 0:
        pytest.skip("the scale lab needs root (chroot, bind mounts)")
    if not os.path.exists(os.path.join(release.chroots_dir(), "tentacle", ".ready")):
        pytest.skip("no tentacle chroot: scripts/lab/chroot.sh tentacle")
    d = tempfile.mkdtemp(prefix="crsc-")
    module_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "mgr_module", "recovery")
    try:
        state = scale.up_scale(d, scale.ScaleOptions(module_dir=module_dir, **OPTS))
        launch.wait_mgr_available(state, 120)
        yield state
    finally:
        teardown.down(d)


def test_helpers_report_and_a_rack_run_instructs_them_in_turn(scale_lab):
    state = scale_lab
    assert len(launch.ceph(state, "osd", "dump")["osds"]) == OPTS["osds"]
    pgs = launch.ceph(state, "pg", "dump", "pgs_brief", timeout=120)
    assert len(pgs["pg_stats"]) == OPTS["pgs"]
    launch.ceph(state, "config", "set", "mgr", "mgr/recovery/boot_timeout", "20",
                json_out=False)
    load = Load(state, [[10.0 + RUN_S, 2.0]], "itest")
    time.sleep(max(0.0, load.begin(300.0) + 10.0 - time.time()))
    assert load.workers_ready == len(load.ready)
    launch.ceph(state, "recovery", "start-controlled", "--scope", "rack0", json_out=False)
    result = load.wait(timeout=RUN_S + 120)
    steps = result["steps"][0]
    assert steps["sent"] > OPTS["hosts"] * 30 and steps["failed"] == 0, steps["errors"]
    rack0 = {h for h, v in state["scale_hosts"].items() if v["rack"] == "rack0"}
    assert result["ops"] and set(result["ops"]) <= rack0
    ops = [o for h in sorted(result["ops"]) for o in result["ops"][h]]
    starts = [o for o in ops if o["op"] == "start"]
    assert len({o["osd"] for o in starts}) >= len(rack0)      # at least one per host
    status = launch.ceph(state, "recovery", "status", timeout=60)
    journal = status["journal"]
    kinds = [j["action"]["kind"] for j in journal]
    assert "grant_start" in kinds and "allow_boot" in kinds
    # a granted OSD is let boot only after its helper showed it started (preboot)
    first_allow = {j["action"]["osd"]: j["time"] for j in reversed(journal)
                   if j["action"]["kind"] == "allow_boot"}
    started_at = {o["osd"]: o["t"] for o in reversed(starts)}
    assert all(started_at.get(osd, 1e18) <= t for osd, t in first_allow.items())
    handlers = launch.ceph(state, "recovery", "perf")["handlers"]
    # each helper's first report goes by command, whose reply names the report endpoint; the
    # others go to the endpoint
    assert OPTS["hosts"] <= handlers["helper-report"]["count"] < steps["sent"] / 10
    assert handlers["report-endpoint"]["count"] >= steps["sent"]
    launch.ceph(state, "recovery", "abort", json_out=False)


def _report(host: str, seq: int = 1) -> str:
    return json.dumps({"version": 1, "host": host, "time": time.time(), "seq": seq,
                       "instance": "itest-%s" % host,
                       "memory": {"total": 1, "used": 0, "available": 1, "source": "host"},
                       "osds": []})


def test_a_host_key_cannot_report_for_another_host(scale_lab):
    state = scale_lab
    report = _report("host1")
    with pytest.raises(CephError) as e:
        launch.ceph(state, "recovery", "helper-report", report, "host1",
                    name="client.recovery-helper.host0", keyring=state["helper_keyring"],
                    json_out=False, timeout=30)
    # EACCES: the cap names host0 only (the same key reports for host0: the next test)
    assert e.value.rc == 13


def test_a_hosts_token_cannot_report_for_another_host_at_the_endpoint(scale_lab):
    state = scale_lab
    reply = launch.ceph(state, "recovery", "helper-report", _report("host0"), "host0",
                        name="client.recovery-helper.host0",
                        keyring=state["helper_keyring"], timeout=30)
    url, token = reportauth.parse_endpoint(reply["endpoint"])
    rc, answer, err = endpoint.post_report(url, token, "host0", _report("host0", 2), 10)
    assert (rc, err) == (0, "") and answer["host"] == "host0"
    with pytest.raises(endpoint.EndpointError, match="HTTP 403"):
        endpoint.post_report(url, token, "host1", _report("host1"), 10)
