"""The `recovery` mgr module's commands on a real lab: bad input changes nothing, the helper's
key may only send reports, and an operator hold keeps a failed host's OSDs down (the boot gate
refuses them) until it is released, while a second start-controlled is refused (EBUSY)."""
from __future__ import annotations

import errno
import json
import os
import time

import pytest

from ceph_recovery_tools.common.wait import wait_until
from ceph_recovery_tools.lab import inrelease, launch
from ceph_recovery_tools.lab.launch import CephError

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True, scope="module")
def loopback_network(lab):
    """Without network namespaces the lab's hosts share the loopback: probe findings there say
    nothing about links, so they must not hold starts in these tests."""
    if not lab.get("netns"):
        launch.ceph(lab, "config", "set", "mgr", "mgr/recovery/network_holds_starts", "false",
                    json_out=False)
    yield
    launch.ceph(lab, "config", "rm", "mgr", "mgr/recovery/network_holds_starts", json_out=False)


def status(state):
    return launch.ceph(state, "recovery", "status")


def osd_map(state):
    return launch.ceph(state, "osd", "dump")


def fingerprint(state):
    """What a refused command must not change: map epoch, flags, per-OSD state, group flags,
    and the module's run (id, phase, mode, budget, holds)."""
    m, s = osd_map(state), status(state)
    return (m["epoch"], m["flags"], [(o["osd"], o["state"]) for o in m["osds"]],
            m.get("crush_node_flags"), s["run_id"], s["phase"], s["mode"], s["budget"],
            s["holds"])


def refused(state, *args, name=None, keyring=None):
    with pytest.raises(CephError) as e:
        launch.ceph(state, *args, name=name, keyring=keyring, timeout=30)
    return e.value.rc, e.value.stderr


def wait_for(pred, timeout, what):
    return wait_until(pred, timeout, 1, what="waiting for %s" % what)


def settle(state):
    """Wait until the module's ticks stop changing the map (two equal epochs 5 s apart)."""
    def same():
        a = osd_map(state)["epoch"]
        time.sleep(5)
        return osd_map(state)["epoch"] == a
    wait_for(same, 60, "a stable OSD map epoch")


def test_bad_input_is_refused_and_changes_nothing(healthy_lab):
    state = healthy_lab
    settle(state)
    before = fingerprint(state)
    for budget in ("abc", "0%", "150%", "-3G"):
        rc, err = refused(state, "recovery", "start-controlled", "--budget", budget)
        assert rc == errno.EINVAL and "budget" in err, (budget, rc, err)
    rc, err = refused(state, "recovery", "start-controlled", "--scope", "no-such-rack")
    assert rc == errno.ENOENT and "unknown CRUSH bucket 'no-such-rack'" in err
    rc, err = refused(state, "recovery", "start-controlled", "--concurrency", "0")
    assert rc == errno.EINVAL and "concurrency" in err
    rc, err = refused(state, "recovery", "start-controlled", "--start-order", "fastest")
    assert rc == errno.EINVAL and "cover_first" in err
    dry = launch.ceph(state, "recovery", "start-controlled", "--start-order", "cover_first",
                      "--dry-run")
    assert "order" in dry, dry                 # the dry run answers and starts nothing
    rc, err = refused(state, "recovery", "hold", "no-such-host")
    assert rc == errno.ENOENT
    for verb in ("pause", "resume", "abort"):
        rc, err = refused(state, "recovery", verb)
        assert rc == errno.EINVAL and "no " in err
    helper = dict(name="client.recovery-helper", keyring=state["helper_keyring"])
    rc, err = refused(state, "recovery", "helper-report", "{not json", "h1", **helper)
    assert rc == errno.EINVAL and "malformed helper report" in err
    wrong_version = json.dumps({"version": 99, "host": "h1", "time": 1.0, "seq": 1,
                                "memory": {}, "osds": []})
    rc, err = refused(state, "recovery", "helper-report", wrong_version, "h1", **helper)
    assert rc == errno.EPROTONOSUPPORT and "speaks helper protocol 99" in err, (rc, err)
    # the helper's key may send reports, nothing else
    rc, err = refused(state, "recovery", "start-controlled", **helper)
    assert rc == errno.EACCES
    time.sleep(5)                       # two ticks: nothing may follow the refused commands
    assert fingerprint(state) == before


def test_hold_refuses_start_until_released_and_second_run_is_busy(healthy_lab):
    state = healthy_lab
    host = "h3"
    osds = sorted(state["hosts"][host]["osds"])
    launch.ceph(state, "recovery", "hold", host)
    wait_for(lambda: "noup" in (osd_map(state).get("crush_node_flags") or {}).get(host, []),
             30, "noup on %s" % host)
    wait_for(lambda: "RECOVERY_DOMAIN_HELD" in launch.health(state).get("checks", {}), 30,
             "RECOVERY_DOMAIN_HELD in ceph health")
    launch.kill_host(state, host)
    wait_for(lambda: all(not o["up"] for o in osd_map(state)["osds"] if o["osd"] in osds),
             60, "the held host's OSDs down")
    # a start attempt goes through the boot gate, like systemd's ExecCondition would
    for osd in osds:
        p = inrelease.run_tool(state, "ceph-recovery-helper", "start-osd", osd, "--lab-dir",
                               state["dir"])
        assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    time.sleep(5)
    assert all(launch.osd_pid(state, o) is None for o in osds)
    assert all(not o["up"] for o in osd_map(state)["osds"] if o["osd"] in osds)
    # a run while the domain is held: it waits, and a second one is refused
    t0 = time.time()
    launch.ceph(state, "recovery", "start-controlled")
    wait_for(lambda: status(state)["phase"] == "running", 30, "the run to start")
    budget = status(state)["budget"]     # no --budget: the module's default, auto, not raised
    assert (budget["kind"], budget["value"], budget["now"]) == ("auto", 0.9, 0.9), budget
    settle(state)
    before = fingerprint(state)
    rc, err = refused(state, "recovery", "start-controlled", "--budget", "50%")
    assert rc == errno.EBUSY and "already active" in err
    time.sleep(5)
    assert fingerprint(state) == before
    assert all(launch.osd_pid(state, o) is None for o in osds)
    # release: the run brings them back, one at a time
    launch.ceph(state, "recovery", "release", host)
    wait_for(lambda: all(o["up"] for o in osd_map(state)["osds"]), 240, "all OSDs up")
    wait_for(lambda: status(state)["phase"] == "done", 120, "the run to finish")
    journal = status(state)["journal"]
    grants = [j["action"]["osd"] for j in journal if j["action"].get("kind") == "grant_start"
              and j["time"] >= t0 - 1]
    assert sorted(grants) == osds          # each granted once
    summ = status(state)["summary"]        # service restored, and what was lost on the way
    assert summ["service_restored_at"] is not None and summ["service_restored_at"] >= t0
    assert isinstance(summ["inactive_pg_s"], (int, float)) and summ["inactive_pg_s"] >= 0
    m = osd_map(state)
    assert not (m.get("crush_node_flags") or {}).get(host)
    assert "noout" not in m["flags"] and "norebalance" not in m["flags"]


def test_plain_output_is_text_and_f_json_is_json(healthy_lab):
    """Without -f json, `status` and `network` print tables for people; with it, JSON."""
    out = launch.ceph(healthy_lab, "recovery", "status", json_out=False)
    assert out.startswith("run ") and "osdmap e" in out, out[:300]
    assert status(healthy_lab)["phase"] in ("idle", "done", "aborted", "running")
    net = launch.ceph(healthy_lab, "recovery", "network", json_out=False)
    assert net.startswith("PAIR") and "findings:" in net, net[:300]
    assert "findings" in launch.ceph(healthy_lab, "recovery", "network")


def test_per_host_helper_key_cannot_report_for_another_host(lab, tmp_path):
    """A key made with caps.helper_caps("h1") reports for h1 only: Ceph refuses the command
    with host=h2 (the cap's `with host=h1`), the module refuses host=h1 with an h2 report."""
    from ceph_recovery_tools.helper import caps
    keyring = os.path.join(inrelease.scratch(lab, str(tmp_path)), "h1.keyring")
    name = caps.helper_name("h1")
    launch.ceph(lab, "auth", "get-or-create", name, *caps.caps_args(caps.helper_caps("h1")),
                "-o", keyring, json_out=False)
    try:
        def rep(host):
            return json.dumps({"version": 1, "host": host, "time": time.time(), "seq": 1,
                               "memory": {"total": 8 << 30, "used": 1 << 20,
                                          "available": 6 << 30, "limit": None,
                                          "source": "host"}, "osds": [], "done": []})
        reply = launch.ceph(lab, "recovery", "helper-report", rep("h1"), "h1", name=name,
                            keyring=keyring, timeout=30)
        assert reply["host"] == "h1"
        rc, err = refused(lab, "recovery", "helper-report", rep("h2"), "h2", name=name,
                          keyring=keyring)
        assert rc == errno.EACCES and "access denied" in err
        rc, err = refused(lab, "recovery", "helper-report", rep("h2"), "h1", name=name,
                          keyring=keyring)
        assert rc == errno.EACCES and "does not match the report's host 'h2'" in err
        rc, err = refused(lab, "recovery", "helper-report", rep("h1"), name=name,
                          keyring=keyring)
        assert rc == errno.EACCES, "a pinned key must name its host"
    finally:
        launch.ceph(lab, "auth", "del", name, json_out=False)


def test_the_tools_work_from_the_host_on_the_labs_release(healthy_lab, tmp_path):
    """The line `ceph-recovery-lab up` prints, and the README's drill line, run from the host
    on the lab's release (a client must be of the cluster's release: Debian 12's Pacific
    client cannot read Tentacle's keys)."""
    import subprocess
    import sys
    state = healthy_lab
    bindir = os.path.dirname(sys.executable)
    out = subprocess.run([os.path.join(bindir, "ceph-recovery-lab"), "ceph", "--dir",
                          state["dir"], "--", "-s", "-f", "json"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["health"]["status"] in ("HEALTH_OK", "HEALTH_WARN")
    report = tmp_path / "drill.json"            # outside the lab directory
    drill = subprocess.run([os.path.join(bindir, "ceph-recovery-drill"), "--dir", state["dir"],
                            "--fail", "host:h2", "--objects", "20", "--downtime", "5",
                            "--json", str(report)], capture_output=True, text=True,
                           timeout=900)
    assert drill.returncode == 0, (drill.stdout[-2000:], drill.stderr[-3000:])
    rep = json.loads(report.read_text())
    assert rep["outcome"] == "done" and rep["objects_verified_ok"] == rep["objects_written"]
