"""`down`: stop only this lab's processes (by pid), remove its cgroups, namespaces, bridge, nft
tables and data. Safe on a partially built lab and when lab.json is missing: every kernel object
is named from a hash of the directory, and every process of the lab carries the lab's conf path
or directory in its argv, or sits in one of the lab's cgroups or namespaces.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any, Dict, List, Optional, Set

import psutil
import structlog

from . import cgroups, names, netns, procs, release
from .state import load_state

log = structlog.get_logger("lab.down")
KEEP = ("log",)


def _load(d: str) -> Optional[Dict[str, Any]]:
    try:
        return load_state(d)
    except (OSError, ValueError):
        return None


def lab_pids(d: str) -> Dict[str, Set[int]]:
    """Live processes of this lab by kind: helpers, osds, others (mon/mgr/stray)."""
    conf, h = os.path.join(d, "ceph.conf"), names.lab_hash(d)
    found: Dict[str, Set[int]] = {"helper": set(), "osd": set(), "other": set()}
    me = _self_and_ancestors()
    for proc in psutil.process_iter(["pid", "cmdline", "status"]):
        cmd = proc.info["cmdline"] or []
        if proc.info["status"] == psutil.STATUS_ZOMBIE or proc.info["pid"] in me:
            continue
        ours = conf in cmd or (d in cmd and "--lab-dir" in cmd)
        if ours:
            found[_kind(cmd)].add(proc.info["pid"])
    for pid in _cgroup_pids(d) | _netns_pids(h):
        if procs.alive(pid) and pid not in me:
            try:
                found[_kind(psutil.Process(pid).cmdline())].add(pid)
            except psutil.Error:
                pass
    return found


def _self_and_ancestors() -> Set[int]:
    """Never stop the caller or its parents (e.g. a drill run with --lab-dir D calling down)."""
    me = psutil.Process()
    return {me.pid} | {p.pid for p in me.parents()}


def _kind(cmd: List[str]) -> str:
    text = " ".join(cmd)
    if "ceph-recovery-helper" in text:
        return "helper"
    return "osd" if "ceph-osd" in text else "other"


def _cgroup_pids(d: str) -> Set[int]:
    group = str(names.kernel_names(d, [])["cgroup"])
    pids: Set[int] = set()
    for version in (1, 2):
        parent = cgroups.group_path(version, group)
        if os.path.isdir(parent):
            for dirpath, _dirs, _files in os.walk(parent):
                pids.update(cgroups.procs(dirpath))
    return pids


def _netns_pids(h: str) -> Set[int]:
    pids: Set[int] = set()
    for ns in _lab_netns(h):
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        pids.update(int(x) for x in out.stdout.split() if x.isdigit())
    return pids


def _lab_netns(h: str) -> List[str]:
    return [ns for ns in netns.existing_netns() if ns.startswith(f"crlab-{h}-")]


def stop_processes(d: str) -> List[int]:
    """Helpers first (they could restart OSDs), then OSDs, then mon/mgr; survivors returned."""
    left: List[int] = []
    for kind in ("helper", "osd", "other"):
        pids = lab_pids(d)[kind]
        if pids:
            log.info("stopping", kind=kind, pids=sorted(pids))
            left += procs.terminate(pids, timeout=20)
    return left


def _hosts(d: str, state: Optional[Dict[str, Any]]) -> List[str]:
    hosts = set(state["hosts"]) if state else set()
    prefix = f"crlab-{names.lab_hash(d)}-"
    hosts.update(ns[len(prefix):] for ns in netns.existing_netns() if ns.startswith(prefix))
    return sorted(hosts)


def _unmount_under(d: str) -> List[str]:
    with open("/proc/mounts") as f:
        points = [line.split()[1] for line in f]
    left = []
    for point in sorted((p for p in points if p.startswith(d + "/")), reverse=True):
        if subprocess.run(["umount", "-l", point], capture_output=True).returncode != 0:
            left.append(point)
    return left


def remove_files(d: str) -> None:
    """Everything under the lab dir except the logs (kept for post-mortems)."""
    if not os.path.isdir(d):
        return
    for entry in os.listdir(d):
        if entry in KEEP:
            continue
        path = os.path.join(d, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def down(lab_dir: str) -> Dict[str, List[Any]]:
    """Tear the lab down; returns what could NOT be removed (all lists empty = clean)."""
    d = os.path.abspath(lab_dir)
    state = _load(d)
    kn = names.kernel_names(d, _hosts(d, state))
    left_procs = stop_processes(d)
    left_cg: List[str] = []
    for version in (1, 2):
        left_cg += cgroups.remove(version, str(kn["cgroup"]))
    left_net = netns.remove(kn, list(kn["netns"]))
    left_mounts = _unmount_under(d) + release.unmount_lab(d)
    remove_files(d)
    report = {"processes": left_procs, "cgroups": left_cg, "netns": left_net,
              "mounts": left_mounts}
    log.info("down", dir=d, **report)
    return report
