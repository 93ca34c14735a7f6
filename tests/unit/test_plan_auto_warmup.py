"""concurrency auto opens only on real peaks (Decision.concurrency): load floors of OSDs that
booted are lower bounds of their peaks, and several starts admitted beside each other on a
prediction only lower bounds shaped each add their under-prediction to the host (simulator,
one rack down 1 h, 1,200 OSDs: 1.14 x the budget while load floors opened it).

Lab shape of test_plan_load_bound.py (h2: osd.2 and osd.3, budget 237 MiB), footprint 107 MiB:
osd.2 booted with a 60 MiB load and is peering; osd.0 and osd.4 on the other hosts booted
with 60 MiB loads too. Three load floors, no settled start: osd.3 waits for osd.2 although
60 + (120 - 60) + 107 <= 237 MiB would admit it. Three settled starts: it is granted.
"""
from __future__ import annotations

from dataclasses import replace

from ceph_recovery.model import Budget, HostMem, Intent, Observation, OsdState, Progress, Snapshot
from ceph_recovery.plan import plan
from ceph_recovery.policies import REGISTRY
from ceph_recovery.policy_types import Policies

MiB = 1 << 20
NOW = 50000.0
RUNF = frozenset({"noout", "norebalance"})
BUDGET = Intent(mode="controlled", run_id="r1", scope=("h2",),
                budget=Budget(kind="bytes", value=237 * MiB))


def fixed_107(osd, observations, now):
    return 107 * MiB


POL = Policies(start_order=REGISTRY["start_order"]["service_first"],
               budget=REGISTRY["budget"]["bytes"], footprint=fixed_107,
               over_budget=REGISTRY["over_budget"]["heap_then_restart"])


def osd(i, **kw):
    host = "h%d" % (i // 2 + 1)
    base = dict(id=i, host=host, crush_path=("default", "r%d" % (1 + (i >= 4)), host),
                up=i not in (2, 3), process="running", rss_bytes=150 * MiB, pgs=16,
                down_since=None)
    if i in (2, 3):
        base.update(process="stopped", rss_bytes=0, flags=frozenset({"noup"}), pgs_inactive=0,
                    pgs_degraded=16, down_since=NOW - 60)
    base.update(kw)
    return OsdState(**base)


def snap(*changed, used=0):
    by_id = {o.id: o for o in (osd(i) for i in range(6))}
    by_id.update({o.id: o for o in changed})
    hosts = tuple(HostMem(name=h, mem_total=263 * MiB, mem_limit=263 * MiB, source="cgroup",
                          mem_used=used if h == "h2" else 200 * MiB, mem_available=0,
                          reported_at=NOW) for h in ("h1", "h2", "h3"))
    return Snapshot(epoch=150, osds=tuple(by_id[i] for i in sorted(by_id)), hosts=hosts,
                    cluster_flags=RUNF, helpers_seen={h: NOW - 1 for h in ("h1", "h2", "h3")})


def sig(a):
    d = a.to_dict()
    d.pop("reason")
    kind = d.pop("kind")
    return " ".join([kind] + ["%s=%s" % (k, d[k]) for k in sorted(d) if d[k] not in (None, "")])

AUTO = replace(BUDGET, concurrency=0)
PEERING2 = osd(2, up=True, flags=frozenset(), process="running", rss_bytes=60 * MiB,
               pgs_inactive=16, pgs_degraded=16, down_since=None)
BOOTED = Progress(run_id="r1", phase="running", epoch=149, saved_flags=frozenset(),
                  held_osds=frozenset({3}), started_at=NOW - 60,
                  granted={2: NOW - 20}, booting={2: NOW - 10}, peaks={2: 60 * MiB},
                  downtime={2: 48.0}, load_rss={0: 60 * MiB, 2: 60 * MiB, 4: 60 * MiB})


def test_auto_stays_at_one_start_per_host_while_only_load_floors_are_known():
    res = plan(snap(PEERING2, used=60 * MiB), AUTO, BOOTED, POL, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert res.summary["hosts"]["h2"]["gate"] == "1 in flight"


def test_auto_opens_once_three_real_peaks_are_known():
    settled = tuple(Observation(osd=o, pgs=16, downtime_s=48.0, pg_log_entries=0,
                                peak_bytes=100 * MiB, load_bytes=60 * MiB) for o in (0, 4, 5))
    res = plan(snap(PEERING2, used=60 * MiB), AUTO, BOOTED.evolve(observations=settled), POL,
               NOW)
    assert [sig(a) for a in res.actions] == ["grant_start host=h2 osd=3 predicted_bytes=%d"
                                             % (107 * MiB)]
