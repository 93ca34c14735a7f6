"""Per-tick indexes over a Snapshot: built once per plan() call in O(OSDs x CRUSH depth).

Shared by plan() and check_invariants() so both agree on what "candidate", "in flight",
"held" and "helper missing" mean:

- in scope: the OSD's CRUSH path (or host) contains one of `intent.scope`, or scope is empty;
- candidate: in scope, down, not restarting (an OSD this run brought up that went down again,
  e.g. killed, is a candidate again: a run is not done while an in-scope OSD is down);
- restarting: restarted by this run less than RESTART_SETTLE_S ago, or less than
  `intent.boot_timeout_s` ago and still down (a restart an earlier run made - before
  `progress.started_at` - counts for the restart cooldown only: a new run does not wait on
  another run's restart as if it were still in progress);
- in flight on a host: granted (and not finished) OSDs plus restarting OSDs of that host;
- operator-held: an `intent.holds` bucket is on the OSD's CRUSH path (or is its host);
- an OSD that returns by a backfill (outreturn.py) is seen with no missed history;
- helper missing: no HostMem for the host, or its last report (helpers_seen, else
  HostMem.reported_at) is older than HELPER_STALE_S.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, List, Mapping, Optional, Set, Tuple

from .model import (MODE_CONTROLLED, PHASE_ABORTED, PHASE_ABORTING, PHASE_IDLE, PHASE_PAUSED,
                    PHASE_RUNNING, HostMem, Intent, OsdState, Progress, Snapshot)
from .outreturn import as_returning

HELPER_STALE_S = 30.0      # a helper that has not reported for this long is missing
RESTART_SETTLE_S = 30.0    # a restart occupies its host's slot at least this long
MIN_RESTART_GAIN = 16 << 20  # a restart expected to free less than this is not worth it
# ok-to-stop answers hold for the OSD map epoch they were asked in and at most this long:
# Ceph's answer depends on PG states (a PG still peering makes it "no"), which change without
# a new OSD map epoch, so an answer is asked again after this long (the helper re-checks
# ok-to-stop itself before it stops anything)
OK_TO_STOP_TTL_S = 10.0


ACTIVE_PHASES = (PHASE_RUNNING, PHASE_PAUSED, PHASE_ABORTING)


def fresh_ok_to_stop(asked: Optional[Tuple[int, Mapping[int, Tuple[bool, float]]]],
                     epoch: int, now: float) -> Dict[int, bool]:
    """The ok-to-stop answers a snapshot of `epoch` at `now` carries: `asked` is (epoch asked
    in, osd -> (answer, when asked)); answers of another epoch or older than OK_TO_STOP_TTL_S
    are left out (plan() then asks again)."""
    if asked is None or asked[0] != epoch:
        return {}
    return {osd: ok for osd, (ok, at) in sorted(asked[1].items())
            if 0 <= now - at < OK_TO_STOP_TTL_S}


def starts_run(intent: Intent, progress: Progress) -> bool:
    """Is this tick the first of a run? (controlled, and a new run_id or no run going on)"""
    return intent.mode == MODE_CONTROLLED and (
        progress.run_id != intent.run_id or progress.phase in (PHASE_IDLE, PHASE_ABORTED))


def begin_run(intent: Intent, progress: Progress, snapshot: Snapshot, now: float) -> Progress:
    """The progress a new run starts from: run markers cleared (unless a run was going on,
    which the new run_id takes over), cluster flags saved, learning and cooldowns kept."""
    p = progress
    if p.phase not in ACTIVE_PHASES or p.saved_flags is None:
        p = p.evolve(saved_flags=frozenset(snapshot.cluster_flags), service_at=None,
                     stalled_since=None, budget_state="", finished=frozenset(),
                     held_osds=frozenset()).with_columns(
            granted={}, booting={}, peaks={}, downtime={}, failures={}, settling={},
            grew_at={}, load_rss={}, missed={})
        return p.evolve(run_id=intent.run_id, phase=PHASE_RUNNING, started_at=now,
                        finished_at=None)
    # a new run_id taking over a run going on: its restarts are still this run's
    return p.evolve(run_id=intent.run_id, phase=PHASE_RUNNING,
                    started_at=now if p.started_at is None else p.started_at, finished_at=None)


def osd_path(o: OsdState):
    """CRUSH path including the host, whatever the shell put in crush_path."""
    if o.crush_path and o.crush_path[-1] == o.host:
        return o.crush_path
    return tuple(o.crush_path) + (o.host,)


class View:
    """Indexes over one snapshot for one intent/progress; read-only after construction."""

    def __init__(self, snapshot: Snapshot, intent: Intent, progress: Progress, now: float):
        self.snapshot = snapshot
        self.intent = intent
        self.now = now
        self.by_id: Dict[int, OsdState] = {}
        self.by_host: Dict[str, List[OsdState]] = {}
        self.hostmem: Dict[str, HostMem] = {h.name: h for h in snapshot.hosts}
        self.noup_buckets: FrozenSet[str] = frozenset(
            b for b, f in snapshot.bucket_flags.items() if "noup" in f)
        scope = frozenset(intent.scope)
        holds = frozenset(intent.holds)
        self.in_scope: Set[int] = set()
        self.scope_seen: Set[str] = set()         # scope buckets that match some OSD
        self.op_held: Dict[int, str] = {}          # osd -> the operator-held bucket over it
        for o in map(as_returning, snapshot.osds):
            self.by_id[o.id] = o
            self.by_host.setdefault(o.host, []).append(o)
            path = osd_path(o)
            if not scope or not scope.isdisjoint(path):
                self.in_scope.add(o.id)
                if scope:
                    self.scope_seen.update(scope.intersection(path))
            if holds and not holds.isdisjoint(path):
                self.op_held[o.id] = next(b for b in path if b in holds)
        self.restarting: Set[int] = set()
        for osd_id, t in progress.osd_map("restarted").items():
            o = self.by_id.get(osd_id)
            if o is None or by_earlier_run(t, progress):
                continue
            age = now - t
            if age < RESTART_SETTLE_S or (age < intent.boot_timeout_s and not o.up):
                self.restarting.add(osd_id)
        self.candidates: List[OsdState] = [
            o for o in self.by_id.values()
            if o.id in self.in_scope and not o.up and o.id not in self.restarting]

    # ------------------------------------------------------------------ queries
    def bucket_noup_over(self, o: OsdState) -> List[str]:
        """Buckets on the OSD's path that carry a bucket-level noup (set-group)."""
        if not self.noup_buckets:
            return []
        return [b for b in osd_path(o) if b in self.noup_buckets]

    def helper_missing(self, host: str) -> bool:
        hm = self.hostmem.get(host)
        if hm is None:
            return True
        seen = self.snapshot.helpers_seen.get(host, hm.reported_at)
        return seen is not None and self.now - seen > HELPER_STALE_S

    def findings_for(self, host: str) -> list:
        return [f for f in self.snapshot.findings if host in f.hosts]

    def in_flight(self, granted: Iterable[int]) -> Dict[str, List[int]]:
        """host -> OSDs in flight there (granted and not finished, or restarting)."""
        out: Dict[str, List[int]] = {}
        for osd_id in sorted(set(granted) | self.restarting):
            o = self.by_id.get(osd_id)
            if o is not None:
                out.setdefault(o.host, []).append(osd_id)
        return out

    def scope_hosts(self) -> List[str]:
        """Hosts that carry at least one in-scope OSD, sorted."""
        return sorted(h for h, osds in self.by_host.items()
                      if any(o.id in self.in_scope for o in osds))

    def host_of(self, osd_id: int) -> Optional[str]:
        o = self.by_id.get(osd_id)
        return o.host if o is not None else None


def by_earlier_run(when: float, progress: Progress) -> bool:
    """Was something done at `when` (a restart) by a run before the current one?"""
    return progress.started_at is not None and when < progress.started_at


def in_restart_cooldown(osd_id: int, progress: Progress, intent: Intent, now: float) -> bool:
    """Restarted less than intent.restart_cooldown_s ago: by this run, or by an earlier run
    unless this run has brought the OSD up since (it went down again and this run started a
    fresh process of it: the restart being cooled down is history, and the fresh process may
    be restarted to make room)."""
    last = progress.osd_map("restarted").get(osd_id)
    if last is None or now - last >= intent.restart_cooldown_s:
        return False
    return not (by_earlier_run(last, progress) and osd_id in progress.finished)


def still_peering(o: OsdState, progress: Progress) -> bool:
    """An OSD this run started that settles (Progress.settling) with PGs still inactive: its
    PGs are peering (merging its missed history), and a restart would lose that work and
    merge it all again. Not restartable. Once all its PGs are active it has peered: a restart
    then reloads part of what it merged and peers only the writes it missed since (lab, Reef
    18.2.7: 0.28-0.48 x its first return's growth over its load; Pacific 16.2.15, no
    tcmalloc: 0.41-0.52 x; no second peak; its PGs active again ~4 s after it is up, as on
    its first return; docs/data/restart-while-recovering), so it may be restarted to make
    room like any other OSD, on ok-to-stop and PG membership (StopCheck.stop_breaks)."""
    return o.id in progress.osd_map("settling") and o.pgs_inactive > 0


def restart_gain(o: OsdState, progress: Progress) -> int:
    """Bytes a restart of `o` is expected to free: its rss minus the rss it came back at after
    its last restart (Progress.fresh_rss), else minus the lower median of the other OSDs'
    fresh rss, else all of it (the field: a quick restart comes back with little history).
    The lower median: with few restarts measured, one that came back big (it was restarted
    while still recovering, with its missed history) must not hide that a restart of a
    settled OSD frees most of it; an OSD's own measured restart always wins, except once its
    PGs are clean: a restart then reloads its PG logs only, as its preboot load did (its
    lowest Observation.load_bytes), whatever missed history a restart during its recovery
    reloaded (lab: "a quick restart sheds most of it", 396 -> 138 MiB).
    An OSD this run restarted that has grown back to within MIN_RESTART_GAIN of its rss at
    that restart (Progress.restart_rss) frees nothing lasting: its memory is what it holds at
    rest, not history a restart sheds. Its gain is 0, or make-room restarts of it would loop."""
    before = progress.osd_map("restart_rss").get(o.id)
    if before is not None and o.rss_bytes >= before - MIN_RESTART_GAIN:
        return 0
    fresh = progress.osd_map("fresh_rss").get(o.id)
    if fresh is None and progress.osd_map("fresh_rss"):
        vals = sorted(progress.osd_map("fresh_rss").values())
        fresh = vals[(len(vals) - 1) // 2]
    if o.pgs > 0 and o.pgs_degraded == 0:
        loads = [ob.load_bytes for ob in progress.observations
                 if ob.osd == o.id and ob.load_bytes]
        if loads:
            fresh = min(loads) if fresh is None else min(fresh, min(loads))
    return max(0, o.rss_bytes - (fresh or 0))
