"""A maintenance window's state: its phases and limits, the Window record, the outcomes that
`ceph recovery wait` answers, what a tick is given and returns, and the persisted form
(ceph_recovery.maintenance re-exports all of it; the window's life: that module's docstring).
Pure.
"""
from __future__ import annotations

import errno
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

from .actions import Action
from .model import HealthCheck

REQUESTED = "requested"
ENTERING = "entering"
OPEN = "open"
EXITING = "exiting"
PHASES = (REQUESTED, ENTERING, OPEN, EXITING)
REFUSED = "refused"            # the outcome code of a request the tick refused
STOP_RETRY_S = 60.0            # a stop instruction not yet effective is re-sent after this
DEFAULT_MAX_DURATION_S = 4 * 3600.0
# the longest duration any command takes (a year): beyond it a number is a typo or an attack,
# and every later computation with it (elapsed vs max, ETA, text) must stay finite
MAX_DURATION_S = 366 * 86400.0
# an operator's --reason: kept in the state, its marks and every journal line of the window,
# all stored in the mon's config-key entries (64 KiB each)
MAX_REASON_LEN = 256
CHECK = "RECOVERY_MAINTENANCE"
NOOUT, NOUP = "noout", "noup"


class Refused(Exception):
    """A maintenance command refused: errno and a one-line message; nothing was changed."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.errno = code
        self.message = message


@dataclass(frozen=True)
class Window:
    bucket: str
    reason: str = ""
    max_duration_s: float = DEFAULT_MAX_DURATION_S
    entered_at: float = 0.0                 # when `enter` was accepted
    phase: str = ENTERING
    osds: Tuple[int, ...] = ()              # the bucket's OSDs at enter
    noout_before: bool = False              # the bucket carried noout before enter: kept
    stops: Mapping[int, float] = field(default_factory=dict)   # osd -> stop instructed at
    opened_at: Optional[float] = None       # every OSD down and stopped
    exit_run: str = ""                      # run id of the controlled start of the exit
    note: str = ""                          # why the last exit did not close the window
    kill: bool = False                      # its OSDs are stopped by SIGKILL (a drill's
                                            # power loss), not shut down cleanly


@dataclass(frozen=True)
class Outcome:
    """How a run, a window enter or a window exit ended (`ceph recovery wait` answers it)."""

    what: str                  # "run r123", "maintenance enter h2", "maintenance exit h2"
    ok: bool
    code: str                  # "done" | "aborted" | "failed" | "refused"
    reason: str
    at: float
    refused_errno: int = 0     # a refusal's errno (EBUSY when 0)

    @property
    def errno(self) -> int:
        if self.ok:
            return 0
        if self.code == REFUSED:
            return self.refused_errno or errno.EBUSY
        return errno.ECANCELED if self.code == "aborted" else errno.EIO


@dataclass(frozen=True)
class RunView:
    """What a window needs to know of the module's controlled run."""

    run_id: str = ""
    phase: str = ""
    active: bool = False


@dataclass(frozen=True)
class Step:
    actions: Tuple[Action, ...]
    windows: Tuple[Window, ...]
    health: Tuple[HealthCheck, ...]
    outcomes: Tuple[Outcome, ...]


# ------------------------------------------------------------------ the persisted form
def window_to_dict(w: Window) -> Dict[str, Any]:
    return {"bucket": w.bucket, "reason": w.reason, "max_duration_s": w.max_duration_s,
            "entered_at": w.entered_at, "phase": w.phase, "osds": list(w.osds),
            "noout_before": w.noout_before,
            "stops": {str(k): v for k, v in sorted(w.stops.items())},
            "opened_at": w.opened_at, "exit_run": w.exit_run, "note": w.note,
            "kill": w.kill}


def window_from_dict(d: Mapping[str, Any]) -> Window:
    """ValueError on a malformed entry (the shell reports the state as unreadable)."""
    if not isinstance(d, Mapping) or d.get("phase") not in PHASES or not d.get("bucket"):
        raise ValueError("maintenance window: bad entry %r" % (d,))
    return Window(bucket=str(d["bucket"]), reason=str(d.get("reason", "")),
                  max_duration_s=float(d.get("max_duration_s", DEFAULT_MAX_DURATION_S)),
                  entered_at=float(d.get("entered_at", 0.0)), phase=str(d["phase"]),
                  osds=tuple(int(x) for x in d.get("osds", ())),
                  noout_before=bool(d.get("noout_before", False)),
                  stops={int(k): float(v) for k, v in (d.get("stops") or {}).items()},
                  opened_at=d.get("opened_at"), exit_run=str(d.get("exit_run", "")),
                  note=str(d.get("note", "")), kill=bool(d.get("kill", False)))


def outcome_to_dict(o: Outcome) -> Dict[str, Any]:
    return {"what": o.what, "ok": o.ok, "code": o.code, "reason": o.reason, "at": o.at,
            "errno": o.errno}


def outcome_from_dict(d: Mapping[str, Any]) -> Outcome:
    code = str(d["code"])
    return Outcome(str(d["what"]), bool(d["ok"]), code, str(d["reason"]), float(d["at"]),
                   int(d.get("errno") or 0) if code == REFUSED else 0)
