"""One reader of a memory cgroup (v1 or v2), for the node helper and the lab.

v2 files: memory.current, memory.max ("max" = no limit), memory.peak, memory.events.
v1 files: memory.usage_in_bytes, memory.limit_in_bytes (no limit = LONG_MAX rounded down to
the page size), memory.max_usage_in_bytes, memory.oom_control.
"""
from __future__ import annotations

import os
from typing import Dict, Optional

# anything this large in a v1 limit means "no limit"
_V1_UNLIMITED = 1 << 60


class NotAMemoryCgroup(OSError):
    pass


def version(path: str) -> int:
    """2 or 1 by the files in the group's directory; NotAMemoryCgroup when neither."""
    if os.path.exists(os.path.join(path, "memory.current")):
        return 2
    if os.path.exists(os.path.join(path, "memory.usage_in_bytes")):
        return 1
    raise NotAMemoryCgroup("%s is not a memory cgroup (no memory.current or "
                           "memory.usage_in_bytes)" % path)


def _int(path: str) -> Optional[int]:
    with open(path) as f:
        raw = f.read().strip()
    return None if raw == "max" else int(raw)


def _optional_int(path: str) -> Optional[int]:
    try:
        return _int(path)
    except OSError:
        return None


def _keyed(path: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    try:
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if value.strip().lstrip("-").isdigit():
                    out[key] = int(value)
    except OSError:
        pass
    return out


def set_limit(path: str, cg_version: int, limit: Optional[int]) -> None:
    """Limit the group at `path` to `limit` bytes; None lifts the limit."""
    name, unlimited = (("memory.limit_in_bytes", "-1") if cg_version == 1
                       else ("memory.max", "max"))
    with open(os.path.join(path, name), "w") as f:
        f.write(unlimited if limit is None else str(int(limit)))


def read(path: str, cg_version: Optional[int] = None) -> Dict[str, Optional[int]]:
    """{"usage", "limit" (None = unlimited), "oom_kill", "max_usage"} of the group at `path`.

    Usage and limit must be readable (OSError otherwise); the peak and the OOM count are 0
    or the usage when the kernel does not have them.
    """
    v = cg_version or version(path)

    def j(name: str) -> str:
        return os.path.join(path, name)
    if v == 1:
        usage = _int(j("memory.usage_in_bytes")) or 0
        limit = _int(j("memory.limit_in_bytes"))
        return {"usage": usage,
                "limit": None if limit is None or limit >= _V1_UNLIMITED else limit,
                "oom_kill": _keyed(j("memory.oom_control")).get("oom_kill", 0),
                "max_usage": _optional_int(j("memory.max_usage_in_bytes")) or 0}
    usage = _int(j("memory.current")) or 0
    peak = _optional_int(j("memory.peak"))
    return {"usage": usage, "limit": _int(j("memory.max")),
            "oom_kill": _keyed(j("memory.events")).get("oom_kill", 0),
            "max_usage": peak if peak is not None else usage}


class Watermark(object):
    """The group's peak usage from now on. v1: memory.max_usage_in_bytes, reset here. v2:
    memory.peak, reset for one open file (kernel 6.12+), which then reads the peak since the
    reset; an older kernel's memory.peak counts from the group's creation, so no peak is
    known (`read()` is None). Close it when done."""

    def __init__(self, path: str, cg_version: int) -> None:
        self.path, self.version, self._fd = path, cg_version, None
        self.known = False
        try:
            if cg_version == 1:
                with open(os.path.join(path, "memory.max_usage_in_bytes"), "w") as f:
                    f.write("0")
                self.known = True
                return
            self._fd = os.open(os.path.join(path, "memory.peak"), os.O_RDWR)
            os.write(self._fd, b"reset\n")
            self.known = True
        except OSError:
            self.close()

    def read(self) -> Optional[int]:
        if not self.known:
            return None
        try:
            if self._fd is None:
                return _optional_int(os.path.join(self.path, "memory.max_usage_in_bytes"))
            return int(os.pread(self._fd, 64, 0).decode().strip())
        except (OSError, ValueError):
            return None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            self.known = False
