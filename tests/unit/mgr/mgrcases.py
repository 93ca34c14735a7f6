"""Builders for the mgr engine's tests (registered by conftest.py as `mgrcases`): recorded lab
dumps, helper reports, and the recording stand-in for the Ceph side (cephfake.FakeCeph);
everything else the tests run is real."""
from __future__ import annotations

import json
import os

import pytest

from ceph_recovery.protocol import parse_report
from cephfake import FakeCeph  # noqa: F401 (the tests take it from here too)
from recovery import engine as engine_mod  # see conftest.py

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "mgr")


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def report(host, osds, done=(), used=50 << 20, t=1000.0):
    return parse_report({"version": 1, "host": host, "time": t, "seq": 1,
                         "memory": {"total": 8 << 30, "used": used, "available": 6 << 30,
                                    "limit": None, "source": "host"},
                         "osds": [dict(o) for o in osds], "done": list(done)})


RUNNING = lambda i, rss: {"id": i, "process": "running", "rss": rss, "started_at": 990.0}  # noqa
STOPPED = lambda i: {"id": i, "process": "stopped"}  # noqa


@pytest.fixture
def world():
    return {"map": load("osdmap_h3down.json"), "tree": load("tree_h3down.json"),
            "pgs": load("pgdump_h3down.json")}


def make_engine(osd_map=None):
    ceph = FakeCeph(osd_map)
    eng = engine_mod.Engine(ceph, lambda *a, **k: None)
    return eng, ceph


def all_helpers(eng, now, h3_osds, done=()):
    eng.helper_report(report("h1", [RUNNING(0, 70 << 20), RUNNING(1, 70 << 20)], t=now), now)
    eng.helper_report(report("h2", [RUNNING(2, 70 << 20), RUNNING(3, 70 << 20)], t=now), now)
    return eng.helper_report(report("h3", h3_osds, done=done, t=now), now)


def tick(eng, world, now):
    eng.tick(world["map"], world["tree"], world["pgs"], now, lambda: world["map"]["epoch"])
