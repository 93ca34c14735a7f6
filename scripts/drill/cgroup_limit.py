"""Set / clear the memory limit of a lab host's cgroup (v1 and v2) for the drill's OOM case.

The limit goes on the failed hosts only, while their OSDs are dead, and is cleared at the end.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

from ..common import cgroup


def set_limit(state: Dict[str, Any], host: str, limit: Optional[int]) -> None:
    """limit bytes, or None for unlimited."""
    cg = state["hosts"][host]["cgroup"]
    cgroup.set_limit(cg["path"], int(cg["version"]), limit)


def reset_peak(state: Dict[str, Any], host: str) -> bool:
    """Reset the kernel's usage watermark (v1 only; v2 memory.peak cannot be reset)."""
    cg = state["hosts"][host]["cgroup"]
    if int(cg["version"]) != 1:
        return False
    try:
        with open(os.path.join(cg["path"], "memory.max_usage_in_bytes"), "w") as f:
            f.write("0")
        return True
    except OSError:
        return False
