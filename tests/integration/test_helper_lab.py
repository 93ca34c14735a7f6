"""The node helper against a real lab cluster: reports reach the mgr module, the helper key's
caps, the boot gate (per-OSD noup, `set-group noup <host>`, release), its cache fallback when
the mon is unreachable, and `start-osd` of a held OSD leaving it down. The helper runs as the
lab release's client (inrelease): the host venv's on Pacific, the chroot's on Reef/Tentacle."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from ceph_recovery_tools.common.wait import wait_until
from ceph_recovery_tools.helper.state import StateDir
from ceph_recovery_tools.lab import bootstrap, inrelease, launch

pytestmark = pytest.mark.integration


def helper_cli(lab, *args, timeout=60):
    return inrelease.run_tool(lab, "ceph-recovery-helper", *args, timeout=timeout)


def gate(lab, osd, *extra):
    return helper_cli(lab, "gate", osd, "--lab-dir", lab["dir"], *extra)


@pytest.fixture
def scratch(lab, tmp_path):
    """tmp_path, or on a chroot release a directory the release's helper sees too."""
    return Path(inrelease.scratch(lab, str(tmp_path)))


def wait_for(what, fn, timeout=30.0, every=0.5):
    return wait_until(fn, timeout, every, what="waiting for %s" % what,
                      detail=lambda last: "last: %r" % (last,))


def _new_pid(pid, before):
    return pid if pid and pid != before else None


def osd_up(lab, osd):
    return {o["osd"]: bool(o["up"]) for o in launch.ceph(lab, "osd", "dump")["osds"]}[osd]


def dead_conf(lab, where):
    """The lab's conf with the mon address pointing at a loopback port where nobody listens."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with open(lab["conf"]) as f:
        text = f.read()
    text, n = re.subn(r"(mon_host\s*=\s*v2:)([0-9.]+):\d+", r"\g<1>127.0.0.1:%d" % port, text)
    assert n == 1, "mon_host line not found in %s" % lab["conf"]
    path = where / "dead.conf"
    path.write_text(text)
    return str(path)


def cached_view(lab, host):
    with open(os.path.join(lab["dir"], "helper", host, "view.json")) as f:
        return json.load(f)


def test_helpers_report_to_the_mgr_module(lab):
    def all_seen():
        status = launch.ceph(lab, "recovery", "status")
        seen = {h: (status.get("hosts", {}).get(h) or {}).get("helper_seen_s_ago")
                for h in lab["hosts"]}
        return seen if all(s is not None and s < 15 for s in seen.values()) else None
    wait_for("every lab host's helper seen by the mgr", all_seen, timeout=60)
    now = time.time()
    for host, info in lab["hosts"].items():
        with open(os.path.join(lab["dir"], "helper", host, "instructions.json")) as f:
            cached = json.load(f)
        assert cached["reply"]["host"] == host and now - cached["received_at"] < 15
        assert cached_view(lab, host)["osds"] == sorted(info["osds"])
    # after its first report by command, each helper posts to the module's report endpoint
    wait_for("the helpers' reports at the report endpoint", lambda: launch.ceph(
        lab, "recovery", "perf")["handlers"].get("report-endpoint", {}).get("count", 0)
        >= 3 * len(lab["hosts"]), timeout=60)


def test_helper_key_has_exactly_the_caps_it_needs(lab, scratch):
    key = launch.ceph(lab, "auth", "get", bootstrap.HELPER_NAME)[0]
    assert key["caps"] == bootstrap.HELPER_CAPS
    who = {"name": bootstrap.HELPER_NAME, "keyring": lab["helper_keyring"]}
    # every call the helper makes: osd dump/tree (gate, view), helper-report, ok-to-stop
    once = helper_cli(lab, "run", "--once", "--lab-dir", lab["dir"], "--host", "h1",
                      "--state-dir", scratch / "h1", "--probe-budget", "0")
    assert once.returncode == 0, once.stderr
    assert json.loads(once.stdout)["host"] == "h1"
    assert gate(lab, 0, "--state-dir", scratch / "h1").returncode == 0
    assert launch.ceph(lab, "osd", "ok-to-stop", "0", check=False, **who)["osds"] == [0]
    # and nothing that changes the cluster
    with pytest.raises(launch.CephError) as err:
        launch.ceph(lab, "osd", "set", "noout", json_out=False, **who)
    assert abs(err.value.rc) == 13
    # without the module command cap the report is refused: the cap is needed
    name, keyring = "client.recovery-helper-nocap", str(scratch / "nocap.keyring")
    launch.ceph(lab, "auth", "get-or-create", name, "mon", "allow r", "mgr",
                'allow command "osd ok-to-stop"', "-o", keyring, json_out=False)
    try:
        bad = helper_cli(lab, "run", "--once", "--lab-dir", lab["dir"], "--host", "h1", "--name",
                         name, "--keyring", keyring, "--state-dir", scratch / "nocap",
                         "--probe-budget", "0")
    finally:
        launch.ceph(lab, "auth", "rm", name, json_out=False)
    assert bad.returncode == 2 and '"rc": -13' in bad.stderr, bad.stderr


def test_gate_holds_per_osd_and_group_noup_until_released(healthy_lab):
    lab = healthy_lab
    a, b = lab["hosts"]["h2"]["osds"][:2]
    other = lab["hosts"]["h1"]["osds"][0]
    assert [gate(lab, o).returncode for o in (a, b, other)] == [0, 0, 0]
    launch.ceph(lab, "osd", "add-noup", str(a), json_out=False)
    res = gate(lab, a)
    assert res.returncode == 1 and "per-OSD noup flag" in res.stdout
    assert [gate(lab, o).returncode for o in (b, other)] == [0, 0]
    launch.ceph(lab, "osd", "rm-noup", str(a), json_out=False)
    assert gate(lab, a).returncode == 0
    launch.ceph(lab, "osd", "set-group", "noup", "h2", json_out=False)
    held = [gate(lab, o) for o in (a, b)]
    assert [r.returncode for r in held] == [1, 1]
    assert all("noup on CRUSH bucket h2" in r.stdout for r in held)
    assert gate(lab, other).returncode == 0
    launch.ceph(lab, "osd", "unset-group", "noup", "h2", json_out=False)
    assert [gate(lab, o).returncode for o in (a, b, other)] == [0, 0, 0]


def test_gate_falls_back_to_the_helpers_cache_when_mon_unreachable(healthy_lab, scratch):
    lab, osd = healthy_lab, healthy_lab["hosts"]["h2"]["osds"][0]
    dead = dead_conf(lab, scratch)
    launch.ceph(lab, "osd", "set-group", "noup", "h2", json_out=False)
    wait_for("h2's helper to cache the hold",
             lambda: "noup" in cached_view(lab, "h2")["osd_dump"]["crush_node_flags"].get("h2", []))
    res = gate(lab, osd, "--conf", dead, "--timeout", 2)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "noup on CRUSH bucket h2" in res.stdout and "mon unreachable" in res.stdout
    assert '"source": "cache"' in res.stderr
    launch.ceph(lab, "osd", "unset-group", "noup", "h2", json_out=False)
    wait_for("h2's helper to cache the release",
             lambda: not cached_view(lab, "h2")["osd_dump"]["crush_node_flags"].get("h2"))
    res = gate(lab, osd, "--conf", dead, "--timeout", 2)
    assert res.returncode == 0 and '"source": "cache"' in res.stderr, res.stdout + res.stderr
    empty = str(scratch / "empty-state")
    res = gate(lab, osd, "--conf", dead, "--timeout", 2, "--state-dir", empty)
    assert res.returncode == 0 and '"source": "no-cache"' in res.stderr
    res = gate(lab, osd, "--conf", dead, "--timeout", 2, "--state-dir", empty, "--no-cache", "hold")
    assert res.returncode == 1 and '"source": "no-cache"' in res.stderr


def refused_ok_to_stop(conf, name, keyring, state_dir, osds, timeout):
    """Reasons the helper's own ok-to-stop re-check gives for refusing some of `osds`, polled
    until one is refused or `timeout` s pass (run by the lab release's client: inrelease.call)."""
    import time
    from ceph_recovery_tools.helper import daemon
    opts = daemon.Options(host="h1", conf=conf, name=name, keyring=keyring,
                          state_dir=state_dir, probe_budget=0)
    h = daemon.Helper(opts, launcher=None)
    deadline = time.monotonic() + timeout
    try:
        while True:
            why = [w for ok, w in (h.ok_to_stop(o) for o in osds) if not ok]
            if why or time.monotonic() > deadline:
                return why
            time.sleep(2)
    finally:
        h.close()


def test_start_osd_of_a_held_osd_leaves_it_down(healthy_lab, scratch):
    lab = healthy_lab
    osd = lab["hosts"]["h2"]["osds"][-1]
    assert launch.stop_osd(lab, osd)
    wait_for("osd.%d down in the map" % osd, lambda: not osd_up(lab, osd), timeout=60)
    # with osd down, the helper's own ok-to-stop re-check must refuse some survivor of h1
    # (once the mgr's PG stats show the PGs undersized: they lag the OSD map by a few seconds)
    refused = inrelease.call(lab, refused_ok_to_stop, lab["conf"], bootstrap.HELPER_NAME,
                             lab["helper_keyring"], str(scratch / "h1"),
                             lab["hosts"]["h1"]["osds"], 60)
    assert refused, "no ok-to-stop refused on h1 within 60 s"
    assert refused[0].startswith("ok-to-stop refused osd.")
    launch.ceph(lab, "osd", "set-group", "noup", "h2", json_out=False)
    res = helper_cli(lab, "start-osd", osd, "--lab-dir", lab["dir"])
    assert res.returncode == 1 and res.stdout.strip() == "osd.%d: held" % osd, res.stderr
    assert '"event": "start_refused"' in res.stderr
    time.sleep(5)
    assert launch.osd_pid(lab, osd) is None and not osd_up(lab, osd)
    launch.ceph(lab, "osd", "unset-group", "noup", "h2", json_out=False)
    res = helper_cli(lab, "start-osd", osd, "--lab-dir", lab["dir"])
    assert res.returncode == 0 and res.stdout.strip() == "osd.%d: started" % osd, res.stderr
    wait_for("osd.%d up after release" % osd, lambda: osd_up(lab, osd), timeout=90)


def test_daemon_cycles_reloads_on_sighup_and_stops_on_sigterm(lab, scratch):
    """A second helper for h1 (own state dir, idle cluster: no instructions to act on)."""
    state_dir = scratch / "h1"
    proc = inrelease.popen_tool(lab, "ceph-recovery-helper", "run", "--lab-dir", lab["dir"],
                                "--host", "h1", "--state-dir", state_dir, "--probe-budget", "0",
                                "--interval", "1", stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    try:
        received = lambda: (json.loads((state_dir / "instructions.json").read_text())  # noqa
                            ["received_at"] if (state_dir / "instructions.json").exists() else 0)
        first = wait_for("a first reply", received, timeout=30)
        wait_for("a later cycle", lambda: received() > first, timeout=30)
        proc.send_signal(1)                                   # SIGHUP: reconnect, re-read
        after_hup = received()
        wait_for("a cycle after SIGHUP", lambda: received() > after_hup, timeout=30)
        proc.terminate()                                      # SIGTERM: finish, exit 0
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    events = [json.loads(line)["event"] for line in proc.stderr.read().splitlines()
              if line.startswith("{")]
    assert events[0] == "helper_started" and events[-1] == "helper_stopped"
    assert "helper_reload" in events and "cycle_failed" not in events
    view = json.loads((state_dir / "view.json").read_text())
    assert view["host"] == "h1" and view["osds"] == sorted(lab["hosts"]["h1"]["osds"])


def execute_restart(lab, name, state_dir, osd):
    """A new h2 helper (real process launcher, gate and ok-to-stop) on `state_dir` executes a
    restart instruction of `osd`; the instructions it reports failed (run by the lab release's
    client: inrelease.call)."""
    from ceph_recovery import protocol
    from ceph_recovery_tools.helper import daemon, gatecheck, launchers
    from ceph_recovery_tools.helper.state import StateDir

    def gate_fn(o):
        r = gatecheck.check(o, lab["conf"], name, lab["helper_keyring"], StateDir(state_dir))
        return r.allowed, r.reason, r.source
    opts = daemon.Options(host="h2", conf=lab["conf"], name=name,
                          keyring=lab["helper_keyring"], state_dir=state_dir,
                          probe_budget=0, lab_dir=lab["dir"])
    helper = daemon.Helper(opts, launchers.ProcessLauncher(lab["dir"], gate_fn))
    reply = protocol.parse_instructions({
        "version": 1, "host": "h2", "epoch": 1, "grants": [osd], "held": [],
        "instructions": [{"id": "itest:1", "op": "restart", "osd": osd, "reason": "test"}]})
    try:
        helper.execute(reply, set(lab["hosts"]["h2"]["osds"]))
    finally:
        helper.close()
    return helper.failed


def test_restart_instruction_runs_once_across_a_helper_restart(healthy_lab, scratch):
    """A restart instruction through the real process launcher, gate and ok-to-stop: the OSD
    gets a new process; a new helper on the same state dir does not restart it again."""
    lab, osd = healthy_lab, healthy_lab["hosts"]["h2"]["osds"][0]
    state_dir = str(scratch / "h2")
    before = launch.osd_pid(lab, osd)
    assert before
    assert inrelease.call(lab, execute_restart, lab, bootstrap.HELPER_NAME, state_dir, osd) == []
    after = wait_for("osd.%d running as a new process" % osd,
                     lambda: _new_pid(launch.osd_pid(lab, osd), before), timeout=60)
    # the helper restarted: same state dir, nothing done twice
    assert inrelease.call(lab, execute_restart, lab, bootstrap.HELPER_NAME, state_dir, osd) == []
    assert launch.osd_pid(lab, osd) == after
    assert StateDir(state_dir).pending_done() == ["itest:1"]
    wait_for("osd.%d up again" % osd, lambda: osd_up(lab, osd), timeout=90)
