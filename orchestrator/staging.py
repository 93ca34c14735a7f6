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

from dataclasses import dataclass
from typing import AbstractSet, Container, Iterable, List, Mapping, Optional, Tuple

from .context import Context
from .decision import Decision, fmt_bytes
from .model import Columns, OsdState
from .predict import Predictor
from .stageout import Budget, StageOut
from .reserve import flight, host_margin, reserved

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


@dataclass(frozen=True)
class Preboot:
    """What the decisions on a granted OSD in preboot read (its boot: inflight.boots; room for
    it: room.room_for_boots): the call's Context, the Predictor, the run's columns, its budget
    state, the hosts' budgets, this tick's restarts and the OSDs gate 2 keeps in preboot so
    far. The records a decision returns update these in place, so the next one sees them."""
    ctx: Context
    predictor: Predictor
    cols: Columns
    budget_state: str
    budget: Budget
    new_restarts: AbstractSet[int]
    kept_preboot: AbstractSet[int]


def preboot(t: Decision) -> Preboot:
    """The records of the decision being made, as the decisions on OSDs in preboot read
    them."""
    return Preboot(t.ctx, t.predictor, t.cols, t.budget_state, t.budget, t.new_restarts,
                   t.kept_preboot)


def staged_wait(p: Preboot, o) -> Tuple[bool, StageOut]:
    """A staged OSD waits in preboot while PEERING_PER_HOST OSDs peer on its host, or until
    its growth to its peak fits (room_to_peak): whether it waits, and why."""
    if o.id not in p.cols["staged"]:
        return False, StageOut()
    why = peer_wait(p, o)
    if why is not None:
        return True, StageOut(reasons=(why,))
    fits, out = room_to_peak(p, o)
    return not fits, out


def room_to_peak(p: Preboot, o) -> Tuple[bool, StageOut]:
    """A staged OSD was admitted on its load (reserve.py): it boots only where the rest of
    the peak a start is admitted on (Predictor.predict) fits beside what is used and what
    every other OSD in flight or settling on its host is still expected to grow, with the
    margin its grant was charged (reserve.host_margin): the admission a plain start passes
    at its grant, deferred to its boot. Gate 2 (inflight._boot_fits) then checks the peak
    re-predicted from its load, as for any start. Where nothing else is in flight on its
    host, it waits as a next start that does not fit does (admission._no_fit): kept in
    preboot (room.room_for_boots makes room where restarts can; a run where nothing can
    change ends as stalled), and RECOVERY_BUDGET_TOO_SMALL unless OSDs still settle there.
    Whether it fits, and the lines and records where it does not."""
    others = _others(p, o)
    deficit, line = boot_deficit(p, o, others)
    if deficit <= 0:
        return True, StageOut()
    if others:
        return False, StageOut(reasons=(line,))
    health = () if any(p.ctx.view.host_of(x) == o.host for x in p.cols["settling"]) else (
        ("RECOVERY_BUDGET_TOO_SMALL", line, 1),)
    return False, StageOut(health=health, reasons=(line,),
                           records=(("kept_preboot", set(p.kept_preboot) | {o.id}),))


def _others(p: Preboot, o) -> List[int]:
    """The other OSDs in flight on `o`'s host: granted, restarting, restarted in this tick."""
    here = flight(p.ctx, p.cols["granted"], p.new_restarts).get(o.host, [])
    return [x for x in here if x != o.id]


def boot_deficit(p: Preboot, o, others: Optional[List[int]] = None) -> Tuple[int, str]:
    """(bytes by which the boot of staged `o` misses its host's budget, <= 0 where it fits;
    the line that says so) under room_to_peak's rule."""
    hm = p.ctx.view.hostmem.get(o.host)
    if hm is None:          # no report: gate 2 (inflight._boot_fits) decides
        return 0, ""
    margin = host_margin(p.ctx, p.budget_state, p.predictor)
    peak = p.predictor.predict(o.id)
    growth = max(0, int(peak * margin) - o.rss_bytes)
    res = reserved(p.ctx, p.predictor, p.cols, o.host,
                   _others(p, o) if others is None else others, margin)
    budget = p.budget(o.host)
    return hm.mem_used + res + growth - budget, (
        "%s: staged osd.%d waits in preboot for room to peak: needs %s (peak %s x margin "
        "%.2f), used %s + reserved %s, budget %s" % (
            o.host, o.id, fmt_bytes(growth), fmt_bytes(peak), margin, fmt_bytes(hm.mem_used),
            fmt_bytes(res), fmt_bytes(budget)))


def peer_wait(p: Preboot, o) -> Optional[str]:
    """A staged OSD waits in preboot while PEERING_PER_HOST OSDs peer on its host: the reason
    that says so, None where it need not wait."""
    peering = peering_on(p.ctx.view.by_id, p.cols["booting"], p.cols["granted"], o.host)
    if len(peering) < PEERING_PER_HOST:
        return None
    return "%s: staged osd.%d waits in preboot for osd.%s to peer" % (
        o.host, o.id, ",".join(map(str, peering)))
