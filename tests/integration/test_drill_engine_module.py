"""`ceph-recovery-drill` on the real lab (3 hosts x 2 OSDs): the lab tool as a thin client of
`ceph recovery drill`, the module's drill the only engine.

- controlled: the module stops h2 through the helpers, keeps it down 20 s while writing 5
  objects/s into its own pool, brings it back by its controlled start one OSD at a time;
  `recovery wait` answers 0, every object verifies, each OSD's process started exactly once,
  no OOM kill, the tool's JSON carries the module's report and the PNG is rendered;
- naive: once the report says down the tool limits h2's cgroup and sends `drill abort`
  (everything at once): `wait` answers ECANCELED, each OSD of h2 is started exactly once
  (no second start instruction on abort), the limit is lifted at the end, every object
  verifies;
- power loss (`--stop kill`): h2's helper SIGKILLs its OSDs after ok-to-stop (the journal's
  stops carry kill, the helper logs osd_killed for each), and the controlled start brings them
  back, each started once;
- in the controlled exits every boot comes from the OSD's own "preboot" (its admin socket,
  read by the helper), not from the flat-rss wait.
The numbers (times, inactive PG-seconds, peaks) are printed, not asserted.
"""
from __future__ import annotations

import collections
import errno
import json
import os

import pytest

from ceph_recovery_tools.lab import inrelease, launch

pytestmark = pytest.mark.integration
HOST = "h2"


def drill(lab, tmp_path, name, **kw):
    out = str(tmp_path / ("%s.json" % name))
    r = inrelease.run_drill(lab, out, fail="host:" + HOST, downtime=20.0,
                            write_load=5, timeout=420.0, **kw)
    with open(out) as f:
        assert json.load(f)["drill"]["id"] == r["drill"]["id"]
    assert os.path.getsize(r["timeline_png"]) > 1000
    failed = sorted(lab["hosts"][HOST]["osds"])
    assert r["failed_osds"] == failed
    assert r["process_starts_by_osd"] == {str(o): 1 for o in failed}, r["process_starts_by_osd"]
    assert r["objects_written"] > 0 and r["objects_bad"] == 0, r["drill"]["write_load"]
    assert r["objects_verified_ok"] >= r["objects_written"], r["drill"]["write_load"]
    assert r["drill"]["write_load"]["pool_state"] == "removed"
    assert set(r["drill"]["hosts"][HOST]) == {"peak_bytes", "budget_bytes", "peak_over_budget"}
    m = launch.ceph(lab, "osd", "dump")
    assert all(o["up"] for o in m["osds"]), m["osds"]
    assert HOST not in (m.get("crush_node_flags") or {}), m.get("crush_node_flags")
    print("%s: %s in %s s down, all up %s s / active %s s / clean %s s after the return; "
          "inactive PG-s %s; h2 cgroup peak %d MiB; per-OSD RSS peak %s MiB; OOM kills %s; "
          "%d objects verified" % (
              name, r["outcome"], r["downtime_s"], r["time_to_all_up_s"],
              r["time_to_all_pgs_active_s"], r["time_to_all_pgs_clean_s"],
              r["inactive_pg_seconds"], r["peak_mem_bytes_by_host"][HOST] >> 20,
              {o: v >> 20 for o, v in r["peak_rss_bytes_by_osd"].items() if int(o) in failed},
              r["oom_kills_by_host"][HOST], r["objects_verified_ok"]))
    return r


def test_module_engine_controlled_then_naive(healthy_lab, tmp_path, assert_booted_on_preboot):
    lab = healthy_lab
    r = drill(lab, tmp_path, "controlled", concurrency="1")
    assert r["engine"] == "module" and r["outcome"] == "done" and r["wait_rc"] == 0, r["reason"]
    assert r["max_in_flight_per_host"][HOST] <= 1, r["max_in_flight_per_host"]
    assert sorted(r["start_order"]) == sorted(lab["hosts"][HOST]["osds"])
    assert r["oom_kills_by_host"][HOST] == 0
    assert_booted_on_preboot(r["journal"], r["failed_osds"])

    limit = 6 << 30
    n = drill(lab, tmp_path, "naive", naive=True, host_mem_limit=limit)
    assert n["outcome"] == "aborted" and n["wait_rc"] == -errno.ECANCELED, n["wait_text"]
    assert "operator" in n["reason"] and n["naive_abort_after_down_s"] is not None
    assert launch.cgroup_memory(lab, HOST)["limit"] != limit       # lifted at the end


def test_module_engine_fit_first_sets_the_drills_exit_budget_once_down(healthy_lab, tmp_path):
    """--fit-first 2.5: the budget is 2.5 x the module's own predicted first start (room for
    both OSDs of h2, one at a time), set by `drill budget` while the bucket is down, and h2's
    cgroup limited to that budget / 0.9 for the exit."""
    lab = healthy_lab
    r = drill(lab, tmp_path, "fit-first", concurrency="1", fit_first=2.5)
    fit = r["fit_first"]
    assert fit["budget_bytes"] == int(2.5 * fit["predicted_first_bytes"]) > 0, fit
    assert r["drill"]["budget"] == str(fit["budget_bytes"]), r["drill"]["budget"]
    assert r["drill"]["hosts"][HOST]["budget_bytes"] == fit["budget_bytes"]
    assert r["host_mem_limit"] == fit["host_mem_limit"]
    assert r["outcome"] == "done" and r["wait_rc"] == 0, r["reason"]
    assert r["oom_kills_by_host"][HOST] == 0
    assert r["max_in_flight_per_host"][HOST] <= 1, r["max_in_flight_per_host"]
    assert launch.cgroup_memory(lab, HOST)["limit"] != fit["host_mem_limit"]   # lifted
    journal = [j for j in r["journal"] if j.get("action", {}).get("kind") == "command"]
    assert any("drill budget %s: %d" % (r["drill"]["id"], fit["budget_bytes"])
               in j["action"].get("reason", "") for j in journal), journal


def killed_in_helper_log(lab, host):
    """How many times the host's helper logged each OSD as SIGKILLed (structlog JSON lines)."""
    out = collections.Counter()
    with open(os.path.join(lab["dir"], "log", "helper.%s.log" % host)) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if isinstance(e, dict) and e.get("event") == "osd_killed":
                out[int(e["osd"])] += 1
    return out


def test_module_engine_power_loss_drill_sigkills_h2_through_its_helper(healthy_lab, tmp_path,
                                                                     assert_booted_on_preboot):
    """--stop kill: after ok-to-stop the helper SIGKILLs h2's OSDs (no clean shutdown; the
    monitors mark them down from their peers' reports), the drill keeps them down, then the
    controlled start brings them back, each started once, every object verified."""
    lab = healthy_lab
    failed = set(lab["hosts"][HOST]["osds"])
    before = killed_in_helper_log(lab, HOST)
    r = drill(lab, tmp_path, "power-loss", concurrency="1", stop="kill")
    assert r["outcome"] == "done" and r["wait_rc"] == 0, r["reason"]
    assert r["drill"]["stop"] == "kill" and r["stop"] == "kill"
    stops = [j["action"] for j in r["journal"] if j.get("action", {}).get("kind") == "stop_osd"]
    assert {a["osd"] for a in stops} == failed and all(a.get("kill") for a in stops), stops
    assert set(killed_in_helper_log(lab, HOST) - before) == failed
    assert r["oom_kills_by_host"][HOST] == 0
    assert_booted_on_preboot(r["journal"], r["failed_osds"])
