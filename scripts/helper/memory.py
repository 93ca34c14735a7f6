"""Memory sources for the report: the whole host (psutil) or a memory cgroup (v1 or v2).

`read_cgroup_memory(path)` takes the cgroup's directory, so tests point it at a temp dir:
  v2: memory.current, memory.max ("max" = no limit)
  v1: memory.usage_in_bytes, memory.limit_in_bytes (a page-rounded 2**63-1 = no limit)
Without a limit the host's RAM is the total. used = usage; available = total - used.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

import psutil

# v1 reports "no limit" as LONG_MAX rounded down to the page size; anything this large is none
_V1_UNLIMITED = 1 << 60


class MemorySourceError(OSError):
    pass


def read_host_memory() -> Dict[str, Any]:
    vm = psutil.virtual_memory()
    total, available = int(vm.total), int(vm.available)
    return {"total": total, "used": max(0, total - available), "available": available,
            "limit": None, "swap_total": int(psutil.swap_memory().total), "source": "host"}


def _read_int(path: str) -> Optional[int]:
    with open(path) as f:
        raw = f.read().strip()
    if raw == "max":
        return None
    return int(raw)


def cgroup_version(path: str) -> int:
    if os.path.exists(os.path.join(path, "memory.current")):
        return 2
    if os.path.exists(os.path.join(path, "memory.usage_in_bytes")):
        return 1
    raise MemorySourceError("%s is not a memory cgroup (no memory.current or "
                            "memory.usage_in_bytes)" % path)


def read_cgroup_memory(path: str, host_total: Optional[int] = None) -> Dict[str, Any]:
    """Usage and limit of the memory cgroup at `path` (its directory)."""
    version = cgroup_version(path)
    if version == 2:
        usage = _read_int(os.path.join(path, "memory.current")) or 0
        limit = _read_int(os.path.join(path, "memory.max"))
    else:
        usage = _read_int(os.path.join(path, "memory.usage_in_bytes")) or 0
        limit = _read_int(os.path.join(path, "memory.limit_in_bytes"))
        if limit is not None and limit >= _V1_UNLIMITED:
            limit = None
    if host_total is None:
        host_total = int(psutil.virtual_memory().total)
    total = limit if limit is not None else host_total
    return {"total": int(total), "used": int(usage), "available": max(0, int(total) - int(usage)),
            "limit": limit, "swap_total": 0, "source": "cgroup"}


def read_memory(cgroup: Optional[str] = None) -> Dict[str, Any]:
    return read_cgroup_memory(cgroup) if cgroup else read_host_memory()
