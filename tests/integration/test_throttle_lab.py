"""The module's throttle on a real OSD of the default release (Tentacle: mClock), on the lab of
3 hosts x 2 OSDs. h2's OSDs are SIGKILLed and objects written while they are down; a
controlled run (one start at a time, a fixed budget) lets the first one boot, and while it
recovers, a process of BALLOON bytes joins h2's memory cgroup and puts the host over its
budget. The module's first response is the throttle: on an mClock OSD
osd_mclock_override_recovery_settings=true, then osd_recovery_max_active and
osd_max_backfills 1, each recorded before it is set. `ceph config show` must show the OSD
running them. Once the process ends, the host is back under 0.9 of its budget, every setting
is restored (`config show` as before, nothing left in `config dump`), and the run ends done
with every object verified, every flag and setting as before and HEALTH_OK
(fault_row.Row.finish)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from ceph_recovery_tools.lab import launch
import fault_row as fr  # see conftest.py

pytestmark = pytest.mark.integration

HOST = "h2"
MiB = 1 << 20
BUDGET = 1536 * MiB        # room for the first start's prediction on an idle lab host
OVER = 128 * MiB           # how far the balloon puts the host over its budget
OBJECTS = 30000            # written while h2 is down: its first OSD recovers for tens of s
THROTTLED = {"osd_mclock_override_recovery_settings": "true",
             "osd_recovery_max_active": "1", "osd_max_backfills": "1"}
BALLOON = ("import sys, time\n"
           "b = b'\\x01' * int(sys.argv[1])\n"      # written: resident, charged to the group
           "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
           "time.sleep(600)\n")


def config_steps(state, since, kind, osd):
    """The journal's carried-out `kind` (set_config / restore_config) steps on osd.N."""
    return [j for j in fr.kinds(fr.journal(state, since), kind)
            if j["action"].get("who") == "osd.%d" % osd]


def all_named(steps):
    """`steps` once they name every throttled setting, else None."""
    return steps if {j["action"]["name"] for j in steps} >= set(THROTTLED) else None


def effective(state, osd):
    """What the OSD runs (`ceph config show osd.N NAME`) for each throttled setting."""
    return {k: launch.ceph(state, "config", "show", "osd.%d" % osd, k, json_out=False).strip()
            for k in THROTTLED}


def balloon(state, nbytes):
    """A process in HOST's memory cgroup holding `nbytes`, once it printed ready."""
    procs = os.path.join(state["hosts"][HOST]["cgroup"]["path"], "cgroup.procs")

    def join():
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    p = subprocess.Popen([sys.executable, "-c", BALLOON, str(nbytes)], preexec_fn=join,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def test_over_budget_the_first_response_throttles_a_recovering_mclock_osd_and_restores(
        healthy_lab):
    lab = healthy_lab
    osds = sorted(int(o) for o in lab["hosts"][HOST]["osds"])
    with fr.objects(lab):
        r = fr.Row(lab, "throttle-mclock", osds)
        try:
            before = {o: effective(lab, o) for o in osds}
            assert all(v["osd_mclock_override_recovery_settings"] == "false"
                       for v in before.values()), before
            r.write("before", 300)
            for o in osds:
                launch.stop_osd(lab, o, signal.SIGKILL, 10)
            fr.wait_for(lambda: all(not x["up"] for x in fr.osd_dump(lab)["osds"]
                                    if x["osd"] in osds), 90, "h2's OSDs down")
            r.write("during", OBJECTS)
            t_fault = time.time()
            launch.ceph(lab, "recovery", "start-controlled", "--budget", str(BUDGET),
                        "--concurrency", "1", json_out=False, timeout=60)
            first = fr.wait_for(lambda: fr.kinds(fr.journal(lab, r.t0), "allow_boot"), 120,
                                "the first boot on h2", every=0.5)[0]["action"]["osd"]
            fr.wait_for(lambda: [x for x in fr.osd_dump(lab)["osds"]
                                 if x["osd"] == first and x["up"]], 60, "osd.%d up" % first,
                        every=0.5)
            used = launch.cgroup_memory(lab, HOST)["usage"]
            hog = balloon(lab, max(0, BUDGET - used) + OVER)
            try:
                sets = fr.wait_for(lambda: all_named(config_steps(lab, r.t0, "set_config",
                                                                  first)),
                                   60, "the throttle of osd.%d" % first, every=0.5)
                names = [a["action"]["name"] for a in sets]
                # the override first: without it mClock ignores the other two
                assert names.index("osd_mclock_override_recovery_settings") < min(
                    names.index("osd_recovery_max_active"), names.index("osd_max_backfills"))
                running = fr.wait_for(lambda: (lambda e: e if e == THROTTLED else None)(
                    effective(lab, first)), 30, "osd.%d running the throttle" % first)
                print("osd.%d throttled: %s (before %s)" % (first, running, before[first]))
            finally:
                hog.kill()
                hog.wait()
            fr.wait_for(lambda: all_named(config_steps(lab, r.t0, "restore_config", first)),
                        90, "the restore of osd.%d's settings" % first)
            fr.wait_for(lambda: effective(lab, first) == before[first], 30,
                        "osd.%d back to its settings" % first)
            r.wait_done(300)
            res = r.finish(t_fault, single_start=False)
            assert effective(lab, first) == before[first]
            print("throttle row: %s" % res)
        finally:
            r.close()
