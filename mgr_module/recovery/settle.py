"""Requests that need the mons before they can be decided: `maintenance enter` and `drill
start`, settled in the tick (the decisions are the core's: maintenance.settle_enter,
drill.settle_start).

ceph-mgr runs a module's commands one at a time, helper-report included, so no command
handler asks a mon anything: `enter` and `drill start` only validate and record a request
(a window or a drill in phase `requested`, persisted like any other state; nothing is set,
held or created). At the start of the next tick, settle() asks `osd ok-to-stop` for each
request's bucket (all of its up OSDs together) and, for a drill with a write load, the
monitors' mon_allow_pool_delete and whether its pool's name is free, without the engine's
lock; then, under the lock, each request still pending is opened or refused. A refusal is an
outcome (`ceph recovery wait` answers its errno), a journal entry, a row of `maintenance ls`
or the drill's report; it changed nothing.

No mgr_module import: this runs the same in unit tests with a recording `ceph`.
"""
from __future__ import annotations

import errno
import json
from typing import Any, List, Optional, Tuple

from ceph_recovery import drill as D
from ceph_recovery import drillload as L
from ceph_recovery import maintenance as M

from . import poolavail


def pending(engine: Any) -> List[Tuple[str, str, List[int], int]]:
    """Under the lock: (kind, key, up OSDs of its bucket, write load) per request; kind is
    "window" (key: the bucket) or "drill" (key: its id)."""
    snap = engine.snapshot
    if snap is None:
        return []
    out = []
    for w in engine.run.windows:
        if w.phase == M.REQUESTED:
            out.append(("window", w.bucket, [o.id for o in M.under(w.bucket, snap) if o.up],
                        0))
    for d in getattr(engine.run, "drills", []):
        if d.phase == D.REQUESTED and not d.abort_requested:
            out.append(("drill", d.id, [o.id for o in M.under(d.bucket, snap) if o.up],
                        d.load.rate if d.load is not None else 0))
    return out


def settle(engine: Any, now: float) -> None:
    """Ask the mons about every pending request (no lock held), then decide each one that
    is still pending (a `maintenance exit` or `drill abort` may have withdrawn it). First
    Ceph's per-pool availability, when a drill or a status reader needs it (poolavail.py)."""
    poolavail.read(engine, now)
    with engine.lock:
        asks = pending(engine)
    if not asks:
        return
    answers = [(kind, key, bucket_verdict(engine, up),
                load_refusal(engine, key) if rate else None)
               for kind, key, up, rate in asks]
    with engine.lock:
        for kind, key, verdict, refusal in answers:
            if kind == "window":
                _settle_window(engine, key, verdict, now)
            else:
                _settle_drill(engine, key, verdict, refusal, now)


def _settle_window(engine: Any, bucket: str, verdict: Any, now: float) -> None:
    w = M.find(engine.run.windows, bucket)
    if w is None or w.phase != M.REQUESTED:
        return
    windows, out = M.settle_enter(w, engine.snapshot, engine.run.windows, engine.active,
                                  verdict, now)
    engine.run.windows = list(windows)
    if out is None:
        _record(engine, now, bucket, "maintenance enter %s: ok-to-stop cleared it (%s)"
                % (bucket, verdict[2]), "accepted")
    else:
        engine.run.outcomes.append(out)
        _record(engine, now, bucket, out.reason, "refused")


def _settle_drill(engine: Any, drill_id: str, verdict: Any, refusal: Optional[M.Refused],
                  now: float) -> None:
    drills = list(getattr(engine.run, "drills", []))
    d = next((x for x in drills if x.id == drill_id), None)
    if d is None or d.phase != D.REQUESTED or d.abort_requested:
        return
    new, windows, out = D.settle_start(d, engine.snapshot, engine.run.windows, drills,
                                       engine.active, verdict, now, refusal)
    engine.run.windows = list(windows)
    engine.run.drills = [new if x.id == drill_id else x for x in drills]
    if out is None:
        _record(engine, now, d.bucket, "drill start %s: ok-to-stop cleared %s (%s)"
                % (d.id, d.bucket, verdict[2]), "accepted")
    else:
        engine.run.outcomes.append(out)
        _record(engine, now, d.bucket, out.reason, "refused")


def _record(engine: Any, now: float, bucket: str, reason: str, result: str) -> None:
    epoch = engine.snapshot.epoch if engine.snapshot is not None else 0
    engine.run.record(now, epoch, {"kind": "request", "bucket": bucket, "reason": reason},
                      result)


# ------------------------------------------------------------------ the mon side (no lock)
def bucket_verdict(engine: Any, up: List[int]) -> Any:
    """Ceph's ok-to-stop on every up OSD of a bucket together (not one by one: two OSDs of
    one PG may each be cleared alone)."""
    rc, out = 0, {"ok_to_stop": True}
    if up:
        rc, text, _e = engine.executor.mon({"prefix": "osd ok-to-stop", "format": "json",
                                            "ids": [str(i) for i in up]})
        out = _loads(text)
    return M.ok_to_stop_verdict(rc, out)


def _loads(text: str) -> Any:
    try:
        return json.loads(text) if text and text.strip() else None
    except ValueError:
        return None


def pool_delete_allowed(engine: Any) -> bool:
    """The monitors' centralized `mon_allow_pool_delete` (`ceph config set mon ...`)."""
    rc, out, _e = engine.executor.mon({"prefix": "config get", "who": "mon",
                                       "key": "mon_allow_pool_delete"})
    return rc == 0 and (out or "").strip().strip('"').lower() in ("true", "1", "yes")


def load_refusal(engine: Any, drill_id: str) -> Optional[M.Refused]:
    """Why a drill's write load cannot run (None: it can): EINVAL when the drill could not
    remove its pool at its end, EEXIST when a pool already has its name (the drill never
    touches another pool)."""
    if not pool_delete_allowed(engine):
        return M.Refused(errno.EINVAL, "--write-load needs mon_allow_pool_delete=true in the "
                         "monitors' config (`ceph config set mon mon_allow_pool_delete "
                         "true`): the drill removes the pool it writes to at its end")
    name = L.pool_name(drill_id)
    try:
        exists = engine.ceph.rados.pool_exists(name)
    except Exception as e:  # librados unavailable: the drill cannot write either
        return M.Refused(errno.EIO, "cannot check pool %s: %s" % (name, e))
    if exists:
        return M.Refused(errno.EEXIST, "a pool named %s exists already" % name)
    return None
