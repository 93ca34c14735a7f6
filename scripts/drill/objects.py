"""Checksummed objects in the lab pool: written before and during the outage, verified after."""
from __future__ import annotations

import errno
import hashlib
import os
from typing import Any, Dict, List, Tuple

from tenacity import retry, stop_after_attempt, wait_fixed


class ObjectSet(object):
    """Objects written by the drill: name -> sha256 of the payload."""

    def __init__(self, ioctx: Any, size: int = 4096) -> None:
        self.ioctx = ioctx
        self.size = size
        self.sums: Dict[str, str] = {}

    @retry(stop=stop_after_attempt(5), wait=wait_fixed(1), reraise=True)
    def _put(self, name: str, data: bytes) -> None:
        self.ioctx.write_full(name, data)

    def write(self, prefix: str, count: int) -> int:
        """Write `count` objects of random bytes; returns how many were written."""
        for i in range(count):
            name = "%s-%06d" % (prefix, i)
            data = os.urandom(self.size)
            self._put(name, data)
            self.sums[name] = hashlib.sha256(data).hexdigest()
        return count

    def write_aio(self, prefix: str, count: int, window: int = 64) -> int:
        """Same as write() with up to `window` writes in flight (faster on the lab)."""
        pending: List[Tuple[str, Any]] = []
        for i in range(count):
            name = "%s-%06d" % (prefix, i)
            data = os.urandom(self.size)
            pending.append((name, self.ioctx.aio_write_full(name, data)))
            self.sums[name] = hashlib.sha256(data).hexdigest()
            if len(pending) >= window:
                self._drain(pending)
        self._drain(pending)
        return count

    def _drain(self, pending: List[Tuple[str, Any]], what: str = "write",
               ok: Tuple[int, ...] = ()) -> None:
        for name, comp in pending:
            comp.wait_for_complete()
            rc = comp.get_return_value()
            if rc < 0 and rc not in ok:
                raise IOError("%s of %s failed: %d" % (what, name, rc))
        del pending[:]

    def remove(self, window: int = 64) -> int:
        """Remove every object written (an object already gone counts as removed), so that
        what later recoveries move stays the size of their own writes; returns how many."""
        pending: List[Tuple[str, Any]] = []
        for name in sorted(self.sums):
            pending.append((name, self.ioctx.aio_remove(name)))
            if len(pending) >= window:
                self._drain(pending, "removal", (-errno.ENOENT,))
        self._drain(pending, "removal", (-errno.ENOENT,))
        n, self.sums = len(self.sums), {}
        return n

    def verify(self) -> Tuple[int, List[str]]:
        """(objects that read back with their checksum, names that did not)."""
        ok, bad = 0, []
        for name, want in sorted(self.sums.items()):
            try:
                data = self.ioctx.read(name, self.size + 1)
            except Exception:  # rados.Error and friends: counted as bad
                bad.append(name)
                continue
            if len(data) == self.size and hashlib.sha256(data).hexdigest() == want:
                ok += 1
            else:
                bad.append(name)
        return ok, bad
