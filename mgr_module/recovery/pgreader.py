"""The PG stats read on a thread of their own where a read is slow (BACKGROUND_READ_S), so
that no tick waits for one: at 100,000 PGs, get("pg_dump") and the slimming of what it
returns hold the mgr's interpreter for many seconds, while a tick decides on the helpers'
fresh memory reports. The tick asks for a read, goes on with the last PG stats it has, and
takes the new ones at its first turn after they stand (tickreads.TickReads._cluster).

At most one read runs at a time. A read that raised hands its exception to the tick that
takes it, so that it fails as an inline read would (module.serve logs it; the next due read
tries again).

No mgr_module import.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional, Tuple

# a read whose last one took this long or more runs on its own thread (a small cluster's
# read stays inline: the tick then plans on PG stats of its own epoch)
BACKGROUND_READ_S = 0.5

# what a finished read hands over: (the slim PG stats, the OSD map epoch and the monotonic
# time at which it was asked for, its cost in seconds)
Done = Tuple[Any, int, float, float]


class PgReader(object):
    """`start(epoch, t)` runs `read()` on a new thread; `take()` returns what the last one
    read, once (None while it runs or when none ran); `busy()`: one is running."""

    def __init__(self, read: Callable[[], Any], record: Callable[[float], None],
                 name: str = "recovery-pgs") -> None:
        self._read = read
        self._record = record
        self._name = name
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._done: Optional[Done] = None
        self._error: Optional[BaseException] = None

    def busy(self) -> bool:
        with self._lock:
            return self._thread is not None and self._thread.is_alive()

    def start(self, epoch: int, asked: float) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._run, args=(epoch, asked),
                                            name=self._name, daemon=True)
            self._thread.start()

    def _run(self, epoch: int, asked: float) -> None:
        t0 = time.monotonic()
        try:
            pgs = self._read()
        except Exception as e:   # handed to the tick that takes it (module.serve logs it)
            with self._lock:
                self._error, self._done = e, None
            return
        cost = time.monotonic() - t0
        self._record(cost)
        with self._lock:
            self._done, self._error = (pgs, epoch, asked, cost), None

    def take(self) -> Optional[Done]:
        with self._lock:
            done, error = self._done, self._error
            self._done = self._error = None
        if error is not None:
            raise error
        return done

    def join(self, timeout: Optional[float] = None) -> None:
        """Wait for a running read (tests; the module never waits for one)."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
