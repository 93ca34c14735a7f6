"""A tiny deterministic cluster model that carries out plan() actions (tests, examples).

Not the simulator (that is `ceph_recovery_tools.sim`): no PG placement, no bandwidth. Just
enough of the two gates to drive plan() end to end: an OSD process started under noup sits
in preboot at its load-time footprint; once no noup holds it (per-OSD, bucket, cluster) it is
up after `boot_s`, its rss climbs to its peak and its PGs become active after `peer_s`.
Memory past a host's RAM OOM-kills the largest process there (it then stays down: no
systemd in this model). ok-to-stop queries are answered in the next snapshot and stay valid
until the epoch changes.
Pure and deterministic: time only advances in `step()`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from ceph_recovery.actions import (Action, AllowBoot, GrantStart, HeapRelease, HoldBucket, HoldOsd,
                      QueryOkToStop, ReleaseBucket, RestartOsd, SetFlag, StopOsd, UnsetFlag)
from ceph_recovery.model import HostMem, OsdState, Snapshot

MiB = 1 << 20


@dataclass
class MOsd:
    id: int
    host: str
    path: Tuple[str, ...]
    up: bool
    peak: int                       # rss it reaches while catching up
    pgs: int = 16
    running: bool = False
    rss: int = 0
    noup: bool = False
    started_at: Optional[float] = None
    up_at: Optional[float] = None   # when the boot gate opened + boot_s
    inactive: int = 0
    down_since: Optional[float] = None
    ok_to_stop: bool = True
    heap_release: Optional[bool] = False
    ceph_version: Optional[str] = None   # its release (`ceph osd metadata`)
    pglog_dups: int = 0                  # dups warnings its helper saw (ceph_recovery.dups)


@dataclass
class Model:
    osds: Dict[int, MOsd]
    host_ram: Dict[str, int]
    system_bytes: int = 256 * MiB
    now: float = 0.0
    epoch: int = 1
    cluster_flags: Set[str] = field(default_factory=set)
    bucket_noup: Set[str] = field(default_factory=set)
    load_fraction: float = 0.6      # preboot rss as a fraction of peak
    idle_bytes: int = 80 * MiB
    boot_s: float = 2.0
    peer_s: float = 10.0
    restart_s: float = 5.0
    answers: Dict[int, bool] = field(default_factory=dict)
    answers_epoch: int = 0
    pending_queries: Set[int] = field(default_factory=set)
    dead_helpers: Set[str] = field(default_factory=set)
    oom_kills: int = 0
    restarts: int = 0
    log: List[str] = field(default_factory=list)

    # ------------------------------------------------------------------ actions
    def apply(self, actions) -> None:
        for a in actions:
            self._apply(a)

    def _apply(self, a: Action) -> None:
        o = self.osds.get(getattr(a, "osd", -1))
        if isinstance(a, SetFlag):
            self.cluster_flags.add(a.flag)
        elif isinstance(a, UnsetFlag):
            self.cluster_flags.discard(a.flag)
        elif isinstance(a, HoldBucket):
            self.bucket_noup.add(a.bucket)
        elif isinstance(a, ReleaseBucket):
            self.bucket_noup.discard(a.bucket)
        elif isinstance(a, HoldOsd) and o is not None:
            o.noup = True
        elif isinstance(a, AllowBoot) and o is not None:
            o.noup = False
        elif isinstance(a, GrantStart) and o is not None and not o.running:
            if o.host not in self.dead_helpers:
                o.running, o.started_at, o.rss = True, self.now, int(o.peak * self.load_fraction)
        elif isinstance(a, QueryOkToStop) and o is not None:
            self.pending_queries.add(o.id)
            return
        elif isinstance(a, HeapRelease) and o is not None and o.heap_release:
            o.rss = max(self.idle_bytes, o.rss // 2)
        elif isinstance(a, RestartOsd) and o is not None and o.running:
            if not self.answers.get(o.id, False):
                raise AssertionError("RestartOsd osd.%d without a True ok-to-stop" % o.id)
            self.restarts += 1
            # a quick restart comes back with little history, never bigger than it was
            o.peak = max(min(o.rss, 2 * self.idle_bytes), min(o.rss, self.idle_bytes))
            o.up, o.rss, o.started_at, o.down_since = False, min(o.rss, self.idle_bytes), \
                self.now, self.now
            o.up_at = self.now + self.restart_s
        elif isinstance(a, StopOsd) and o is not None and o.running:
            if o.up and not self.answers.get(o.id, False):
                raise AssertionError("StopOsd of up osd.%d without a True ok-to-stop" % o.id)
            if o.up:
                o.down_since = self.now
            o.up, o.running, o.rss, o.up_at = False, False, 0, None
        else:
            return
        self.epoch += 1
        self.log.append("%.0f %s" % (self.now, a.describe()))

    # ------------------------------------------------------------------ time
    def held(self, o: MOsd) -> bool:
        return o.noup or "noup" in self.cluster_flags or any(b in self.bucket_noup for b in o.path)

    def step(self, dt: float) -> None:
        self.now += dt
        for o in sorted(self.osds.values(), key=lambda x: x.id):
            self._step_osd(o)
        for h in sorted(self.host_ram):
            self._oom(h)
        if self.answers_epoch != self.epoch:
            self.answers = {}                 # answers are valid at the epoch they were given
        self.answers.update({i: self.osds[i].ok_to_stop for i in self.pending_queries})
        self.answers_epoch = self.epoch
        self.pending_queries = set()

    def _step_osd(self, o: MOsd) -> None:
        if not o.running:
            return
        if not o.up:
            if o.up_at is None and not self.held(o):
                o.up_at = self.now + self.boot_s
            if o.up_at is not None and self.now >= o.up_at:
                o.up, o.down_since, o.inactive = True, None, o.inactive
                o.up_at = self.now
                self.epoch += 1
            return
        if o.up_at is not None and self.now - o.up_at >= self.peer_s:
            o.inactive = 0
        if o.up_at is not None and o.rss < o.peak and o.started_at is not None:
            o.rss = o.peak

    def _oom(self, host: str) -> None:
        while self.used(host) > self.host_ram[host]:
            victims = [o for o in self.osds.values() if o.host == host and o.running]
            if not victims:
                return
            v = max(victims, key=lambda x: (x.rss, x.id))
            self.oom_kills += 1
            self.log.append("%.0f OOM kill osd.%d on %s" % (self.now, v.id, host))
            v.running, v.up, v.rss, v.up_at = False, False, 0, None
            v.down_since = self.now
            self.epoch += 1

    def used(self, host: str) -> int:
        return self.system_bytes + sum(o.rss for o in self.osds.values() if o.host == host)

    # ------------------------------------------------------------------ snapshot
    def snapshot(self) -> Snapshot:
        osds = tuple(OsdState(
            id=o.id, host=o.host, crush_path=o.path, up=o.up,
            flags=frozenset({"noup"}) if o.noup else frozenset(),
            process="running" if o.running else "stopped", rss_bytes=o.rss,
            process_started_at=o.started_at if o.running else None, pgs=o.pgs,
            pgs_inactive=o.inactive,
            pgs_degraded=o.inactive, down_since=o.down_since, heap_release=o.heap_release,
            ceph_version=o.ceph_version, pglog_dups=o.pglog_dups)
            for o in sorted(self.osds.values(), key=lambda x: x.id))
        hosts = tuple(HostMem(name=h, mem_total=ram, mem_used=self.used(h),
                              mem_available=max(0, ram - self.used(h)), reported_at=self.now)
                      for h, ram in sorted(self.host_ram.items()) if h not in self.dead_helpers)
        seen = {h: self.now for h in self.host_ram if h not in self.dead_helpers}
        flags: Dict[str, FrozenSet[str]] = {b: frozenset({"noup"}) for b in self.bucket_noup}
        return Snapshot(epoch=self.epoch, osds=osds, hosts=hosts, bucket_flags=flags,
                        cluster_flags=frozenset(self.cluster_flags),
                        ok_to_stop=dict(self.answers) if self.answers_epoch == self.epoch else {},
                        helpers_seen=seen)

    def all_up(self) -> bool:
        return all(o.up for o in self.osds.values())


def make_model(hosts: int = 2, per_host: int = 3, down_hosts=(1,), ram: int = 2048 * MiB,
               peak: int = 400 * MiB, racks: int = 1, now: float = 1000.0) -> Model:
    """hosts x per_host OSDs (ids host-major), hosts spread over racks; `down_hosts` down."""
    osds: Dict[int, MOsd] = {}
    for h in range(hosts):
        path = ("default", "r%d" % (h % racks), "h%d" % h)
        for k in range(per_host):
            i = h * per_host + k
            down = h in down_hosts
            osds[i] = MOsd(id=i, host="h%d" % h, path=path, up=not down, peak=peak,
                           running=not down, rss=0 if down else 120 * MiB,
                           inactive=8 if down else 0, down_since=now - 3600 if down else None)
    return Model(osds=osds, host_ram={"h%d" % h: ram for h in range(hosts)}, now=now)


def drive(model: Model, intent, progress, policies, plan_fn, check_fn=None, ticks: int = 200,
          dt: float = 5.0, drop=None):
    """Decision plan_fn against the model until Done or `ticks`; returns (progress, history).

    history: one (snapshot, progress_before, result) per tick. `drop(k, actions)` may return
    the actions actually carried out at tick k (to model lost commands). check_fn (e.g.
    check_invariants) violations raise AssertionError immediately."""
    history = []
    for k in range(ticks):
        snap = model.snapshot()
        res = plan_fn(snap, intent, progress, policies, model.now)
        if check_fn is not None:
            errs = check_fn(snap, intent, progress, res, policies, now=model.now)
            if errs:
                raise AssertionError("tick %d: %s" % (k, errs))
        history.append((snap, progress, res))
        progress = res.progress
        model.apply(drop(k, res.actions) if drop is not None else res.actions)
        if any(a.kind == "done" for a in res.actions):
            break
        model.step(dt)
    return progress, history
