"""Durable JSON files for the shells (helper state dir, lab.json): write atomically or not at all."""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Optional


def atomic_write_json(path: str, data: Any, indent: Optional[int] = None) -> None:
    """Write `data` as JSON to `path` via a temp file in the same directory, fsync, rename:
    a reader sees the old file or the new one, never a torn one."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(path) + ".",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=indent, sort_keys=True)
            if indent is not None:
                f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
