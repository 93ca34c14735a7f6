"""plan() with PG membership in the snapshot: the core never makes an active PG inactive,
whatever ok-to-stop says. On the cluster described in plancases.py; exact actions out.

PG map (pool 1: size 3, min_size 2):
  pg 1.0 = osd.3, osd.0, osd.5   osd.5 down: active with 2 up; stopping osd.3 leaves 1
  pg 1.1 = osd.4, osd.0, osd.1   all up: stopping osd.4 leaves 2
"""
from __future__ import annotations

from ceph_recovery.actions import RestartOsd
from ceph_recovery.model import PgMap, PoolInfo
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policy_types import Policies
from plancases import (HELD, NOW, POL, ROOM, ROOMP, RUN, RUNF, RUNNING, GiB, MiB, osd, sig,
                       snap)  # conftest.py


def pgmap(members, inactive=()):
    by_osd = {}
    for i, m in enumerate(members):
        for o in m:
            by_osd.setdefault(o, []).append(i)
    return PgMap(members=tuple(tuple(m) for m in members), pool_of=(1,) * len(members),
                 pools={1: PoolInfo(size=3, min_size=2)},
                 by_osd={o: tuple(v) for o, v in by_osd.items()},
                 inactive=frozenset(inactive),
                 ids=tuple("1.%x" % i for i in range(len(members))))


PM = pgmap([(3, 0, 5), (4, 0, 1)])


def test_make_room_restarts_the_osd_whose_stop_keeps_every_pg_active():
    """h1's next start needs room; ok-to-stop clears both osd.3 and osd.4. Without membership
    the heaviest-first policy restarts osd.3; with it, osd.3's stop would take pg 1.0 below
    min_size, so osd.4 is restarted instead."""
    kw = dict(used={"h1": 6400 * MiB}, cluster_flags=RUNF, ok_to_stop={3: True, 4: True})
    blind = plan(snap(*ROOM, HELD[2], **kw), RUN, ROOMP, POL, NOW)
    assert [sig(a) for a in blind.actions] == ["restart_osd host=h1 osd=3"]
    s = snap(*ROOM, HELD[2], pg_map=PM, **kw)
    res = plan(s, RUN, ROOMP, POL, NOW)
    assert [sig(a) for a in res.actions] == ["restart_osd host=h1 osd=4"]
    assert check_invariants(s, RUN, ROOMP, res, POL, NOW) == []


def test_no_restart_when_every_candidate_would_take_an_active_pg_below_min_size():
    """Both fat OSDs hold an active PG at min_size: nothing is restarted, the stall is named."""
    pm = pgmap([(3, 0, 5), (4, 1, 5)])
    s = snap(*ROOM, HELD[2], used={"h1": 6400 * MiB}, cluster_flags=RUNF,
             ok_to_stop={3: True, 4: True}, pg_map=pm)
    res = plan(s, RUN, ROOMP, POL, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert [c.code for c in res.health] == ["RECOVERY_BUDGET_TOO_SMALL"]
    assert "nothing can be released or restarted" in res.health[0].detail[0]


def test_a_policy_asking_for_a_harmful_restart_is_refused_and_named():
    """An over_budget policy that ignores membership and asks to restart osd.3: plan()
    refuses (RECOVERY_RESTART_REFUSED names the PG), emits no restart."""
    def restart_3(host, osds, snapshot, progress, intent, now):
        return RestartOsd(osd=3, host=host.name, reason="always osd.3")
    pol = Policies(start_order=POL.start_order, budget=POL.budget, footprint=POL.footprint,
                   over_budget=restart_3)
    s = snap(*ROOM, HELD[2], used={"h1": 6400 * MiB}, cluster_flags=RUNF,
             ok_to_stop={3: True, 4: True}, pg_map=PM)
    res = plan(s, RUN, ROOMP, pol, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
    refused = [c for c in res.health if c.code == "RECOVERY_RESTART_REFUSED"]
    assert refused and refused[0].detail == (
        "osd.3 on h1: its stop would take 1 PG(s) below min_size (1.0)",)


def test_the_brake_does_not_stop_an_osd_whose_stop_makes_an_active_pg_inactive():
    """The brake case of test_plan_ending (osd.3 outgrew its prediction, h1 above 90 % of
    its RAM, ok-to-stop True) with osd.3 holding an active PG at min_size: not stopped."""
    grown = osd(3, up=True, process="running", rss_bytes=1600 * MiB, pgs_inactive=4)
    p = RUNNING.evolve(held_osds=frozenset({4, 5})).with_columns(granted={3: NOW - 30},
                                                                 booting={3: NOW - 9},
                                                                 load_rss={3: 240 * MiB})
    kw = dict(used={"h1": int(7.5 * GiB)}, cluster_flags=RUNF, ok_to_stop={3: True})
    stops = plan(snap(grown, *HELD[1:], pg_map=pgmap([(3, 0, 1)]), **kw), RUN, p, POL, NOW)
    assert [sig(a) for a in stops.actions] == ["hold_osd osd=3", "stop_osd host=h1 osd=3"]
    res = plan(snap(grown, *HELD[1:], pg_map=pgmap([(3, 0, 5)]), **kw), RUN, p, POL, NOW)
    assert [sig(a) for a in res.actions] == ["query_ok_to_stop osd=3"]   # watch: keep asking
    assert 3 in res.progress.osd_map("granted") and res.progress.osd_map("failures") == {}
    assert any("min_size" in r for r in res.summary["reasons"])


def test_an_inactive_pg_is_left_to_ok_to_stop():
    """pg 1.0 is inactive already (a member peering): the membership guard counts only active
    PGs, so ok-to-stop decides (it cleared osd.3 here)."""
    s = snap(*ROOM, HELD[2], used={"h1": 6400 * MiB}, cluster_flags=RUNF,
             ok_to_stop={3: True, 4: True}, pg_map=pgmap([(3, 0, 5), (4, 0, 1)], [0]))
    res = plan(s, RUN, ROOMP, POL, NOW)
    assert [sig(a) for a in res.actions] == ["restart_osd host=h1 osd=3"]

