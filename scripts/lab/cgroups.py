"""Memory cgroups standing in for each lab host's RAM (cgroup v1 or v2, whichever has memory).

v1: /sys/fs/cgroup/memory/<lab>/<host> with memory.limit_in_bytes.
v2: /sys/fs/cgroup/<lab>/<host> with memory.max (memory enabled in the parents' subtree_control).
A process must be started inside its group (moving a running one does not move its charge).
"""
from __future__ import annotations

import os
from typing import Dict, Optional

from ..common import cgroup
from ..common.wait import wait_until

V1_ROOT = "/sys/fs/cgroup/memory"
V2_ROOT = "/sys/fs/cgroup"


def detect_version() -> int:
    """1 when the v1 memory controller is mounted, 2 when the v2 hierarchy has memory, else 0."""
    if os.path.exists(os.path.join(V1_ROOT, "memory.limit_in_bytes")):
        return 1
    try:
        with open(os.path.join(V2_ROOT, "cgroup.controllers")) as f:
            if "memory" in f.read().split():
                return 2
    except OSError:
        pass
    return 0


def group_path(version: int, lab_group: str, host: Optional[str] = None) -> str:
    root = V1_ROOT if version == 1 else V2_ROOT
    parts = [root, lab_group] + ([host] if host else [])
    return os.path.join(*parts)


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def create(version: int, lab_group: str, host: str, limit: Optional[int]) -> str:
    """Make the host's group (and the lab's parent); set the limit if given; return its path."""
    if version not in (1, 2):
        raise RuntimeError("no memory cgroup controller (neither v1 nor v2) on this machine")
    parent = group_path(version, lab_group)
    os.makedirs(parent, exist_ok=True)
    if version == 2:
        _write(os.path.join(V2_ROOT, "cgroup.subtree_control"), "+memory")
        _write(os.path.join(parent, "cgroup.subtree_control"), "+memory")
    path = group_path(version, lab_group, host)
    os.makedirs(path, exist_ok=True)
    if limit:
        cgroup.set_limit(path, version, limit)
    return path


def procs(path: str) -> list:
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def remove(version: int, lab_group: str, timeout: float = 10.0) -> list:
    """rmdir every host group then the lab group; returns paths that could not be removed."""
    parent = group_path(version, lab_group)
    if not os.path.isdir(parent):
        return []
    failed = []
    for name in sorted(os.listdir(parent)):
        child = os.path.join(parent, name)
        if os.path.isdir(child) and not _rmdir_retry(child, timeout):
            failed.append(child)
    if not _rmdir_retry(parent, timeout):
        failed.append(parent)
    return failed


def _rmdir(path: str) -> bool:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    return True


def _rmdir_retry(path: str, timeout: float) -> bool:
    """rmdir, retried while the group is busy (its last processes are still exiting)."""
    return bool(wait_until(lambda: _rmdir(path), timeout, 0.2, ignore=(OSError,)))


def memory(version: int, path: str) -> Dict[str, Optional[int]]:
    """{"usage", "limit" (None = unlimited), "oom_kill", "max_usage"} of one group; zeros
    when the group is gone or unreadable."""
    try:
        return cgroup.read(path, version)
    except (OSError, ValueError):
        return {"usage": 0, "limit": None, "oom_kill": 0, "max_usage": 0}
