"""The module's throttle on a real OSD of the default release (Tentacle: mClock), on the lab of
3 hosts x 2 OSDs. h2's OSDs are SIGKILLed and objects written while they are down; a
controlled run (one start at a time, a fixed budget) lets the first one boot, and while it
recovers, a balloon process (fault_row.balloon) joins h2's memory cgroup and puts the host over its
budget. The module's first response is the throttle: on an mClock OSD
osd_mclock_override_recovery_settings=true, then osd_recovery_max_active and
osd_max_backfills 1, each recorded before it is set. `ceph config show` must show the OSD
running them. Once the process ends, the host is back under 0.9 of its budget, every setting
is restored (`config show` as before, nothing left in `config dump`), and the run ends done
with every object verified, every flag and setting as before and HEALTH_OK
(fault_row.Row.finish).

The second row has the mon refuse the restore: while the throttle is set, the mgr's key loses
its `config` write cap (the mon applies a key's caps when a session authenticates, so the
mgr is restarted to take them). Each restore is then refused (EACCES), the OSD keeps running
the throttle, and RECOVERY_RESTORE_PENDING names every setting with the command that clears
it; once the cap is back (the mgr restarted again), the retry puts every setting back."""
from __future__ import annotations

import re
import signal
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
# the mgr profile's mon grants (MonCap's "profile mgr") with `config` read-only
NO_CONFIG_WRITE = ("allow service mgr rwx, allow service log rw, allow service mon rw, "
                   "allow service mds rw, allow service fs rw, allow service osd rw, "
                   "allow service auth rx, allow service config-key rw, allow service config r")


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



def throttled(lab, r, osds):
    """The row up to the throttle: h2's OSDs down, objects written, the run started, its first
    OSD up and over budget by the balloon, and running the throttle (the override set first).
    (first OSD, its settings before, the balloon, the fault's time)."""
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
    fr.wait_for(lambda: [x for x in fr.osd_dump(lab)["osds"] if x["osd"] == first and x["up"]],
                60, "osd.%d up" % first, every=0.5)
    used = launch.cgroup_memory(lab, HOST)["usage"]
    hog = fr.balloon(lab, HOST, max(0, BUDGET - used) + OVER)
    try:
        sets = fr.wait_for(lambda: all_named(config_steps(lab, r.t0, "set_config", first)),
                           60, "the throttle of osd.%d" % first, every=0.5)
        names = [a["action"]["name"] for a in sets]
        # the override first: without it mClock ignores the other two
        assert names.index("osd_mclock_override_recovery_settings") < min(
            names.index("osd_recovery_max_active"), names.index("osd_max_backfills"))
        running = fr.wait_for(lambda: (lambda e: e if e == THROTTLED else None)(
            effective(lab, first)), 30, "osd.%d running the throttle" % first)
        print("osd.%d throttled: %s (before %s)" % (first, running, before[first]))
    except BaseException:
        hog.kill()
        hog.wait()
        raise
    return first, before, hog, t_fault


def test_over_budget_the_first_response_throttles_a_recovering_mclock_osd_and_restores(
        healthy_lab):
    lab = healthy_lab
    osds = sorted(int(o) for o in lab["hosts"][HOST]["osds"])
    with fr.objects(lab):
        r = fr.Row(lab, "throttle-mclock", osds)
        try:
            first, before, hog, t_fault = throttled(lab, r, osds)
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


def set_mgr_caps(lab, mon_caps):
    """The active mgr's key with `mon_caps` (its mds and osd caps kept), taken by a new mgr
    instance: the mon checks a session's caps as they were when it authenticated."""
    name = "mgr.%s" % fr.active_mgr(lab)
    launch.ceph(lab, "auth", "caps", name, "mon", mon_caps, "mds", "allow *", "osd", "allow *",
                json_out=False)
    launch.restart_mgr(lab, name[4:])
    fr.wait_for(lambda: fr.status(lab, timeout=30), 120, "the module answering")


def refused(lab, since, osd):
    """The carried-out restores of osd.N's throttle that the mon refused, once every setting
    has one, else None."""
    steps = [j for j in config_steps(lab, since, "restore_config", osd)
             if re.search(r"rc=-?13\b|access denied|EACCES", str(j.get("result")), re.I)]
    return all_named(steps)


def test_a_restore_the_mon_refuses_stays_pending_and_named_until_allowed(healthy_lab):
    lab = healthy_lab
    osds = sorted(int(o) for o in lab["hosts"][HOST]["osds"])
    caps_before = launch.ceph(lab, "auth", "get", "mgr.%s" % fr.active_mgr(lab))[0]["caps"]
    with fr.objects(lab):
        r = fr.Row(lab, "restore-refused", osds)
        try:
            first, before, hog, t_fault = throttled(lab, r, osds)
            try:
                t_cut = time.time()
                set_mgr_caps(lab, NO_CONFIG_WRITE)
                r.no_mgr.append([t_cut, time.time()])
            finally:
                hog.kill()
                hog.wait()
            steps = fr.wait_for(lambda: refused(lab, t_cut, first), 120,
                                "the refused restores of osd.%d" % first)
            pending = fr.wait_for(lambda: (lambda n: n if len(n) >= len(THROTTLED) else None)(
                fr.named(lab, "RECOVERY_RESTORE_PENDING", "osd.%d" % first)), 60,
                "RECOVERY_RESTORE_PENDING naming osd.%d's settings" % first)
            assert all(any(k in line for line in pending) for k in THROTTLED), pending
            assert effective(lab, first) == THROTTLED      # refused: still throttled
            assert {k.split(" ", 1)[1] for k in fr.stored_progress(lab)["restoring"]
                    if k.startswith("osd.%d " % first)} >= set(THROTTLED)
            t_back = time.time()
            set_mgr_caps(lab, caps_before["mon"])
            r.no_mgr.append([t_back, time.time()])
            fr.wait_for(lambda: effective(lab, first) == before[first], 120,
                        "osd.%d back to its settings once allowed" % first)
            fr.wait_for(lambda: not fr.named(lab, "RECOVERY_RESTORE_PENDING", "osd."), 60,
                        "RECOVERY_RESTORE_PENDING cleared")
            r.wait_done(300)
            res = r.finish(t_fault, single_start=False)
            res.update({"fault": "the mgr's key without `config` write (mgr restarted to take "
                        "it) while osd.%d ran the throttle, given back later" % first,
                        "refused": [str(j.get("result"))[:80] for j in steps][:3],
                        "pending_named": pending[:3]})
            print("restore-refused row: %s" % res)
        finally:
            r.close()
            if launch.ceph(lab, "auth", "get", "mgr.%s" % fr.active_mgr(lab))[0]["caps"] \
                    != caps_before:
                set_mgr_caps(lab, caps_before["mon"])
