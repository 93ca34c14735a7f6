"""PG membership from the mgr's dumps (recovery.pgtrack.pg_membership / remember_members)."""
from __future__ import annotations

import json
import os

from ceph_recovery.model import PoolInfo
from recovery import cluster, pgtrack  # see conftest.py

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mgr")


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


OSD_MAP = {"osds": [{"osd": i} for i in range(6)],
           "pools": [{"pool": 1, "size": 3, "min_size": 2}]}


def test_recorded_lab_dump_with_a_host_down():
    """h3 (osd.4, osd.5) down: every PG is active and undersized, the down OSDs are in no
    acting set, so without remembered members they are in no PG."""
    osd_map, pgs = load("osdmap_h3down.json"), load("pgdump_h3down.json")
    pm = pgtrack.pg_membership(pgs, osd_map)
    assert len(pm.members) == 33 and pm.inactive == frozenset()
    assert pm.pools == {1: PoolInfo(3, 2, "device_health_metrics"), 2: PoolInfo(3, 2, "lab")}
    assert all(len(m) == 2 and not set(m) & {4, 5} for m in pm.members)
    assert set(pm.by_osd) == {0, 1, 2, 3}
    snap = cluster.build_snapshot(osd_map, load("tree_h3down.json"), pgs, {}, now=1.0,
                                  stale_after=30.0)
    assert snap.pg_map.ids == pm.ids and snap.pg_map.members == pm.members


def test_members_acting_up_blocked_by_then_seen():
    dump = {"pg_stats": [
        {"pgid": "1.0", "state": "active+clean", "up": [0, 1, 2], "acting": [0, 1, 2]},
        {"pgid": "1.1", "state": "undersized+degraded+peered", "up": [3], "acting": [3]},
        {"pgid": "1.2", "state": "down", "up": [1], "acting": [1], "blocked_by": [5, 9]},
        {"pgid": "1.3", "state": "active+undersized", "up": [2, 0], "acting": [0, 2],
         "blocked_by": [4]},
        {"pgid": "7.0", "state": "active+clean", "up": [0, 1, 2], "acting": [0, 1, 2]}]}
    seen = {"1.1": (3, 4, 5), "1.3": (0, 2, 4)}
    pm = pgtrack.pg_membership(dump, OSD_MAP, seen)
    assert pm.ids == ("1.0", "1.1", "1.2", "1.3")           # pool 7 is not in the map
    assert pm.members == ((0, 1, 2), (3, 4, 5), (1, 5), (0, 2, 4))   # osd.9 does not exist
    assert pm.inactive == frozenset({1, 2})
    assert pm.by_osd[5] == (1, 2) and pm.by_osd[4] == (1, 3)
    assert pm.min_size(3) == 2 and pm.name(2) == "1.2"


def test_pgs_brief_list_shape_and_empty_dump():
    brief = [{"pgid": "1.0", "state": "active+clean", "up": [0, 1, 2], "acting": [0, 1, 2]}]
    assert pgtrack.pg_membership(brief, OSD_MAP).members == ((0, 1, 2),)
    assert pgtrack.pg_membership({"pg_stats": []}, OSD_MAP) is None


def test_remember_members_keeps_complete_pgs_only():
    dump = {"pg_stats": [
        {"pgid": "1.0", "state": "active+clean", "up": [0, 1, 2], "acting": [0, 1, 2]},
        {"pgid": "1.1", "state": "active+undersized", "up": [3, 4], "acting": [3, 4]}]}
    seen = {"1.1": (3, 4, 5)}
    pgtrack.remember_members(pgtrack.pg_membership(dump, OSD_MAP), seen)
    assert seen == {"1.0": (0, 1, 2), "1.1": (3, 4, 5)}
    # the next tick's membership of 1.1 takes osd.5 back from what was seen
    assert pgtrack.pg_membership(dump, OSD_MAP, seen).members[1] == (3, 4, 5)
