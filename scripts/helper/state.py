"""The helper's state dir: executed instruction ids, last instructions, last OSD map view.

Every file is JSON written atomically (temp file + fsync + rename), so a crash or a kill -9
never leaves a half-written file: the worst case is the previous version.

- executed.json: instruction ids already carried out (the newest MAX_EXECUTED), so a helper
  restart never starts an OSD twice; plus `pending_done`, ids not yet acknowledged by the mgr.
- instructions.json: the mgr's last reply, with the time it was received (grants expire).
- view.json: the trimmed OSD map view of this host's OSDs (see gate.trim_view).
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from ceph_recovery_tools.jsonfile import atomic_write_json

from .defaults import DEFAULT_STATE_DIR  # noqa: F401 - re-exported
MAX_EXECUTED = 1000


def _atomic_write(path: str, data: Any) -> None:
    atomic_write_json(path, data)


def _read(path: str) -> Optional[Any]:
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except ValueError:
        return None      # unreadable: treat as absent (atomic writes make this unexpected)


class StateDir:
    def __init__(self, path: str = DEFAULT_STATE_DIR) -> None:
        self.path = path

    def ensure(self) -> "StateDir":
        os.makedirs(self.path, mode=0o750, exist_ok=True)
        return self

    def _f(self, name: str) -> str:
        return os.path.join(self.path, name)

    # -- executed instruction ids ------------------------------------------------------
    def _executed(self) -> Dict[str, List[str]]:
        d = _read(self._f("executed.json")) or {}
        return {"ids": list(d.get("ids", [])), "pending_done": list(d.get("pending_done", []))}

    def executed_ids(self) -> List[str]:
        return self._executed()["ids"]

    def pending_done(self) -> List[str]:
        return self._executed()["pending_done"]

    def mark_executed(self, instruction_id: str, ok: bool = False) -> None:
        """Record the id BEFORE carrying it out (at most once, even across a crash);
        ok=True also queues it for the report's `done` list."""
        d = self._executed()
        if instruction_id not in d["ids"]:
            d["ids"] = (d["ids"] + [instruction_id])[-MAX_EXECUTED:]
        if ok and instruction_id not in d["pending_done"]:
            d["pending_done"].append(instruction_id)
        _atomic_write(self._f("executed.json"), d)

    def mark_done(self, instruction_id: str) -> None:
        """The instruction was carried out: report it in `done` until the mgr drops it."""
        self.mark_executed(instruction_id, ok=True)

    def acknowledge(self, still_listed: List[str]) -> None:
        """Stop reporting done ids that the mgr no longer lists in its instructions."""
        d = self._executed()
        keep = [i for i in d["pending_done"] if i in set(still_listed)]
        if keep != d["pending_done"]:
            d["pending_done"] = keep
            _atomic_write(self._f("executed.json"), d)

    # -- cached instructions and OSD map view -------------------------------------------
    def save_instructions(self, reply: Dict[str, Any], received_at: float) -> None:
        _atomic_write(self._f("instructions.json"), {"received_at": received_at, "reply": reply})

    def load_instructions(self) -> Optional[Dict[str, Any]]:
        return _read(self._f("instructions.json"))

    def save_view(self, dump: Dict[str, Any], tree: Dict[str, Any], host: str,
                  osds: List[int], saved_at: float) -> None:
        _atomic_write(self._f("view.json"), {"saved_at": saved_at, "host": host, "osds": osds,
                                             "osd_dump": dump, "osd_tree": tree})

    def load_view(self) -> Optional[Dict[str, Any]]:
        return _read(self._f("view.json"))
