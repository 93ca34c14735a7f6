"""Behaviour of each policy on small exact inputs (the numbers are the documented ones)."""
from __future__ import annotations

import pytest

from ceph_recovery.actions import HeapRelease, QueryOkToStop, RestartOsd, Wait
from ceph_recovery.model import (OSD_FIELDS, Budget, HostMem, Intent, Observation, OsdState,
                                 Progress, Snapshot)
from ceph_recovery.persist import intent_from_dict
from ceph_recovery.policies import REGISTRY, resolve
from ceph_recovery.policies.footprint import LEARN_MARGIN, prior

MiB, GiB = 1 << 20, 1 << 30
SO, BU, FP, OB = (REGISTRY[k] for k in ("start_order", "budget", "footprint", "over_budget"))


def o(i, host="h0", rack="r0", **kw):
    return OsdState(id=i, host=host, crush_path=("default", rack, host), up=kw.pop("up", False),
                    **kw)


def test_service_first_orders_by_inactive_degraded_then_cheapest():
    c = [o(1, pgs=50), o(2, pgs_inactive=3, pgs=90), o(3, pgs_degraded=9, pgs=10),
         o(4, pgs_inactive=3, pgs=20), o(5, pgs=50)]
    assert [x.id for x in SO["service_first"](c, Snapshot(epoch=1, osds=tuple(c)))] == \
        [4, 2, 3, 1, 5]


def test_unblock_first_orders_by_active_short_pgs_then_inactive():
    # pgs - pgs_inactive: 10, 87, 10, 50, 50 -> most first; ties: most inactive, then id
    c = [o(1, pgs=50, pgs_inactive=40), o(2, pgs=90, pgs_inactive=3), o(3, pgs=10),
         o(4, pgs=60, pgs_inactive=10), o(6, pgs=53, pgs_inactive=3)]
    snap = Snapshot(epoch=1, osds=tuple(c))
    assert [x.id for x in SO["unblock_first"](c, snap)] == [2, 4, 6, 1, 3]
    # service_first on the same OSDs starts the one with the most inactive PGs first
    assert [x.id for x in SO["service_first"](c, snap)] == [1, 4, 6, 2, 3]


def test_unblock_first_is_the_default_start_order():
    assert Intent().start_order == "unblock_first"
    assert resolve(Intent()).start_order is SO["unblock_first"]
    assert intent_from_dict({"mode": "controlled"}).start_order == "unblock_first"


def test_domain_round_robin_alternates_racks_then_hosts():
    c = [o(1, "h0", "r0"), o(2, "h0", "r0"), o(3, "h1", "r0"), o(4, "h2", "r1"),
         o(5, "h2", "r1"), o(6, "h3", "r2")]
    out = SO["domain_round_robin"](c, Snapshot(epoch=1, osds=tuple(c)))
    assert [x.id for x in out] == [1, 4, 6, 3, 5, 2]


@pytest.mark.parametrize("host,budget,expected", [
    pytest.param(HostMem("h", 10 * GiB, 0, 0), Budget("fraction", 0.8), 8 * GiB, id="frac"),
    pytest.param(HostMem("h", 10 * GiB, 0, 0, mem_limit=2 * GiB, source="cgroup"),
                 Budget("fraction", 0.5), GiB, id="frac_of_cgroup_limit"),
    pytest.param(HostMem("h", 10 * GiB, 0, 0), Budget("fraction", 0.8, GiB), 7 * GiB,
                 id="frac_minus_reserve"),
    pytest.param(HostMem("h", 10 * GiB, 0, 0), Budget("fraction", 0.1, 2 * GiB), 0,
                 id="reserve_larger_than_budget"),
])
def test_fraction_budget(host, budget, expected):
    assert BU["fraction"](host, budget) == pytest.approx(expected, abs=1)


@pytest.mark.parametrize("host,budget,expected", [
    pytest.param(HostMem("h", 10 * GiB, 0, 0), Budget("bytes", 4 * GiB), 4 * GiB, id="bytes"),
    pytest.param(HostMem("h", 10 * GiB, 0, 0), Budget("bytes", 40 * GiB), 10 * GiB,
                 id="capped_at_ram"),
    pytest.param(HostMem("h", 10 * GiB, 0, 0, mem_limit=3 * GiB, source="cgroup"),
                 Budget("bytes", 4 * GiB, GiB), 2 * GiB, id="capped_at_cgroup_minus_reserve"),
])
def test_bytes_budget(host, budget, expected):
    assert BU["bytes"](host, budget) == expected


def test_prior_covers_the_lab_peak():
    # docs/design.md lab: ~16 PGs per OSD, 60 s down, recovery peak 370-401 MiB
    assert prior(16, 0, 60.0) > 401 * MiB
    assert prior(16, 0, 3600.0) == pytest.approx(prior(16, 0, 0.0) * 1.5, rel=1e-6)
    assert prior(100, 0, 0) == prior(0, 0, 0)          # unknown PGs: Ceph's 100 per OSD
    assert prior(100, 600000, 0) > prior(100, 0, 0)     # a known long log costs more


def test_learned_needs_three_observations_to_go_below_the_prior():
    x = o(1, pgs=16, down_since=0.0)
    small = Observation(osd=9, pgs=16, downtime_s=60.0, pg_log_entries=0, peak_bytes=200 * MiB)
    p = FP["static"](x, (), 60.0)
    assert FP["learned"](x, (), 60.0) == p
    assert FP["learned"](x, (small,) * 2, 60.0) == p
    three = FP["learned"](x, (small,) * 3, 60.0)
    assert three == pytest.approx(200 * MiB * LEARN_MARGIN, abs=2)


def test_learned_rises_above_a_peak_bigger_than_predicted():
    x = o(1, pgs=16, down_since=0.0)
    big = Observation(osd=9, pgs=16, downtime_s=60.0, pg_log_entries=0, peak_bytes=2 * GiB)
    assert FP["learned"](x, (big,), 60.0) == pytest.approx(2 * GiB * LEARN_MARGIN, abs=2)


def test_learned_takes_an_osds_own_settled_start_over_the_clusters_largest():
    """osd.1 settled once at 300 MiB; the cluster's heaviest start peaked at 600 MiB on the same
    prior. osd.1's next start is predicted from its own ratio; where its own start was not
    settled (load_bytes None: a lower bound) the cluster's largest ratio stays."""
    def obs(osd, peak, load):
        return Observation(osd=osd, pgs=16, downtime_s=60.0, pg_log_entries=0, peak_bytes=peak,
                           load_bytes=load)

    x = o(1, pgs=16, down_since=0.0)
    heavy = (obs(7, 600 * MiB, 200 * MiB), obs(8, 400 * MiB, 150 * MiB),
             obs(9, 500 * MiB, 150 * MiB))
    own = obs(1, 300 * MiB, 100 * MiB)
    assert FP["learned"](x, heavy, 60.0) == pytest.approx(600 * MiB * LEARN_MARGIN, abs=2)
    assert FP["learned"](x, heavy + (own,), 60.0) == pytest.approx(300 * MiB * LEARN_MARGIN,
                                                                    abs=2)
    unsettled = obs(1, 300 * MiB, None)
    assert FP["learned"](x, heavy + (unsettled,), 60.0) == pytest.approx(
        600 * MiB * LEARN_MARGIN, abs=2)
    assert FP["learned"](o(2, pgs=16, down_since=0.0), heavy + (own,), 60.0) == \
        pytest.approx(600 * MiB * LEARN_MARGIN, abs=2)          # not osd.2's own


HOST = HostMem("h0", 4 * GiB, 4 * GiB, 0)
FAT = [o(1, up=True, process="running", rss_bytes=2 * GiB),
       o(2, up=True, process="running", rss_bytes=GiB, heap_release=False),
       o(3, up=False, process="stopped")]
INT = Intent(mode="controlled", restart_cooldown_s=600.0)


def ob(name, snap_ok=None, **progress):
    snap = Snapshot(epoch=1, osds=tuple(FAT), ok_to_stop=snap_ok or {})
    maps = {k: progress.pop(k) for k in list(progress) if k in OSD_FIELDS}
    return OB[name](HOST, FAT, snap, Progress(**progress).with_columns(**maps), INT, 1000.0)


def sig(a):
    return None if a is None else (a.kind, getattr(a, "osd", None))


@pytest.mark.parametrize("name,ok,progress,expected", [
    pytest.param("heap_then_restart", {}, {}, ("heap_release", 1), id="heap_first"),
    pytest.param("heap_then_restart", {}, {"heap_released": {1: 995.0}}, ("wait", None),
                 id="heap_settling"),
    pytest.param("heap_then_restart", {}, {"heap_released": {1: 900.0}},
                 ("query_ok_to_stop", 1), id="then_query"),
    pytest.param("heap_then_restart", {1: True}, {"heap_released": {1: 900.0}},
                 ("restart_osd", 1), id="then_restart"),
    pytest.param("heap_then_restart", {1: False}, {"heap_released": {1: 900.0}},
                 ("query_ok_to_stop", 2), id="skip_not_ok_query_next"),
    pytest.param("heap_then_restart", {1: False, 2: False}, {"heap_released": {1: 900.0}},
                 None, id="nothing_ok_to_stop"),
    pytest.param("restart_only", {1: True}, {}, ("restart_osd", 1), id="restart_only"),
    pytest.param("restart_only", {1: True, 2: True}, {"restarted": {1: 800.0}},
                 ("restart_osd", 2), id="cooldown_skips_heaviest"),
    pytest.param("restart_only", {1: True}, {"granted": {1: 990.0}}, ("query_ok_to_stop", 2),
                 id="in_flight_not_restarted"),
    pytest.param("restart_only", {1: True, 2: True},
                 {"fresh_rss": {1: 1900 * MiB, 5: 100 * MiB, 6: 100 * MiB}},
                 ("restart_osd", 2), id="restart_by_expected_gain"),
    pytest.param("restart_only", {1: True, 2: True}, {"fresh_rss": {1: 2040 * MiB,
                                                                    2: 1020 * MiB}},
                 None, id="no_restart_that_frees_nothing"),
])
def test_over_budget(name, ok, progress, expected):
    a = ob(name, ok, **progress)
    assert sig(a) == expected
    assert not isinstance(a, RestartOsd) or ok.get(a.osd) is True
    assert a is None or isinstance(a, (HeapRelease, QueryOkToStop, RestartOsd, Wait))
