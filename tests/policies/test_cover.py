"""The service-first cover (ceph_recovery.membership) and the cover_first start order.

Cluster: osd.0-2 on h0 up; osd.3-5 on h1 and osd.6-8 on h2 down. Pool 1 size 3, min_size 2.
  pg 0 = 0, 3, 6   1 up: needs one of osd.3 / osd.6
  pg 1 = 1, 3, 7   1 up: needs one of osd.3 / osd.7
  pg 2 = 2, 4, 8   1 up: needs one of osd.4 / osd.8
  pg 3 = 3, 6, 8   0 up: needs two of osd.3 / osd.6 / osd.8
  pg 4 = 0, 1, 5   2 up: active, needs nothing
"""
from __future__ import annotations

from ceph_recovery.membership import cover, shortfall, stop_breaks, up_ids
from ceph_recovery.model import OsdState, PgMap, PoolInfo, Snapshot
from ceph_recovery.policies import REGISTRY

MEMBERS = ((0, 3, 6), (1, 3, 7), (2, 4, 8), (3, 6, 8), (0, 1, 5))


def osd(i, **kw):
    host = "h%d" % (i // 3)
    base = dict(id=i, host=host, crush_path=("default", host), up=i < 3, pgs=16,
                process="running" if i < 3 else "stopped")
    base.update(kw)
    return OsdState(**base)


def pgmap(inactive=(0, 1, 2, 3)):
    by_osd = {}
    for i, m in enumerate(MEMBERS):
        for o in m:
            by_osd.setdefault(o, []).append(i)
    return PgMap(members=MEMBERS, pool_of=(1,) * len(MEMBERS),
                 pools={1: PoolInfo(size=3, min_size=2)},
                 by_osd={o: tuple(v) for o, v in by_osd.items()}, inactive=frozenset(inactive))


OSDS = [osd(i) for i in range(9)]
BY_ID = {o.id: o for o in OSDS}


def test_shortfall_counts_members_still_needed_for_min_size():
    assert shortfall(pgmap(), BY_ID) == {0: 1, 1: 1, 2: 1, 3: 2}


def test_an_osd_already_starting_counts_as_present():
    starting = {**BY_ID, 3: osd(3, process="running")}
    assert shortfall(pgmap(), starting) == {2: 1, 3: 1}


def test_greedy_cover_equal_weights():
    # osd.3 serves pgs 0, 1, 3 (3 slots); then osd.8 serves 2 and 3 (2 slots); all covered
    got = cover(pgmap(), BY_ID, OSDS[3:], lambda o: 1.0)
    assert [o.id for o in got] == [3, 8]


def test_greedy_cover_weighted_by_footprint():
    # osd.3 costs 4x: osd.6 (pgs 0, 3) and osd.8 (pgs 2, 3) give 2 slots per unit, then osd.7
    # covers pg 1 (1 per unit) before osd.3 (1 slot for 4 units)
    heavy = lambda o: 4.0 if o.id == 3 else 1.0   # noqa: E731
    got = cover(pgmap(), BY_ID, OSDS[3:], heavy)
    assert [o.id for o in got] == [6, 8, 7]


def test_stop_breaks_only_active_pgs_at_min_size():
    up = up_ids({**BY_ID, 5: osd(5, up=True, process="running")})
    pm = pgmap()
    assert stop_breaks(pm, up, 5) == []                # pg 4 has 3 up: 2 left
    assert stop_breaks(pm, up, 0, stopping=[1]) == [4]  # osd.0 and osd.1 together: 1 left
    assert stop_breaks(pm, up_ids(BY_ID), 0) == [4]     # osd.5 down: pg 4 at min_size
    assert stop_breaks(pm, up_ids(BY_ID), 3) == []      # a down OSD's stop changes nothing


def test_cover_first_puts_the_cover_first_then_unblock_first():
    policy = REGISTRY["start_order"]["cover_first"]
    snap = Snapshot(epoch=1, osds=tuple(OSDS), pg_map=pgmap())
    got = [o.id for o in policy(OSDS[3:], snap)]
    assert got[:2] == [3, 8]
    rest = [o.id for o in REGISTRY["start_order"]["unblock_first"](OSDS[3:], snap)
            if o.id not in (3, 8)]
    assert got[2:] == rest


def test_cover_first_without_membership_is_unblock_first():
    policy = REGISTRY["start_order"]["cover_first"]
    snap = Snapshot(epoch=1, osds=tuple(OSDS))
    assert policy(OSDS[3:], snap) == REGISTRY["start_order"]["unblock_first"](OSDS[3:], snap)
