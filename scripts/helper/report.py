"""Build the helper's report (protocol v1, see ceph_recovery.protocol) from measured values.

`osd_process(osd_id, pid)` reads one OSD's process with psutil; `build_report` assembles and
validates the report (parse_report raises ProtocolError on anything the mgr would reject).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, Mapping, Optional

import psutil
from ceph_recovery import __version__, protocol
from ceph_recovery.model import DAEMON_REBUILDING

from . import asok, osdlog


def osd_process(osd_id: int, pid: Optional[int], asok_path: Optional[str] = None,
                log_path: Optional[str] = None, phases: Optional[osdlog.StartPhases] = None,
                pglog_dups: int = 0) -> Dict[str, Any]:
    """{"id", "process", "pid", "rss", "started_at"} for one OSD; stopped if pid is gone.
    A running OSD whose admin socket `asok_path` answers also gets "state" (asok.osd_state:
    "preboot" once its PGs are loaded); one whose log (`log_path`, read by `phases`) shows
    BlueStore rebuilding its allocator gets "rebuilding" while its socket names no state past
    "initializing" (the rebuild runs inside the mount, before the socket answers `status`).
    The rss is read after the state, so that an OSD reported in preboot is reported with its
    whole load-time footprint. `pglog_dups` (the dups warnings of its last start,
    dupscan.py) is sent when > 0, running or not."""
    out = _process(osd_id, pid, asok_path, log_path, phases)
    if pglog_dups > 0:
        out["pglog_dups"] = min(int(pglog_dups), protocol.MAX_PGLOG_DUPS)
    return out


def _process(osd_id: int, pid: Optional[int], asok_path: Optional[str],
             log_path: Optional[str], phases: Optional[osdlog.StartPhases]) -> Dict[str, Any]:
    if pid:
        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                if proc.status() != psutil.STATUS_ZOMBIE:
                    started = float(proc.create_time())
                    state = _state(osd_id, asok_path, log_path, phases, pid, started)
                    out = {"id": osd_id, "process": "running", "pid": pid,
                           "rss": int(proc.memory_info().rss), "started_at": started}
                    if state is not None:
                        out["state"] = state
                    return out
        except psutil.Error:
            pass
    return {"id": osd_id, "process": "stopped", "pid": None, "rss": 0, "started_at": None}


def _state(osd_id: int, asok_path: Optional[str], log_path: Optional[str],
           phases: Optional[osdlog.StartPhases], pid: int, started: float) -> Optional[str]:
    """The daemon's state: its admin socket's, unless its log shows the allocator rebuild and
    the socket says nothing later (no answer, or "initializing")."""
    rebuilding = phases is not None and phases.phase(osd_id, log_path, pid, started) \
        == DAEMON_REBUILDING
    state = asok.osd_state(asok_path)
    if rebuilding and state in (None, "initializing"):
        return DAEMON_REBUILDING
    return state


def build_report(host: str, seq: int, now: float, memory: Mapping[str, Any],
                 osds: Iterable[Mapping[str, Any]], done: Iterable[str] = (),
                 network: Optional[Mapping[str, Any]] = None,
                 instance: str = "") -> Dict[str, Any]:
    """A validated protocol-v1 report dict (ProtocolError if a field is malformed). `seq`
    numbers the reports of one helper process, `instance` names that process; the report
    names the protocol it speaks (`version`) and the helper's own version."""
    report = {"version": protocol.PROTOCOL_VERSION, "helper_version": __version__,
              "host": host, "time": float(now),
              "seq": int(seq), "instance": instance, "memory": dict(memory),
              "osds": sorted((dict(o) for o in osds), key=lambda o: o["id"]),
              "done": list(done), "network": dict(network or {})}
    protocol.parse_report(report)
    return report
