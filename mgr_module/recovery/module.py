"""ceph-mgr module `recovery`: controlled start of a failed failure domain.

A thin shell: commands change the run's intent and wake serve(); serve() polls the cluster
every tick (what it reads: tickreads.py), asks the pure core (`ceph_recovery.plan.plan`) what
to do, and carries it out (engine.py). No `from __future__ import annotations` here: ceph-mgr
reads the command arguments from the real annotation objects.
"""
import errno
import json
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from mgr_module import CommandResult, HandleCommandResult, MgrModule, Option

from .compat import CLI_REGISTRY, read_command, write_command
from . import maintcli
from .sender import CommandSender
from .lifecycle import Lifecycle
from .maintcli import MaintenanceCommands
from .meter import Meter, timed
from .pgreader import PgReader
from .reportpaths import ReportPaths
from .reportserver import ReportServer
from .storeio import StateIO
from .tickreads import TickReads

try:  # everything below needs the core (the folder's _core/); report clearly if it is missing
    from ceph_recovery.model import health_dict
    from .inputs import InputError
    from .state import STORE_KEY, RunState, leftovers_from, marks_of, windows_from  # noqa: F401
    from .statestore import ChunkedStore
    from .engine import Engine
    from .choices import StartOrder, value_of
    from .core import dry_run_text, network_text, network_view
    from .executor import OsdVersions
    from .logs import make_logger
    from . import leftovers, poolavail, versions
    from .drillcli import busy as drillcli_busy
    from .text import JSON_FORMATS, dump_json, status_text
    IMPORT_ERROR = None
except ImportError as _e:  # pragma: no cover - only inside a misconfigured ceph-mgr
    IMPORT_ERROR = str(_e)
    StartOrder = str  # type: ignore[misc,assignment]

    def value_of(choice: Any) -> Any:  # type: ignore[misc]
        return choice

    class InputError(Exception):  # type: ignore[no-redef]
        errno = errno.ENOSYS
        message = "unavailable"


def _ok(obj: Any) -> HandleCommandResult:
    return HandleCommandResult(0, json.dumps(obj, sort_keys=True, default=str), "")


def _show(obj: Any, fmt: str, text) -> HandleCommandResult:
    """-f json / json-pretty: the JSON document; otherwise (plain) text(obj)."""
    if fmt in JSON_FORMATS:
        return HandleCommandResult(0, dump_json(obj, fmt), "")
    return HandleCommandResult(0, text(obj), "")


def _err(e: InputError) -> HandleCommandResult:
    return HandleCommandResult(-e.errno, "", e.message)


class Module(Lifecycle, StateIO, MaintenanceCommands, TickReads, ReportPaths, MgrModule):
    MODULE_OPTIONS = [
        Option("tick_interval", type="float", default=2.0, min=0.2, max=60.0,
               desc="seconds between two planning ticks"),
        Option("budget_default", type="str", default="auto",
               desc="memory budget per host when start-controlled has no --budget"),
        Option("helper_stale_timeout", type="secs", default=30,
               desc="a helper report older than this is ignored (host shows as missing)"),
        Option("restart_cooldown", type="secs", default=600,
               desc="never restart the same OSD again within this many seconds"),
        Option("boot_timeout", type="secs", default=600,
               desc="a granted OSD not up by then is a failed start: stopped, held, "
                    "RECOVERY_BOOT_TIMEOUT"),
        Option("stall_limit", type="secs", default=600, min=10,
               desc="a run (or a window's or drill's exit) without progress for this long "
                    "ends incomplete, naming what is missing"),
        Option("mon_command_timeout", type="secs", default=30,
               desc="a mon command without an answer by then fails with ETIMEDOUT"),
        Option("instruction_ttl", type="secs", default=300,
               desc="a helper instruction with neither done nor failed by then is expired"),
        Option("journal_length", type="int", default=200, min=10, max=10000,
               desc="number of actions kept in the run's journal"),
        Option("network_holds_starts", type="bool", default=True,
               desc="network findings hold OSD starts on the hosts they name (false: "
                    "findings are only reported)"),
        Option("auto_hold", type="bool", default=False,
               desc="hold (noup) a CRUSH bucket automatically when all of its OSDs go down"),
        Option("report_endpoint", type="bool", default=True,
               desc="serve helper reports over HTTP on the mgr's address (false: helpers "
                    "report by the helper-report command only)"),
        Option("report_port", type="int", default=0, min=0, max=65535,
               desc="TCP port of the report endpoint (0: a free port; helpers learn it "
                    "from the command's reply)"),
    ]
    NOTIFY_TYPES: List[str] = []   # polled in serve(): notify() types differ between releases
    if CLI_REGISTRY is not None:   # Tentacle 20+: per-module command registry (compat.py)
        CLICommand = CLI_REGISTRY

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._wake = threading.Event()
        self._stopping = False
        # every mon/OSD command goes out from this one thread: see sender.py
        self._sender = CommandSender(self.send_command)
        self.meter = Meter()
        self._reads: Dict[str, Any] = {"pgs_t": 0.0, "versions": {}}
        self._pg_reader = PgReader(self._pg_stats,
                                   lambda s: self.meter.read_apart("pg_dump", s))
        self._versions = OsdVersions(lambda kind, ident: self.get_metadata(kind, ident)) \
            if IMPORT_ERROR is None else None
        self._checks: Optional[Dict[str, Any]] = None
        self._saved = ""
        self._store = ChunkedStore(STORE_KEY, marks=marks_of, lost=lambda m: bool(
            leftovers_from(m) or windows_from(m))) if IMPORT_ERROR is None else None
        self._progress_ev = ""
        self._maint_ev: Dict[str, str] = {}
        self.slog = make_logger(self.log) if IMPORT_ERROR is None else None
        self.engine = Engine(self, self._slog, self._persist, self._wake.set, self.meter.phase) \
            if IMPORT_ERROR is None else None
        # one lock for the engine's state: commands and the tick's decisions; no mon or OSD
        # command and no store write is made while it is held
        self._lock = self.engine.lock if self.engine is not None else threading.RLock()
        self._persist_lock = threading.Lock()
        self._report_secret: Optional[str] = None
        self._reports = ReportServer(self._endpoint_report, self._token_of, self.log)

    # ------------------------------------------------------------ ceph access for the engine
    def _slog(self, event: str, **kw: Any) -> None:
        if self.slog is not None:
            self.slog.info(event, **kw)

    def osd_command(self, osd: int, cmd: Dict[str, Any], timeout: float) -> Tuple[int, str, str]:
        result = CommandResult("")
        self._sender.send(result, "osd", str(osd), json.dumps(cmd), "")
        if not result.ev.wait(timeout):
            return -errno.ETIMEDOUT, "", "osd.%d did not answer within %.0fs" % (osd, timeout)
        return result.r, result.outb, result.outs

    def mon_command(self, cmd_dict: dict, inbuf: Optional[str] = None,
                    timeout: Optional[float] = None) -> Tuple[int, str, str]:
        """MgrModule.mon_command with a timeout (mon_command_timeout): an unreachable mon
        answers -ETIMEDOUT instead of blocking the caller for good."""
        if timeout is None:
            timeout = float(self.get_module_option("mon_command_timeout"))
        self.meter.mon_command(str(cmd_dict.get("prefix")))
        result = CommandResult("")
        self._sender.send(result, "mon", "", json.dumps(cmd_dict), "")
        if not result.ev.wait(timeout):
            return -errno.ETIMEDOUT, "", "mon command %s: no answer within %.0fs" % (
                cmd_dict.get("prefix"), timeout)
        return result.r, result.outb, result.outs

    # ------------------------------------------------------------ serve loop
    def serve(self) -> None:
        if IMPORT_ERROR is not None:
            self.log.error("recovery: cannot run, import failed: %s", IMPORT_ERROR)
            return
        with self._lock:
            self._read_options()
            self._load()
        woken = True
        while not self._stopping:
            self.meter.tick_begin()
            try:
                self._tick(woken)
            except Exception as e:  # keep serving: the next tick re-plans from scratch
                self.log.exception("recovery: tick failed")
                self.engine.error = "%s: %s" % (type(e).__name__, e)
            self.meter.tick_end(active=self.engine.active,
                                run_id=self.engine.run.progress.run_id,
                                actions=len(self.engine.plan_out.actions)
                                if self.engine.plan_out is not None else 0)
            if self.engine.snapshot is not None:   # the endpoint's reports need a view
                self._endpoint()
            woken = self._wake.wait(float(self.get_module_option("tick_interval")))
            self._wake.clear()

    def _tick(self, woken: bool = True) -> None:
        with self._lock:
            self._read_options()
            busy, drills = self.engine.busy(), bool(drillcli_busy(self.engine))
        osd_map, tree, pgs = self._cluster(busy or poolavail.watched(self.engine, time.time()))
        if not self._plan_needed(busy or woken or self.engine.error is not None,
                                 (osd_map, tree, pgs)):
            return
        if drills:      # the drill's health and degraded objects
            health = self._read("health")
            with self._lock:
                self.engine.observed = maintcli.drill_observed(health, pgs)
        # each OSD's own settings: only a run, window or drill changes or restores them
        config = self._osd_config() if busy else (None, None, None)
        self.engine.crush_tunables = self._tunables()
        self.engine.tick(osd_map, tree, pgs, time.time(), self._epoch_now, *config,
                         versions=self._reads["versions"])
        self._planned(bool(self.engine.plan_out.actions))
        with self._lock:
            self.engine.error = None
            leftovers.update_check(self.engine)
            checks = health_dict(self.engine.health_checks())
            checks.update(self.engine.shell_health())
            checks.update(versions.health(self.engine.refused_protocols, time.time(), float(
                self.engine.options["helper_stale_timeout"])))
        # the tick wrote the state (engine.tick: once, before its first action)
        if checks != self._checks:
            self.set_health_checks(checks)
            self._checks = checks
        self._report_progress()
        self._maint_progress()

    # ------------------------------------------------------------ commands
    # A command changes the engine's state under the lock and wakes the tick thread, which
    # persists it: no command waits for a mon (set_store does), so all stay responsive.
    def _guard(self) -> Optional[HandleCommandResult]:
        if IMPORT_ERROR is not None:
            return HandleCommandResult(-errno.ENOSYS, "", "recovery: the decision core is not "
                                       "importable in ceph-mgr (%s): the module folder lacks "
                                       "_core/ceph_recovery; install it built "
                                       "(ceph-recovery-install-mgr-module)" % IMPORT_ERROR)
        if self.engine.snapshot is None:
            try:
                self.engine.observe(self.get("osd_map"), self.get("osd_map_tree"),
                                    self._pg_stats(), time.time())
            except Exception as e:
                return HandleCommandResult(-errno.EAGAIN, "",
                                           "recovery: no cluster view yet: %s" % e)
        return None

    @read_command("recovery status")
    def cmd_status(self, format: str = "plain") -> HandleCommandResult:
        """Show the controlled recovery run: phase, per-host budget/used/in-flight, journal"""
        bad = self._guard()
        if bad:
            return bad
        with self._lock:
            return _show(self.engine.status(time.time()), format, status_text)

    @read_command("recovery version")
    def cmd_version(self, format: str = "plain") -> HandleCommandResult:
        """The module's version and helper protocol, and each reporting helper's"""
        if IMPORT_ERROR is not None:
            return self._guard()
        with self._lock:
            doc = versions.version_doc(self.engine.reports, self.engine.refused_protocols,
                                       time.time())
        return _show(doc, format, versions.version_text)

    @write_command("recovery start-controlled")
    def cmd_start(self, budget: Optional[str] = None, scope: Optional[List[str]] = None,
                  concurrency: Optional[str] = None, dry_run: bool = False,
                  leave_out: bool = False, start_order: Optional[StartOrder] = None,
                  format: str = "plain") -> HandleCommandResult:
        """Start the failed OSDs one at a time within a memory budget (90% or 24G per host)"""
        start_order = value_of(start_order)
        bad = self._guard()
        if bad:
            return bad
        now = time.time()
        with self._lock:
            try:
                if dry_run:
                    intent = self.engine.prepare(budget, scope, concurrency, now, leave_out,
                                                 start_order)
                    return _show(self.engine.dry_run(intent, now), format, dry_run_text)
                intent = self.engine.start(budget, scope, concurrency, now, leave_out,
                                           start_order)
                self.engine.begin(intent, now)
            except InputError as e:
                return _err(e)
        self._wake.set()
        return _show({"run_id": intent.run_id, "accepted": True}, format,
                     lambda d: "start-controlled: run %s accepted" % d["run_id"])

    def _verb(self, verb: str, format: str = "plain") -> HandleCommandResult:
        bad = self._guard()
        if bad:
            return bad
        with self._lock:
            try:
                self.engine.set_mode(verb, time.time())
            except InputError as e:
                return _err(e)
        self._wake.set()
        return _show({"accepted": verb, "run_id": self.engine.run.progress.run_id}, format,
                     lambda d: "%s: accepted (run %s)" % (d["accepted"], d["run_id"]))

    @write_command("recovery pause")
    def cmd_pause(self, format: str = "plain") -> HandleCommandResult:
        """Pause the controlled recovery run (nothing new is started)"""
        return self._verb("pause", format)

    @write_command("recovery resume")
    def cmd_resume(self, format: str = "plain") -> HandleCommandResult:
        """Resume a paused controlled recovery run"""
        return self._verb("resume", format)

    @write_command("recovery abort")
    def cmd_abort(self, format: str = "plain") -> HandleCommandResult:
        """Abort the run: no OSD left half-started, flags restored"""
        return self._verb("abort", format)

    def _hold(self, bucket: str, on: bool, format: str = "plain") -> HandleCommandResult:
        bad = self._guard()
        if bad:
            return bad
        with self._lock:
            try:
                self.engine.hold(bucket, on, time.time())
            except InputError as e:
                return _err(e)
        self._wake.set()
        return _show({"holds": sorted(self.engine.run.intent.holds)}, format,
                     lambda d: "holds: %s" % (", ".join(d["holds"]) or "none"))

    @write_command("recovery hold")
    def cmd_hold(self, bucket: str, format: str = "plain") -> HandleCommandResult:
        """Hold a CRUSH bucket: its OSDs may not boot (noup) or autostart"""
        return self._hold(bucket, True, format)

    @write_command("recovery release")
    def cmd_release(self, bucket: str, format: str = "plain") -> HandleCommandResult:
        """Release a held CRUSH bucket"""
        return self._hold(bucket, False, format)

    @write_command("recovery helper-report")
    def cmd_helper_report(self, report: str, host: Optional[str] = None) -> HandleCommandResult:
        """Node helper protocol: send a report (JSON), receive this host's instructions"""
        with timed(self.meter, "helper-report"):
            return HandleCommandResult(*self._report(report, host, advertise=True))

    @read_command("recovery perf")
    def cmd_perf(self) -> HandleCommandResult:
        """The module's own cost: per tick its time, store writes, mon commands and reads;
        per command its handling time"""
        return _ok(self.meter.doc())

    @write_command("recovery network probe")
    def cmd_network_probe(self, hosts: Optional[List[str]] = None,
                          format: str = "plain") -> HandleCommandResult:
        """Request a bounded throughput probe (<= 2 s or 64 MiB per pair) from these hosts'
        helpers (default: every reporting host) to every other host, on their next cycle"""
        bad = self._guard()
        if bad:
            return bad
        with self._lock:
            try:
                requested = self.engine.request_throughput(hosts or [])
            except KeyError as e:
                return HandleCommandResult(-errno.ENOENT, "", "recovery: %s" % e.args[0])
            except InputError as e:
                return _err(e)
        return _show({"throughput_requested": requested}, format,
                     lambda d: "throughput probe requested from %s" % (
                         ", ".join(sorted(d["throughput_requested"])) or "no host"))

    @read_command("recovery network")
    def cmd_network(self, format: str = "plain") -> HandleCommandResult:
        """Network view between hosts (helper probes) and current findings"""
        bad = self._guard()
        if bad:
            return bad
        with self._lock:
            view = network_view(self.engine.network, self.engine.findings, time.time())
        return _show(view, format, network_text)
