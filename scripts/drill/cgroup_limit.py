"""Set / clear the memory limit of a lab host's cgroup (v1 and v2) for the drill's OOM case.

The limit goes on the failed hosts only, while their OSDs are dead, and is cleared at the end.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

from ..common import cgroup


def set_limit(state: Dict[str, Any], host: str, limit: Optional[int]) -> None:
    """limit bytes, or None for unlimited."""
    cg = state["hosts"][host]["cgroup"]
    cgroup.set_limit(cg["path"], int(cg["version"]), limit)


def watermark(state: Dict[str, Any], host: str) -> cgroup.Watermark:
    """The host's peak memory usage from now on (cgroup.Watermark): taken as its limit is
    set, while its OSDs are dead, so that it counts nothing from before the limit."""
    cg = state["hosts"][host]["cgroup"]
    return cgroup.Watermark(cg["path"], int(cg["version"]))
