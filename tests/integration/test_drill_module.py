"""`ceph recovery drill` on a real lab (3 hosts x 2 OSDs; pool size 3, min_size 2, failure
domain host):

- `drill start --fail h2 --downtime 30s` stops h2's OSDs, keeps them down 30 s, brings them
  back by a controlled start; `ceph recovery wait` answers 0; the report has the timeline
  fields and h2's peak vs budget, and no flag of the drill is left;
- `drill abort` during a second drill brings h2 back at once: `wait` answers ECANCELED with
  the reason, every OSD up, h2's noout and noup gone;
- every drill command answers one plain line without -f json.
"""
from __future__ import annotations

import errno
import time

import pytest

from ceph_recovery_tools.lab import launch
from ceph_recovery_tools.lab.launch import CephError

pytestmark = pytest.mark.integration
HOST = "h2"
SAMPLE_FIELDS = {"t", "phase", "osds_up", "osds_total", "bucket_up", "pgs_total", "pgs_active",
                 "pgs_clean", "degraded_objects", "mem_used"}


def plain(state, *args):
    out = launch.ceph(state, "recovery", *args, json_out=False).strip()
    assert out and "\n" not in out and not out.startswith("{"), (args, out)
    return out


def recovery_wait(state, limit=300):
    return launch.recovery_wait(state, limit)


def report(state):
    return launch.ceph(state, "recovery", "drill", "report")


def all_back(state):
    m = launch.ceph(state, "osd", "dump")
    assert all(o["up"] for o in m["osds"]), m["osds"]
    assert HOST not in (m.get("crush_node_flags") or {}), m.get("crush_node_flags")


@pytest.fixture
def drill_lab(healthy_lab):
    state = healthy_lab
    if not state.get("netns"):          # loopback-only probes: no network findings
        launch.ceph(state, "config", "set", "mgr", "mgr/recovery/network_holds_starts",
                    "false", json_out=False)
    yield state
    launch.ceph(state, "recovery", "drill", "abort", json_out=False, check=False)
    recovery_wait(state)
    launch.ceph(state, "config", "rm", "mgr", "mgr/recovery/network_holds_starts",
                json_out=False)


def test_drill_start_report_wait_and_abort(drill_lab):
    state = drill_lab
    t0 = time.monotonic()
    with pytest.raises(CephError) as e:
        launch.ceph(state, "recovery", "drill", "abort", json_out=False)
    assert e.value.rc == errno.ENOENT, e.value

    out = plain(state, "drill", "start", "--fail", HOST, "--downtime", "30s",
                "--budget", "80%")
    assert "accepted" in out and "for 30s" in out, out
    rc, text = recovery_wait(state)
    assert rc == 0 and "done" in text, (rc, text)
    took = time.monotonic() - t0
    all_back(state)
    r = report(state)
    assert r["outcome"] == "done" and r["downtime_s"] >= 30.0, r["reason"]
    assert r["time_to_all_active_s"] is not None and r["time_to_clean_s"] is not None
    assert r["timeline"] and all(set(s) == SAMPLE_FIELDS for s in r["timeline"])
    assert min(s["bucket_up"] for s in r["timeline"]) == 0       # h2 was down
    assert r["timeline"][-1]["bucket_up"] == 2
    h2 = r["hosts"][HOST]
    assert h2["peak_bytes"] > 0 and h2["budget_bytes"] > 0, h2
    line = plain(state, "drill", "report")
    assert line.startswith("drill %s on h2: done" % r["id"]) and "peak/budget h2 " in line
    print("drill on h2: %.1f s in all; report: %s" % (took, line))

    # a second drill, aborted by the operator once h2 is down
    plain(state, "drill", "start", "--fail", HOST, "--downtime", "10m")
    deadline = time.monotonic() + 120
    while report(state)["phase"] != "down":
        assert time.monotonic() < deadline, report(state)["phase"]
        time.sleep(1)
    t1 = time.monotonic()
    assert "abort accepted" in plain(state, "drill", "abort")
    rc, text = recovery_wait(state)
    assert rc == errno.ECANCELED and "operator" in text, (rc, text)
    all_back(state)
    r2 = report(state)
    assert r2["outcome"] == "aborted" and r2["id"] != r["id"]
    print("drill abort: h2 back in %.1f s; test total %.1f s"
          % (time.monotonic() - t1, time.monotonic() - t0))
