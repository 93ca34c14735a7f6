"""Decision-tick time of plan() on a synthetic 10,000-OSD / 1,000-host / 300,000-PG snapshot.

The snapshot is mid-run: one rack (10 hosts, 100 OSDs) is down and held, the run is
controlled; between ticks the actions are applied to the snapshot (holds, flags, grants ->
preboot with load-time RSS, boots -> up) and `now`/epoch advance, so every tick plans on a
fresh, changing cluster. Baseline, measured in the same run on the same data: what any shell
pays per tick before plan() runs, i.e. building the snapshot (10,000 fresh OsdState values,
one pass summing RSS per host, 1,000 HostMem, the Snapshot).

The snapshot carries PG membership (model.PgMap): 300,000 PGs of 3 OSDs on 3 distinct hosts
(seeded, so the down rack leaves some PGs below min_size). The placement is built once, like
a shell that keeps it while the OSD map's placement does not change (its time is reported as
`membership_build_ms`); each tick's inactive set (PGs with fewer than min_size members up or
starting) is recomputed from the PGs of the down OSDs and counted in the baseline.
"""
from __future__ import annotations

import random
import statistics
import time
from dataclasses import replace
from typing import Dict, List, Optional

from ceph_recovery import actions as A
from ceph_recovery.model import (MODE_CONTROLLED, PROC_RUNNING, PROC_STOPPED, Budget, HostMem,
                                 Intent, OsdState, PgMap, PoolInfo, Progress, Snapshot)
from ceph_recovery.plan import plan
from ceph_recovery.policies import resolve

GiB = 1 << 30


def build_osds(n_osds: int, n_hosts: int, n_racks: int, n_pgs: int, size: int = 3):
    per_host, hosts_per_rack = n_osds // n_hosts, n_hosts // n_racks
    pgs_per_osd = n_pgs * size // n_osds
    osds = []
    for i in range(n_osds):
        h = i // per_host
        r = h // hosts_per_rack
        down = r == 1
        osds.append(OsdState(
            id=i, host="host%d" % h, crush_path=("default", "rack%d" % r, "host%d" % h),
            up=not down, process=PROC_STOPPED if down else PROC_RUNNING,
            rss_bytes=0 if down else int(3.5 * GiB), pgs=pgs_per_osd,
            pgs_inactive=3 if down else 0, pgs_degraded=pgs_per_osd // 3 if down else 9,
            pg_log_entries=0 if down else pgs_per_osd * 3000,
            down_since=-3600.0 if down else None, heap_release=None if down else True))
    return osds


def build_pg_map(n_osds: int, n_hosts: int, n_pgs: int, size: int = 3, seed: int = 1) -> PgMap:
    """n_pgs PGs of `size` OSDs on distinct hosts (seeded), one pool (size, min_size 2)."""
    rnd = random.Random(seed)
    per_host = n_osds // n_hosts
    members = []
    by_osd: Dict[int, List[int]] = {}
    for pg in range(n_pgs):
        hosts = rnd.sample(range(n_hosts), size)
        m = tuple(h * per_host + rnd.randrange(per_host) for h in hosts)
        members.append(m)
        for o in m:
            by_osd.setdefault(o, []).append(pg)
    return PgMap(members=tuple(members), pool_of=(1,) * n_pgs,
                 pools={1: PoolInfo(size=size, min_size=2)},
                 by_osd={o: tuple(v) for o, v in by_osd.items()})


def inactive_pgs(pm: PgMap, osds: List[OsdState]) -> frozenset:
    """PGs below min_size: only PGs of down OSDs can be."""
    there = {o.id for o in osds if o.up or o.process == PROC_RUNNING}
    out = set()
    for o in osds:
        if o.id in there:
            continue
        for pg in pm.by_osd.get(o.id, ()):
            if pg not in out and sum(1 for m in pm.members[pg] if m in there) < 2:
                out.add(pg)
    return frozenset(out)


def build_snapshot(osds, hosts_mem: Dict[str, int], epoch: int, flags, now: float,
                   n_pgs: int, pg_map: Optional[PgMap] = None) -> Snapshot:
    hosts = tuple(HostMem(name=h, mem_total=64 * GiB, mem_used=u, mem_available=64 * GiB - u,
                          reported_at=now) for h, u in hosts_mem.items())
    if pg_map is not None:
        pg_map = replace(pg_map, inactive=inactive_pgs(pg_map, osds))
    inactive = len(pg_map.inactive) if pg_map is not None else 300
    return Snapshot(epoch=epoch, osds=tuple(osds), hosts=hosts, cluster_flags=frozenset(flags),
                    pgs_total=n_pgs, pgs_active=n_pgs - inactive, pgs_clean=n_pgs - 30000,
                    helpers_seen={h: now for h in hosts_mem}, pg_map=pg_map)


def _apply(osds: List[OsdState], acts, flags: set, now: float) -> None:
    for a in acts:
        if isinstance(a, A.SetFlag):
            flags.add(a.flag)
        elif isinstance(a, A.UnsetFlag):
            flags.discard(a.flag)
        elif isinstance(a, (A.HoldOsd, A.AllowBoot)):
            o = osds[a.osd]
            fl = frozenset(("noup",)) if isinstance(a, A.HoldOsd) else frozenset()
            osds[a.osd] = replace(o, flags=fl, up=o.up or (isinstance(a, A.AllowBoot)
                                                          and o.process == PROC_RUNNING))
        elif isinstance(a, A.GrantStart):
            osds[a.osd] = replace(osds[a.osd], process=PROC_RUNNING, rss_bytes=GiB,
                                  process_started_at=now)


def _host_mem(osds) -> Dict[str, int]:
    used: Dict[str, int] = {}
    for o in osds:
        used[o.host] = used.get(o.host, 2 * GiB) + o.rss_bytes
    return used


def measure(ticks: int = 50, n_osds: int = 10000, n_hosts: int = 1000, n_racks: int = 100,
            n_pgs: int = 300000, membership: bool = True,
            start_order: Optional[str] = None) -> dict:
    intent = Intent(mode=MODE_CONTROLLED, budget=Budget(), scope=("rack1",),
                    run_id="bench", start_order=start_order or Intent.start_order)
    pol = resolve(intent)
    osds = build_osds(n_osds, n_hosts, n_racks, n_pgs)
    t0 = time.perf_counter()
    pm = build_pg_map(n_osds, n_hosts, n_pgs) if membership else None
    pm_ms = round((time.perf_counter() - t0) * 1000, 1)
    progress, flags = Progress(), set()
    plan_t, base_t = [], []
    for k in range(ticks):
        now = 5.0 * k
        t0 = time.perf_counter()
        snap = build_snapshot([replace(o) for o in osds], _host_mem(osds),
                              k + 1, flags, now, n_pgs, pm)
        base_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        res = plan(snap, intent, progress, pol, now)
        plan_t.append(time.perf_counter() - t0)
        progress = res.progress
        _apply(osds, res.actions, flags, now)
    out = _stats(plan_t, base_t, ticks, n_osds, n_hosts, n_pgs)
    out.update(membership=membership, membership_build_ms=pm_ms if membership else None,
               start_order=intent.start_order)
    return out


def _pct(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def _stats(plan_t, base_t, ticks, n_osds, n_hosts, n_pgs) -> dict:
    med, base = statistics.median(plan_t), statistics.median(base_t)
    return {"ticks": ticks, "osds": n_osds, "hosts": n_hosts, "pgs": n_pgs,
            "plan_median_ms": round(med * 1000, 2), "plan_p99_ms": round(_pct(plan_t, 0.99) *
                                                                       1000, 2),
            "plan_first_ms": round(plan_t[0] * 1000, 2),
            "baseline_median_ms": round(base * 1000, 2),
            "baseline_p99_ms": round(_pct(base_t, 0.99) * 1000, 2),
            "ratio_plan_to_baseline": round(med / base, 2) if base > 0 else None}
