"""Missed PG log entries of a down OSD from the mgr's PG stats (recovery.pgtrack:
pg_versions, remember_versions, missed_entries): per PG, how far its log advanced since the
OSD went down (pg_stats `version`, "epoch'version"), capped by the PG's log_size, summed."""
from __future__ import annotations

import copy
import json
import os

from recovery import cluster, pgtrack  # see conftest.py

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mgr")


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def dump(*pgs):
    return {"pg_stats": [{"pgid": p, "version": v, "log_size": n, "state": "active+clean",
                          "up": [0, 1, 2], "acting": [0, 1, 2]} for p, v, n in pgs]}


def test_versions_read_the_update_version_of_either_name():
    d = {"pg_stats": [{"pgid": "1.0", "version": "19'11"}, {"pgid": "1.1", "last_update": "7'3"},
                      {"pgid": "1.2", "version": "0'0"}, {"pgid": "1.3", "version": "bad"},
                      {"pgid": "1.4"}]}
    assert pgtrack.pg_versions(d) == {"1.0": 11, "1.1": 3, "1.2": 0}
    assert pgtrack.pg_versions(load("pgdump_h3down.json"))["2.1f"] == 11   # a lab dump


def test_missed_entries_are_capped_by_each_pgs_log():
    now = dump(("1.0", "20'150", 500), ("1.1", "20'900", 300), ("1.2", "20'40", 40))
    at_down = {4: {"1.0": 100, "1.1": 100, "1.2": 40, "9.9": 1}}    # 9.9 gone: not counted
    assert pgtrack.missed_entries(now, at_down) == {4: 50 + 300 + 0}
    assert pgtrack.missed_entries(now, {}) == {}


def test_an_osd_keeps_its_pgs_versions_from_the_tick_before_it_went_down():
    members = {"1.0": (0, 4, 2), "1.1": (4, 1, 3), "1.2": (0, 1, 2)}
    osd_map, tree = load("osdmap_h3down.json"), load("tree_h3down.json")
    up_map = copy.deepcopy(osd_map)
    for o in up_map["osds"]:
        o["up"] = 1
    before = dump(("1.0", "5'100", 500), ("1.1", "5'200", 500), ("1.2", "5'10", 500))
    after = dump(("1.0", "6'130", 500), ("1.1", "6'260", 500), ("1.2", "6'20", 500))
    down_versions = {}
    snap = cluster.build_snapshot(up_map, tree, before, {}, now=1.0, stale_after=30.0)
    seen = pgtrack.remember_versions(snap.osds, members, {}, down_versions, before)
    assert down_versions == {}                      # all up
    snap = cluster.build_snapshot(osd_map, tree, after, {}, now=3.0, stale_after=30.0,
                                  missed=pgtrack.missed_entries(after, down_versions))
    assert snap.osd(4).missed_entries is None       # first seen down: not known yet
    seen = pgtrack.remember_versions(snap.osds, members, seen, down_versions, after)
    assert down_versions == {4: {"1.0": 100, "1.1": 200}, 5: {}}
    later = dump(("1.0", "7'190", 500), ("1.1", "7'300", 500), ("1.2", "7'30", 500))
    snap = cluster.build_snapshot(osd_map, tree, later, {}, now=5.0, stale_after=30.0,
                                  missed=pgtrack.missed_entries(later, down_versions))
    assert (snap.osd(4).missed_entries, snap.osd(5).missed_entries) == (90 + 100, 0)
    assert snap.osd(0).missed_entries is None       # up: nothing missed
    pgtrack.remember_versions(
        cluster.build_snapshot(up_map, tree, later, {}, now=7.0, stale_after=30.0).osds,
        members, seen, down_versions, later)
    assert down_versions == {}                      # up again: forgotten
