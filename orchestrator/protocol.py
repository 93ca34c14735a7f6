"""Helper <-> mgr protocol: versioned JSON, parsed and validated here, shared by both sides.

One round trip per helper cycle: the helper sends `ceph recovery helper-report <report-json>`
and the reply is its instructions. Pure functions: dict in, value out, ProtocolError on bad
input (the mgr module turns it into EINVAL and changes nothing).

Report (helper -> mgr), version 1:
  {"version": 1, "host": "h1", "time": 1700000000.0, "seq": 17, "instance": "4f1c...",
   "helper_version": "0.1.0",                  # optional: the helper's software version
   "memory": {"total": B, "used": B, "available": B, "limit": B|null, "swap_total": B,
              "source": "host"|"cgroup"},
   "osds": [{"id": 3, "process": "running"|"stopped", "pid": 1234|null, "rss": B,
             "started_at": T|null, "state": "preboot",    # state: optional, the daemon's
                                                # own (admin socket `status`), or
                                                # "rebuilding" (from its log), see OsdProc
             "pglog_dups": 2}],                 # optional, sent when > 0: "num of dups
                                                # exceeded" warnings in its log since its
                                                # last start (ceph_recovery.dups)
   "done": ["<instruction id>", ...],          # instructions carried out since last report
   "network": {...}}                           # optional probe results (ceph_recovery.network)
  seq: 1, 2, 3, ... per helper process; instance: that process's id (optional, "" when
  absent). The module takes a report only if its seq is above the last one it took from the
  same instance: a report delivered late never overwrites a newer one.
  `version` is the protocol: a receiver refuses a version it does not speak (the mgr module
  with EPROTONOSUPPORT, naming both sides' versions). Fields a receiver does not know are
  ignored, so an optional new field does not raise the protocol version.

Instructions (mgr -> helper), version 1:
  {"version": 1, "host": "h1", "epoch": 123,
   "instructions": [{"id": "<run>:<n>", "op": "start"|"restart"|"stop", "osd": 3,
                     "reason": "...", "signal": "KILL"}],   # signal: a stop only, optional
   "grants": [3],                # OSDs this host may start (boot gate answers 0 for them)
   "held": [4, 5],               # OSDs whose autostart is held (boot gate answers 1)
   "probe": {"throughput_to": ["h2"]}}
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

PROTOCOL_VERSION = 1
# The protocol versions this side reads. A new version is added here before helpers send it,
# so that a module can be upgraded first and take both during a rolling upgrade.
SUPPORTED_PROTOCOLS = (PROTOCOL_VERSION,)
INSTRUCTION_OPS = ("start", "restart", "stop")
# How a stop ends the process: TERM (the default: a clean shutdown, the OSD marks itself down)
# or KILL (SIGKILL: a power loss, the monitors mark it down from its peers' reports). Sent only
# when KILL, so a helper that predates it still reads the instruction (and stops cleanly).
STOP_SIGNALS = ("TERM", "KILL")


class ProtocolError(ValueError):
    """A malformed report or reply: the receiver answers EINVAL and changes nothing."""


@dataclass(frozen=True)
class OsdProc:
    id: int
    process: str
    pid: Optional[int] = None
    rss: int = 0
    started_at: Optional[float] = None
    # the daemon's own state from its admin socket (Ceph's OSDState: "initializing",
    # "preboot", "booting", "active", "stopping", "waiting_for_healthy"), or "rebuilding"
    # (model.DAEMON_REBUILDING: its log shows BlueStore rebuilding the allocator after an
    # unclean stop, before its admin socket answers); None = not read. Any name of at most
    # MAX_STATE_LEN characters is taken (a receiver that does not know one treats it as "not
    # preboot"). Optional in the report: a helper that predates it sends none.
    state: Optional[str] = None
    # "read_log_and_missing WARN num of dups exceeded N" lines in the OSD's log since its last
    # start (one per PG over the threshold: ceph_recovery.dups). Optional: sent when > 0, and
    # a helper that predates it or cannot read the log sends none (0).
    pglog_dups: int = 0


MAX_STATE_LEN = 32
MAX_PGLOG_DUPS = 1 << 20     # warnings counted per OSD (one per PG: more is no PG count)
MAX_INSTANCE_LEN = 64
MAX_HELPER_VERSION_LEN = 32


@dataclass(frozen=True)
class MemoryReport:
    total: int
    used: int
    available: int
    limit: Optional[int] = None
    swap_total: int = 0
    source: str = "host"


@dataclass(frozen=True)
class Report:
    host: str
    time: float
    seq: int
    memory: MemoryReport
    osds: Tuple[OsdProc, ...]
    done: Tuple[str, ...] = ()
    network: Mapping[str, Any] = field(default_factory=dict)
    version: int = PROTOCOL_VERSION
    instance: str = ""
    helper_version: str = ""


@dataclass(frozen=True)
class Instruction:
    id: str
    op: str
    osd: int
    reason: str = ""
    signal: str = "TERM"


@dataclass(frozen=True)
class Instructions:
    host: str
    epoch: int
    instructions: Tuple[Instruction, ...] = ()
    grants: Tuple[int, ...] = ()
    held: Tuple[int, ...] = ()
    probe: Mapping[str, Any] = field(default_factory=dict)
    version: int = PROTOCOL_VERSION


def _need(d: Mapping[str, Any], key: str, types, where: str):
    if not isinstance(d, Mapping) or key not in d:
        raise ProtocolError("%s: missing field %r" % (where, key))
    val = d[key]
    if isinstance(val, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise ProtocolError("%s: field %r must be %s, got a boolean" % (where, key, types))
    if not isinstance(val, types):
        raise ProtocolError("%s: field %r has the wrong type (%s)" % (where, key, type(val).__name__))
    return val


def _nonneg(val, key: str, where: str) -> int:
    if val < 0:
        raise ProtocolError("%s: field %r must be >= 0" % (where, key))
    return int(val)


def _version(d: Mapping[str, Any], where: str) -> int:
    version = _need(d, "version", int, where)
    if version not in SUPPORTED_PROTOCOLS:
        raise ProtocolError("%s: unsupported protocol version %r (this side speaks %s)"
                            % (where, version, supported_text()))
    return version


def supported_text() -> str:
    """'1' or '1, 2': the protocol versions this side reads."""
    return ", ".join(str(v) for v in SUPPORTED_PROTOCOLS)


def _helper_version(d: Mapping[str, Any]) -> str:
    v = d.get("helper_version", "")
    if not isinstance(v, str) or len(v) > MAX_HELPER_VERSION_LEN:
        raise ProtocolError("report: helper_version must be a string of at most %d characters"
                            % MAX_HELPER_VERSION_LEN)
    return v


def parse_memory(d: Any) -> MemoryReport:
    w = "report.memory"
    source = _need(d, "source", str, w)
    if source not in ("host", "cgroup"):
        raise ProtocolError("%s: source must be 'host' or 'cgroup'" % w)
    limit = d.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
        raise ProtocolError("%s: limit must be an integer or null" % w)
    return MemoryReport(
        total=_nonneg(_need(d, "total", int, w), "total", w),
        used=_nonneg(_need(d, "used", int, w), "used", w),
        available=_nonneg(_need(d, "available", int, w), "available", w),
        limit=limit, swap_total=_nonneg(d.get("swap_total", 0), "swap_total", w), source=source)


def parse_osd_proc(d: Any, i: int) -> OsdProc:
    w = "report.osds[%d]" % i
    process = _need(d, "process", str, w)
    if process not in ("running", "stopped"):
        raise ProtocolError("%s: process must be 'running' or 'stopped'" % w)
    pid = d.get("pid")
    started = d.get("started_at")
    state = d.get("state")
    if state is not None and not (isinstance(state, str) and 0 < len(state) <= MAX_STATE_LEN):
        raise ProtocolError("%s: state must be a daemon state name (at most %d characters)"
                            % (w, MAX_STATE_LEN))
    dups = d.get("pglog_dups", 0)
    if isinstance(dups, bool) or not isinstance(dups, int) or not 0 <= dups <= MAX_PGLOG_DUPS:
        raise ProtocolError("%s: pglog_dups must be an integer in 0..%d" % (w, MAX_PGLOG_DUPS))
    return OsdProc(id=_nonneg(_need(d, "id", int, w), "id", w), process=process,
                   pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
                   rss=_nonneg(d.get("rss", 0) or 0, "rss", w),
                   started_at=float(started) if isinstance(started, (int, float)) else None,
                   state=state, pglog_dups=dups)


def parse_report(d: Any) -> Report:
    """Validate a helper report; raise ProtocolError with a clear message on any defect."""
    w = "report"
    if not isinstance(d, Mapping):
        raise ProtocolError("report must be a JSON object")
    _version(d, w)
    host = _need(d, "host", str, w)
    if not host:
        raise ProtocolError("report: host must not be empty")
    osds = _need(d, "osds", list, w)
    done = d.get("done", [])
    if not isinstance(done, list) or not all(isinstance(x, str) for x in done):
        raise ProtocolError("report: done must be a list of instruction ids")
    network = d.get("network", {})
    if not isinstance(network, Mapping):
        raise ProtocolError("report: network must be an object")
    instance = d.get("instance", "")
    if not isinstance(instance, str) or len(instance) > MAX_INSTANCE_LEN:
        raise ProtocolError("report: instance must be a string of at most %d characters"
                            % MAX_INSTANCE_LEN)
    return Report(host=host, time=float(_need(d, "time", (int, float), w)),
                  seq=_nonneg(_need(d, "seq", int, w), "seq", w),
                  memory=parse_memory(_need(d, "memory", Mapping, w)),
                  osds=tuple(parse_osd_proc(o, i) for i, o in enumerate(osds)),
                  done=tuple(done), network=dict(network), instance=instance,
                  helper_version=_helper_version(d))


def report_to_dict(r: Report) -> Dict[str, Any]:
    m = r.memory
    return {"version": r.version, "host": r.host, "time": r.time, "seq": r.seq,
            "instance": r.instance, "helper_version": r.helper_version,
            "memory": {"total": m.total, "used": m.used, "available": m.available,
                       "limit": m.limit, "swap_total": m.swap_total, "source": m.source},
            "osds": [_osd_proc_dict(o) for o in r.osds],
            "done": list(r.done), "network": dict(r.network)}


def _osd_proc_dict(o: OsdProc) -> Dict[str, Any]:
    out = {"id": o.id, "process": o.process, "pid": o.pid, "rss": o.rss,
           "started_at": o.started_at}
    if o.state is not None:
        out["state"] = o.state
    if o.pglog_dups:
        out["pglog_dups"] = o.pglog_dups
    return out


def parse_instructions(d: Any) -> Instructions:
    w = "instructions"
    if not isinstance(d, Mapping):
        raise ProtocolError("instructions must be a JSON object")
    _version(d, w)
    items = []
    for i, it in enumerate(_need(d, "instructions", list, w)):
        wi = "instructions[%d]" % i
        op = _need(it, "op", str, wi)
        if op not in INSTRUCTION_OPS:
            raise ProtocolError("%s: unknown op %r" % (wi, op))
        sig = it.get("signal", "TERM")
        if sig not in STOP_SIGNALS or (sig != "TERM" and op != "stop"):
            raise ProtocolError("%s: signal %r (a stop's TERM or KILL)" % (wi, sig))
        items.append(Instruction(id=_need(it, "id", str, wi), op=op,
                                 osd=_nonneg(_need(it, "osd", int, wi), "osd", wi),
                                 reason=str(it.get("reason", "")), signal=sig))
    ints = lambda key: tuple(int(x) for x in d.get(key, []) if isinstance(x, int))  # noqa: E731
    return Instructions(host=_need(d, "host", str, w), epoch=int(_need(d, "epoch", int, w)),
                        instructions=tuple(items), grants=ints("grants"), held=ints("held"),
                        probe=dict(d.get("probe", {}) or {}))


def _instruction_dict(i: Instruction) -> Dict[str, Any]:
    d: Dict[str, Any] = {"id": i.id, "op": i.op, "osd": i.osd, "reason": i.reason}
    if i.signal != "TERM":
        d["signal"] = i.signal
    return d


def instructions_to_dict(x: Instructions) -> Dict[str, Any]:
    return {"version": x.version, "host": x.host, "epoch": x.epoch,
            "instructions": [_instruction_dict(i) for i in x.instructions],
            "grants": list(x.grants), "held": list(x.held), "probe": dict(x.probe)}
