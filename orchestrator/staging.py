"""Staged starts: where a host's OSDs cannot all peak together, they peer in turn.

Rules:
- a start granted beside others in flight on a host whose whole queue does not fit its
  budget (admission._queue_fits: every OSD still waiting there, on its plain prediction) is
  staged (Progress.staged): its process loads its PGs and waits in preboot under its noup;
  at most STAGED_PER_HOST staged OSDs wait per host. Its whole prediction is reserved from
  the grant on, as for any start (admission.py): staging changes when it peers, not what
  memory it is charged;
- a staged OSD is let boot only while fewer than PEERING_PER_HOST OSDs this run let boot on
  its host are still peering (peering_on); gate 2 (inflight._boot_fits) still applies. The
  next OSD has loaded while the ones before it peered, and it boots as soon as one of them
  is through: its load is off the host's critical path, and the host's peaks come in turn;
- an OSD is still peering (still_peering) while it is not up yet, or while more than PEERING_SHARE of its PGs
  are not active: its own boot takes every PG it is in through peering, while the PGs that
  wait for members on other hosts, or that re-peer for another OSD's boot, are a few;
- a staged OSD waiting for its turn is not late (no RECOVERY_BOOT_TIMEOUT): the run keeps it.

Simulator, one rack down 1 h, `ceph-recovery-bench --sweep` seeds 1-3 (15 cells each),
against the rule this replaces (a host's start beside others only where its whole queue
fits, else one at a time):
  PEERING_PER_HOST 2, STAGED_PER_HOST 1: summed time to all PGs active 9,260 / 9,425 /
    9,545 -> 8,850 / 8,910 / 9,090 s, PG-hours without client I/O 3,215 / 3,220 / 3,210 ->
    3,085 / 3,058 / 3,046, 0 OOM kills;
  STAGED_PER_HOST without a limit: the same times, PG-hours 3,424 / 3,397 / 3,389;
  PEERING_PER_HOST 1: 100 hosts x 56-64 GiB 20-45 s later than 2, fewer PG-hours;
  PEERING_PER_HOST 3: 100 x 56 GiB up to 60 s later than 2, more PG-hours.
"""
from __future__ import annotations

from typing import Container, Iterable, List, Mapping

from .decision import Decision
from .model import OsdState

PEERING_PER_HOST = 2
STAGED_PER_HOST = 1
PEERING_SHARE = 0.5


def still_peering(o: OsdState) -> bool:
    """An OSD let boot is still peering: not up yet, or more than PEERING_SHARE of its PGs
    not active."""
    return not o.up or o.pgs <= 0 or o.pgs_inactive > PEERING_SHARE * o.pgs


def peering_on(by_id: Mapping[int, OsdState], booting: Iterable[int],
               granted: Container[int], host: str) -> List[int]:
    """The OSDs of `booting` (let boot, not finished) on `host` that are still peering."""
    return [x for x in sorted(booting) if x in granted and x in by_id and
            by_id[x].host == host and still_peering(by_id[x])]


def peer_wait(t: Decision, o) -> bool:
    """A staged OSD waits in preboot while PEERING_PER_HOST OSDs peer on its host."""
    if o.id not in t.staged:
        return False
    peering = peering_on(t.view.by_id, t.booting, t.granted, o.host)
    if len(peering) < PEERING_PER_HOST:
        return False
    t.reasons.append("%s: staged osd.%d waits in preboot for osd.%s to peer" % (
        o.host, o.id, ",".join(map(str, peering))))
    return True
