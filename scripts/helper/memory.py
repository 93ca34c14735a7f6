"""Memory sources for the report: the whole host (psutil) or a memory cgroup (v1 or v2).

`read_cgroup_memory(path)` takes the cgroup's directory (read by common.cgroup), so tests
point it at a temp dir. Without a limit the host's RAM is the total. used = usage;
available = total - used; used is at most total.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import psutil

from ..common.cgroup import read as read_cgroup


def read_host_memory() -> Dict[str, Any]:
    vm = psutil.virtual_memory()
    total, available = int(vm.total), int(vm.available)
    return {"total": total, "used": max(0, total - available), "available": available,
            "limit": None, "swap_total": int(psutil.swap_memory().total), "source": "host"}


def read_cgroup_memory(path: str, host_total: Optional[int] = None) -> Dict[str, Any]:
    """Usage and limit of the memory cgroup at `path` (its directory)."""
    got = read_cgroup(path)
    usage, limit = got["usage"], got["limit"]
    if host_total is None:
        host_total = int(psutil.virtual_memory().total)
    total = limit if limit is not None else host_total
    # usage can pass a limit lowered below it until the kernel reclaims: reported as the
    # limit (full), never above it (the module refuses used > total)
    used = min(int(usage), int(total))
    return {"total": int(total), "used": used, "available": int(total) - used,
            "limit": limit, "swap_total": 0, "source": "cgroup"}


def read_memory(cgroup: Optional[str] = None) -> Dict[str, Any]:
    return read_cgroup_memory(cgroup) if cgroup else read_host_memory()
