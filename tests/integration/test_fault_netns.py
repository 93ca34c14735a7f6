"""The fault matrix's network row (reliability.md) on a `--netns` lab: 3 hosts x 1 BlueStore OSD,
each host in its own network namespace on a bridge, so one host can be cut off the network.
The row checks what every row of tests/integration/test_fault_matrix.py checks (fault_row.py:
objects, starts, flags, HEALTH_OK, command latency) and adds its results to the same
$CEPH_RECOVERY_FAULT_MATRIX_OUT."""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from ceph_recovery_tools.lab import launch, procs
from ceph_recovery_tools.lab.launch import CephError
from ceph_recovery_tools.lab.restore import restore
from ceph_recovery_tools.netfault import faults
import fault_row as fr  # see conftest.py

pytestmark = [pytest.mark.integration, pytest.mark.netns]
OUT = os.environ.get("CEPH_RECOVERY_FAULT_MATRIX_OUT", "/tmp/fault-matrix.json")
status, wait_for, journal, kinds = fr.status, fr.wait_for, fr.journal, fr.kinds


@pytest.fixture(scope="module")
def nlab(lab_factory):
    t0 = time.monotonic()
    state = lab_factory(netns=True, osds_per_host=1)
    with fr.serving(state, lab_factory, OUT, "netns_lab", t0):
        yield state


STALE_S = 30                  # mgr/recovery/helper_stale_timeout (default)
RESTART_S = 5                 # RestartSec of scripts/systemd/ceph-recovery-helper.service


def _uptime() -> float:
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def _segfaults(since: float) -> list:
    """Kernel lines about a librados segfault (`comm[tid]: segfault ... libceph-common`)
    stamped after `since` (seconds of uptime): the helper's threads come and go with its
    connection attempts, so they are matched by time, not by thread id."""
    out = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=30).stdout
    lines = []
    for ln in out.splitlines():
        if "segfault" in ln and "libceph-common" in ln and ln.startswith("["):
            try:
                if float(ln[1:ln.index("]")]) >= since:
                    lines.append(ln.strip())
            except ValueError:
                continue
    return lines


def _run_done_restarting_helper(r, host, since, timeout=300):
    """Wait for the run to end. A helper that died meanwhile is started again after
    RestartSec, as the helper's unit (Restart=always) does; returns what each death left in
    the kernel log (librados segfaults since the link came back)."""
    state, deaths = r.state, []
    pid = state["pids"]["helper.%s" % host]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not procs.alive(pid, ("ceph-recovery-helper", state["dir"])):
            deaths.append({"pid": pid, "kernel": _segfaults(since)})
            time.sleep(RESTART_S)
            pid = launch.start_helper(state, host)
            time.sleep(1)
        try:
            s = status(state)
            if s["phase"] in ("done", "aborted") and not s["active"]:
                assert s["phase"] == "done", s["phase"]
                return deaths
        except CephError:
            pass
        time.sleep(2)
    raise AssertionError("the run did not end within %ss (helper deaths: %s)" % (timeout, deaths))


def test_host_cut_off_the_network_mid_run(nlab, request):
    """osd.1 (h2) fails; the operator holds h2 and the run starts (osd.1 waits on the hold).
    Mid-run h2's link goes down; once its helper's last report is older than the stale
    timeout the hold is released. The module must name h2 (RECOVERY_HELPER_MISSING) and grant
    nothing there; a second run is refused (EBUSY), the run paused and resumed, still nothing;
    once the link is back the helper reports, osd.1 is granted and started once, and the run
    ends."""
    host = "h2"
    osd = int(nlab["hosts"][host]["osds"][0])
    r = fr.Row(nlab, request.node.name, [osd])
    net = faults.LabNet.from_lab(nlab["dir"])
    cut, deaths = None, []
    try:
        r.outage()
        launch.ceph(nlab, "recovery", "hold", host, json_out=False)
        r.start_run()
        wait_for(lambda: fr.named(nlab, "RECOVERY_DOMAIN_HELD", host), 60, "h2 held")
        t_fault = time.time()
        cut = faults.inject_link_down(net, host)
        time.sleep(STALE_S + 6)               # the helper's last report is stale now
        launch.ceph(nlab, "recovery", "release", host, json_out=False)
        missing = wait_for(lambda: fr.named(nlab, "RECOVERY_HELPER_MISSING", host), 60,
                           "RECOVERY_HELPER_MISSING naming %s" % host, every=2.0)
        r.write("cut", 100)
        extra = fr.pause_and_second_run(nlab)
        fr.resume(nlab)
        time.sleep(4)                         # two ticks after the resume: still nothing
        assert not kinds(journal(nlab, r.t0), "grant_start", osd), "granted on a cut-off host"
        assert launch.osd_pid(nlab, osd) is None
        cut_s = time.time() - t_fault
        since = _uptime()
        cut.undo()
        t_back = time.time()
        deaths = _run_done_restarting_helper(r, host, since)
        res = r.finish(t_fault)
        entries = r.remember()
        grants = kinds(entries, "grant_start", osd)
        assert len(grants) == 1 and grants[0]["time"] >= t_back - 1, grants
        res.update(extra)
        res.update({"fault": "h2's link down %.0f s mid-run (h2 held by the operator at the "
                    "cut, released once its helper was stale)" % cut_s,
                    "link_down_s": round(cut_s, 1),
                    "grant_after_link_up_s": round(grants[0]["time"] - t_back, 1),
                    "after_link_up_s": round(time.time() - t_back, 1),
                    "health_while_cut": missing[0][:200], "helper_deaths": deaths})
    finally:
        r.close()
        if cut is not None:
            cut.undo()
        launch.ceph(nlab, "recovery", "release", host, json_out=False, check=False)
        restore(nlab, 300)
    # the helper must survive its link's return (its mgr commands use a blocking handle,
    # see Helper._mgr); a death is restarted above so the row's other checks still run
    assert not deaths, "h2's helper died after its link returned: %s" % deaths
