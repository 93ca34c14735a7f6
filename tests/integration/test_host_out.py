"""A host marked out and brought back by a controlled start, on a lab of 4 hosts x 2 OSDs
(pool size 3, failure domain host: h2's data re-replicates to the other three) with
mon_osd_down_out_interval shortened to OUT_AFTER s. h2's OSDs are SIGKILLed, objects written
while they are down; the monitor marks them out and the PGs go clean without them. Then h2's
memory cgroup is limited to LIMIT (its OSDs' own osd_memory_target at TARGET) and a controlled start brings it back: the monitor marks
each OSD in at its boot and it backfills. The run admits them on their load alone (a backfill
merges no PG log history). The checks every fault row ends with (fault_row.Row.finish):
every object verified, every flag and setting as before, HEALTH_OK; plus no OOM kill in h2's
cgroup and both OSDs in again."""
from __future__ import annotations

import signal
import time

import pytest

from ceph_recovery_tools.common import cgroup
from ceph_recovery_tools.lab import launch
import fault_row as fr  # see conftest.py

pytestmark = pytest.mark.integration

HOST = "h2"
OUT_AFTER = 20             # s: mon_osd_down_out_interval on this lab (default 600)
MiB = 1 << 20
TARGET = 896 * MiB         # h2's OSDs' own osd_memory_target (the option's minimum)
# h2's cgroup: two lab OSDs settle at ~130-170 MiB, but the run restores osd_memory_target
# only where the host holds every OSD at it (settings.py): 2 x 896 MiB x 1.1 and the rest
LIMIT = 2560 * MiB
OBJECTS = 20000            # written while h2 is down


@pytest.fixture(scope="module")
def olab(lab_factory):
    state = lab_factory(hosts=4)
    t0 = time.monotonic()
    for who, opt, value in (("mon", "mon_osd_down_out_interval", str(OUT_AFTER)),
                            ("mgr", "mgr/recovery/network_holds_starts", "false")):
        launch.ceph(state, "config", "set", who, opt, value, json_out=False)
    with fr.serving(state, lab_factory, "/tmp/host-out-row.json", "host-out-lab", t0):
        yield state


def _out(state, osds):
    return sorted(x["osd"] for x in fr.osd_dump(state)["osds"]
                  if x["osd"] in osds and not x["in"])


def test_a_host_marked_out_comes_back_by_a_controlled_start_under_a_cgroup_limit(olab):
    lab = olab
    osds = sorted(int(o) for o in lab["hosts"][HOST]["osds"])
    cg = lab["hosts"][HOST]["cgroup"]
    for o in osds:
        launch.ceph(lab, "config", "set", "osd.%d" % o, "osd_memory_target", str(TARGET),
                    json_out=False)
    r = fr.Row(lab, "host-out", osds)
    try:
        r.write("before", 300)
        for o in osds:
            launch.stop_osd(lab, o, signal.SIGKILL, 10)
        t_fault = time.time()
        r.write("during", OBJECTS)
        fr.wait_for(lambda: _out(lab, osds) == osds, 120, "h2's OSDs marked out")
        launch.wait_pgs_clean(lab, 300)          # re-replicated to h1, h3 and h4
        out_s = time.time() - t_fault
        fr.limit_empty_group(cg, LIMIT)
        oom0 = launch.cgroup_memory(lab, HOST)["oom_kill"]
        r.start_run()
        s = r.wait_done(300)
        assert _out(lab, osds) == [], "marked in at boot"
        entries = r.remember()
        grants = fr.kinds(entries, "grant_start")
        assert sorted(g["action"]["osd"] for g in grants) == osds, grants
        res = r.finish(t_fault)
        oom = launch.cgroup_memory(lab, HOST)["oom_kill"] - oom0
        assert oom == 0, "OOM kills in h2's cgroup: %d" % oom
        peak = launch.cgroup_memory(lab, HOST)["max_usage"]
        res.update({"out_and_clean_after_s": round(out_s, 1), "limit_mib": LIMIT // MiB,
                    "oom_kills": oom, "peak_mib": peak // MiB if peak else None,
                    "phase": s["phase"],
                    "predicted_mib": [g["action"]["predicted_bytes"] // MiB for g in grants],
                    "missed_entries_seen": [g.get("observed", {}).get("missed_entries")
                                            for g in grants]})
        print("host-out row: %s" % res)
    finally:
        r.close()
        cgroup.set_limit(cg["path"], cg["version"], None)
        for o in osds:
            launch.ceph(lab, "config", "rm", "osd.%d" % o, "osd_memory_target", json_out=False)
