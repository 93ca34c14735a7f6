"""Controlled start end to end on the real lab, through ceph-recovery-drill (the module's drill
stops the host through its helper, the tool and the drill's write load write objects while it
is down, the drill brings it back by its controlled start): a failed host's OSDs come back
one at a time, each booting only once its process runs and its footprint is
seen; every OSD up, every PG active+clean, every object (written before and during the outage)
reads back with its checksum. And the same with ceph-mgr killed and restarted mid-run."""
from __future__ import annotations

import json
import os

import pytest

from ceph_recovery_tools.lab import inrelease

pytestmark = pytest.mark.integration


def drill(lab, tmp_path, **kw):
    """One controlled drill, one start at a time per host (asserted below): --concurrency 1
    explicitly, whatever the module's default is. Run by the lab release's client."""
    out = str(tmp_path / "drill.json")
    kw.setdefault("concurrency", "1")
    result = inrelease.run_drill(lab, out, **kw)
    with open(out) as f:
        assert json.load(f)["objects_written"] == result["objects_written"]
    assert os.path.getsize(result["timeline_png"]) > 1000
    return result


def one_at_a_time(journal, host):
    """Replay the journal: a grant on `host` only when the previous one on it has booted
    (allow_boot) and it was granted to a process the helper reported started (helper_done)."""
    started, booted, granted = set(), set(), []
    for j in journal:
        a = j["action"]
        kind = a.get("kind")
        if kind == "helper_done":
            started.add(a["osd"])
        elif kind == "allow_boot":
            assert a["osd"] in started, "osd.%d allowed to boot before its process ran" % a["osd"]
            assert (j.get("load_rss_bytes") or 0) > 0, j    # its load footprint was known
            booted.add(a["osd"])
        elif kind == "grant_start" and a.get("host") == host:
            for prev in granted:
                assert prev in booted, "osd.%d granted while osd.%d still starting" % (
                    a["osd"], prev)
            granted.append(a["osd"])
    return granted


def check_recovered(r):
    assert r["objects_written"] > 0
    assert r["objects_verified_ok"] == r["objects_written"], r["objects_bad"]
    assert r["time_to_all_up_s"] is not None and r["time_to_all_pgs_clean_s"] is not None
    assert not r.get("timed_out")
    assert r["final_health"]["status"] in ("HEALTH_OK", "HEALTH_WARN"), r["final_health"]
    assert not any(c.startswith("RECOVERY_") or c in ("OSD_DOWN", "OSD_HOST_DOWN", "OSD_FLAGS")
                   for c in r["final_health"]["checks"]), r["final_health"]
    assert all(n == 1 for n in r["process_starts_by_osd"].values()), r["process_starts_by_osd"]


def test_host_down_controlled_start(healthy_lab, tmp_path):
    r = drill(healthy_lab, tmp_path, fail="host:h2", downtime=15.0, objects=3000,
              write_load=20)
    host = "h2"
    failed = sorted(healthy_lab["hosts"][host]["osds"])
    assert sorted(r["start_order"]) == failed
    assert r["max_in_flight_per_host"][host] == 1
    assert r["module_max_in_flight_per_host"].get(host, 0) <= 1
    assert sorted(one_at_a_time(r["journal"], host)) == failed
    check_recovered(r)


def test_mgr_restart_mid_run_resumes_without_second_start(healthy_lab, tmp_path):
    r = drill(healthy_lab, tmp_path, fail="host:h3", downtime=15.0, restart_mgr_after=6.0,
              write_load=20)
    assert r.get("mgr_restarted_at_s") is not None
    failed = sorted(healthy_lab["hosts"]["h3"]["osds"])
    grants = [j["action"]["osd"] for j in r["journal"] if j["action"]["kind"] == "grant_start"]
    assert sorted(grants) == failed                     # the resumed run granted none twice
    assert sorted(one_at_a_time(r["journal"], "h3")) == failed
    # the restarted mgr resumed the run and carried it on: a grant or a boot after it
    resumed = [j["time"] for j in r["journal"] if j["action"]["kind"] == "state_resumed"]
    assert resumed, "no state_resumed entry: the mgr did not load the run state"
    after = [j["action"]["kind"] for j in r["journal"] if j["time"] > resumed[-1]
             and j["action"]["kind"] in ("grant_start", "allow_boot")]
    assert after, "nothing granted or allowed to boot after the mgr restart"
    check_recovered(r)
