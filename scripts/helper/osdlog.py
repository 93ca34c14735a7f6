"""An OSD start phase only its log shows: BlueStore's allocator rebuild after an unclean stop.

Rules:
- With `bluestore_allocation_from_file` (true by default on Reef and Tentacle) an OSD that did
  not shut down cleanly (SIGKILL, OOM kill, power loss) finds no allocator to restore and
  rebuilds it by scanning every onode inside BlueStore's mount, before init() goes on to load
  its PGs: minutes to hours on a large OSD. Its admin socket does not answer `status` then (the
  OSD registers that command after the mount), so its log is the only witness.
- Start (dout 0, always logged), Ceph's prefix then
  `bluestore(<path>) _init_alloc::NCB::restore_allocator() failed! Run Full Recovery from
  ONodes (might take a while) ...`; end (dout 1: logged at debug_bluestore's default 1/5)
  `... ::Allocation Recovery was completed in <s> seconds, extent_count=<n>`; a failed
  rebuild logs `::NCB::Failed Recovery` and the OSD exits. The phase is REBUILDING from a
  start line to the next end line.
- Only lines of the running process instance count: a line whose timestamp (the prefix's
  first field, e.g. `2026-11-29T09:45:01.123+0000`) is older than the process's start (less
  CLOCK_SLACK_S) belongs to an earlier instance. A line without a timestamp is ignored.
- Cheap: per OSD the watcher keeps its read offset. Each call reads at most MAX_READ_BYTES
  appended since the last call, whole lines only; at the first sight of a process instance it
  starts BACKLOG_BYTES before the end of the file (the start line comes seconds after the
  process starts: the helper sees a new process within a cycle or two). A file that shrank or
  was replaced (log rotation) is read again from its start. A missing or unreadable log gives
  None: the phase is not known, and the report says nothing of it.
"""
from __future__ import annotations

import calendar
import os
import re
import time
from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

from ceph_recovery.model import DAEMON_REBUILDING

MAX_READ_BYTES = 256 * 1024
BACKLOG_BYTES = 256 * 1024
CLOCK_SLACK_S = 2.0
REBUILD_START = b"NCB::restore_allocator() failed! Run Full Recovery from ONodes"
REBUILD_END = (b"Allocation Recovery was completed in", b"NCB::Failed Recovery")
_STAMP = re.compile(rb"^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([+-]\d{4})?\s")
_SECONDS = re.compile(rb"completed in ([0-9.]+) seconds")


def line_time(line: bytes) -> Optional[float]:
    """The epoch seconds of a Ceph log line's timestamp (`2026-11-29T09:45:01.123+0000 ...`;
    without a zone, local time), or None when the line does not start with one."""
    m = _STAMP.match(line)
    if m is None:
        return None
    day, hh, mm, ss, frac, zone = m.groups()
    y, mo, d = (int(x) for x in day.split(b"-"))
    fields = (y, mo, d, int(hh), int(mm), int(ss))
    if zone is None:
        base = time.mktime(fields + (0, 0, -1))
    else:
        sign = -1 if zone[:1] == b"-" else 1
        offset = sign * (int(zone[1:3]) * 3600 + int(zone[3:5]) * 60)
        base = calendar.timegm(fields + (0, 0, 0)) - offset
    return base + (float(frac) if frac else 0.0)


def scan(lines: bytes, since: float, phase: Optional[str]) -> Tuple[Optional[str], Optional[float]]:
    """The phase after `lines` (whole lines), starting from `phase`, counting only lines
    stamped at or after `since`; and the duration an end line reported (None if none)."""
    if REBUILD_START not in lines and not any(e in lines for e in REBUILD_END):
        return phase, None
    seconds = None
    for line in lines.splitlines():
        start = REBUILD_START in line
        end = not start and any(e in line for e in REBUILD_END)
        if not (start or end):
            continue
        at = line_time(line)
        if at is None or at < since:
            continue
        if start:
            phase, seconds = DAEMON_REBUILDING, None
        else:
            phase = None
            m = _SECONDS.search(line)
            seconds = float(m.group(1)) if m else seconds
    return phase, seconds


@dataclass
class _Tail:
    instance: Tuple[int, float, str]     # (pid, process start, log path)
    inode: int = -1
    offset: int = -1                     # -1: not opened yet (start at the backlog)
    phase: Optional[str] = None
    seconds: Optional[float] = None      # the last completed rebuild's duration, if logged


class StartPhases:
    """Per OSD, the start phase its log shows for its running process (module docstring)."""

    def __init__(self, max_read: int = MAX_READ_BYTES, backlog: int = BACKLOG_BYTES) -> None:
        self.max_read, self.backlog = max_read, backlog
        self._tails: Dict[int, _Tail] = {}

    def phase(self, osd_id: int, path: Optional[str], pid: Optional[int],
              started_at: Optional[float]) -> Optional[str]:
        """DAEMON_REBUILDING while this process instance's log shows a rebuild under way,
        else None (none, ended, or the log cannot be read)."""
        if not path or not pid or started_at is None:
            self._tails.pop(osd_id, None)
            return None
        key = (int(pid), float(started_at), path)
        tail = self._tails.get(osd_id)
        if tail is None or tail.instance != key:
            tail = self._tails[osd_id] = _Tail(instance=key)
        try:
            chunk = self._read(tail, path)
        except OSError:
            return None
        if chunk:
            tail.phase, seconds = scan(chunk, float(started_at) - CLOCK_SLACK_S, tail.phase)
            tail.seconds = seconds if seconds is not None else tail.seconds
        return tail.phase

    def last_seconds(self, osd_id: int) -> Optional[float]:
        """The duration the end line of this instance's rebuild reported, if seen."""
        tail = self._tails.get(osd_id)
        return None if tail is None else tail.seconds

    def keep(self, osd_ids: Iterable[int]) -> None:
        """Forget the OSDs not in `osd_ids` (no longer on this host)."""
        keep = set(osd_ids)
        for osd_id in [o for o in self._tails if o not in keep]:
            del self._tails[osd_id]

    def _read(self, tail: _Tail, path: str) -> bytes:
        """The whole lines appended since the last read, at most max_read bytes."""
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            if tail.offset < 0:
                tail.inode, tail.offset = st.st_ino, max(0, st.st_size - self.backlog)
            elif st.st_ino != tail.inode or st.st_size < tail.offset:
                tail.inode, tail.offset = st.st_ino, 0      # rotated or truncated
            if st.st_size <= tail.offset:
                return b""
            f.seek(tail.offset)
            data = f.read(min(self.max_read, st.st_size - tail.offset))
        cut = data.rfind(b"\n")
        if cut < 0:
            if len(data) >= self.max_read:       # one line longer than a read: skip it
                tail.offset += len(data)
            return b""
        tail.offset += cut + 1
        return data[:cut + 1]
