"""A drill's state: its phases and settings, the Drill record, what a tick observes and
returns, and the persisted form's reader (ceph_recovery.drill re-exports all of it). Pure."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Tuple

from . import availability as AV
from . import drillload as L
from . import maintenance as M
from .actions import Action
from .drillreport import _FLOATS

REQUESTED, PREPARING, ENTERING, DOWN, EXITING, ABORTING, DONE, ABORTED = (
    "requested", "preparing", "entering", "down", "exiting", "aborting", "done", "aborted")
PHASES = (REQUESTED, PREPARING, ENTERING, DOWN, EXITING, ABORTING, DONE, ABORTED)
PREPARE_TIMEOUT_S = 120.0
FINAL = (DONE, ABORTED)
# --stop: `clean` shuts the bucket's OSDs down (each marks itself down); `kill` SIGKILLs them
# (a power loss: the monitors mark them down from their peers' failure reports, and they come
# back without a clean shutdown). Either way only after ok-to-stop cleared them.
STOP_CLEAN, STOP_KILL = "clean", "kill"
STOP_MODES = (STOP_CLEAN, STOP_KILL)
INACTIVE_GRACE_S = 20.0
INACTIVE_GRACE_RANGE = (5.0, 3600.0)
START_RETRY_S = 30.0           # as the run's GRANT_RETRY_S: a start not taken by then failed
ABORT_STARTS = 3               # start instructions per OSD in an abort (ceph-osd@.service's
                               # StartLimitBurst): past them an OOM loop is no way back
CLEAN_WAIT_S = 600.0
KEEP_DRILLS = 3
HEALTH_ERR = "HEALTH_ERR"


@dataclass(frozen=True)
class Drill:
    id: str
    bucket: str
    downtime_s: float
    started_at: float
    budget: str = ""                     # the operator's --budget text ("" = module default)
    concurrency: str = ""
    phase: str = ENTERING
    osds: Tuple[int, ...] = ()
    hosts: Tuple[str, ...] = ()          # hosts of the bucket's OSDs (sampled per tick)
    noout_before: bool = False
    budgets: Mapping[str, int] = field(default_factory=dict)   # host -> budget bytes
    down_at: Optional[float] = None      # every OSD of the bucket down
    exit_at: Optional[float] = None      # the exit's controlled start began
    up_at: Optional[float] = None        # every OSD of the bucket up again
    active_at: Optional[float] = None    # every PG active again after the exit began
    clean_at: Optional[float] = None     # every PG active+clean again
    ended_at: Optional[float] = None
    aborted_at: Optional[float] = None   # the abort began
    started: Mapping[int, float] = field(default_factory=dict)  # osd -> abort's start sent
    starts: Mapping[int, int] = field(default_factory=dict)     # osd -> abort's starts sent
    exit_run: str = ""
    inactive_since: Optional[float] = None
    abort_requested: str = ""            # operator's abort, picked up by the next tick
    reason: str = ""                     # why it aborted, or how it ended
    peaks: Mapping[str, int] = field(default_factory=dict)     # host -> peak memory used
    samples: Tuple[Mapping[str, Any], ...] = ()
    load: Optional[L.Load] = None        # --write-load: its pool and counters (drillload)
    stop: str = STOP_CLEAN               # --stop: how its OSDs go down (STOP_MODES)
    inactive_grace_s: float = INACTIVE_GRACE_S   # --inactive-grace: PGs inactive this long abort
    # per-pool service over the drill (ceph_recovery.availability): ours, sampled every tick;
    # Ceph's `osd pool availability-status` as the shell read it at the start and at the end
    # (its state there: "" not read yet, else availability.TRACKED, DISABLED, ...)
    pools: Mapping[int, AV.PoolTrack] = field(default_factory=dict)
    ceph_at_start: str = ""
    ceph_at_end: str = ""
    ceph_before: Optional[Mapping[str, Mapping[str, Any]]] = None
    ceph_after: Optional[Mapping[str, Mapping[str, Any]]] = None


@dataclass(frozen=True)
class Observed:
    """What the shell saw this tick besides the snapshot."""

    health: str = "HEALTH_OK"            # overall status from the mgr's health
    degraded_objects: int = 0
    load: Optional[L.Seen] = None        # the drill's writer (one drill goes on at a time)


@dataclass(frozen=True)
class DrillStep:
    drill: Drill
    windows: Tuple[M.Window, ...]
    actions: Tuple[Action, ...] = ()
    start_exit: bool = False             # the shell runs the window's exit now
    abort_run: bool = False              # the shell aborts the exit's run now
    outcome: Optional[M.Outcome] = None
    load_order: Optional[str] = None     # the writer's order (drillload.order), None: no load


def drill_from_dict(x: Mapping[str, Any]) -> Drill:
    """ValueError on a malformed entry (the shell reports the state as unreadable)."""
    if not isinstance(x, Mapping) or x.get("phase") not in PHASES or not x.get("id"):
        raise ValueError("drill: bad entry %r" % (x,))
    opt = {k: (None if x.get(k) is None else float(x[k])) for k in _FLOATS}
    return Drill(id=str(x["id"]), bucket=str(x["bucket"]), downtime_s=float(x["downtime_s"]),
                 started_at=float(x["started_at"]), budget=str(x.get("budget", "")),
                 concurrency=str(x.get("concurrency", "")), phase=str(x["phase"]),
                 osds=tuple(int(i) for i in x.get("osds", ())),
                 hosts=tuple(str(h) for h in x.get("hosts", ())),
                 noout_before=bool(x.get("noout_before", False)),
                 budgets={str(k): int(v) for k, v in (x.get("budgets") or {}).items()},
                 exit_run=str(x.get("exit_run", "")),
                 abort_requested=str(x.get("abort_requested", "")),
                 reason=str(x.get("reason", "")),
                 peaks={str(k): int(v) for k, v in (x.get("peaks") or {}).items()},
                 samples=tuple(dict(s) for s in x.get("samples", ())),
                 started={int(k): float(v) for k, v in (x.get("started") or {}).items()},
                 starts={int(k): int(v) for k, v in (x.get("starts") or {}).items()},
                 load=L.from_dict(x.get("load")),
                 stop=STOP_KILL if x.get("stop") == STOP_KILL else STOP_CLEAN,
                 inactive_grace_s=float(x.get("inactive_grace_s", INACTIVE_GRACE_S)),
                 **_availability(x.get("availability")), **opt)


def _availability(x: Any) -> dict:
    """The drill's per-pool service fields from their persisted form (absent: none yet)."""
    x = x if isinstance(x, Mapping) else {}
    return {"pools": AV.tracks_from_dict(x.get("pools")),
            "ceph_at_start": str(x.get("ceph_at_start") or ""),
            "ceph_at_end": str(x.get("ceph_at_end") or ""),
            "ceph_before": AV.answer_from_dict(x.get("ceph_before")),
            "ceph_after": AV.answer_from_dict(x.get("ceph_after"))}
