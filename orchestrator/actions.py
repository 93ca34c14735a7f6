"""Typed actions that plan() returns, in the order the shell must carry them out.

Each action names its target and carries a human reason (shown in `ceph recovery status`
history and the drill journal). The shell maps them to commands:

  HoldOsd        ceph osd add-noup osd.N
  AllowBoot      ceph osd rm-noup osd.N
  HoldBucket     ceph osd set-group noup <bucket>
  ReleaseBucket  ceph osd unset-group noup <bucket>
  SetGroupFlag   ceph osd set-group <flag> <bucket>     (maintenance windows: noout)
  UnsetGroupFlag ceph osd unset-group <flag> <bucket>
  SetFlag        ceph osd set <flag>
  UnsetFlag      ceph osd unset <flag>
  GrantStart     helper on <host>: start the ceph-osd process of osd.N
  QueryOkToStop  ceph osd ok-to-stop N  (answer arrives in the next Snapshot.ok_to_stop)
  HeapRelease    ceph tell osd.N heap release
  RestartOsd     helper on <host>: stop then start osd.N (only after ok-to-stop cleared it)
  StopOsd        helper on <host>: stop osd.N and keep it held (only after ok-to-stop cleared it)
  SetConfig      ceph config set <who> <name> <value>   (the value before is in Progress.saved_config)
  RestoreConfig  ceph config set <who> <name> <value>, or ceph config rm <who> <name> (value None)
  Wait           nothing to do this tick (why)
  Done           the run finished (why)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import ClassVar, Optional


@dataclass(frozen=True)
class Action:
    kind: ClassVar[str] = "action"
    reason: str

    def to_dict(self) -> dict:
        d = asdict(self)
        d["kind"] = self.kind
        return d

    def describe(self) -> str:
        target = getattr(self, "osd", None)
        tgt = "osd.%d" % target if target is not None else (
            getattr(self, "bucket", None) or getattr(self, "flag", None) or "")
        if getattr(self, "who", None):
            tgt = "%s %s=%s" % (self.who, self.name, getattr(self, "value", None))
        return ("%s %s: %s" % (self.kind, tgt, self.reason)).replace("  ", " ")


@dataclass(frozen=True)
class HoldOsd(Action):
    kind: ClassVar[str] = "hold_osd"
    osd: int = -1


@dataclass(frozen=True)
class AllowBoot(Action):
    kind: ClassVar[str] = "allow_boot"
    osd: int = -1
    predicted_bytes: Optional[int] = None   # the peak gate 2 let it boot on (Predictor.boot_peak)


@dataclass(frozen=True)
class HoldBucket(Action):
    kind: ClassVar[str] = "hold_bucket"
    bucket: str = ""


@dataclass(frozen=True)
class ReleaseBucket(Action):
    kind: ClassVar[str] = "release_bucket"
    bucket: str = ""


@dataclass(frozen=True)
class SetFlag(Action):
    kind: ClassVar[str] = "set_flag"
    flag: str = ""


@dataclass(frozen=True)
class UnsetFlag(Action):
    kind: ClassVar[str] = "unset_flag"
    flag: str = ""


@dataclass(frozen=True)
class SetGroupFlag(Action):
    kind: ClassVar[str] = "set_group_flag"
    bucket: str = ""
    flag: str = ""


@dataclass(frozen=True)
class UnsetGroupFlag(Action):
    kind: ClassVar[str] = "unset_group_flag"
    bucket: str = ""
    flag: str = ""


@dataclass(frozen=True)
class GrantStart(Action):
    kind: ClassVar[str] = "grant_start"
    osd: int = -1
    host: str = ""
    predicted_bytes: int = 0


@dataclass(frozen=True)
class QueryOkToStop(Action):
    kind: ClassVar[str] = "query_ok_to_stop"
    osd: int = -1


@dataclass(frozen=True)
class HeapRelease(Action):
    kind: ClassVar[str] = "heap_release"
    osd: int = -1


@dataclass(frozen=True)
class RestartOsd(Action):
    kind: ClassVar[str] = "restart_osd"
    osd: int = -1
    host: str = ""
    room_for: Optional[int] = None  # the OSD kept in preboot whose slot it shares (room.py)

    def to_dict(self) -> dict:
        d = super().to_dict()
        if self.room_for is None:  # a plain restart reads as it always did
            del d["room_for"]
        return d


@dataclass(frozen=True)
class StopOsd(Action):
    kind: ClassVar[str] = "stop_osd"
    osd: int = -1
    host: str = ""
    kill: bool = False             # SIGKILL instead of a clean stop (a power-loss drill)

    def to_dict(self) -> dict:
        d = super().to_dict()
        if not self.kill:          # a clean stop reads as it always did
            del d["kill"]
        return d


@dataclass(frozen=True)
class SetConfig(Action):
    kind: ClassVar[str] = "set_config"
    who: str = ""                  # "osd.N"
    name: str = ""                 # e.g. "osd_memory_target"
    value: str = ""


@dataclass(frozen=True)
class RestoreConfig(Action):
    kind: ClassVar[str] = "restore_config"
    who: str = ""
    name: str = ""
    value: Optional[str] = None    # None: remove the run's setting (`ceph config rm`)


@dataclass(frozen=True)
class MarkOut(Action):
    """`ceph osd out`: Ceph re-replicates the OSD's data elsewhere. The OSD is not removed;
    `ceph osd in` takes it back."""
    kind: ClassVar[str] = "mark_out"
    osd: int = -1


@dataclass(frozen=True)
class Wait(Action):
    kind: ClassVar[str] = "wait"
    host: Optional[str] = None


@dataclass(frozen=True)
class Done(Action):
    kind: ClassVar[str] = "done"


ACTION_TYPES = {cls.kind: cls for cls in (
    HoldOsd, AllowBoot, HoldBucket, ReleaseBucket, SetFlag, UnsetFlag, SetGroupFlag,
    UnsetGroupFlag, GrantStart, QueryOkToStop, HeapRelease, RestartOsd, StopOsd, SetConfig,
    RestoreConfig, MarkOut, Wait, Done)}


def action_from_dict(d: dict) -> Action:
    """Inverse of Action.to_dict (for journals and persisted history)."""
    fields = dict(d)
    kind = fields.pop("kind", None)
    cls = ACTION_TYPES.get(kind)
    if cls is None:
        raise ValueError("unknown action kind %r" % (kind,))
    return cls(**fields)
