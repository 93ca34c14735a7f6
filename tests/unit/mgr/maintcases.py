"""Builders for the maintenance and drill shell tests (registered by conftest.py as
`maintcases`): recorded lab dumps, the recording mon (cephfake.FakeCeph answering ok-to-stop
with a chosen verdict), helper reports, and one engine tick."""
from __future__ import annotations

import json
import os

import pytest

from ceph_recovery.protocol import parse_report
from cephfake import FakeCeph
from recovery import engine as engine_mod  # see conftest.py

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mgr")


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def Mon(osd_map, verdict=None):
    """The recording mon of these tests: cephfake.FakeCeph answering ok-to-stop with
    `verdict` (default: ok)."""
    return FakeCeph(osd_map, verdict or {"ok_to_stop": True})


def set_up(world, osd, up):
    o = next(x for x in world["map"]["osds"] if x["osd"] == osd)
    o["up"] = 1 if up else 0
    o["state"] = [s for s in o["state"] if s != "up"] + (["up"] if up else [])
    world["map"]["epoch"] += 1


def helper(eng, host, osds, now, done=()):
    """A helper report: `osds` {id: running?}."""
    rep = parse_report({"version": 1, "host": host, "time": now, "seq": 1,
                        "memory": {"total": 8 << 30, "used": 200 << 20,
                                   "available": 6 << 30, "limit": None, "source": "host"},
                        "osds": [{"id": i, "process": "running" if r else "stopped",
                                  "rss": (90 << 20) if r else 0, "started_at": 900.0}
                                 for i, r in sorted(osds.items())], "done": list(done)})
    return eng.helper_report(rep, now)


@pytest.fixture
def world():
    w = {"map": load("osdmap_h3down.json"), "tree": load("tree_h3down.json"),
         "pgs": load("pgdump_h3down.json")}
    for i in (4, 5):                     # h3 is up too: the lab with every OSD running
        set_up(w, i, True)
    return w


def make(world, verdict=None):
    mon = Mon(world["map"], verdict)
    eng = engine_mod.Engine(mon, lambda *a, **k: None)
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    return eng, mon


def tick(eng, world, now):
    eng.tick(world["map"], world["tree"], world["pgs"], now, lambda: world["map"]["epoch"])


def helpers(eng, now, h2=(True, True), done=()):
    helper(eng, "h1", {0: True, 1: True}, now)
    helper(eng, "h3", {4: True, 5: True}, now)
    return helper(eng, "h2", {2: h2[0], 3: h2[1]}, now, done)
