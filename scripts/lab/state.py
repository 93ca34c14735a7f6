"""The lab's shared state file, D/lab.json (schema version 1), written atomically.

Other tools (helper, drill, tests) read it to find the conf, keyrings, hosts, cgroups, network
namespaces and the argv of every OSD.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
from typing import Any, Callable, Dict, Iterator

from ceph_recovery_tools.jsonfile import atomic_write_json

STATE_VERSION = 1
STATE_FILE = "lab.json"


def state_path(lab_dir: str) -> str:
    return os.path.join(os.path.abspath(lab_dir), STATE_FILE)


def load_state(lab_dir: str) -> Dict[str, Any]:
    """Parsed D/lab.json; FileNotFoundError if no lab there, ValueError on a foreign version."""
    with open(state_path(lab_dir)) as f:
        state = json.load(f)
    if state.get("version") != STATE_VERSION:
        raise ValueError(f"{state_path(lab_dir)}: unsupported lab state version "
                         f"{state.get('version')!r} (expected {STATE_VERSION})")
    return state


def save_state(lab_dir: str, state: Dict[str, Any]) -> None:
    """Write D/lab.json atomically (temp file in the same dir, fsync, rename)."""
    atomic_write_json(state_path(lab_dir), state, indent=2)


@contextlib.contextmanager
def _locked(lab_dir: str) -> Iterator[None]:
    with open(os.path.join(os.path.abspath(lab_dir), ".lab.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def update_state(lab_dir: str, change: Callable[[Dict[str, Any]], None]) -> Dict[str, Any]:
    """Read-modify-write D/lab.json under a lock (several processes record pids in it)."""
    with _locked(lab_dir):
        state = load_state(lab_dir)
        change(state)
        save_state(lab_dir, state)
        return state
