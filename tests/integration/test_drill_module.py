"""`ceph recovery drill` on a real lab (3 hosts x 2 OSDs; pool size 3, min_size 2, failure
domain host):

- `drill start --fail h2 --downtime 30s --write-load 20` stops h2's OSDs, keeps them down
  30 s while writing 20 objects/s into its own pool, brings them back by a controlled start;
  `ceph recovery wait` answers 0; the report has the timeline fields (write latency
  included) and h2's peak vs budget, every object verified, the pool removed, and no flag of
  the drill is left;
- `drill abort` during a second drill brings h2 back at once (start everything): `wait`
  answers ECANCELED with the reason, every OSD up, h2's noout and noup gone; the test prints
  the inactive PG-seconds of both returns (controlled vs start-everything);
- an inactive PG induced by hand (h3's OSDs stopped while h2 is down) aborts the drill:
  `wait` answers ECANCELED naming the inactive PGs, h2 comes back, its flags go, every
  object verifies and the drill's pool is removed;
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
                 "pgs_clean", "degraded_objects", "mem_used", "objects_written", "write_p50_ms",
                 "write_p99_ms"}
LOAD = "5"


def plain(state, *args):
    out = launch.ceph(state, "recovery", *args, json_out=False).strip()
    assert out and "\n" not in out and not out.startswith("{"), (args, out)
    return out


def recovery_wait(state, limit=300):
    return launch.recovery_wait(state, limit)


def report(state):
    return launch.ceph(state, "recovery", "drill", "report")


def all_back(state, down=()):
    m = launch.ceph(state, "osd", "dump")
    assert all(o["up"] for o in m["osds"] if o["osd"] not in down), m["osds"]
    assert HOST not in (m.get("crush_node_flags") or {}), m.get("crush_node_flags")
    assert not [p for p in launch.ceph(state, "osd", "pool", "ls")
                if p.startswith("recovery-drill-")], "a drill's pool was left"


def load_verified(r):
    w = r["write_load"]
    assert w["pool_state"] == "removed" and w["objects_bad"] == 0, w
    assert w["objects_written"] > 0 and w["objects_verified"] >= w["objects_written"], w
    return w


def wait_phase(state, phase, limit=120):
    deadline = time.monotonic() + limit
    while report(state)["phase"] != phase:
        assert time.monotonic() < deadline, report(state)["phase"]
        time.sleep(1)


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
    launch.ceph(state, "config", "rm", "mon", "mon_allow_pool_delete", json_out=False)


def allow_pool_delete(state):
    """--write-load needs it in the monitors' config (the lab sets it in ceph.conf only):
    the request is answered at once, the tick refuses it (EINVAL by `wait`), nothing set."""
    plain(state, "drill", "start", "--fail", HOST, "--downtime", "30s", "--write-load", LOAD)
    rc, text = recovery_wait(state, 60)
    assert rc == errno.EINVAL and "mon_allow_pool_delete" in text, (rc, text)
    r = report(state)
    assert r["phase"] == "aborted" and r["reason"].startswith("refused: "), r["reason"]
    launch.ceph(state, "config", "set", "mon", "mon_allow_pool_delete", "true",
                json_out=False)


def test_drill_start_report_wait_and_abort(drill_lab):
    state = drill_lab
    t0 = time.monotonic()
    with pytest.raises(CephError) as e:
        launch.ceph(state, "recovery", "drill", "abort", json_out=False)
    assert e.value.rc == errno.ENOENT, e.value

    allow_pool_delete(state)
    out = plain(state, "drill", "start", "--fail", HOST, "--downtime", "30s",
                "--budget", "80%", "--write-load", LOAD)
    assert "requested" in out and "for 30s" in out and "recovery-drill-" in out, out
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
    assert any(s["write_p99_ms"] is not None and s["bucket_up"] == 0 for s in r["timeline"])
    w = load_verified(r)
    h2 = r["hosts"][HOST]
    assert h2["peak_bytes"] > 0 and h2["budget_bytes"] > 0, h2
    line = plain(state, "drill", "report")
    assert line.startswith("drill %s on h2: done" % r["id"]) and "peak/budget h2 " in line
    print("drill on h2: %.1f s in all; %d objects written and verified, write p99 max %s ms;"
          " report: %s" % (took, w["objects_written"], w["write_p99_max_ms"], line))

    # a second drill, aborted by the operator once h2 is down: every OSD starts at once
    plain(state, "drill", "start", "--fail", HOST, "--downtime", "10m", "--write-load", LOAD)
    wait_phase(state, "down")
    t1 = time.monotonic()
    assert "abort accepted" in plain(state, "drill", "abort")
    rc, text = recovery_wait(state)
    assert rc == errno.ECANCELED and "operator" in text, (rc, text)
    all_back(state)
    r2 = report(state)
    assert r2["outcome"] == "aborted" and r2["id"] != r["id"]
    load_verified(r2)
    print("drill abort: h2 back in %.1f s; test total %.1f s"
          % (time.monotonic() - t1, time.monotonic() - t0))
    print("inactive PG-seconds from the return of h2 (tick resolution): controlled exit %s, "
          "start-everything (abort) %s" % (r["inactive_pg_seconds"], r2["inactive_pg_seconds"]))


def test_an_inactive_pg_induced_by_hand_aborts_the_drill(drill_lab):
    state = drill_lab
    t0 = time.monotonic()
    launch.ceph(state, "config", "set", "mon", "mon_allow_pool_delete", "true",
                json_out=False)
    plain(state, "drill", "start", "--fail", HOST, "--downtime", "10m", "--write-load", LOAD)
    wait_phase(state, "down")
    other = sorted(int(o) for o, i in state["osds"].items() if i["host"] == "h3")
    for o in other:                    # a second bucket down: PGs below min_size
        assert launch.stop_osd(state, o)
    rc, text = recovery_wait(state)
    assert rc == errno.ECANCELED and "inactive" in text, (rc, text)
    took = time.monotonic() - t0
    r = report(state)
    assert r["outcome"] == "aborted" and "inactive" in r["reason"], r["reason"]
    assert any(s["pgs_active"] < s["pgs_total"] for s in r["timeline"])
    all_back(state, down=other)
    w = load_verified(r)
    for o in other:
        launch.start_osd(state, o)
    launch.wait_all_up(state, 120)
    all_back(state)
    print("induced inactive PG: drill aborted and h2 back in %.1f s, %d objects verified; "
          "test total %.1f s" % (took, w["objects_verified"], time.monotonic() - t0))
