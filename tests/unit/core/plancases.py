"""Builders shared by the plan() unit tests (registered as module `plancases` by conftest.py).

Cluster of every case unless said otherwise: hosts h0 (osd.0-2, up) and h1 (osd.3-5, down
an hour), both under rack r1, 8 GiB RAM, 1 GiB used, budget 80 % (6.4 GiB). The footprint
policy is a fixed 500 MiB so that the expected grants are exact; the others are the real
registered policies.
"""
from __future__ import annotations

from ceph_recovery.model import Budget, HostMem, Intent, Observation, OsdState, Progress, Snapshot
from ceph_recovery.policies import REGISTRY
from ceph_recovery.policy_types import Policies

MiB, GiB = 1 << 20, 1 << 30
NOW = 10000.0
NOUP = frozenset({"noup"})
RUNF = frozenset({"noout", "norebalance"})


def fixed_500(osd, observations, now):
    return 500 * MiB


POL = Policies(start_order=REGISTRY["start_order"]["service_first"],
               budget=REGISTRY["budget"]["fraction"], footprint=fixed_500,
               over_budget=REGISTRY["over_budget"]["heap_then_restart"])


def osd(i, up=None, **kw):
    host = "h%d" % (i // 3)
    if up is None:
        up = i < 3
    base = dict(id=i, host=host, crush_path=("default", "r1", host), up=up, pgs=16,
                process="running" if up else "stopped", rss_bytes=300 * MiB if up else 0,
                pgs_inactive=0 if up else 4, down_since=None if up else NOW - 3600)
    base.update(kw)
    return OsdState(**base)


def snap(*changed, used=None, epoch=10, hosts=("h0", "h1"), **kw):
    by_id = {o.id: o for o in (osd(i) for i in range(6))}
    by_id.update({o.id: o for o in changed})
    used = used or {}
    hm = tuple(HostMem(name=h, mem_total=8 * GiB, mem_used=used.get(h, 1 * GiB),
                       mem_available=4 * GiB, reported_at=NOW) for h in hosts)
    kw.setdefault("helpers_seen", {h: NOW - 5 for h in hosts})
    return Snapshot(epoch=epoch, osds=tuple(by_id[i] for i in sorted(by_id)), hosts=hm, **kw)


# The cases' numbers are drawn for a budget of 0.8 of an 8 GiB host (6.4 GiB), not for the
# Intent's default: they test the rules, whatever the default budget.
B80 = Budget("fraction", 0.8)
RUN = Intent(mode="controlled", run_id="r1", concurrency=1, budget=B80)   # one at a time
RUNNING = Progress(run_id="r1", phase="running", epoch=10, saved_flags=frozenset(),
                   held_osds=frozenset({3, 4, 5}), started_at=NOW - 100)
HELD = [osd(i, flags=NOUP) for i in (3, 4, 5)]
PRE3 = osd(3, flags=NOUP, process="running", rss_bytes=240 * MiB, process_started_at=NOW - 10)
FAT3 = osd(3, up=True, process="running", rss_bytes=2 * GiB, pgs_inactive=0)
OVER = {"h1": 7 * GiB}
FAT6 = osd(6, up=True, process="running", rss_bytes=2 * GiB, pgs_inactive=0)
HELD2 = [osd(i, up=False, flags=NOUP) for i in (7, 8)]
OBS3 = tuple(Observation(osd=9, pgs=16, downtime_s=60.0, pg_log_entries=0,
                         peak_bytes=400 * MiB) for _ in range(3))

ROOM = [osd(i, up=True, rss_bytes=1200 * MiB, pgs_inactive=0) for i in (3, 4)]
ROOMP = RUNNING.evolve(finished=frozenset({3, 4}), held_osds=frozenset({5})).with_columns(
    restarted={3: NOW - 4000, 4: NOW - 4000}, fresh_rss={3: 1000 * MiB, 4: 1000 * MiB},
    heap_released={3: NOW - 30, 4: NOW - 30})


def sig(a):
    """What an action does, without its free-text reason."""
    d = a.to_dict()
    d.pop("reason")
    kind = d.pop("kind")
    return " ".join([kind] + ["%s=%s" % (k, d[k]) for k in sorted(d) if d[k] not in (None, "")])


G = "grant_start host=h1 osd=%d predicted_bytes=" + str(500 * MiB)
FLAGS = ["set_flag flag=noout", "set_flag flag=norebalance"]
HOLDS = ["hold_osd osd=3", "hold_osd osd=4", "hold_osd osd=5"]
