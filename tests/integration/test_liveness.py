"""Every run ends and leaves nothing behind, on ONE real lab (3 hosts x 2 OSDs, BlueStore, a
single mgr): a host's helper and OSDs die right after a grant; the module is disabled mid-run
and enabled again; the only mgr is restarted mid-run; a stale helper report is replayed; a
drill whose exit cannot fit. Each row writes data before and during its fault and ends with
fault_row.Row.finish: every object verified, every flag and OSD setting as before the row,
no restore pending, HEALTH_OK. Results go to $CEPH_RECOVERY_FAULT_MATRIX_OUT beside the
fault matrix's."""
from __future__ import annotations

import errno
import os
import signal
import time

import pytest

from ceph_recovery_tools.helper import caps
from ceph_recovery_tools.lab import inrelease, launch
from ceph_recovery_tools.lab.launch import CephError
import fault_row as fr  # see conftest.py

pytestmark = pytest.mark.integration
OUT = os.environ.get("CEPH_RECOVERY_FAULT_MATRIX_OUT", "/tmp/fault-matrix.json")
Row, RUN_FLAGS = fr.Row, fr.RUN_FLAGS
status, osd_dump, wait_for, journal, kinds = fr.status, fr.osd_dump, fr.wait_for, \
    fr.journal, fr.kinds
BOOT_TIMEOUT = 30             # s: mgr/recovery/boot_timeout for the liveness row
STALL_LIMIT = 20              # s: mgr/recovery/stall_limit for the liveness row


@pytest.fixture(scope="module")
def llab(lab_factory):
    state = lab_factory()
    t0 = time.monotonic()
    launch.ceph(state, "config", "set", "mgr", "mgr/recovery/network_holds_starts", "false",
                json_out=False)   # no netns: probes over the shared loopback say nothing
    with fr.serving(state, lab_factory, OUT, "liveness-lab", t0):
        yield state


@pytest.fixture
def row(llab, request):
    with fr.rows(llab, request.node.name) as make:
        yield make
    for opt in ("boot_timeout", "stall_limit"):
        launch.ceph(llab, "config", "rm", "mgr", "mgr/recovery/%s" % opt, json_out=False)


def _run_over(state):
    return (lambda x: x if x["phase"] in ("done", "aborted") and not x["active"] else None)(
        status(state))


def _host_of(state, osd):
    return state["osds"][str(osd)]["host"]


# ------------------------------------------------------------------ the rows
def test_helper_and_osds_die_right_after_a_grant_the_run_ends_by_its_bound(llab, row):
    """Both OSDs of h3 fail; the run grants one; h3's helper and any OSD it started are
    SIGKILLed at once. The run must end within boot_timeout + stall_limit of its last grant,
    incomplete: flags restored, both OSDs held (noup), stopped, named in
    RECOVERY_INCOMPLETE, no grant left in the stored progress. Then the helper returns and a
    second run brings both back."""
    host = "h3"
    osds = sorted(int(o) for o in llab["hosts"][host]["osds"])
    for opt, v in (("boot_timeout", BOOT_TIMEOUT), ("stall_limit", STALL_LIMIT)):
        launch.ceph(llab, "config", "set", "mgr", "mgr/recovery/%s" % opt, str(v),
                    json_out=False)
    r = row(osds)
    r.outage()
    helper = llab["pids"]["helper.%s" % host]
    launch.ceph(llab, "recovery", "start-controlled", "--concurrency", "1", json_out=False,
                timeout=60)
    g = wait_for(lambda: kinds(journal(llab, r.t0), "grant_start"), 60, "a grant on h3",
                 every=0.3)[0]
    t_fault = time.time()
    os.kill(helper, signal.SIGKILL)
    for o in osds:
        launch.stop_osd(llab, o, signal.SIGKILL, 10)
    stated = wait_for(lambda: status(llab)["summary"].get("ends_by"), 30, "ends_by")
    assert stated <= g["time"] + BOOT_TIMEOUT + STALL_LIMIT + 5, (stated, g["time"])
    r.write("helper-dead", 100)
    # until helper_stale_timeout (30 s) says the helper is gone, a timed-out start may be
    # granted again there: each grant is progress, and the bound runs from the last one
    s = wait_for(lambda: _run_over(llab), 4 * (BOOT_TIMEOUT + STALL_LIMIT), "the run to end",
                 every=1.0)
    entries = journal(llab, r.t0)
    grants = [j["time"] for j in kinds(entries, "grant_start")]
    ended = [j["time"] for j in kinds(entries, "done")][-1]
    assert s["phase"] == "done", s["phase"]
    assert ended <= grants[-1] + BOOT_TIMEOUT + STALL_LIMIT + 4, (ended, grants)  # a tick or two
    assert len(grants) <= fr.MAX_START_FAILURES * len(osds), grants
    m = osd_dump(llab)
    assert not set(RUN_FLAGS) & set(m["flags"].split(",")), m["flags"]
    held = sorted(x["osd"] for x in m["osds"] if "noup" in x["state"])
    assert held == osds and not [o for o in osds if launch.osd_pid(llab, o)], held
    assert not fr.stored_progress(llab).get("granted")
    named = fr.named(llab, "RECOVERY_INCOMPLETE", "osd.")
    assert named, launch.health(llab).get("checks")
    launch.start_helper(llab, host)
    r.start_run()
    r.wait_done()
    res = r.finish(t_fault, single_start=False)
    res.update({"fault": "helper of h3 and its OSDs SIGKILLed right after the grant of osd.%d; "
                "boot_timeout %ds, stall_limit %ds" % (g["action"]["osd"], BOOT_TIMEOUT,
                                                       STALL_LIMIT),
                "grants": len(grants), "ended_after_last_grant_s": round(ended - grants[-1], 1),
                "ends_by_after_first_grant_s": round(stated - g["time"], 1),
                "incomplete": named[0][:200]})


def test_module_disabled_mid_run_then_enabled_again(llab, row):
    """`ceph mgr module disable recovery` after the grant: ceph-mgr respawns without calling
    the module's shutdown(), so what the run set stays (and shows as OSD_FLAGS / OSDMAP_FLAGS);
    enabled again, the module resumes the run from its stored state, names the leftovers
    until the run ends (RECOVERY_LEFTOVERS), and ends it with everything restored."""
    r = row([2])
    r.outage()
    r.start_run()
    wait_for(lambda: kinds(journal(llab, r.t0), "grant_start", 2), 60, "the grant of osd.2")
    r.remember()
    t_fault = time.time()
    launch.ceph(llab, "mgr", "module", "disable", "recovery", json_out=False)
    r.write("disabled", 100)
    time.sleep(8)
    kept = osd_dump(llab)["flags"]
    assert "noout" in kept                   # nothing restored behind the operator's back
    launch.ceph(llab, "mgr", "module", "enable", "recovery", json_out=False)
    wait_for(lambda: status(llab, timeout=30), 120, "the module answering again")
    r.no_mgr.append([t_fault, time.time()])
    r.wait_done()
    res = r.finish(t_fault, single_start=False)
    entries = r.remember()
    assert kinds(entries, "state_resumed"), "the module did not resume the run's state"
    assert len(kinds(entries, "grant_start", 2)) == 1
    res.update({"fault": "mgr module recovery disabled after the grant of osd.2, enabled 8 s "
                "later", "flags_while_disabled": kept})


def test_the_only_mgr_restarted_mid_run(llab, row):
    """No standby: the only mgr is SIGKILLed after the grant and started again; the module
    resumes the run (no second grant) and ends it."""
    r = row([3])
    r.outage()
    r.start_run()
    wait_for(lambda: kinds(journal(llab, r.t0), "grant_start", 3), 60, "the grant of osd.3")
    r.remember()
    t_fault = time.time()
    os.kill(launch.mgr_pid(llab, "x"), signal.SIGKILL)
    r.write("no-mgr", 100)
    time.sleep(5)
    launch.start_mgr(llab, "x")
    wait_for(lambda: status(llab, timeout=30), 120, "the module answering on the new mgr")
    r.no_mgr.append([t_fault, time.time()])
    r.wait_done()
    res = r.finish(t_fault)
    entries = r.remember()
    assert kinds(entries, "state_resumed")
    assert len(kinds(entries, "grant_start", 3)) == 1
    res["fault"] = "the only mgr SIGKILLed after the grant of osd.3, started again 5 s later"


def test_a_replayed_stale_helper_report_is_refused(llab, row, tmp_path):
    """Reports of h1 sent through the host's own key as one helper instance: a replay of an
    accepted report, and an older one, are refused (ESTALE) and change nothing; the real
    helper, replaced by that instance, takes a new one and goes on; the run ends."""
    r = row([1])
    host = _host_of(llab, 1)
    r.outage()
    keyring = os.path.join(inrelease.scratch(llab, str(tmp_path)), "k")
    name = caps.helper_name(host)
    launch.ceph(llab, "auth", "get-or-create", name, *caps.caps_args(caps.helper_caps(host)),
                "-o", keyring, json_out=False)
    t_fault = time.time()
    answers = []
    try:
        def send(seq, instance="replay"):
            rep = fr.report(host, seq=seq, instance=instance)
            try:
                launch.ceph(llab, "recovery", "helper-report", rep, host, name=name,
                            keyring=keyring, timeout=30, json_out=False)
                return 0
            except CephError as e:
                return e.rc
        answers.append(("seq 7", send(7)))
        answers.append(("seq 7 replayed", send(7)))
        answers.append(("seq 6 late", send(6)))
    finally:
        launch.ceph(llab, "auth", "del", name, json_out=False)
    assert answers == [("seq 7", 0), ("seq 7 replayed", errno.ESTALE),
                       ("seq 6 late", errno.ESTALE)], answers
    r.write("replayed", 100)
    r.start_run()
    r.wait_done()
    res = r.finish(t_fault)
    res.update({"fault": "reports of %s replayed through its own key" % host,
                "answers": ["%s: %s" % (w, errno.errorcode.get(rc, rc)) for w, rc in answers]})


def test_a_drill_whose_exit_cannot_fit_ends_with_every_osd_up_or_held_and_stopped(
        llab, row, tmp_path):
    """A controlled drill of h2 (the module learns its OSDs' footprints), then a drill whose
    exit budget is 1.05 x the module's own prediction for the first start, under a cgroup
    limit (--fit-first): the exit may not fit both. Whatever it does, the tool returns with
    its report, and every OSD of h2 is then up, or down, held (noup) and stopped: never loaded
    and held. A bucket left in maintenance comes back by `maintenance exit`."""
    host = "h2"
    osds = sorted(int(o) for o in llab["hosts"][host]["osds"])
    r = row(osds)
    t_fault = time.time()
    kw = dict(fail="host:" + host, objects=4000, stop="kill", downtime=15.0, timeout=240.0,
              stall_limit=30.0, inactive_grace=120.0, concurrency="1")
    warm = inrelease.run_drill(llab, str(tmp_path / "warm.json"), **kw)
    assert warm["outcome"] == "done", warm.get("reason")
    r.remember()                 # each run keeps its own journal: keep the first's starts
    fit = inrelease.run_drill(llab, str(tmp_path / "fit.json"), fit_first=1.05, **kw)
    assert fit["outcome"] in ("done", "aborted") and fit.get("drill_id"), fit.get("reason")
    assert_first_boot_waited_for_its_load(fit)
    m = osd_dump(llab)
    state = {x["osd"]: x for x in m["osds"]}
    loaded_and_held = [o for o in osds if not state[o]["up"] and launch.osd_pid(llab, o)]
    assert not loaded_and_held, (loaded_and_held, fit.get("reason"))
    print("\nfit drill: %s (%s); up after: %s" % (fit["outcome"], fit.get("reason"),
                                                  [o for o in osds if state[o]["up"]]))
    groups = m.get("crush_node_flags") or {}
    for o in osds:        # held per OSD, or by its bucket (a window back in maintenance)
        assert state[o]["up"] or "noup" in state[o]["state"] or "noup" in groups.get(host, ()), (
            o, state[o], groups)
    if not all(state[o]["up"] for o in osds):
        launch.ceph(llab, "recovery", "maintenance", "exit", host, json_out=False)
        wait_for(lambda: launch.ceph(llab, "recovery", "wait", json_out=False) is not None,
                 240, "maintenance exit of h2", every=3.0)
    res = r.finish(t_fault, single_start=False)
    res.update({"fault": "a controlled drill of h2, then one with --fit-first 1.05",
                "fit_outcome": fit["outcome"], "fit_reason": str(fit.get("reason"))[:240],
                "osds_up_after": [o for o in osds if state[o]["up"]]})


def assert_first_boot_waited_for_its_load(r):
    """The fit-first exit's first OSD (its budget fits that OSD's predicted peak) started; it
    was allowed to boot only once its process ran and its load footprint was measured, or,
    when that load said its peak would not fit (the budget is 1.05 x a prediction made before
    the load was known), it stayed in preboot, named with that load, never booted."""
    first = r["planned_order"][0]["osd"]
    assert r["process_starts_by_osd"][str(first)] >= 1, r["process_starts_by_osd"]
    boots = [j for j in r["journal"]
             if j["action"]["kind"] == "allow_boot" and j["action"]["osd"] == first]
    if boots:
        assert boots[0]["observed"]["process"] == "running", boots
        assert (boots[0].get("load_rss_bytes") or 0) > 0, boots
        return
    reasons = (r.get("stalled") or {}).get("reasons", [])
    assert any("osd.%d needs" % first in line and "load-time rss" in line
               and "kept in preboot" in line for line in reasons), r.get("stalled")
