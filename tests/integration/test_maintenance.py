"""Maintenance windows on a real lab (3 hosts x 2 OSDs; r1 = h1 + h3, r2 = h2; pool size 3,
min_size 2, failure domain host):

- `enter r1` is refused (EBUSY, the PGs named) and changes nothing;
- `enter h2` sets h2's noout and noup, stops its OSDs; a start through the boot gate (as
  systemd's ExecCondition makes it) is refused;
- `exit h2` brings them back one at a time, noout restored at the end, every object verifies,
  `ceph recovery wait` answers 0;
- every command answers one plain line without -f json;
- a second window survives an mgr restart (nothing started); an aborted exit makes `wait`
  answer ECANCELED with the reason once the bucket is back in maintenance (held, noout, any
  OSD the exit started stopped again); a last exit, during which h2's helper is restarted,
  closes it with one start per OSD.
"""
from __future__ import annotations

import errno
import os
import re
import shlex
import subprocess
import time

import pytest

from ceph_recovery_tools.lab import inrelease, launch, procs, release
from ceph_recovery_tools.lab.launch import CephError
from ceph_recovery_tools.lab.restore import exit_windows

pytestmark = pytest.mark.integration
HOST, RACK = "h2", "r1"


def osd_map(state):
    return launch.ceph(state, "osd", "dump")


def windows(state):
    return launch.ceph(state, "recovery", "maintenance", "ls")["windows"]


def group_flags(state, bucket):
    return set((osd_map(state).get("crush_node_flags") or {}).get(bucket, []))


def wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(1)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))


def recovery_wait(state, limit=420):
    return launch.recovery_wait(state, limit)


def answering(state):
    try:
        return windows(state)
    except CephError:
        return None


def fingerprint(state):
    m = osd_map(state)
    return (m["epoch"], m["flags"], [(o["osd"], o["state"]) for o in m["osds"]],
            m.get("crush_node_flags"), windows(state))


def h2_osds(state):
    return sorted(state["hosts"][HOST]["osds"])


@pytest.fixture
def maint_lab(healthy_lab):
    """The lab with loopback-only probes ignored; every window closed again afterwards
    (restore.exit_windows: a window left open would hold h2 again)."""
    state = healthy_lab
    if not state.get("netns"):
        launch.ceph(state, "config", "set", "mgr", "mgr/recovery/network_holds_starts",
                    "false", json_out=False)
    yield state
    exit_windows(state)
    launch.ceph(state, "config", "rm", "mgr", "mgr/recovery/network_holds_starts",
                json_out=False)


def enter_h2(state, reason):
    out = launch.ceph(state, "recovery", "maintenance", "enter", HOST, "--reason", reason,
                      "--max-duration", "1h", json_out=False).strip()
    assert out.startswith("maintenance enter h2: requested") and "\n" not in out, out
    assert recovery_wait(state) == (0, "2 OSD(s) of h2 down and held")
    (w,) = windows(state)
    assert (w["bucket"], w["phase"], w["reason"]) == (HOST, "open", reason)
    assert {"noout", "noup"} <= group_flags(state, HOST)
    down = {o["osd"]: o["up"] for o in osd_map(state)["osds"]}
    assert [down[i] for i in h2_osds(state)] == [0, 0]
    assert all(launch.osd_pid(state, i) is None for i in h2_osds(state))


def revive_helpers(state):
    """Start again any helper that died, as systemd's Restart=always does in production (the
    lab does not supervise them). The helper's librados client has died on an mgr restart
    (glibc "double free or corruption"): that is the helper's bug, not the window's."""
    revived = []
    for host in sorted(state["hosts"]):
        pid = state.get("pids", {}).get("helper.%s" % host)
        if not procs.alive(pid, ("ceph-recovery-helper", state["dir"])):
            launch.start_helper(state, host)
            revived.append(host)
    if revived:
        print("helpers revived after the mgr restart: %s" % ", ".join(revived))
    return revived


def starts_done(state):
    """osd -> start instructions the helpers carried out (all runs of this module)."""
    got = launch.ceph(state, "recovery", "status")["starts_carried_out"]
    return {i: got.get(str(i), 0) for i in h2_osds(state)}


def exit_h2(state, t0, restart_helper=False):
    """Exit and check it ends well: every OSD up, h2's flags gone, one grant and one start
    each (also when h2's helper is restarted once the first start was granted)."""
    before = starts_done(state)
    out = launch.ceph(state, "recovery", "maintenance", "exit", HOST, "--budget", "80%",
                      json_out=False).strip()
    assert out.startswith("maintenance exit h2: accepted"), out
    if restart_helper:
        wait_for(lambda: any(j["action"].get("kind") == "grant_start" and j["time"] >= t0
                             for j in launch.ceph(state, "recovery", "status")["journal"]),
                 120, "the exit's first grant")
        assert launch.stop_helper(state, HOST)
        launch.start_helper(state, HOST)
    rc, text = recovery_wait(state)
    assert rc == 0 and text == "every OSD of h2 up, window closed", (rc, text)
    assert windows(state) == [] and not group_flags(state, HOST)
    assert all(o["up"] for o in osd_map(state)["osds"])
    journal = launch.ceph(state, "recovery", "status")["journal"]
    mine = [j for j in journal if j["time"] >= t0 and j["action"].get("osd") in h2_osds(state)]
    grants = [j["action"]["osd"] for j in mine if j["action"]["kind"] == "grant_start"]
    assert sorted(grants) == h2_osds(state), grants          # each granted once
    kinds = [(j["action"]["kind"], j["action"]["osd"]) for j in mine]
    first, second = grants
    # one at a time: the second start is granted only after the first was let boot
    assert kinds.index(("allow_boot", first)) < kinds.index(("grant_start", second)), kinds
    after = starts_done(state)
    assert {i: after[i] - before[i] for i in after} == {i: 1 for i in after}, (before, after)


def test_maintenance_window_enter_exit_abort_and_mgr_restart(maint_lab):
    state = maint_lab
    t_all = time.monotonic()
    objs = inrelease.LabObjects(state)      # the lab release's librados
    try:
        objs.write_aio("maint", 300)

        # a rack of two of the three hosts: the handler answers at once (requested), the
        # tick's ok-to-stop refuses it, `wait` says EBUSY with the PGs, nothing changes
        wait_for(lambda: fingerprint(state) == fingerprint(state), 30, "a quiet map")
        before = fingerprint(state)
        out = launch.ceph(state, "recovery", "maintenance", "enter", RACK, json_out=False)
        assert out.startswith("maintenance enter %s: requested" % RACK), out
        rc, text = recovery_wait(state, 60)
        assert rc == errno.EBUSY and "would become inactive" in text, (rc, text)
        assert re.search(r"\b\d+\.[0-9a-f]+\b", text), text                  # a PG id
        refused = launch.ceph(state, "recovery", "maintenance", "ls")["refused"]
        assert [r["errno"] for r in refused] == [errno.EBUSY], refused
        assert windows(state) == []
        time.sleep(5)                       # two ticks: nothing may follow the refusal
        assert fingerprint(state) == before

        # every command answers one plain line without -f json
        for args in (("hold", "h3"), ("release", "h3"), ("start-controlled", "--dry-run")):
            out = launch.ceph(state, "recovery", *args, json_out=False).strip()
            assert out and "\n" not in out and not out.startswith("{"), (args, out)
        # no window, and the refused enter named with its reason, on one line
        ls = launch.ceph(state, "recovery", "maintenance", "ls", json_out=False).strip()
        assert ls.startswith("%s: refused" % RACK) and "would become inactive" in ls \
            and "\n" not in ls, ls

        enter_h2(state, "kernel update")
        # a start as systemd would make it goes through the gate: refused, nothing runs
        osd = h2_osds(state)[0]
        p = inrelease.run_tool(state, "ceph-recovery-helper", "start-osd", osd, "--lab-dir",
                               state["dir"])
        assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
        time.sleep(3)
        assert launch.osd_pid(state, osd) is None
        t_exit = time.time()
        exit_h2(state, t_exit - 1)
        print("maintenance exit of h2 took %.1f s" % (time.time() - t_exit))
        ok, bad = objs.verify()
        assert (ok, bad) == (300, [])

        # a second window survives an mgr restart; nothing of h2 is started meanwhile
        enter_h2(state, "second")
        launch.restart_mgr(state)
        wait_for(lambda: answering(state), 120, "the module answering again")
        revive_helpers(state)
        time.sleep(6)
        (w,) = windows(state)
        assert w["phase"] == "open" and {"noout", "noup"} <= group_flags(state, HOST)
        assert all(launch.osd_pid(state, i) is None for i in h2_osds(state))
        # an aborted exit: wait answers ECANCELED with the reason, the window is open again
        launch.ceph(state, "recovery", "maintenance", "exit", HOST, json_out=False)
        launch.ceph(state, "recovery", "abort", json_out=False)
        rc, text = recovery_wait(state)
        assert rc == errno.ECANCELED and "aborted" in text and "back in maintenance" in text
        (w,) = windows(state)
        assert w["phase"] == "open" and "aborted" in w["note"]
        assert {"noout", "noup"} <= group_flags(state, HOST)
        assert all(launch.osd_pid(state, i) is None for i in h2_osds(state))
        t_exit = time.time()
        exit_h2(state, t_exit - 1, restart_helper=True)
        ok, bad = objs.verify()
        assert (ok, bad) == (300, [])
    finally:
        print("test_maintenance total %.1f s" % (time.monotonic() - t_all))


EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                       "examples", "rolling-maintenance.sh")


def test_rolling_maintenance_example_runs_on_a_rack(maint_lab):
    """docs/examples/rolling-maintenance.sh on r1 (h1, then h3): each host enters, is
    "patched" (a no-op), and comes back under the budget; the rack ends all up, no window."""
    state = maint_lab
    env = dict(os.environ, CEPH=" ".join(shlex.quote(a) for a in release.tool(state, "ceph")
                                         + ["-c", state["conf"]]))
    t0 = time.monotonic()
    p = subprocess.run(["sh", EXAMPLE, RACK, "80%"], capture_output=True, text=True,
                       timeout=900, env=env)
    took = time.monotonic() - t0
    assert p.returncode == 0, (p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    lines = p.stdout.strip().splitlines()
    assert [ln for ln in lines if ln.startswith("== ") and ln.endswith(": enter")] == [
        "== h1: enter", "== h3: enter"]
    assert lines[-1].startswith("rack r1: 2 host(s) in ")
    assert windows(state) == [] and all(o["up"] for o in osd_map(state)["osds"])
    assert not group_flags(state, "h1") and not group_flags(state, "h3")
    print("rolling-maintenance.sh r1: %.1f s" % took)
