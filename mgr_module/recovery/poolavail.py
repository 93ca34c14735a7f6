"""Per-pool service for `status -f json` and the drill report: Ceph's own (Tentacle's
`osd pool availability-status`) beside ours (the core's ceph_recovery.availability).

Ours is kept every tick from the snapshot's PG states (observe(), under the engine's lock);
while `status` is being read the module reads the PG stats every tick (watched()).
Ceph's is asked for rarely, in the tick before the engine decides, without the lock
(read(), from settle.settle):
- for a drill: while it is `requested` (before anything changed: the baseline) and once it
  has ended (its report carries what Ceph counted in between);
- while `status` is being read (asked within ASKED_WINDOW_S), at most every REFRESH_S.
What is not available is remembered: mons that do not know the command (before Tentacle)
are not asked again by this mgr; a disabled tracking (enable_availability_tracking false)
is asked again at most every DISABLED_RETRY_S, a failed read every FAILED_RETRY_S.

No mgr_module import: unit-tested with a recording `ceph`.
"""
from __future__ import annotations

import errno
import json
from dataclasses import replace
from typing import Any, Dict, List, Optional, Tuple

from ceph_recovery import availability as AV
from ceph_recovery import drill as D

PREFIX = "osd pool availability-status"
REFRESH_S = 30.0
ASKED_WINDOW_S = 300.0
DISABLED_RETRY_S = 60.0
FAILED_RETRY_S = 60.0
NOT_AVAILABLE = (errno.EINVAL, errno.ENOENT, errno.EOPNOTSUPP)


class CephAvailability(object):
    """What this mgr knows of Ceph's tracking, and our own tracks since it began observing."""

    def __init__(self) -> None:
        self.state = AV.NOT_READ
        self.answer: Optional[Dict[str, Dict[str, Any]]] = None   # TRACKED only
        self.read_at: Optional[float] = None
        self.note = ""
        self.asked_at: Optional[float] = None      # `status` read last
        self.tracks: Optional[Dict[int, AV.PoolTrack]] = None


def of(engine: Any) -> CephAvailability:
    a = getattr(engine, "availability", None)
    if a is None:
        a = engine.availability = CephAvailability()
    return a


def classify(rc: int, out: str, err: str) -> Tuple[str, Optional[Dict[str, Any]], str]:
    """(state, per-pool answer, note) of one mon answer."""
    text = (err or "").strip()
    if rc == 0:
        try:
            return AV.TRACKED, AV.from_ceph(json.loads(out)), ""
        except ValueError:
            return AV.FAILED, None, "unreadable answer: %r" % (out or text)[:200]
    if "disabled" in text.lower():
        return AV.DISABLED, None, text
    if -rc in NOT_AVAILABLE:
        return AV.UNSUPPORTED, None, text
    return AV.FAILED, None, "rc %d: %s" % (rc, text)


def _stale(a: CephAvailability, now: float, for_drill: bool) -> bool:
    if a.state == AV.UNSUPPORTED:
        return False
    if a.read_at is None or a.state == AV.NOT_READ:
        return True
    age = now - a.read_at
    if a.state == AV.DISABLED:
        return age >= DISABLED_RETRY_S
    if a.state == AV.FAILED:
        return age >= FAILED_RETRY_S
    return for_drill or age >= REFRESH_S


def _drill_needs(engine: Any) -> List[Tuple[str, str]]:
    """(drill id, "start" | "end") for each drill that needs Ceph's answer now."""
    out = []
    for d in getattr(engine.run, "drills", []):
        if d.phase == D.REQUESTED and not d.ceph_at_start:
            out.append((d.id, "start"))
        elif d.phase in D.FINAL and d.ceph_at_start == AV.TRACKED and not d.ceph_at_end:
            out.append((d.id, "end"))
    return out


def read(engine: Any, now: float) -> None:
    """Ask the mons when a drill or a status reader needs it (no lock held), then record
    the answer for the drills that wait on it (under the lock)."""
    a = of(engine)
    with engine.lock:
        needs = _drill_needs(engine)
        wanted = watched(engine, now)
        ask = bool(needs or wanted) and _stale(a, now, bool(needs))
    if ask:
        rc, out, err = engine.ceph.mon_command({"prefix": PREFIX, "format": "json"})
        state, answer, note = classify(rc, out, err)
        with engine.lock:
            if state != a.state or note != a.note:
                engine.log("pool_availability", state=state, note=note)
            a.state, a.answer, a.note, a.read_at = state, answer, note, now
    if needs:
        with engine.lock:
            _record(engine, a, dict(needs))


def _record(engine: Any, a: CephAvailability, needs: Dict[str, str]) -> None:
    tracked = a.state == AV.TRACKED
    drills = list(getattr(engine.run, "drills", []))
    for i, d in enumerate(drills):
        what = needs.get(d.id)
        if what == "start" and d.phase == D.REQUESTED:
            drills[i] = replace(d, ceph_at_start=a.state,
                                ceph_before=a.answer if tracked else None)
        elif what == "end" and d.phase in D.FINAL:
            drills[i] = replace(d, ceph_at_end=a.state, ceph_after=a.answer if tracked else None)
    engine.run.drills = drills


def watched(engine: Any, now: float) -> bool:
    """Whether `status` is being read: the module then reads the PG stats every tick, so
    that ours times an outage to the tick (an idle module reads them when the OSD map
    changes and at least every 60 s)."""
    a = getattr(engine, "availability", None)
    return a is not None and a.asked_at is not None and now - a.asked_at <= ASKED_WINDOW_S


def observe(engine: Any, snap: Any, now: float) -> None:
    """Under the lock, every tick: our tracks after this snapshot."""
    a = of(engine)
    a.tracks = AV.track(a.tracks, snap.pg_map, now)


def view(engine: Any, now: float) -> Dict[str, Any]:
    """Under the lock: `pool_availability` of `status -f json` (and a status reader noted:
    the next ticks read Ceph's answer while it reads)."""
    a = of(engine)
    a.asked_at = now
    tracks = a.tracks or {}
    return {"ceph": a.state, "ceph_note": a.note or None, "ceph_read_at": a.read_at,
            "since": min((t.since for t in tracks.values()), default=None),
            "pools": AV.records(a.answer if a.state == AV.TRACKED else None, tracks)}
