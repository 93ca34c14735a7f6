"""The shell's own cost, counted where it is spent: per tick its duration and the part of it
each phase took (plan() apart from the shell's view, acting and persisting), store writes and
their bytes, mon commands and the cluster reads it made; per command handler its duration;
per read made on a thread of its own (pgreader.py) its duration.
`ceph recovery perf -f json` shows it (the mgr-scale bench reads it).

No mgr_module import; thread-safe (the tick thread and the command thread both count).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Deque, Dict, List, Optional

KEEP_TICKS = 600
KEEP_CALLS = 20000


def _pct(values: List[float], q: float) -> Optional[float]:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def _add(series: Dict[str, Deque[float]], counts: Dict[str, int], name: str, seconds: float,
         keep: int) -> None:
    """One duration (kept in ms, the last `keep` of them) and one more to the count."""
    series.setdefault(name, deque(maxlen=keep)).append(seconds * 1000.0)
    counts[name] = counts.get(name, 0) + 1


def _summary(count: int, ms: Deque[float]) -> Dict[str, Any]:
    return {"count": count, "max_ms": round(max(ms), 3),
            "p50_ms": round(_pct(list(ms), 0.5) or 0.0, 3),
            "p99_ms": round(_pct(list(ms), 0.99) or 0.0, 3)}


class Meter(object):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.ticks: Deque[Dict[str, Any]] = deque(maxlen=KEEP_TICKS)
        self.calls: Dict[str, Deque[float]] = {}
        self.counts: Dict[str, int] = {}
        self.background: Dict[str, Deque[float]] = {}
        self.background_counts: Dict[str, int] = {}
        self.cur: Optional[Dict[str, Any]] = None
        self.tick_thread: Optional[int] = None
        self.outside = {"mon_commands": 0, "state_writes": 0}

    def tick_begin(self) -> None:
        with self.lock:
            self.tick_thread = threading.get_ident()
            self.cur = {"t": round(time.time(), 3), "state_writes": 0, "state_bytes": 0,
                        "written_bytes": 0, "mon_commands": 0, "mon_prefixes": {},
                        "reads": {}}
            self._t0 = time.monotonic()

    def tick_end(self, **facts: Any) -> None:
        with self.lock:
            if self.cur is None:
                return
            self.cur["tick_s"] = round(time.monotonic() - self._t0, 4)
            self.cur.update(facts)
            self.ticks.append(self.cur)
            self.cur = None

    def _here(self) -> Optional[Dict[str, Any]]:
        if self.cur is not None and threading.get_ident() == self.tick_thread:
            return self.cur
        return None

    def mon_command(self, prefix: str) -> None:
        with self.lock:
            cur = self._here()
            if cur is None:
                self.outside["mon_commands"] += 1
                return
            cur["mon_commands"] += 1
            cur["mon_prefixes"][prefix] = cur["mon_prefixes"].get(prefix, 0) + 1

    def state_write(self, entries: int, written: int, size: int) -> None:
        with self.lock:
            cur = self._here()
            if cur is None:
                self.outside["state_writes"] += 1
                return
            cur["state_writes"] += 1
            cur["written_bytes"] += written
            cur["state_entries"] = cur.get("state_entries", 0) + entries
            cur["state_bytes"] = max(cur["state_bytes"], size)

    def read(self, what: str, seconds: float) -> None:
        with self.lock:
            cur = self._here()
            if cur is not None:
                cur["reads"][what] = round(cur["reads"].get(what, 0.0) + seconds, 4)

    def phase(self, what: str, seconds: float) -> None:
        """Time the tick spent in one of its phases (view, plan, act, persist): plan() is
        the core, the others are the shell's."""
        with self.lock:
            cur = self._here()
            if cur is not None:
                phases = cur.setdefault("phases", {})
                phases[what] = round(phases.get(what, 0.0) + seconds, 4)

    def call(self, name: str, seconds: float) -> None:
        with self.lock:
            _add(self.calls, self.counts, name, seconds, KEEP_CALLS)

    def read_apart(self, what: str, seconds: float) -> None:
        """A read made on a thread of its own, outside every tick (pgreader.py)."""
        with self.lock:
            _add(self.background, self.background_counts, what, seconds, KEEP_TICKS)

    def doc(self, since: float = 0.0) -> Dict[str, Any]:
        with self.lock:
            ticks = [t for t in self.ticks if t["t"] >= since]
            calls = {n: _summary(self.counts[n], v) for n, v in self.calls.items() if v}
            apart = {n: _summary(self.background_counts[n], v)
                     for n, v in self.background.items() if v}
            cur = None
            if self.cur is not None:      # a tick still going: how long so far
                cur = dict(self.cur, running_s=round(time.monotonic() - self._t0, 3))
            return {"ticks": ticks, "handlers": calls, "outside": dict(self.outside),
                    "current": cur, "background": apart}


class timed(object):
    """with timed(meter, "helper-report"): ... counts the block's duration."""

    def __init__(self, meter: Meter, name: str) -> None:
        self.meter, self.name = meter, name

    def __enter__(self) -> "timed":
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.meter.call(self.name, time.monotonic() - self.t0)
