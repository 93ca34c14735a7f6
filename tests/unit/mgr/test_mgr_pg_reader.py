"""A slow PG stats read runs on its own thread: the tick that asks for it plans on the last
PG stats and returns, a later tick takes the new ones; a read that failed fails the tick
that takes it, and the next due read tries again. The Module class runs over the recorded
lab (mgrlab)."""
from __future__ import annotations

import threading

import pytest

from recovery import pgreader, tickreads

from mgrlab import LabModule  # see conftest.py


class Gate(object):
    """get("pg_dump") waits until opened, or raises `error` once opened."""

    def __init__(self, m):
        self.m, self.open, self.error, self.calls = m, threading.Event(), None, 0
        self._get = m.get
        m.get = self.get

    def get(self, what):
        if what == "pg_dump" and threading.current_thread().name == "recovery-pgs":
            self.calls += 1
            assert self.open.wait(30)
            if self.error is not None:
                raise self.error
        return self._get(what)


@pytest.fixture
def slow(monkeypatch):
    """Every read counts as slow and is due at once."""
    monkeypatch.setattr(tickreads, "BACKGROUND_READ_S", 0.0)
    monkeypatch.setattr(tickreads, "BUSY_PG_READ_SHARE", float("inf"))
    m = LabModule()
    m._tick(True)                      # the first read: inline, there is nothing to plan on
    return m


def new_epoch(m):
    m.world["osd_map"] = dict(m.world["osd_map"], epoch=m.world["osd_map"]["epoch"] + 1)
    return m.world["osd_map"]["epoch"]


def test_a_slow_read_runs_apart_and_the_tick_after_it_takes_it(slow):
    m, gate = slow, Gate(slow)
    first = m._reads["pgs"]
    epoch = new_epoch(m)
    m._tick(False)                     # asks for the read; plans on the last PG stats
    assert m._pg_reader.busy() and gate.calls == 1
    assert m._reads["pgs"] is first and m._reads["pgs_epoch"] == epoch - 1
    m._tick(False)                     # the read still runs: no second one is started
    assert gate.calls == 1 and m._reads["pgs"] is first
    gate.open.set()
    m._pg_reader.join(30)
    m._tick(False)
    assert m._reads["pgs"] is not first and m._reads["pgs_epoch"] == epoch
    assert m._reads["pgs"]["pg_stats"] == first["pg_stats"]     # the same recorded PGs
    assert m.meter.doc()["background"]["pg_dump"]["count"] == 1


def test_a_failed_read_fails_the_tick_that_takes_it_and_is_tried_again(slow):
    m, gate = slow, Gate(slow)
    first = m._reads["pgs"]
    new_epoch(m)
    gate.error = OSError("mgr went away")
    m._tick(False)
    gate.open.set()
    m._pg_reader.join(30)
    with pytest.raises(OSError, match="mgr went away"):
        m._tick(False)
    assert m._reads["pgs"] is first
    gate.error = None
    m._tick(False)                     # asks again
    m._pg_reader.join(30)
    m._tick(False)
    assert gate.calls == 2 and m._reads["pgs"] is not first


def test_a_fast_read_stays_in_the_tick(monkeypatch):
    monkeypatch.setattr(tickreads, "BUSY_PG_READ_SHARE", float("inf"))
    m = LabModule()
    m._tick(True)
    assert m._reads["pgs_cost"] < pgreader.BACKGROUND_READ_S
    first = m._reads["pgs"]
    epoch = new_epoch(m)
    m._tick(False)
    assert not m._pg_reader.busy()
    assert m._reads["pgs"] is not first and m._reads["pgs_epoch"] == epoch
