"""Builders for the mgr engine's tests (registered by conftest.py as `mgrcases`): recorded lab
dumps, helper reports, and a recording stand-in for the Ceph side (mon_command / osd_command
applied to the OSD map dict like the mon would); everything else the tests run is real."""
from __future__ import annotations

import json
import os

import pytest

from ceph_recovery.protocol import parse_report
from recovery import engine as engine_mod  # see conftest.py

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "mgr")


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


class FakeCeph(object):
    """Records commands and applies the flag commands to the OSD map dict like the mon would
    (per-OSD state, cluster flags, crush_node_flags; epoch + 1 per change)."""

    def __init__(self, osd_map=None):
        self.calls = []
        self.map = osd_map

    def mon_command(self, cmd):
        self.calls.append(cmd)
        if self.map is not None:
            self._apply(cmd)
        return 0, "", ""

    def _apply(self, cmd):
        m, p = self.map, cmd["prefix"]
        if p in ("osd add-noup", "osd rm-noup"):
            for name in cmd["ids"]:
                osd = next(o for o in m["osds"] if o["osd"] == int(name.split(".")[1]))
                osd["state"] = [s for s in osd["state"] if s != "noup"] + (
                    ["noup"] if p == "osd add-noup" else [])
        elif p in ("osd set", "osd unset"):
            flags = set(m["flags_set"]) - {cmd["key"]} | ({cmd["key"]} if p == "osd set" else set())
            m["flags_set"] = sorted(flags)
        elif p in ("osd set-group", "osd unset-group"):
            for b in cmd["who"]:
                fl = set(m["crush_node_flags"].get(b, [])) - {"noup"}
                fl |= {"noup"} if p == "osd set-group" else set()
                m["crush_node_flags"][b] = sorted(fl)
                if not fl:
                    del m["crush_node_flags"][b]
        else:
            return
        m["epoch"] += 1

    def osd_command(self, osd, cmd, timeout):
        self.calls.append(dict(cmd, osd=osd))
        return 0, "", ""


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
