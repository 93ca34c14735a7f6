"""The PG log dups warning in an OSD's log: how many PGs its last start loaded with inflated
dups (ceph_recovery.dups decides what that means for its start).

Rules:
- While it loads a PG with more than 2 x osd_pg_log_dups_tracked dups (6000 by default), an
  OSD of 16.2.11+/17.2.4+ logs at level 0, once per such PG (src/osd/PGLog.h,
  read_log_and_missing):
    "... 0 read_log_and_missing WARN num of dups exceeded 6000. You can be hit by THE DUPS BUG
    https://tracker.ceph.com/issues/53729. Consider ceph-objectstore-tool --op trim-pg-log-dups"
  The line names no PG (PGLog's log prefix is empty).
- Every start begins with "ceph version ... process ceph-osd, pid N" (level 0, global_init):
  the count restarts at 0 there. So the count is that of the OSD's last start, whether it
  still runs or died loading (the OOM case this is for), and a trimmed OSD counts 0 again
  at its next start.
- The log is read incrementally (each cycle from where the last stopped, at most
  MAX_READ_BYTES), and from its last FIRST_TAIL_BYTES when first seen: a long-running OSD's
  start may be out of reach then, its count is 0 (no guess). A file that shrank or was
  replaced (rotation) is read from its start, the count going on: rotation is no start.
- A log that is missing or unreadable counts 0: cephadm logs to journald unless
  log_to_file is set, and this helper does not read the journal.
"""
from __future__ import annotations

import os
import re
from typing import Dict, Optional, Tuple

DUPS_RE = re.compile(rb"read_log_and_missing WARN num of dups exceeded \d+")
START_RE = re.compile(rb" ceph version \S+ .*, process ceph-osd, pid \d+")
FIRST_TAIL_BYTES = 16 << 20      # the end of a log first seen (its last start is near it)
MAX_READ_BYTES = 16 << 20        # read per OSD and cycle (a busy log catches up over cycles)
MAX_LINE_BYTES = 64 << 10        # a longer unterminated line is dropped, not kept growing


class _Cursor(object):
    """Where one OSD's log was read to, and the warnings counted since its last start."""

    def __init__(self, ident: Tuple[int, int], offset: int) -> None:
        self.ident = ident
        self.offset = offset
        self.partial = b""
        self.skip = offset > 0     # started mid-file: its first line is not whole
        self.count = 0


class DupsScanner(object):
    """Per OSD log path: the number of dups warnings since the OSD's last start."""

    def __init__(self) -> None:
        self._cursors: Dict[str, _Cursor] = {}

    def count(self, path: Optional[str]) -> int:
        """Read what was appended to `path` since the last call; the count so far."""
        if not path:
            return 0
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                cur = self._cursor(path, (st.st_dev, st.st_ino), st.st_size)
                f.seek(cur.offset)
                data = f.read(min(MAX_READ_BYTES, max(0, st.st_size - cur.offset)))
        except OSError:
            self._cursors.pop(path, None)
            return 0
        cur.offset += len(data)
        self._feed(cur, data)
        return cur.count

    def _cursor(self, path: str, ident: Tuple[int, int], size: int) -> _Cursor:
        cur = self._cursors.get(path)
        if cur is None:
            cur = _Cursor(ident, max(0, size - FIRST_TAIL_BYTES))
        elif cur.ident != ident or size < cur.offset:
            count = cur.count          # rotated or truncated: a new file, the same start
            cur = _Cursor(ident, 0)
            cur.count = count
        self._cursors[path] = cur
        return cur

    @staticmethod
    def _feed(cur: _Cursor, data: bytes) -> None:
        if cur.skip:                   # the rest of a line not read whole is no line
            cut = data.find(b"\n")
            if cut < 0:
                return
            data, cur.skip = data[cut + 1:], False
        lines = (cur.partial + data).split(b"\n")
        cur.partial = lines.pop()
        if len(cur.partial) > MAX_LINE_BYTES:
            cur.partial, cur.skip = b"", True
        for line in lines:
            cur.count = scan_line(line, cur.count)


def scan_line(line: bytes, count: int) -> int:
    """The count after one whole log line: 0 at a start, +1 at a dups warning."""
    if START_RE.search(line):
        return 0
    if DUPS_RE.search(line):
        return count + 1
    return count


def count_text(text: str) -> int:
    """The count over a whole log's text (tests, and the helper's one-shot use)."""
    count = 0
    for line in text.encode("utf-8", "replace").split(b"\n"):
        count = scan_line(line, count)
    return count
