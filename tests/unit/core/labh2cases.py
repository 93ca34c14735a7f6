"""Builders of the lab-shaped plan() cases (registered as module `labh2cases` by conftest.py).

The lab: hosts h1-h3 with two OSDs each (osd.0-5), racks r1 (h1, h2) and r2 (h3), every host
limited to 263 MiB; the run's scope is h2 (osd.2 and osd.3, down 60 s, held by noup) with a
237 MiB budget. The footprint policy is a fixed 107 MiB so that the expected grants are exact;
the others are the real registered policies.

osd() and snap() build this lab for every file that replays it; a file whose lab differed
(another downtime, other OSDs down, other running sizes, smaller hosts) passes that as
keywords: down=, down_s=, rss= to both, host_bytes= and used= to snap().
"""
from __future__ import annotations

from ceph_recovery.model import Budget, HostMem, Intent, OsdState, Snapshot
from ceph_recovery.policies import REGISTRY
from ceph_recovery.policy_types import Policies

from plancases import sig  # noqa: F401  (the action signature the cases compare)

MiB = 1 << 20
NOW = 50000.0
NOUP = frozenset({"noup"})
RUNF = frozenset({"noout", "norebalance"})
BUDGET = Intent(mode="controlled", run_id="r1", scope=("h2",),
                budget=Budget(kind="bytes", value=237 * MiB))


def fixed_107(osd, observations, now):
    return 107 * MiB


POL = Policies(start_order=REGISTRY["start_order"]["service_first"],
               budget=REGISTRY["budget"]["bytes"], footprint=fixed_107,
               over_budget=REGISTRY["over_budget"]["heap_then_restart"])


def osd(i, down=(2, 3), down_s=60.0, rss=150 * MiB, **kw):
    """osd.i of the lab: one of `down` is stopped, held by noup, down `down_s` with its 16 PGs
    degraded; any other runs at `rss` (bytes, or bytes per OSD id: 0 for an id not in it).
    Keywords beyond these are OsdState fields and win."""
    host = "h%d" % (i // 2 + 1)
    base = dict(id=i, host=host, crush_path=("default", "r%d" % (1 + (i >= 4)), host),
                up=i not in down, process="running", pgs=16,
                rss_bytes=rss.get(i, 0) if isinstance(rss, dict) else rss)
    if i in down:
        base.update(process="stopped", rss_bytes=0, flags=NOUP, pgs_degraded=16,
                    down_since=NOW - down_s)
    base.update(kw)
    return OsdState(**base)


def snap(*changed, used=0, epoch=150, at=NOW, host_bytes=263 * MiB, **shape):
    """The lab's snapshot: osd(i, **shape) for osd.0-5, each of `changed` in its id's place;
    hosts of `host_bytes` (cgroup limits), h2 using `used` and the others 200 MiB, reported at
    `at`; the run's cluster flags set."""
    by_id = {o.id: o for o in (osd(i, **shape) for i in range(6))}
    by_id.update({o.id: o for o in changed})
    hosts = tuple(HostMem(name=h, mem_total=host_bytes, mem_limit=host_bytes, source="cgroup",
                          mem_used=used if h == "h2" else 200 * MiB, mem_available=0,
                          reported_at=at) for h in ("h1", "h2", "h3"))
    return Snapshot(epoch=epoch, osds=tuple(by_id[i] for i in sorted(by_id)), hosts=hosts,
                    cluster_flags=RUNF, helpers_seen={h: at - 1 for h in ("h1", "h2", "h3")})
