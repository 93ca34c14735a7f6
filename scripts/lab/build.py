"""`up`: build a lab cluster under one directory; a failed `up` tears down what it made."""
from __future__ import annotations

import os
import shutil
import socket
import sys
import sysconfig
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Optional

import structlog

from . import bootstrap, cgroups, launch, names, netns, procs, release, teardown
from .conf import render_conf
from .state import save_state, update_state

log = structlog.get_logger("lab.up")


class LabExists(RuntimeError):
    """The directory already holds a lab cluster."""


MGR_IDS = ("x", "y", "z")


class LabUsageError(ValueError):
    """Options that cannot make a lab (nothing was created)."""


@dataclass
class LabOptions:
    hosts: int = 3
    racks: int = 2
    osds_per_host: int = 2
    objectstore: str = "bluestore"
    host_mem_limit: Optional[int] = None
    netns: bool = False
    helpers: bool = True
    module_dir: Optional[str] = None
    pg_num: int = 32
    health_timeout: float = 300
    mtu: int = 9000
    ceph: str = "pacific"
    mgrs: int = 1          # mgr.x active, then standbys mgr.y, mgr.z


def holds_cluster(lab_dir: str) -> bool:
    return any(os.path.exists(os.path.join(lab_dir, p)) for p in ("lab.json", "ceph.conf", "data"))


def pool_size(hosts: int) -> tuple:
    """(size, min_size): 3/2 with 3+ hosts (failure domain host); fewer hosts, fewer copies."""
    size = min(3, hosts)
    return size, max(1, size - 1)


def pick_port(addr: str, lab_dir: str, exclude: Iterable[int] = ()) -> int:
    """A TCP port free on addr, searched from a start derived from the lab directory."""
    start, exclude = 10000 + int(names.lab_hash(lab_dir), 16) % 6000, set(exclude)
    for port in list(range(start, 16000)) + list(range(10000, start)):
        if port in exclude:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((addr, port))
                return port
            except OSError:
                continue
    raise RuntimeError(f"no free TCP port on {addr} for the mon")


def initial_state(d: str, opts: LabOptions, root: Optional[str] = None) -> Dict[str, Any]:
    """Topology, kernel names, paths and the OSD argv: everything before anything is made."""
    topo = names.topology(opts.hosts, opts.racks, opts.osds_per_host)
    kn = names.kernel_names(d, topo)
    version = cgroups.detect_version()
    conf = os.path.join(d, "ceph.conf")
    state: Dict[str, Any] = {
        "version": 1, "dir": d, "conf": conf, "phase": "building",
        "ceph": opts.ceph, "root": root,
        "admin_keyring": os.path.join(d, "admin.keyring"),
        "helper_keyring": os.path.join(d, "helper.keyring"),
        "fsid": str(uuid.uuid4()), "mon_addr": None, "objectstore": opts.objectstore,
        "netns": opts.netns, "pool": "lab", "pool_size": pool_size(opts.hosts),
        "module_dir": opts.module_dir,
        # this project's commands for a host release: beside the Python that brings the lab up
        # (a virtualenv's bin, or /usr/bin for the packages), whoever drives the lab later
        "bin": os.path.dirname(sys.executable),
        "pythonpath": sysconfig.get_paths()["purelib"], "names": kn,
        "cgroup_version": version, "subnet": None, "bridge_addr": None,
        "hosts": {}, "osds": {}, "pids": {}}
    for host, info in topo.items():
        state["hosts"][host] = {
            "rack": info["rack"], "osds": info["osds"], "mem_limit": opts.host_mem_limit,
            "cgroup": {"version": version, "path": cgroups.group_path(version, kn["cgroup"], host)},
            "netns": kn["netns"][host] if opts.netns else None, "addr": None}
        for osd_id in info["osds"]:
            state["osds"][str(osd_id)] = {
                "host": host, "argv": launch.daemon_argv(state, "osd", str(osd_id)),
                "pid_file": os.path.join(d, "run", f"osd.{osd_id}.pid"),
                "log_file": os.path.join(d, "log", f"osd.{osd_id}.log"),
                "data": os.path.join(d, "data", f"osd.{osd_id}")}
    return state


# The kernel limits Ceph's ceph-osd package sets (/etc/sysctl.d/30-ceph-osd.conf), which a
# booted host applies but an install without a reboot does not: each BlueStore OSD takes
# thousands of the machine's 65,536 default AIO contexts, and past them an OSD's mount fails
# with EAGAIN ("try increasing /proc/sys/fs/aio-max-nr"). Only ever raised, never lowered.
OSD_SYSCTLS = (("fs/aio-max-nr", 1048576), ("kernel/pid_max", 4194304))


def raise_osd_sysctls(root: str = "/proc/sys") -> None:
    for name, want in OSD_SYSCTLS:
        path = os.path.join(root, name)
        with open(path) as f:
            have = int(f.read().split()[0])
        if have < want:
            with open(path, "w") as f:
                f.write(str(want))
            log.info("raised a kernel limit to Ceph's OSD setting", sysctl=name, was=have,
                     now=want)


def make_kernel_objects(state: Dict[str, Any], opts: LabOptions) -> None:
    """Ceph's OSD kernel limits; memory cgroups per host; with netns, the bridge, namespaces
    and veths."""
    raise_osd_sysctls()
    kn = state["names"]
    for host in state["hosts"]:
        cgroups.create(state["cgroup_version"], kn["cgroup"], host, opts.host_mem_limit)
    if opts.netns:
        subnet = names.pick_subnet(state["dir"], netns.used_networks())
        bridge_addr, addrs = names.host_addrs(subnet, state["hosts"])
        state.update(subnet=str(subnet), bridge_addr=bridge_addr)
        for host, addr in addrs.items():
            state["hosts"][host]["addr"] = addr
        save_state(state["dir"], state)
        netns.create(kn, subnet, bridge_addr, addrs, opts.mtu)
        mon_ip, network = bridge_addr, str(subnet)
    else:
        mon_ip, network = "127.0.0.1", "127.0.0.0/8"
    state["mon_addr"] = f"{mon_ip}:{pick_port(mon_ip, state['dir'])}"
    state["public_network"] = network


def write_conf(state: Dict[str, Any], opts: LabOptions) -> None:
    osds = {int(o): {"host": i["host"], "rack": state["hosts"][i["host"]]["rack"],
                     "addr": state["hosts"][i["host"]]["addr"]} for o, i in state["osds"].items()}
    size, min_size = state["pool_size"]
    text = render_conf(state["dir"], state["fsid"], state["mon_addr"], opts.objectstore,
                       state["public_network"], osds,
                       extra_global={"osd_pool_default_size": str(size),
                                     "osd_pool_default_min_size": str(min_size)})
    with open(state["conf"], "w") as f:
        f.write(text)


UP_STEPS = 8   # the step() calls of one up(): a progress display's total


def up(lab_dir: str, opts: LabOptions,
       step: Callable[[str], None] = lambda what: None) -> Dict[str, Any]:
    """Build the lab; on any failure tear down everything made so far and re-raise.
    `step(what)` is called as each of UP_STEPS steps is done."""
    d = os.path.abspath(lab_dir)
    longest = os.path.join(d, "run", f"osd.{opts.hosts * opts.osds_per_host - 1}.asok")
    if len(longest) > 100:
        raise LabUsageError(f"lab directory path too long for unix sockets ({longest!r} > 100 "
                           "chars): pick a shorter --dir")
    try:
        names.topology(opts.hosts, opts.racks, opts.osds_per_host)
    except ValueError as exc:
        raise LabUsageError(str(exc)) from exc
    if opts.objectstore not in ("bluestore", "memstore"):
        raise LabUsageError(f"unknown objectstore {opts.objectstore!r}")
    try:
        root = release.ensure_root(opts.ceph)
    except ValueError as exc:
        raise LabUsageError(str(exc)) from exc
    step("%s chroot" % opts.ceph if root else "host packages")
    if holds_cluster(d):
        raise LabExists(f"{d} already holds a lab cluster; run `ceph-recovery-lab down --dir {d}`"
                        " first or pick another directory")
    os.makedirs(d, exist_ok=True)
    try:
        os.mkdir(os.path.join(d, "data"))  # atomic claim: a concurrent `up` here fails
    except FileExistsError as exc:
        raise LabExists(f"{d} already holds a lab cluster (or another `up` is building it)") \
            from exc
    try:
        for sub in ("run", "log", "crash"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        state = initial_state(d, opts, root)
        save_state(d, state)
        release.mount_lab(state)
        if root:
            state["pythonpath"] = release.install_core(state)
        _build(state, opts, step)
    except BaseException:
        log.error("up failed; tearing down what was made", dir=d)
        teardown.down(d)
        raise
    return state


def _build(state: Dict[str, Any], opts: LabOptions, step: Callable[[str], None]) -> None:
    t0 = time.monotonic()
    make_kernel_objects(state, opts)
    write_conf(state, opts)
    save_state(state["dir"], state)
    step("cgroups, namespaces, ceph.conf")
    start_mon(state, opts)
    step("mon")
    with_module = bootstrap.prepare_module_path(state)
    for ident in MGR_IDS[:opts.mgrs]:
        bootstrap.bootstrap_mgr(state, ident)
    log.info("mon and mgr started", mon=state["mon_addr"], t=round(time.monotonic() - t0, 1))
    step("mgr")
    bootstrap.create_osds(state)
    launch.wait_all_up(state, timeout=opts.health_timeout, require_running=True)
    log.info("all OSDs up", t=round(time.monotonic() - t0, 1))
    step("%d OSDs up" % len(state["osds"]))
    bootstrap.create_pool(state, opts.pg_num)
    bootstrap.balancer_off(state)
    bootstrap.create_helper_key(state)
    if with_module:
        bootstrap.enable_module(state)
    for module in release.DISABLED_MGR_MODULES.get(state["ceph"], ()):
        launch.ceph(state, "mgr", "module", "disable", module, json_out=False)
    launch.keep_mgr(state, release.MGR_WATCH_S.get(state["ceph"], 0.0))
    state["module_enabled"] = with_module
    step("pool, keys, module")
    launch.wait_pgs_clean(state, timeout=opts.health_timeout)
    launch.wait_health_ok(state, timeout=opts.health_timeout, fail_on=("MGR_MODULE_ERROR",))
    log.info("HEALTH_OK", t=round(time.monotonic() - t0, 1))
    step("PGs clean, HEALTH_OK")
    state["phase"] = "up"
    state["up_seconds"] = round(time.monotonic() - t0, 1)
    save_state(state["dir"], state)
    if opts.helpers:
        start_helpers(state)
    step("helpers" if opts.helpers else "no helpers")


def start_mon(state: Dict[str, Any], opts: LabOptions, attempts: int = 3) -> None:
    """Bootstrap the mon; if it dies at start (another lab took its port), use another port."""
    tried = []
    for attempt in range(attempts):
        try:
            bootstrap.bootstrap_mon(state)
            return
        except RuntimeError as exc:
            if "died at start" not in str(exc) or attempt == attempts - 1:
                raise
            log.warning("mon died at start; retrying on another port", error=str(exc)[:300])
        ip, port = state["mon_addr"].rsplit(":", 1)
        tried.append(int(port))
        shutil.rmtree(os.path.join(state["dir"], "data", "mon.a"), ignore_errors=True)
        state["mon_addr"] = f"{ip}:{pick_port(ip, state['dir'], tried)}"
        write_conf(state, opts)
        save_state(state["dir"], state)


def start_helpers(state: Dict[str, Any]) -> None:
    """One node helper per lab host; a missing or instantly-exiting helper only warns."""
    exe = release.tool_argv(state, "ceph-recovery-helper")[-1]
    if not os.path.exists(exe):
        log.warning("no node helper executable; helpers not started", path=exe)
        return
    pids = {host: launch.start_helper(state, host) for host in state["hosts"]}
    time.sleep(2)
    for host, pid in pids.items():
        if not procs.alive(pid):
            log.warning("node helper exited at once", host=host,
                        log=os.path.join(state["dir"], "log", f"helper.{host}.log"))
    update_state(state["dir"], lambda s: s.__setitem__("pids", state["pids"]))
