"""Frozen value types of the decision core: what a snapshot, an intent and a run's progress are.

Everything here is a plain immutable value. The shells (mgr module, simulator) build a
`Snapshot` from the cluster, hand it with the operator's `Intent` and the persisted `Progress`
to `ceph_recovery.plan.plan()`, and carry out the returned actions. Nothing here does I/O.

Units: bytes for memory, seconds (float, shell-supplied `now`) for time.
Python >= 3.9 (runs inside ceph-mgr): no `match`, no `X | Y` at runtime, no dataclass slots.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Dict, FrozenSet, Mapping, Optional, Tuple

from .pgmap import PgMap, PoolInfo   # re-exported: part of the snapshot's vocabulary
from .osdrun import (NO_RUN, OSD_FIELDS, SETTLE_MARKERS, START_MARKERS,  # noqa: F401
                     START_MEASURES, Columns, OsdRun, clear_osd, columns, records_from)

# process states reported by the node helper for an OSD daemon
PROC_STOPPED = "stopped"      # no process
PROC_RUNNING = "running"      # process alive (may still be in preboot: see OsdState.up)
PROC_UNKNOWN = "unknown"      # no fresh helper report covers this OSD
PROC_STATES = (PROC_STOPPED, PROC_RUNNING, PROC_UNKNOWN)
# OsdState.daemon_state once init() has loaded every PG and the OSD waits to boot (Ceph's
# OSDState PREBOOT, as its admin socket's `status` names it)
DAEMON_PREBOOT = "preboot"
# OsdState.daemon_state while BlueStore rebuilds its allocator after an unclean stop (scanning
# every onode inside its mount, before init() loads any PG: minutes to hours on large OSDs).
# Not one of Ceph's OSDStates: the helper reads it from the OSD's log (its admin socket does
# not answer `status` yet) and reports it in the same field.
DAEMON_REBUILDING = "rebuilding"

# osd_op_queue values: the recovery scheduler an OSD runs (ceph_recovery.scheduler)
WPQ = "wpq"
MCLOCK = "mclock_scheduler"



class RunPhase(str, Enum):
    """A run's state (Progress.phase). A str: it compares equal to, prints and serialises as
    its value on every Python from 3.9 (str() and format() are pinned to the value: 3.11
    changed what format() of a str-mixin enum gives)."""

    IDLE = "idle"              # no run
    RUNNING = "running"        # granting starts
    PAUSED = "paused"          # no new starts; in-flight ones finish
    ABORTING = "aborting"      # withdrawing instructions, restoring what the run changed
    DONE = "done"              # ended: every OSD up, or ended stalled (RECOVERY_INCOMPLETE)
    ABORTED = "aborted"        # ended by abort, everything restored

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


PHASE_IDLE = RunPhase.IDLE
PHASE_RUNNING = RunPhase.RUNNING
PHASE_PAUSED = RunPhase.PAUSED
PHASE_ABORTING = RunPhase.ABORTING
PHASE_DONE = RunPhase.DONE
PHASE_ABORTED = RunPhase.ABORTED

# intent modes (Intent.mode)
MODE_IDLE = "idle"
MODE_CONTROLLED = "controlled"
MODE_PAUSED = "paused"
MODE_ABORT = "abort"

# cluster flags the run sets while it works and restores at the end
RUN_CLUSTER_FLAGS = ("noout", "norebalance")

# Intent.concurrency: 0 = "auto", every start the budget admits (each still gated by the
# observed load of the starts before it)
CONCURRENCY_AUTO = 0


@dataclass(frozen=True)
class OsdState:
    """One OSD as the shell sees it this tick (OSD map + PG stats + helper report)."""

    id: int
    host: str
    crush_path: Tuple[str, ...]            # root first, host last: ("default", "r1", "h2")
    up: bool
    in_: bool = True
    flags: FrozenSet[str] = frozenset()    # per-OSD flags from the OSD map: "noup", "noin", ...
    process: str = PROC_UNKNOWN            # from the helper: PROC_*
    rss_bytes: int = 0                     # resident memory of the daemon, 0 when not running
    process_started_at: Optional[float] = None   # when the helper saw the process start
    daemon_state: Optional[str] = None     # the daemon's own state (admin socket `status`):
                                           # DAEMON_PREBOOT once its PGs are loaded,
                                           # DAEMON_REBUILDING while its allocator is rebuilt
                                           # (from its log); None = not reported
    pgs: int = 0                           # PGs mapped to this OSD (up or acting set)
    pgs_inactive: int = 0                  # of those, PGs not active (this OSD's start helps)
    pgs_degraded: int = 0                  # of those, degraded/undersized PGs
    pg_log_entries: int = 0                # total PG log length, 0 if unknown
    down_since: Optional[float] = None     # when the OSD was marked down, None if up/unknown
    heap_release: Optional[bool] = None    # tcmalloc heap release supported? None = unknown
    missed_entries: Optional[int] = None   # PG log entries written while it was down, summed
                                           # over its PGs (capped by the log), None = unknown
    memory_target: Optional[int] = None    # its own osd_memory_target setting (config osd.N):
                                           # 0 = none (it inherits), None = not known
    recovery_config: Optional[Tuple[Tuple[str, str], ...]] = None
                                           # its own recovery throttle settings (config osd.N:
                                           # osd_recovery_max_active, osd_max_backfills,
                                           # osd_recovery_sleep) as (name, value) pairs,
                                           # () = none set (it inherits), None = not known
    op_queue: Optional[str] = None         # its recovery scheduler (osd_op_queue, WPQ or MCLOCK:
                                           # scheduler.scheduler_of), None = not known
    ceph_version: Optional[str] = None     # its release as `ceph osd metadata` names it ("ceph
                                           # version 16.2.10 (...) pacific (stable)"), None =
                                           # not read (dups.py)
    pglog_dups: int = 0                    # "num of dups exceeded" warnings its helper saw in
                                           # its log since its last start (dups.py)


@dataclass(frozen=True)
class HostMem:
    """Memory of one OSD host (or its memory cgroup) as the helper reports it."""

    name: str
    mem_total: int                 # physical RAM, or the cgroup limit when source == "cgroup"
    mem_used: int                  # what counts against the budget (cgroup usage, or total-available)
    mem_available: int
    mem_limit: Optional[int] = None
    swap_total: int = 0
    source: str = "host"           # "host" | "cgroup"
    reported_at: Optional[float] = None

    @property
    def cap(self) -> int:
        """Where the kernel kills: the cgroup limit when memory is cgroup-accounted, else RAM."""
        return self.mem_limit if self.source == "cgroup" and self.mem_limit else self.mem_total


@dataclass(frozen=True)
class Finding:
    """A network health finding (see ceph_recovery.network)."""

    hosts: Tuple[str, ...]         # one host, or a pair (sorted)
    kind: str                      # jumbo_loss, mtu_blackhole, throughput_cap, syn_cookies, ...
    since: float
    value: float
    detail: str = ""


@dataclass(frozen=True)
class Snapshot:
    """Everything plan() may look at. Built fresh every tick by a shell."""

    epoch: int                                          # OSD map epoch this snapshot was read at
    osds: Tuple[OsdState, ...]
    hosts: Tuple[HostMem, ...] = ()
    bucket_flags: Mapping[str, FrozenSet[str]] = field(default_factory=dict)  # crush_node_flags
    cluster_flags: FrozenSet[str] = frozenset()         # "noout", "noup", ...
    buckets: Mapping[str, str] = field(default_factory=dict)   # CRUSH bucket name -> type
    pgs_total: int = 0
    pgs_active: int = 0
    pgs_clean: int = 0
    ok_to_stop: Mapping[int, bool] = field(default_factory=dict)  # answers valid at `epoch`
    findings: Tuple[Finding, ...] = ()
    helpers_seen: Mapping[str, float] = field(default_factory=dict)  # host -> last report time
    pg_map: Optional[PgMap] = None     # PG membership; None = the shell does not know it
    crush_tunables: Optional[Mapping[str, int]] = None   # `osd crush show-tunables`; None =
                                                         # not read (tunables.py)

    def osd(self, osd_id: int) -> Optional[OsdState]:
        for o in self.osds:
            if o.id == osd_id:
                return o
        return None

    def host(self, name: str) -> Optional[HostMem]:
        for h in self.hosts:
            if h.name == name:
                return h
        return None


# The share of a host's RAM (or cgroup limit) kept between the brake and the kernel's OOM
# line: one tick of growth of an OSD that outgrows its prediction. Lab (docs/memory-model.md,
# "Growth within one tick"): a returning OSD added up to 196 MiB within a 5 s tick, ~60 % of
# its 333-353 MiB peak; an OSD of a 48 GiB host of 12 (4 GiB each, the common sizing) peaks at
# ~6 GiB in the model, 0.6 x 6 = 3.6 GiB < 0.1 x 48 = 4.8 GiB (at 0.05, 2.4 GiB, one tick
# could pass it).
KERNEL_HEADROOM = 0.1
# The default budget is the brake's line (1 - KERNEL_HEADROOM): admission may use everything
# below the line where the brake begins to stop OSDs that outgrow their predictions. The lab's
# controlled runs use 0.9 x the cgroup limit (0 OOM kills in every CI run at that budget).
DEFAULT_BUDGET_FRACTION = 1.0 - KERNEL_HEADROOM
# `--budget auto` (the default) raises the budget to this fraction once the run's own starts
# show that their predictions hold (autobudget.py): the room above it then only holds what an
# OSD grows past its prediction within one tick, and none did.
AUTO_RAISED_FRACTION = 0.95
BUDGET_AUTO = "auto"
BUDGET_RAISED = "raised"            # Progress.budget_state of a raised auto budget
BUDGET_VALIDATED = "validated"      # ... of a fixed budget whose run's predictions held (it
                                    # stays; concurrency auto's warm-up ends, autobudget.py)
BUDGET_HELD = "held"                # ... and of one held at its base for the rest of the run
BUDGET_STATES = ("", BUDGET_RAISED, BUDGET_VALIDATED, BUDGET_HELD)


@dataclass(frozen=True)
class Budget:
    """The operator's memory budget: `--budget auto` (the default), `--budget 90%` or
    `--budget 24G`. For "auto", `value` is the fraction before the raise (autobudget.py)."""

    kind: str = BUDGET_AUTO         # "auto" | "fraction" | "bytes"
    value: float = DEFAULT_BUDGET_FRACTION   # 0 < fraction <= 1, or bytes
    reserve_bytes: int = 0          # kept free for the system, subtracted from the budget


def budget_now(budget: Budget, state: str) -> Budget:
    """The budget a run applies: an auto budget at AUTO_RAISED_FRACTION once its state
    (Progress.budget_state, autobudget.py) is raised, else at its value; others as they are."""
    if budget.kind == BUDGET_AUTO and state == BUDGET_RAISED:
        return replace(budget, value=AUTO_RAISED_FRACTION)
    return budget


@dataclass(frozen=True)
class Intent:
    """What the operator asked for. Commands change only this; serve() acts."""

    mode: str = MODE_IDLE
    budget: Budget = Budget()
    scope: Tuple[str, ...] = ()         # CRUSH buckets; empty = whole cluster
    concurrency: int = CONCURRENCY_AUTO  # starts in flight per host; CONCURRENCY_AUTO (the
                                         # default) = memory decides: in the sweep it never
                                         # cost an OOM kill (docs/memory-model.md)
    holds: FrozenSet[str] = frozenset()  # buckets the operator holds (set-group noup)
    auto_hold: bool = False             # hold a bucket whose OSDs all went down
    start_order: str = "unblock_first"  # policy names, see ceph_recovery.policies
    footprint: str = "learned"
    over_budget: str = "heap_then_restart"
    restart_cooldown_s: float = 600.0   # don't restart the same OSD again within this
    boot_timeout_s: float = 600.0       # an allowed-to-boot OSD that isn't up by then -> health
    leave_out: bool = False             # at an incomplete end, mark the OSDs left down out
    stall_limit_s: float = 600.0        # a run stalled this long ends incomplete (ending.py)
    run_id: str = ""


@dataclass(frozen=True)
class Observation:
    """A measured start: used to learn footprints online. `load_bytes` is the rss the OSD had
    loaded in preboot when it was allowed to boot, set only once it settled (its peak_bytes is
    then its real peak, not a lower bound): peak_bytes - load_bytes is what peering and
    recovery added (Predictor.peak_from_load learns from it). None: not settled, or an older
    record."""

    osd: int
    pgs: int
    downtime_s: float
    pg_log_entries: int
    peak_bytes: int
    missed_entries: Optional[int] = None
    load_bytes: Optional[int] = None


@dataclass(frozen=True)
class Progress:
    """What a run persists (with a schema version): intent markers, never a cluster copy.
    Per-OSD facts live in one OsdRun per OSD (`osds`): osd_map(name) reads one field of every
    record as an osd -> value map (granted, peaks, ...: OSD_FIELDS), and with_columns() builds
    records from such maps."""

    run_id: str = ""
    phase: RunPhase = PHASE_IDLE
    epoch: int = 0                                  # last OSD map epoch decided on
    osds: Mapping[int, OsdRun] = field(default_factory=dict)
    finished: FrozenSet[int] = frozenset()          # OSDs brought up by this run
    held_osds: FrozenSet[int] = frozenset()         # per-OSD noup this run added
    held_buckets: FrozenSet[str] = frozenset()      # bucket noup this run (or auto-hold) set
    saved_flags: Optional[FrozenSet[str]] = None    # cluster flags before the run
    observations: Tuple[Observation, ...] = ()
    started_at: Optional[float] = None
    finished_at: Optional[float] = None
    auto_held: FrozenSet[str] = frozenset()         # of held_buckets, those auto-hold set
    saved_config: Mapping[str, Optional[str]] = field(default_factory=dict)
    # "who name" -> the value before this run changed it (None: not set at that level),
    # written before the SetConfig goes out (write-ahead) and restored at the end
    service_at: Optional[float] = None     # first tick of this run with every PG active
    stalled_since: Optional[float] = None  # since when no start fits and nothing is pending
    inactive_pg_s: float = 0.0             # PG-seconds without client I/O since the run began
    inactive_seen: Optional[Tuple[float, int]] = None   # (time, PGs not active) last tick
    budget_state: str = ""                 # `--budget auto`: "" (not raised), "raised" or
                                           # "held" (for the rest of the run; autobudget.py)
    restoring: Mapping[str, Tuple[Optional[str], float]] = field(default_factory=dict)
    # "who name" -> (value to restore, when the restore was last sent): a RestoreConfig
    # stays here until the snapshot shows the value back (restore.py)
    restoring_flags: Mapping[str, float] = field(default_factory=dict)
    # cluster flag -> when its UnsetFlag was last sent: kept until the OSD map shows it unset

    def evolve(self, **changes) -> "Progress":
        return replace(self, **changes)

    def with_columns(self, **maps: Mapping[int, Any]) -> "Progress":
        """This progress with each named per-OSD map (granted={osd: t}, peaks=...: OSD_FIELDS)
        replacing that field of every record."""
        unknown = sorted(set(maps) - set(OSD_FIELDS))
        if unknown:
            raise TypeError("Progress: unknown per-OSD map(s) %s" % ", ".join(unknown))
        return replace(self, osds=records_from(self.osds, maps))

    def osd_map(self, name: str) -> Dict[int, Any]:
        """One per-OSD map (a name of OSD_FIELDS), built once per Progress (it is frozen, and
        the stages read these maps inside loops over every OSD). Do not modify it."""
        cache = self.__dict__.get("_maps")
        if cache is None:
            cache = self.__dict__["_maps"] = columns(self.osds)
        return cache[name]


@dataclass(frozen=True)
class HealthCheck:
    """One entry for mgr's set_health_checks: code -> severity, summary, detail lines."""

    code: str                 # RECOVERY_BUDGET_EXCEEDED, RECOVERY_DOMAIN_HELD, ...
    severity: str             # "warning" | "error"
    summary: str
    detail: Tuple[str, ...] = ()
    count: int = 1


def health_dict(checks) -> Dict[str, dict]:
    """Shape a list of HealthCheck as MgrModule.set_health_checks expects."""
    return {c.code: {"severity": c.severity, "summary": c.summary,
                     "count": c.count, "detail": list(c.detail)} for c in checks}
