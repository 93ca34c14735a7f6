"""A scale lab: a real mon and mgr (a chroot release, Tentacle by default) whose OSD map holds
thousands of OSDs under root/rack/host and pools of many PGs, with no OSD daemon at all.

    up_scale(dir, ScaleOptions(osds=5000, hosts=1000, racks=25, pgs=100000))

- OSD ids: `osd new` in bulk (scaleops.py, inside the chroot): in, down, never up.
- CRUSH: `crushtool --build` (root `root`, racks `rack<i>`, hosts `host<i>`, rule
  `replicated_rule`), set with `ceph osd setcrushmap`.
- Pools of at most POOL_PG_MAX PGs each (the mon's mon_max_pool_pg_num is 65,536) up to
  `pgs` in all; they stay `unknown`: no OSD ever reports them.
- One helper key per host (`client.recovery-helper.<host>`, the per-host caps of
  helper/caps.py), all in D/helpers.keyring, imported with one `auth import`.
The module is enabled like the small lab's (bootstrap.enable_module). The lab is taken down
by the small lab's `down` (teardown.py: every process carries D/ceph.conf in its argv).
"""
from __future__ import annotations

import json
import os
import subprocess
import sysconfig
import time
import uuid
from dataclasses import dataclass
from typing import Any, Dict, List

import structlog

from . import bootstrap, build, cgroups, launch, names, release, teardown
from .conf import render_conf
from .state import save_state

log = structlog.get_logger("lab.scale")
POOL_PG_MAX = 32768
# Quiet a map of thousands of never-up OSDs: nothing is marked out, no PG log warnings; a
# pool is created with all its PGs (the mon caps a new pool at mon_osd_max_initial_pgs, 1,024
# by default, and grows it only while its PGs are clean: never here). No `.mgr` pool
# (mgr_pool false): with no OSD up it can never be made, and until it is, every module with
# a database (devicehealth) reads the whole OSD map every 2 s waiting for it, holding the
# mgr's interpreter (measured at 5,000 OSDs: 0.6 of a core, the recovery module's first
# tick 35 s instead of 19 s); a real cluster's `.mgr` pool exists.
SCALE_GLOBAL = {"mgr_pool": "false", "mon_osd_down_out_interval": "0",
                "paxos_propose_interval": "0.2", "mon_osd_max_initial_pgs": str(POOL_PG_MAX),
                "mon_max_pg_per_osd": "1000",
                "mon_pg_warn_max_object_skew": "0", "mon_warn_on_pool_no_app": "false",
                "osd_pool_default_size": "3", "osd_pool_default_min_size": "2"}


@dataclass
class ScaleOptions:
    osds: int = 500
    hosts: int = 50
    racks: int = 5
    pgs: int = 10000
    ceph: str = "tentacle"
    module_dir: str = ""
    enable_module: bool = True


def host_name(i: int) -> str:
    return "host%d" % i


def topology(o: ScaleOptions) -> Dict[str, Any]:
    """crushtool --build's placement: OSDs filled host by host, hosts rack by rack."""
    if o.osds % o.hosts or o.hosts % o.racks:
        raise ValueError("osds must be a multiple of hosts, hosts of racks")
    per_host, per_rack = o.osds // o.hosts, o.hosts // o.racks
    hosts = {host_name(h): {"rack": "rack%d" % (h // per_rack),
                            "osds": list(range(h * per_host, (h + 1) * per_host))}
             for h in range(o.hosts)}
    return {"per_host": per_host, "per_rack": per_rack, "hosts": hosts}


def initial_state(d: str, o: ScaleOptions, root: str) -> Dict[str, Any]:
    topo = topology(o)
    return {"version": 1, "dir": d, "conf": os.path.join(d, "ceph.conf"), "phase": "building",
            "ceph": o.ceph, "root": root, "scale": True,
            "admin_keyring": os.path.join(d, "admin.keyring"),
            "helper_keyring": os.path.join(d, "helpers.keyring"),
            "fsid": str(uuid.uuid4()), "mon_addr": None, "objectstore": "memstore",
            "netns": False, "pool": "scale0", "pool_size": (3, 2),
            "module_dir": o.module_dir, "pythonpath": sysconfig.get_paths()["purelib"],
            "names": names.kernel_names(d, []), "cgroup_version": cgroups.detect_version(),
            "subnet": None, "bridge_addr": None, "hosts": {}, "osds": {}, "pids": {},
            "scale_hosts": topo["hosts"],
            "scale_options": {"osds": o.osds, "hosts": o.hosts, "racks": o.racks,
                              "pgs": o.pgs}}


def in_chroot(state: Dict[str, Any], *args: str, timeout: float = 900) -> str:
    """`python3 -m ceph_recovery_tools.lab.scaleops ...` with the lab's pylib, in the chroot."""
    argv = release.prefix(state) + ["python3", "-m", "ceph_recovery_tools.lab.scaleops"] + \
        list(args)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env=release.tool_env(state), stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RuntimeError("scaleops %s -> rc %d: %s" % (args[0], proc.returncode,
                                                         proc.stderr[-1500:]))
    return proc.stdout


def set_crush(state: Dict[str, Any], o: ScaleOptions) -> None:
    topo = topology(o)
    path = os.path.join(state["dir"], "crushmap")
    bootstrap.run(*release.tool(state, "crushtool"), "-o", path, "--build", "--num_osds",
                  str(o.osds), "host", "straw2", str(topo["per_host"]), "rack", "straw2",
                  str(topo["per_rack"]), "root", "straw2", "0")
    launch.ceph(state, "osd", "setcrushmap", "-i", path, json_out=False, timeout=120)


def pool_sizes(pgs: int) -> List[int]:
    sizes = []
    while pgs > 0:
        sizes.append(min(POOL_PG_MAX, pgs))
        pgs -= sizes[-1]
    return sizes


def create_pools(state: Dict[str, Any], pgs: int) -> None:
    for i, n in enumerate(pool_sizes(pgs)):
        name = "scale%d" % i
        launch.ceph(state, "osd", "pool", "create", name, str(n), str(n), "replicated",
                    "replicated_rule", json_out=False, timeout=300)
        launch.ceph(state, "osd", "pool", "application", "enable", name, "rbd",
                    json_out=False)


def up_scale(lab_dir: str, o: ScaleOptions) -> Dict[str, Any]:
    """Build the scale lab; on any failure tear down what was made and re-raise."""
    d = os.path.abspath(lab_dir)
    root = release.ensure_root(o.ceph)
    if build.holds_cluster(d):
        raise build.LabExists("%s already holds a lab cluster" % d)
    os.makedirs(os.path.join(d, "data"))
    try:
        for sub in ("run", "log", "crash"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        state = initial_state(d, o, root)
        save_state(d, state)
        release.mount_lab(state)
        state["pythonpath"] = release.install_core(state)
        _build(state, o)
    except BaseException:
        log.error("scale up failed; tearing down what was made", dir=d)
        teardown.down(d)
        raise
    return state


def _build(state: Dict[str, Any], o: ScaleOptions) -> None:
    t0 = time.monotonic()
    state["mon_addr"] = "127.0.0.1:%d" % build.pick_port("127.0.0.1", state["dir"])
    state["public_network"] = "127.0.0.0/8"
    with open(state["conf"], "w") as f:
        f.write(render_conf(state["dir"], state["fsid"], state["mon_addr"], "memstore",
                            state["public_network"], {}, extra_global=SCALE_GLOBAL))
    save_state(state["dir"], state)
    bootstrap.bootstrap_mon(state)
    with_module = bootstrap.prepare_module_path(state)
    bootstrap.bootstrap_mgr(state)
    timings = {"mon_mgr_s": round(time.monotonic() - t0, 1)}
    made = json.loads(in_chroot(state, "osds", "--conf", state["conf"], "--count",
                                str(o.osds)))
    timings["osds_s"] = made["seconds"]
    set_crush(state, o)
    t1 = time.monotonic()
    create_pools(state, o.pgs)
    timings["pools_s"] = round(time.monotonic() - t1, 1)
    in_chroot(state, "keys", "--conf", state["conf"], "--hosts",
              ",".join(sorted(state["scale_hosts"], key=lambda h: int(h[4:]))),
              "--out", state["helper_keyring"], "--admin-keyring", state["admin_keyring"])
    if with_module and o.enable_module:
        bootstrap.enable_module(state)
    state["module_enabled"] = with_module and o.enable_module
    state["phase"] = "up"
    state["up_seconds"] = round(time.monotonic() - t0, 1)
    state["timings"] = timings
    save_state(state["dir"], state)
    log.info("scale lab up", osds=o.osds, hosts=o.hosts, pgs=o.pgs, **timings)
