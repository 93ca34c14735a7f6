"""The fault matrix (reliability.md) on ONE real lab (3 hosts x 2 OSDs, BlueStore, 2 mgrs): one
test per fault, each in the middle of a controlled run that brings failed OSDs back. What
every row checks once the fault clears is in fault_row.py (Row.finish). The measured numbers
go to $CEPH_RECOVERY_FAULT_MATRIX_OUT (default /tmp/fault-matrix.json) for
docs/reliability.md; test_fault_netns.py adds the network row."""
from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import time

import pytest

from ceph_recovery_tools.helper import caps
from ceph_recovery_tools.common import cgroup
from ceph_recovery_tools.lab import inrelease, launch
from ceph_recovery_tools.lab.launch import CephError
import fault_row as fr  # see conftest.py

pytestmark = pytest.mark.integration
OUT = os.environ.get("CEPH_RECOVERY_FAULT_MATRIX_OUT", "/tmp/fault-matrix.json")
BEACON_GRACE = 10             # mon_mgr_beacon_grace: a SIGKILLed mgr is replaced after this
RESULTS, RUN_FLAGS, Row = fr.RESULTS, fr.RUN_FLAGS, fr.Row
status, osd_dump, wait_for, active_mgr = fr.status, fr.osd_dump, fr.wait_for, fr.active_mgr
journal, kinds = fr.journal, fr.kinds
_corrupt_state, _report = fr.corrupt_state, fr.report


# ------------------------------------------------------------------ lab and shared fixtures
@pytest.fixture(scope="module")
def flab(lab_factory):
    state = lab_factory(mgrs=2)
    t0 = time.monotonic()
    launch.ceph(state, "config", "set", "mgr", "mgr/recovery/network_holds_starts", "false",
                json_out=False)   # no netns: probes over the shared loopback say nothing
    launch.ceph(state, "config", "set", "mon", "mon_mgr_beacon_grace", str(BEACON_GRACE),
                json_out=False)
    with fr.serving(state, lab_factory, OUT, "lab", t0):
        yield state


@pytest.fixture
def row(flab, request):
    with fr.rows(flab, request.node.name) as make:
        yield make


# ------------------------------------------------------------------ the rows
def test_active_mgr_sigkilled_mid_run_standby_takes_over(flab, row):
    r = row([2])
    r.outage()
    r.start_run()
    wait_for(lambda: kinds(journal(flab, r.t0), "grant_start", 2), 60, "the grant of osd.2")
    r.remember()
    old = active_mgr(flab)
    pid = launch.mgr_pid(flab, old)
    t_fault = time.time()
    os.kill(pid, signal.SIGKILL)
    r.write("mgr-dead", 100)                   # client I/O does not need the mgr
    new = wait_for(lambda: (lambda n: n if n and n != old else None)(active_mgr(flab)),
                   BEACON_GRACE * 6, "a standby mgr active")
    wait_for(lambda: status(flab, timeout=30), 60, "the module answering on the new mgr")
    r.no_mgr.append([t_fault, time.time()])
    r.wait_done()
    res = r.finish(t_fault)
    entries = r.remember()
    resumed = [j["time"] for j in kinds(entries, "state_resumed")]
    assert resumed, "the standby did not load the run state"
    assert [j for j in entries if j["time"] > resumed[-1]
            and j["action"].get("kind") in ("grant_start", "allow_boot", "helper_done", "done")]
    assert len(kinds(entries, "grant_start", 2)) == 1
    res.update({"fault": "active mgr.%s SIGKILLed after the grant; mgr.%s took over" % (old, new),
                "takeover_s": round(r.no_mgr[-1][1] - t_fault, 1)})
    launch.start_mgr(flab, old)                # back as a standby for the next rows


def test_helper_sigkilled_mid_instruction_then_restarted(flab, row):
    r = row([4])
    host = flab["osds"]["4"]["host"]
    r.outage()
    r.start_run()
    wait_for(lambda: kinds(journal(flab, r.t0), "grant_start", 4), 60, "the grant of osd.4",
             every=0.3)
    t_fault = time.time()
    pid = flab["pids"]["helper.%s" % host]
    os.kill(pid, signal.SIGKILL)
    r.write("helper-dead", 100)
    time.sleep(8)
    launch.start_helper(flab, host)
    r.wait_done()
    res = r.finish(t_fault, single_start=False)
    entries = journal(flab, r.t0)
    starts = [j for j in kinds(entries, "helper_done", 4)]
    assert len(starts) == 1, [j["action"] for j in starts]   # carried out once, not twice
    res["fault"] = "helper of %s SIGKILLed right after the start instruction, restarted 8 s later" \
        % host


def test_osd_that_dies_at_start_is_given_up_then_aborted_and_restarted(flab, row):
    r = row([3])
    data = flab["osds"]["3"]["data"]
    r.outage()
    os.rename(os.path.join(data, "block"), os.path.join(data, "block.away"))
    try:
        t_fault = time.time()
        r.start_run()
        failed = wait_for(lambda: [h for h in status(flab)["health"]
                                   if "RECOVERY_START_FAILED" in json.dumps(h)], 150,
                          "RECOVERY_START_FAILED for osd.3", every=2.0)
        r.write("dying", 100)
        launch.ceph(flab, "recovery", "abort", json_out=False)
        s = wait_for(lambda: (lambda x: x if x["phase"] == "aborted" else None)(status(flab)),
                     60, "the run aborted")
        m = osd_dump(flab)
        assert not set(RUN_FLAGS) & set(m["flags"].split(",")), m["flags"]
        held = [x["osd"] for x in m["osds"] if "noup" in x["state"]]
        assert held in ([], [3]), held
        if held:                               # the noup the run leaves is named
            wait_for(lambda: (lambda c: "RECOVERY_ABORTED" in c and "osd.3" in c)(json.dumps(
                launch.health(flab).get("checks", {}))), 30, "RECOVERY_ABORTED naming osd.3")
        grants = len(kinds(journal(flab, r.t0), "grant_start", 3))
        assert 1 <= grants <= 3, grants           # bounded: MAX_START_FAILURES
    finally:
        os.rename(os.path.join(data, "block.away"), os.path.join(data, "block"))
    r.start_run()                              # a second run after the abort brings it back
    r.wait_done()
    res = r.finish(t_fault, single_start=False)
    res.update({"fault": "osd.3 dies at start (BlueStore block file missing); abort; fixed; "
                "new run", "grants_while_dying": grants,
                "health_while_dying": str(failed[0])[:200], "held_after_abort": held})


def test_stored_state_corrupt_then_failover_next_run_restores_leftovers(flab, row):
    r = row([1])
    r.outage()
    r.start_run()
    wait_for(lambda: kinds(journal(flab, r.t0), "helper_done", 1), 90,
             "the start of osd.1 carried out")
    r.remember()
    old = active_mgr(flab)
    t_fault = time.time()
    os.kill(launch.mgr_pid(flab, old), signal.SIGKILL)
    key = _corrupt_state(flab)                 # nobody writes it until the standby is active
    new = wait_for(lambda: (lambda n: n if n and n != old else None)(active_mgr(flab)),
                   BEACON_GRACE * 6, "a standby mgr active")
    s = wait_for(lambda: status(flab, timeout=30), 60, "the module answering")
    r.no_mgr.append([t_fault, time.time()])
    checks = wait_for(lambda: (lambda c: c if "RECOVERY_STATE_UNREADABLE" in c else None)(
        launch.health(flab).get("checks", {})), 60, "RECOVERY_STATE_UNREADABLE")
    m = osd_dump(flab)
    assert "noout" in m["flags"]              # the lost run's flag is still there, and named
    r.write("state-lost", 100)
    r.start_run()
    entries = r.remember()
    took = kinds(entries, "leftovers_taken_over")
    assert took and took[-1]["action"]["flags"] == list(RUN_FLAGS), took
    r.wait_done()
    res = r.finish(t_fault, single_start=False)
    res.update({"fault": "mgr.%s SIGKILLed mid-run, %s overwritten with garbage; mgr.%s "
                "loads it; a new run" % (old, key, new),
                "health_after_load": sorted(checks), "taken_over": took[-1]["action"]})
    launch.start_mgr(flab, old)


def test_hostile_and_malformed_reports_mid_run(flab, row, tmp_path):
    r = row([5])
    host = flab["osds"]["5"]["host"]
    other = sorted(h for h in flab["hosts"] if h != host)[0]
    r.outage()
    keyring = os.path.join(inrelease.scratch(flab, str(tmp_path)), "k")   # seen by the client
    name = caps.helper_name(other)
    launch.ceph(flab, "auth", "get-or-create", name, *caps.caps_args(caps.helper_caps(other)),
                "-o", keyring, json_out=False)
    t_fault = time.time()
    r.start_run()
    shared = dict(name="client.recovery-helper", keyring=flab["helper_keyring"], timeout=30)
    refused = []
    try:
        # a key pinned to another host cannot speak for the run's host: Ceph refuses it
        with pytest.raises(CephError) as e:
            launch.ceph(flab, "recovery", "helper-report", _report(host, osds=[
                {"id": 5, "process": "running", "rss": 1 << 40}]), host, name=name,
                keyring=keyring, timeout=30)
        assert e.value.rc == errno.EACCES
        refused.append("pinned key of %s for %s: EACCES" % (other, host))
        bad = [_report(host, osds=[{"id": 5, "process": "running", "rss": "x"}]),
               _report(host, memory={"total": "Infinity"}).replace('"Infinity"', "Infinity"),
               _report(host, osds=[{"id": 5, "process": "running", "rss": -1}]),
               _report(host, osds=[{"id": i, "process": "stopped"} for i in range(2000)]),
               _report("../../etc"), _report(host, done=["x" * 500]),
               _report(host, osds=[{"id": 5, "process": "running", "rss": 2 ** 70}]),
               "{not json", json.dumps({"version": 1}),
               _report("no-such-host")]
        for text in bad:
            with pytest.raises(CephError) as e:
                launch.ceph(flab, "recovery", "helper-report", text, **shared)
            assert e.value.rc in (errno.EINVAL, errno.ENOENT, errno.EACCES), (
                e.value.rc, e.value.stderr[-300:])
            refused.append("%s: %s" % (text[:40], errno.errorcode[e.value.rc]))
    finally:
        launch.ceph(flab, "auth", "del", name, json_out=False)
    r.write("hostile", 100)
    r.wait_done()
    res = r.finish(t_fault)
    assert len(kinds(journal(flab, r.t0), "grant_start", 5)) == 1
    res.update({"fault": "a pinned key of %s reports for %s; %d malformed reports" % (
        other, host, len(bad)), "refused": refused})


def test_helper_with_ceph_conf_in_its_environment(flab, row):
    """Defect 8: a helper started by hand with CEPH_CONF exported (as the lab docs say) runs,
    reports and carries out the run's start."""
    r = row([0])
    host = flab["osds"]["0"]["host"]
    assert launch.stop_helper(flab, host)
    log = open(os.path.join(flab["dir"], "log", "helper.%s.ceph_conf.log" % host), "w")
    p = inrelease.popen_tool(flab, "ceph-recovery-helper", "run", "--lab-dir", flab["dir"],
                             "--host", host, "--launcher", "process", conf=flab["conf"],
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        once = inrelease.run_tool(flab, "ceph-recovery-helper", "run", "--once", "--lab-dir",
                                  flab["dir"], "--host", host, "--launcher", "process",
                                  "--state-dir", os.path.join(flab["dir"], "helper-once"),
                                  conf=flab["conf"])
        assert once.returncode == 0, (once.returncode, once.stderr[-500:])
        t_fault = time.time()
        r.outage()
        r.start_run()
        r.wait_done()
        assert p.poll() is None, "the helper with CEPH_CONF exited: %s" % p.returncode
        res = r.finish(t_fault)
        res["fault"] = "helper of %s started by hand with CEPH_CONF exported" % host
        res["helper_alive_s"] = round(time.time() - r.t0, 1)
    finally:
        p.terminate()
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()
        log.close()
        launch.start_helper(flab, host)
    assert p.returncode in (0, -signal.SIGTERM), p.returncode   # never SIGABRT


def test_mon_stopped_for_60s_mid_run(flab, row):
    """The only mon is frozen (SIGSTOP) for 60 s after the grant: every mon command of the
    module times out meanwhile; once it is back, the run goes on and ends."""
    r = row([2])
    r.outage()
    r.start_run()
    wait_for(lambda: kinds(journal(flab, r.t0), "grant_start", 2), 60, "the grant of osd.2")
    r.remember()
    mon = flab["pids"]["mon.a"]
    t_fault = time.time()
    os.kill(mon, signal.SIGSTOP)
    try:
        time.sleep(60)
    finally:
        os.kill(mon, signal.SIGCONT)
    r.no_mgr.append([t_fault, time.time()])   # no CLI reaches the mgr without the mon
    s = wait_for(lambda: status(flab, timeout=30), 90, "the module answering")
    r.write("mon-back", 100)
    r.wait_done()
    res = r.finish(t_fault)
    res.update({"fault": "mon.a SIGSTOPped for 60 s after the grant of osd.2",
                "module_error_after": s.get("error")})


OOM_LIMIT = 8 << 20           # below what a BlueStore OSD holds once loaded (24 MiB is not)
SMALL_LIMIT = 48 << 20        # after the kill: a host with room, but not for an OSD's start


def test_osd_oom_killed_during_its_start(flab, row):
    """Both OSDs of h3 fail; the run (one start at a time) grants one while h3's helper is
    stopped; h3's memory cgroup is then limited to 8 MiB and the helper resumed, so the OSD
    it starts is OOM-killed while loading (the cgroup's oom_kill counter says so). The host
    is then left 48 MiB: room, but not for an OSD to boot. The module must count a failed
    start (its stored progress), grant it again at most once per counted failure, keep it
    from booting (noup) and name it in a health check; a second run is
    refused (EBUSY) and the run paused; the limit is lifted, the run resumed, and it ends
    with both OSDs up."""
    host = "h3"
    osds = sorted(int(o) for o in flab["hosts"][host]["osds"])
    cg = flab["hosts"][host]["cgroup"]
    r = row(osds)
    helper = flab["pids"]["helper.%s" % host]
    r.outage()
    oom0 = launch.cgroup_memory(flab, host)["oom_kill"]
    os.kill(helper, signal.SIGSTOP)           # the grant waits until the limit is in place
    try:
        launch.ceph(flab, "recovery", "start-controlled", "--concurrency", "1", json_out=False)
        victim = wait_for(lambda: kinds(journal(flab, r.t0), "grant_start"), 60,
                          "a grant on h3")[0]["action"]["osd"]
        t_fault = time.time()
        fr.limit_empty_group(cg, OOM_LIMIT)
        os.kill(helper, signal.SIGCONT)
        oom = wait_for(lambda: (lambda n: n if n > oom0 else None)(
            launch.cgroup_memory(flab, host)["oom_kill"]), 90, "an OOM kill in h3's cgroup")
        squeezed = sorted(status(flab)["health"])
        wait_for(lambda: not [o for o in osds if launch.osd_pid(flab, o)], 30, "no OSD on h3")
        fr.limit_empty_group(cg, SMALL_LIMIT)
        failures = wait_for(lambda: fr.stored_progress(flab).get("failures", {}).get(
            str(victim)), 90, "a failed start of osd.%d counted" % victim, every=2.0)
        r.write("oom", 100)
        held = wait_for(lambda: fr.named(flab, "RECOVERY_BUDGET_TOO_SMALL", "osd.%d" % victim)
                        or fr.named(flab, "RECOVERY_START_FAILED", "osd.%d" % victim), 90,
                        "osd.%d held and named by a health check" % victim, every=2.0)
        extra = fr.pause_and_second_run(flab)
        m = fr.osd_dump(flab)
        assert not [x["osd"] for x in m["osds"] if x["osd"] in osds and x["up"]]
        grants = len(kinds(r.remember(), "grant_start", victim))
        failures = fr.stored_progress(flab)["failures"][str(victim)]
        assert 1 <= failures <= fr.MAX_START_FAILURES, failures
        assert grants <= fr.MAX_START_FAILURES + 1, grants    # first grant + one per failure
    finally:
        os.kill(helper, signal.SIGCONT)
        cgroup.set_limit(cg["path"], cg["version"], None)
    fr.resume(flab)
    r.wait_done()
    res = r.finish(t_fault, single_start=False)
    # the killed start, then the good one: counted from the starts the helper carried out, as
    # a start OOM-killed under 8 MiB can live shorter than the poller's period (seen on
    # Tentacle); finish() already bounds the processes seen by those starts
    starts = [j for j in kinds(r.remember(), "helper_done", victim)
              if j["action"].get("op") in ("start", "restart")]
    assert len(starts) >= 2, [j["action"] for j in starts]
    res.update(extra)
    res.update({"fault": "h3's memory cgroup limited to %d MiB after the grant of osd.%d: "
                "OOM-killed while loading; then %d MiB; then unlimited" % (
                    OOM_LIMIT >> 20, victim, SMALL_LIMIT >> 20),
                "oom_kills": oom - oom0, "grants_while_limited": grants,
                "failed_starts_counted": failures, "health_while_8MiB": squeezed,
                "held_named": held[0][:240]})


ENTRY_LIMIT = 100             # bytes: 32 entries of it hold less than any run state


def test_state_over_the_mons_entry_limit_is_loud_then_saved_and_resumed(flab, row):
    """mon_config_key_max_entry_size is lowered to 100 bytes mid-run: the run state cannot be
    stored (it needs more than MAX_CHUNKS entries). The module must say so
    (RECOVERY_STATE_NOT_SAVED) and go on; once the limit is back the state is saved again and
    the check clears; the active mgr is then SIGKILLed and the standby resumes that state (no
    second grant) and ends the run."""
    r = row([0])
    r.outage()
    r.start_run()
    wait_for(lambda: kinds(journal(flab, r.t0), "grant_start", 0), 60, "the grant of osd.0")
    t_fault = time.time()
    launch.ceph(flab, "config", "set", "mon", "mon_config_key_max_entry_size",
                str(ENTRY_LIMIT), json_out=False)
    try:
        checks = wait_for(lambda: (lambda c: c if "RECOVERY_STATE_NOT_SAVED" in c else None)(
            launch.health(flab).get("checks", {})), 60, "RECOVERY_STATE_NOT_SAVED")
        r.write("not-saved", 100)
    finally:
        launch.ceph(flab, "config", "rm", "mon", "mon_config_key_max_entry_size", json_out=False)
    wait_for(lambda: "RECOVERY_STATE_NOT_SAVED" not in launch.health(flab).get("checks", {}), 60,
             "RECOVERY_STATE_NOT_SAVED cleared")
    old, new = r.fail_over(BEACON_GRACE * 6)
    r.wait_done()
    res = r.finish(t_fault)
    entries = r.remember()
    assert kinds(entries, "state_resumed"), "the standby did not load the run state"
    assert not kinds(entries, "state_unreadable")
    assert len(kinds(entries, "grant_start", 0)) == 1
    detail = checks["RECOVERY_STATE_NOT_SAVED"]
    res.update({"fault": "mon_config_key_max_entry_size %d mid-run, then back; mgr.%s "
                "SIGKILLed, mgr.%s resumed" % (ENTRY_LIMIT, old, new),
                "health_while_limited": json.dumps(detail)[:300]})
    launch.start_mgr(flab, old)
