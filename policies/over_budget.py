"""over_budget policies: (host, osds_on_host, snapshot, progress, intent, now) -> Optional[Action].

Called by plan() for a host that is over its budget, or whose next OSD does not fit while
nothing is in flight there. Returns ONE action:
  HeapRelease(osd)    tcmalloc heap release on the heaviest up OSD (support True or unknown),
                      at most once per HEAP_RELEASE_COOLDOWN_S per OSD, and again only once
                      it grew MIN_RESTART_GAIN above its rss at the last release (what a
                      release freed stays freed; releasing an OSD that did not grow frees
                      nothing new);
  Wait(host)          a heap release on this host is still settling (HEAP_SETTLE_S);
  QueryOkToStop(osd)  the heaviest restartable OSD has no ok-to-stop answer in the snapshot;
  RestartOsd(osd)     the heaviest restartable OSD whose snapshot.ok_to_stop is True;
  None                nothing left to try (plan() reports it in health).
Restartable: up, process not stopped, not in flight in this run (granted), not in its restart
cooldown (ceph_recovery.view.in_restart_cooldown), and expected to free at least
MIN_RESTART_GAIN (its rss minus the rss it came back at after its last restart, see
ceph_recovery.view.restart_gain), not still peering (ceph_recovery.view.still_peering: an
OSD this run started whose PGs are not all active yet); biggest expected gain first. An OSD
whose ok-to-stop answer is False is skipped.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from ceph_recovery.actions import Action, HeapRelease, QueryOkToStop, RestartOsd, Wait
from ceph_recovery.model import PROC_STOPPED, HostMem, Intent, OsdState, Progress, Snapshot
from ceph_recovery.view import MIN_RESTART_GAIN, in_restart_cooldown, restart_gain, still_peering

HEAP_RELEASE_COOLDOWN_S = 120.0
HEAP_SETTLE_S = 10.0
MiB = 1 << 20


def _running(osds: Sequence[OsdState], progress: Progress) -> List[OsdState]:
    return sorted((o for o in osds if o.up and o.process != PROC_STOPPED
                   and o.id not in progress.osd_map("granted")),
                  key=lambda o: (-o.rss_bytes, o.id))


def _restartable(osds: Sequence[OsdState], progress: Progress) -> List[OsdState]:
    """Running OSDs whose restart is expected to free memory, biggest expected gain first.
    OSDs this run started whose PGs are still peering (view.still_peering) are not
    restartable: a restart would lose that peering. Once their PGs are active, a restart
    sheds most of what they merged (lab: they come back at 0.28-0.52 x their first return's
    growth, no second peak)."""
    gains = [(restart_gain(o, progress), o) for o in _running(osds, progress)
             if not still_peering(o, progress)]
    return [o for g, o in sorted(gains, key=lambda x: (-x[0], -x[1].rss_bytes, x[1].id))
            if g >= MIN_RESTART_GAIN]


def _restart(host: HostMem, osds: Sequence[OsdState], snapshot: Snapshot, progress: Progress,
             intent: Intent, now: float) -> Optional[Action]:
    for o in _restartable(osds, progress):
        if in_restart_cooldown(o.id, progress, intent, now):
            continue
        answer = snapshot.ok_to_stop.get(o.id)
        if answer is True:
            return RestartOsd(osd=o.id, host=host.name, reason=(
                "%s short of memory: restart heaviest osd.%d (rss %.0f MiB), ok-to-stop cleared it"
                % (host.name, o.id, o.rss_bytes / MiB)))
        if answer is None:
            return QueryOkToStop(osd=o.id, reason=(
                "%s short of memory: may heaviest osd.%d (rss %.0f MiB) stop?"
                % (host.name, o.id, o.rss_bytes / MiB)))
    return None


def heap_then_restart(host: HostMem, osds_on_host: Sequence[OsdState], snapshot: Snapshot,
                      progress: Progress, intent: Intent, now: float) -> Optional[Action]:
    """Heap release on the heaviest OSD first, then restart the heaviest ok-to-stop OSD."""
    running = _running(osds_on_host, progress)
    if running and running[0].rss_bytes > 0 and running[0].heap_release is not False:
        top = running[0]
        last = progress.osd_map("heap_released").get(top.id)
        grew = top.rss_bytes - progress.osd_map("heap_rss").get(top.id, 0) >= MIN_RESTART_GAIN
        if last is None or (now - last >= HEAP_RELEASE_COOLDOWN_S and grew):
            return HeapRelease(osd=top.id, reason="%s short of memory: release free heap of "
                               "heaviest osd.%d (rss %.0f MiB)" % (host.name, top.id,
                                                                   top.rss_bytes / MiB))
    ids = {o.id for o in osds_on_host}
    if any(now - t < HEAP_SETTLE_S for osd, t in progress.osd_map("heap_released").items()
           if osd in ids):
        return Wait(host=host.name, reason="heap release on %s settling" % host.name)
    return _restart(host, osds_on_host, snapshot, progress, intent, now)


def restart_only(host: HostMem, osds_on_host: Sequence[OsdState], snapshot: Snapshot,
                 progress: Progress, intent: Intent, now: float) -> Optional[Action]:
    """Skip heap release (e.g. ceph-osd without tcmalloc): restart the heaviest ok-to-stop OSD."""
    return _restart(host, osds_on_host, snapshot, progress, intent, now)


OVER_BUDGET = {"heap_then_restart": heap_then_restart, "restart_only": restart_only}
