"""budget policies: (host, budget) -> bytes of host.mem_used allowed during recovery.

The policy name is the Budget's kind (`--budget 80%` -> "fraction", `--budget 24G` -> "bytes",
`--budget auto` -> "auto": a fraction, the core passing the one its auto state gives,
ceph_recovery.autobudget).
`reserve_bytes` is always subtracted (memory kept for the system); the result is never < 0.
"""
from __future__ import annotations

from ceph_recovery.model import Budget, HostMem


def fraction(host: HostMem, budget: Budget) -> int:
    """A fraction of the host's RAM, or of its cgroup limit when memory is cgroup-accounted."""
    return max(0, int(host.cap * float(budget.value)) - int(budget.reserve_bytes))


def absolute(host: HostMem, budget: Budget) -> int:
    """A fixed number of bytes per host (capped at what the host or cgroup has)."""
    return max(0, min(int(budget.value), int(host.cap)) - int(budget.reserve_bytes))


BUDGET = {"auto": fraction, "fraction": fraction, "bytes": absolute}
