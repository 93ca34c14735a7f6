"""Per-pool service in Ceph's terms (ceph_recovery.availability): our tracks from PG states,
Ceph's `osd pool availability-status -f json` answer, and the records side by side; exact
values in, exact records out."""
from __future__ import annotations

import json
import os

from ceph_recovery import availability as AV
from ceph_recovery.pgmap import PgMap, PoolInfo

POOLS = {1: PoolInfo(3, 2, ".mgr"), 2: PoolInfo(3, 2, "lab")}
# the answer the mgr shell's tests replay too (tests/unit/mgr/data/mgr)
MGR_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mgr", "data",
                        "mgr")
with open(os.path.join(MGR_DATA, "availability_status.json")) as _f:
    LAB = json.load(_f)       # a Tentacle lab's answers (see its "_source")


def pg_map(inactive=(), pools=POOLS, unknown=()):
    """Pool 1 has PG 0, pool 2 has PGs 1 and 2 (pool 3, when listed, PG 3)."""
    pool_of = (1, 2, 2) + ((3,) if 3 in pools else ())
    return PgMap(members=((0, 1, 2),) * len(pool_of), pool_of=pool_of, pools=pools,
                 by_osd={}, inactive=frozenset(inactive) | frozenset(unknown),
                 unknown=frozenset(unknown))


def run(observations, start=None):
    """observations: [(now, inactive PG indexes, pools[, PGs in state unknown])]"""
    tracks = start
    for now, inactive, pools, *unknown in observations:
        tracks = AV.track(tracks, pg_map(inactive, pools, *unknown), now)
    return tracks


def test_an_outage_is_one_failure_timed_to_the_observations():
    t = run([(100.0, (), POOLS), (102.0, (1,), POOLS), (104.0, (1, 2), POOLS),
             (110.0, (), POOLS), (130.0, (), POOLS)])
    assert AV.measures(t[2]) == {"uptime_s": 22.0, "downtime_s": 8.0, "num_failures": 1,
                                 "mtbf_s": 22.0, "mttr_s": 8.0, "score": 0.733333,
                                 "available": True}
    # no failure: MTBF and MTTR 0, score 1 (as Ceph prints a pool that never failed)
    assert AV.measures(t[1]) == {"uptime_s": 30.0, "downtime_s": 0.0, "num_failures": 0,
                                 "mtbf_s": 0.0, "mttr_s": 0.0, "score": 1.0, "available": True}


def test_an_open_outage_counts_up_to_the_last_observation_and_two_outages_average():
    t = run([(0.0, (), POOLS), (10.0, (0,), POOLS), (14.0, (), POOLS), (30.0, (0,), POOLS),
             (36.0, (0,), POOLS)])
    assert AV.measures(t[1]) == {"uptime_s": 26.0, "downtime_s": 10.0, "num_failures": 2,
                                 "mtbf_s": 13.0, "mttr_s": 5.0, "score": 0.722222,
                                 "available": False}


def test_tracking_begins_with_pools_as_they_are_new_pools_once_available_gone_ones_drop():
    t = run([(0.0, (1,), POOLS)])               # down when tracking begins: an outage
    assert (t[2].num_failures, t[2].down_since) == (1, 0.0)
    three = dict(POOLS)
    three[3] = PoolInfo(2, 1, "new")
    t = run([(5.0, (3,), three)], t)            # a new pool being created: not tracked yet
    assert 3 not in t
    t = run([(7.0, (), three)], t)
    assert (t[3].name, t[3].since, t[3].num_failures) == ("new", 7.0, 0)
    t = run([(9.0, (), {1: POOLS[1]})], t)      # pools 2 and 3 removed
    assert list(t) == [1]
    assert AV.track(t, None, 20.0) == t          # no PG view: nothing observed


def test_records_of_ours_alone_carry_ours_under_the_same_names():
    t = run([(100.0, (), POOLS), (102.0, (1,), POOLS), (110.0, (), POOLS)])
    recs = AV.records(None, t)
    assert recs == [
        {"pool": ".mgr", "source": "recovery", "uptime_s": 10.0, "downtime_s": 0.0,
         "num_failures": 0, "mtbf_s": 0.0, "mttr_s": 0.0, "score": 1.0, "available": True,
         "ceph": None, "recovery": AV.measures(t[1])},
        {"pool": "lab", "source": "recovery", "uptime_s": 2.0, "downtime_s": 8.0,
         "num_failures": 1, "mtbf_s": 2.0, "mttr_s": 8.0, "score": 0.2, "available": True,
         "ceph": None, "recovery": AV.measures(t[2])}]
    assert json.loads(json.dumps(recs)) == recs


def test_persisted_tracks_round_trip_and_a_bad_entry_is_dropped():
    t = run([(0.0, (), POOLS), (3.0, (1,), POOLS)])
    d = json.loads(json.dumps(AV.tracks_to_dict(t)))
    assert AV.tracks_from_dict(d) == t
    d["2"]["since"] = "soon"
    d["x"] = {"name": "y"}
    assert AV.tracks_from_dict(d) == {1: t[1]}
    assert AV.tracks_from_dict(None) == {} and AV.answer_from_dict([1]) is None


def test_a_drill_tracks_its_pools_from_its_first_sample_and_reports_them():
    from ceph_recovery import drill as D
    from ceph_recovery.model import Snapshot
    d = D.Drill(id="d1", bucket="h2", downtime_s=30.0, started_at=100.0, phase=D.DOWN)
    for now, inactive in ((100.0, ()), (104.0, (0,)), (109.0, ()), (112.0, ())):
        d = D.sample(d, Snapshot(epoch=1, osds=(), pgs_total=3, pgs_active=3 - len(inactive),
                                 pg_map=pg_map(inactive)), D.Observed(), now)
    assert d.pools == run([(100.0, (), POOLS), (104.0, (0,), POOLS), (109.0, (), POOLS),
                           (112.0, (), POOLS)])
    rep = D.report(d)["pool_availability"]
    assert rep == {"ceph_at_start": "not read", "ceph_at_end": "not read",
                   "pools": AV.records(None, d.pools)}
    assert rep["pools"][0]["pool"] == ".mgr" and rep["pools"][0]["downtime_s"] == 5.0
    assert "availability" not in D.report(d)        # the persisted form stays internal
    assert D.drill_from_dict(json.loads(json.dumps(D.drill_to_dict(d)))) == d


def test_cephs_counts_over_a_drill_are_the_difference_of_its_two_answers():
    before = {"lab": {"uptime_s": 100.0, "downtime_s": 10.0, "num_failures": 1,
                      "mtbf_s": 100.0, "mttr_s": 10.0, "score": 0.909091, "available": True}}
    after = {"lab": {"uptime_s": 160.0, "downtime_s": 22.0, "num_failures": 3,
                     "mtbf_s": 53.3, "mttr_s": 7.3, "score": 0.879121, "available": True},
             "new": {"uptime_s": 20.0, "downtime_s": 0.0, "num_failures": 0, "mtbf_s": 0.0,
                     "mttr_s": 0.0, "score": 1.0, "available": True}}
    assert AV.ceph_delta(before, after) == {
        "lab": {"uptime_s": 60.0, "downtime_s": 12.0, "num_failures": 2, "mtbf_s": 30.0,
                "mttr_s": 6.0, "score": 0.833333, "available": True},
        "new": after["new"]}
    cleared = {"lab": dict(after["lab"], downtime_s=1.0, num_failures=0)}
    assert AV.ceph_delta(before, cleared) == {}
    assert AV.ceph_delta(None, after) is None and AV.ceph_delta(before, None) is None


def test_pgs_in_state_unknown_say_nothing():
    # a new mgr: its PGs are unknown until the OSDs report to it: no outage
    t = run([(0.0, (), POOLS, (0, 1, 2))])
    assert t == {}
    t = run([(2.0, (1,), POOLS)], t)         # once known: pools from when seen available
    assert list(t) == [1] and t[1].since == 2.0
    t = run([(0.0, (), POOLS), (4.0, (), POOLS, (1,))])
    assert t[2].seen_at == 0.0 and t[2].num_failures == 0 and t[1].seen_at == 4.0
    t = run([(5.0, (2,), POOLS, (1,)), (6.0, (2,), POOLS)], t)
    assert (t[2].num_failures, t[2].down_since) == (1, 6.0)


def test_cephs_answer_in_our_names():
    assert AV.from_ceph(LAB["tracked_down"]) == {
        ".mgr": {"uptime_s": 22.0, "downtime_s": 0.0, "num_failures": 0, "mtbf_s": 0.0,
                 "mttr_s": 0.0, "score": 1.0, "available": True},
        "lab": {"uptime_s": 19.0, "downtime_s": 3.0, "num_failures": 1, "mtbf_s": 19.0,
                "mttr_s": 3.0, "score": 0.863636, "available": False}}
    assert AV.from_ceph({"lab": LAB["tracked"][1]}) == {}        # not Tentacle's shape
    assert AV.from_ceph([{"pool": "x", "uptime": "2s"}, 3]) == {}


def test_records_side_by_side_where_both_count():
    t = run([(100.0, (), POOLS), (102.0, (1,), POOLS), (106.0, (), POOLS)])
    recs = AV.records(AV.from_ceph(LAB["tracked_later"]), t)
    assert recs == [
        {"pool": ".mgr", "source": "ceph", "uptime_s": 49.0, "downtime_s": 0.0,
         "num_failures": 0, "mtbf_s": 0.0, "mttr_s": 0.0, "score": 1.0, "available": True,
         "ceph": {"uptime_s": 49.0, "downtime_s": 0.0, "num_failures": 0, "mtbf_s": 0.0,
                  "mttr_s": 0.0, "score": 1.0, "available": True},
         "recovery": {"uptime_s": 6.0, "downtime_s": 0.0, "num_failures": 0, "mtbf_s": 0.0,
                      "mttr_s": 0.0, "score": 1.0, "available": True}},
        {"pool": "lab", "source": "ceph", "uptime_s": 29.0, "downtime_s": 20.0,
         "num_failures": 1, "mtbf_s": 29.0, "mttr_s": 20.0, "score": 0.591837,
         "available": True,
         "ceph": {"uptime_s": 29.0, "downtime_s": 20.0, "num_failures": 1, "mtbf_s": 29.0,
                  "mttr_s": 20.0, "score": 0.591837, "available": True},
         "recovery": {"uptime_s": 2.0, "downtime_s": 4.0, "num_failures": 1, "mtbf_s": 2.0,
                      "mttr_s": 4.0, "score": 0.333333, "available": True}}]
    # a pool only Ceph lists (ours began after it went), and one only ours has
    only = AV.records(AV.from_ceph(LAB["tracked"])[".mgr"] and
                      {"gone": AV.from_ceph(LAB["tracked"])[".mgr"]}, {2: t[2]})
    assert [(r["pool"], r["source"], r["ceph"] is None, r["recovery"] is None)
            for r in only] == [("lab", "recovery", True, False), ("gone", "ceph", False, True)]
