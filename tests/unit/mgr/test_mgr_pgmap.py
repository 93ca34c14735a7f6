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
    seen = pgtrack.remember_members(pgtrack.pg_membership(dump, OSD_MAP), {"1.1": (3, 4, 5)})
    assert dict(seen.items()) == {"1.0": (0, 1, 2), "1.1": (3, 4, 5)}
    # the next tick's membership of 1.1 takes osd.5 back from what was seen
    assert pgtrack.pg_membership(dump, OSD_MAP, seen).members[1] == (3, 4, 5)


def test_members_kept_across_reads_are_found_when_the_pgs_move_and_forgotten_when_gone():
    """Kept in the order of the read they came from, looked up by pgid where a later read
    lists the PGs otherwise; a PG gone from the map is not kept."""
    first = {"pg_stats": [
        {"pgid": "1.0", "state": "active+clean", "up": [0, 1, 2], "acting": [0, 1, 2]},
        {"pgid": "1.1", "state": "active+clean", "up": [3, 4, 5], "acting": [3, 4, 5]},
        {"pgid": "1.2", "state": "active+clean", "up": [1, 3, 5], "acting": [1, 3, 5]}]}
    seen = pgtrack.remember_members(pgtrack.pg_membership(first, OSD_MAP), {})
    later = {"pg_stats": [      # 1.0 gone, 1.2 listed before 1.1, both undersized
        {"pgid": "1.2", "state": "active+undersized", "up": [1, 3], "acting": [1, 3]},
        {"pgid": "1.1", "state": "undersized+peered", "up": [3], "acting": [3]}]}
    pm = pgtrack.pg_membership(later, OSD_MAP, seen)
    assert pm.members == ((1, 3, 5), (3, 4, 5)) and pm.by_osd[5] == (0, 1)
    again = pgtrack.remember_members(pm, seen)
    assert dict(again.items()) == {"1.2": (1, 3, 5), "1.1": (3, 4, 5)}
    assert "1.0" not in again and again.get("1.0") is None


def test_versions_of_the_pgs_of_osds_going_down_are_kept_in_one_pass():
    """osd.4 and osd.5 first seen down: each keeps the versions its PGs had one read before
    (a PG without a readable version is left out); osd.3, up, is forgotten."""
    from ceph_recovery.model import OsdState
    dump = {"pg_stats": [{"pgid": "1.0", "version": "12'40"}, {"pgid": "1.1", "version": "12'7"},
                         {"pgid": "1.2", "version": "bad"}]}
    before = pgtrack.pg_versions(dump)
    assert dict(before.items()) == {"1.0": 40, "1.1": 7}
    seen = {"1.0": (0, 4, 5), "1.1": (3, 4, 2), "1.2": (1, 5, 3)}
    down = {3: {"1.1": 1}}
    osds = [OsdState(id=i, host="h%d" % (i // 2 + 1), crush_path=(), up=i == 3)
            for i in (3, 4, 5)]
    now = pgtrack.remember_versions(osds, seen, before, down, {"pg_stats": []})
    assert down == {4: {"1.0": 40, "1.1": 7}, 5: {"1.0": 40}}
    assert dict(now.items()) == {}
