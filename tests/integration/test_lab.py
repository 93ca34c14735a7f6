"""The lab itself against a real cluster: module enabled, stock module, topology, cgroups,
a killed host seen in the OSD map, the helper key's caps, and `down`/failed `up` leaving nothing.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile

import psutil
import pytest

from ceph_recovery_tools.common.wait import wait_until
from ceph_recovery_tools.lab import (bootstrap, build, inrelease, launch, names, procs,
                                     teardown)

pytestmark = pytest.mark.integration


def _osd_up_map(state):
    return {o["osd"]: bool(o["up"]) for o in launch.ceph(state, "osd", "dump")["osds"]}


def _leftovers(d):
    """Independent checks: processes naming the dir, cgroups, netns, bridge, mounts."""
    h = names.lab_hash(d)
    procs = []
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        if p.info["status"] != psutil.STATUS_ZOMBIE and any(d in a for a in p.info["cmdline"] or []):
            procs.append(p.info["pid"])
    cgs = [p for p in (f"/sys/fs/cgroup/memory/ceph-recovery-lab-{h}",
                       f"/sys/fs/cgroup/ceph-recovery-lab-{h}") if os.path.exists(p)]
    netns = [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                       text=True).stdout.split() if n.startswith(f"crlab-{h}-")]
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    bridge = [f"crb{h}"] if f"crb{h}" in links else []
    with open("/proc/mounts") as f:
        mounts = [line for line in f if d in line]
    return {"procs": procs, "cgroups": cgs, "netns": netns, "bridge": bridge, "mounts": mounts}


def _gone(pid):
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_recovery_module_enabled_and_answers(lab):
    module_py = os.path.join(lab["module_dir"], "module.py")
    if not os.path.exists(module_py):
        pytest.skip(f"{module_py} not written yet")
    mods = launch.ceph(lab, "mgr", "module", "ls")
    assert "recovery" in mods["enabled_modules"]
    status = launch.ceph(lab, "recovery", "status")
    assert isinstance(status, dict)


def test_stock_module_still_works(lab):
    status = launch.ceph(lab, "balancer", "status")
    assert status["mode"] in ("upmap", "crush-compat", "none")
    assert "active" in status


def test_topology_cgroups_and_pool(lab):
    tree = launch.ceph(lab, "osd", "tree")
    by_id = {n["id"]: n for n in tree["nodes"]}
    parent = {c: n["id"] for n in tree["nodes"] for c in n.get("children", [])}
    for host, info in lab["hosts"].items():
        for osd_id in info["osds"]:
            assert by_id[parent[osd_id]]["name"] == host
            assert by_id[parent[parent[osd_id]]]["name"] == info["rack"]
            pid = launch.osd_pid(lab, osd_id)
            with open(os.path.join(info["cgroup"]["path"], "cgroup.procs")) as f:
                assert pid in [int(x) for x in f.read().split()]
        assert launch.cgroup_memory(lab, host)["usage"] > 0
    pool = [p for p in launch.ceph(lab, "osd", "pool", "ls", "detail") if p["pool_name"] == "lab"]
    assert (pool[0]["size"], pool[0]["min_size"]) == (3, 2)


def test_lab_objects_read_back_and_are_removed_without_a_trace(lab):
    objs = inrelease.LabObjects(lab)
    objs.write_aio("lab-objects", 40)
    assert objs.verify() == (40, [])
    written = dict(objs.sums)
    assert objs.remove() == 40 and objs.sums == {}
    objs.sums = written
    ok, gone = objs.verify()
    assert ok == 0 and sorted(gone) == sorted(written)
    objs.sums = written                 # removing what is gone already is not an error
    assert objs.remove() == 40
    objs.write_aio("lab-objects-purged", 10)
    objs.sums = {}
    assert objs.purge() >= 10               # whoever wrote them
    assert inrelease.LabObjects(lab).purge() == 0


def test_helper_key_has_its_caps_and_no_more(lab):
    entry = launch.ceph(lab, "auth", "get", bootstrap.HELPER_NAME)[0]
    assert entry["caps"] == bootstrap.HELPER_CAPS
    who = {"name": bootstrap.HELPER_NAME, "keyring": lab["helper_keyring"]}
    if any('"osd ok-to-stop"' in cap for cap in bootstrap.HELPER_CAPS.values()):
        try:
            answer = launch.ceph(lab, "osd", "ok-to-stop", "0", **who)
        except launch.CephError as exc:  # EBUSY still answers the JSON
            assert exc.rc == 16, exc
            answer = exc.json
        assert answer["osds"] == [0]
    with pytest.raises(launch.CephError) as err:
        launch.ceph(lab, "osd", "set", "noout", json_out=False, **who)
    assert abs(err.value.rc) == 13
    assert "noout" not in launch.ceph(lab, "osd", "dump")["flags"]


def test_killing_a_host_is_seen_in_the_osd_map(healthy_lab):
    lab = healthy_lab
    victims = lab["hosts"]["h3"]["osds"]
    assert all(_osd_up_map(lab)[o] for o in victims)
    killed = launch.kill_host(lab, "h3")
    assert len(killed) == len(victims)
    assert all(launch.osd_pid(lab, o) is None for o in victims)
    seen = wait_until(lambda: _osd_up_map(lab), 90, 1,
                      done=lambda seen: not any(seen[o] for o in victims))
    assert [seen[o] for o in victims] == [False] * len(victims)
    assert all(up for o, up in seen.items() if o not in victims)


def test_up_refuses_a_dir_holding_a_cluster(lab):
    with pytest.raises(build.LabExists):
        build.up(lab["dir"], build.LabOptions(module_dir=lab["module_dir"]))
    cli = os.path.join(os.path.dirname(sys.executable), "ceph-recovery-lab")
    proc = subprocess.run([cli, "up", "--dir", lab["dir"]], capture_output=True, text=True)
    assert proc.returncode == 2 and "already holds a lab cluster" in proc.stderr
    assert launch.ceph(lab, "health")["status"] in ("HEALTH_OK", "HEALTH_WARN")


def _oom_kill_inside_a_host_cgroup(state, host):
    """A 2 GiB hog started in a 1 GiB host group is OOM-killed there; the OSDs survive."""
    before = launch.cgroup_memory(state, host)["oom_kill"]
    hog = procs.spawn(["/usr/bin/python3", "-c", "b = bytearray(2 << 30); import time; "
                       "time.sleep(60)"], os.path.join(state["dir"], "log", "hog.log"),
                      os.path.join(state["dir"], "run", "hog.pid"),
                      cgroup=state["hosts"][host]["cgroup"]["path"])
    assert wait_until(lambda: _gone(hog), 60, 0.2)
    assert launch.cgroup_memory(state, host)["oom_kill"] == before + 1
    assert all(launch.osd_pid(state, o) for o in state["hosts"][host]["osds"])


@pytest.mark.netns
def test_netns_lab_up_then_down_leaves_nothing(lab_factory):
    state = lab_factory(netns=True, objectstore="memstore", helpers=False,
                        host_mem_limit=1 << 30)
    assert launch.ceph(state, "health")["status"] == "HEALTH_OK"
    addrs = {o["osd"]: o["public_addrs"]["addrvec"][0]["addr"].split(":")[0]
             for o in launch.ceph(state, "osd", "dump")["osds"]}
    for osd_id, info in state["osds"].items():
        assert addrs[int(osd_id)] == state["hosts"][info["host"]]["addr"]
    for host in state["hosts"]:
        assert launch.cgroup_memory(state, host)["limit"] == 1 << 30
    _oom_kill_inside_a_host_cgroup(state, "h1")
    d = state["dir"]
    assert any(_leftovers(d).values())
    lab_factory.down()
    assert _leftovers(d) == {"procs": [], "cgroups": [], "netns": [], "bridge": [], "mounts": []}


def test_failed_up_cleans_after_itself(lab):
    """An 8 MiB host limit: the OSD is OOM-killed while starting, `up` fails fast, saying so,
    and leaves nothing behind."""
    d = tempfile.mkdtemp(prefix="lab-pytest-fail-", dir="/tmp")
    opts = build.LabOptions(hosts=1, racks=1, osds_per_host=1, objectstore="memstore",
                            netns=True, helpers=False, host_mem_limit=8 << 20,
                            health_timeout=120, module_dir=lab["module_dir"])
    try:
        with pytest.raises(RuntimeError, match=r"exited while starting .*'h1': [1-9]"):
            build.up(d, opts)
        assert _leftovers(d) == {"procs": [], "cgroups": [], "netns": [], "bridge": [],
                                 "mounts": []}
        assert not build.holds_cluster(d)
        assert os.listdir(d) == ["log"]
    finally:
        teardown.down(d)
        subprocess.run(["rm", "-rf", d])


def test_status_cli_json(lab):
    cli = os.path.join(os.path.dirname(sys.executable), "ceph-recovery-lab")
    proc = subprocess.run([cli, "status", "--dir", lab["dir"], "--json"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    st = json.loads(proc.stdout)
    assert st["health"]["status"] in ("HEALTH_OK", "HEALTH_WARN")
    assert sorted(st["memory"]) == sorted(lab["hosts"])
    assert all(st["daemons"][f"osd.{o}"]["alive"] for o in lab["osds"])


def test_restart_mgr_brings_back_a_new_mgr_with_our_module(lab):
    old_pid = launch.mgr_pid(lab)
    assert old_pid is not None
    stale = dict(lab, pids=dict(lab["pids"]))   # a holder that will miss the next restart
    old_gid = launch.ceph(lab, "mgr", "dump")["active_gid"]
    new_pid = launch.restart_mgr(lab)
    assert new_pid != old_pid and _gone(old_pid) and not _gone(new_pid)
    dump = launch.ceph(lab, "mgr", "dump")
    assert dump["available"] and dump["active_gid"] != old_gid
    # the stale holder (as the session's lab dict after a drill restarted the mgr: CI of stop
    # 2) still restarts the live mgr, found through its pid file, not a second mgr beside it
    newer = launch.restart_mgr(stale)
    assert newer not in (old_pid, new_pid) and _gone(new_pid) and not _gone(newer)
    assert launch.ceph(lab, "mgr", "dump")["active_gid"] not in (old_gid, dump["active_gid"])
    lab["pids"]["mgr.x"] = newer
    if os.path.exists(os.path.join(lab["module_dir"], "module.py")):
        assert "recovery" in launch.ceph(lab, "mgr", "module", "ls")["enabled_modules"]
    assert launch.ceph(lab, "balancer", "status")["mode"]


def test_keep_mgr_starts_a_dead_mgr_again_as_systemd_would(lab):
    """An mgr that aborts after a respawn (Reef 18.2.7: FAILED ceph_assert(ckh)) is started
    again by keep_mgr, and a live one is left alone."""
    assert launch.keep_mgr(lab, watch=1.0) == 0
    pid = launch.mgr_pid(lab)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: _gone(pid), 30, 0.2)
    assert launch.keep_mgr(lab, watch=1.0) == 1
    new_pid = launch.mgr_pid(lab)
    assert new_pid not in (None, pid)
    lab["pids"]["mgr.x"] = new_pid
    assert launch.ceph(lab, "mgr", "dump")["available"]
    assert launch.ceph(lab, "balancer", "status")["mode"]
