"""A restart still in flight (queued, or back but peering) counts as stopped for every later
stop decision, on every host: two hosts over budget never restart two OSDs of one PG in two
consecutive ticks on ok-to-stop answers that cleared each alone. plancases.py snapshots."""
from __future__ import annotations

from dataclasses import replace

import pytest

from ceph_recovery.model import PgMap, PoolInfo
from ceph_recovery.plan import check_invariants, plan
from plancases import (FAT3, FAT6, GiB, HELD, HELD2, NOW, POL, RUN, RUNF,  # conftest.py
                       RUNNING, MiB, snap)

# osd.3 (h1) and osd.6 (h2) share a PG of size 3 / min_size 2 with osd.0 (h0)
SHARED = PgMap(members=((0, 3, 6),), pool_of=(1,), pools={1: PoolInfo(size=3, min_size=2)},
               by_osd={0: (0,), 3: (0,), 6: (0,)}, ids=("1.0",))
# osd.3 was restarted 5 s ago: the instruction is still queued, the map shows it up
AFTER_RESTART = RUNNING.evolve(finished=frozenset({3, 6}),
                               held_osds=frozenset({4, 5, 7, 8})).with_columns(
    heap_released={3: NOW - 30, 6: NOW - 30}, restarted={3: NOW - 5})


@pytest.mark.parametrize("pg_map", [SHARED, None], ids=["pg_membership", "no_membership"])
def test_a_restart_in_flight_on_one_host_blocks_a_restart_of_a_partner_on_another(pg_map):
    s = snap(FAT3, *HELD[1:], FAT6, *HELD2, used={"h1": 7 * GiB, "h2": 7 * GiB},
             hosts=("h0", "h1", "h2"), cluster_flags=RUNF, ok_to_stop={6: True},
             pg_map=pg_map)
    res = plan(s, RUN, AFTER_RESTART, POL, NOW)
    assert not [a for a in res.actions if a.kind == "restart_osd"]
    if pg_map is None:      # nothing says which PGs they share: one stop at a time
        assert [line for h in res.health if h.code == "RECOVERY_RESTART_REFUSED"
                for line in h.detail] == [
            "osd.6 on h2: osd.3 restarting: without PG membership one stop at a time"]
    else:                   # the membership says osd.6's stop would break 1.0: not asked
        assert "h2 over budget: nothing to release or restart" in res.summary["reasons"]
    assert check_invariants(s, RUN, AFTER_RESTART, res, POL, now=NOW) == []


@pytest.mark.parametrize("pg_map", [SHARED, None], ids=["pg_membership", "no_membership"])
def test_once_the_restart_has_settled_the_partner_may_restart(pg_map):
    back = replace(FAT3, rss_bytes=300 * MiB, process_started_at=NOW - 35)
    s = snap(back, *HELD[1:], FAT6, *HELD2, used={"h1": 7 * GiB, "h2": 7 * GiB},
             hosts=("h0", "h1", "h2"), cluster_flags=RUNF, ok_to_stop={6: True},
             pg_map=pg_map)
    later = AFTER_RESTART.with_columns(restarted={3: NOW - 40})
    res = plan(s, RUN, later, POL, NOW)
    assert [a.osd for a in res.actions if a.kind == "restart_osd"] == [6]
