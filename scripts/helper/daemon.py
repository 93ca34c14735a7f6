"""The helper daemon: a fixed cycle (Patroni-style), flag-only signal handlers.

Each cycle: refresh this host's OSD map view when it may be stale, measure memory and OSD
processes, probe the network (optional module, bounded time), send the report to the mgr as
`recovery helper-report`, cache its reply (the boot gate reads the grants), and carry out new
instructions exactly once (ids persisted in the state dir before acting).
SIGTERM/SIGINT set a stop flag; SIGHUP sets a reload flag (reconnect, reload the view).
"""
from __future__ import annotations

import errno
import json
import os
import signal
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import rados
import structlog
from ceph_recovery import protocol, reportauth
from ceph_recovery.model import DAEMON_REBUILDING

from . import client, dupscan, endpoint, gate, memory, netrun, osdlog, report
from .state import StateDir

log = structlog.get_logger("ceph-recovery-helper")

REPORT_PREFIX = "recovery helper-report"
VIEW_MAX_AGE = 60.0
PROBLEM_LOG_EVERY = 60.0
MAX_ABANDONED = 8          # mgr handles stuck in a call, kept referenced (see Helper._mgr)


@dataclass
class Options:
    host: str
    conf: str
    name: str
    keyring: Optional[str]
    state_dir: str
    interval: float = 2.0
    cgroup: Optional[str] = None
    timeout: float = 5.0
    stop_timeout: float = 60.0
    probe_budget: float = 1.0
    lab_dir: Optional[str] = None


def _shutdown(handle: Any) -> None:
    if handle is not None:
        try:
            handle.shutdown()
        except Exception:   # noqa: BLE001 - best effort
            pass


class Helper:
    def __init__(self, opts: Options, launcher: Any,
                 read_memory: Optional[Callable[[], Dict[str, Any]]] = None,
                 ok_to_stop: Optional[Callable[[int], Tuple[bool, str]]] = None) -> None:
        self.opts = opts
        self.launcher = launcher
        self.ok_to_stop = ok_to_stop or self._ok_to_stop
        self.state = StateDir(opts.state_dir).ensure()
        self.read_memory = read_memory or (lambda: memory.read_memory(opts.cgroup))
        self.cluster = None                 # mon commands (with rados_mon_op_timeout)
        self.mgr_cluster = None             # mgr commands (blocking, see _mgr)
        self.abandoned: List[Tuple[Any, threading.Thread]] = []
        self.mgr_deadline = opts.timeout * 3 + 10    # the retry policy's 3 attempts, and slack
        self.exit_code = 0
        self.stop_requested = False
        self.reload_requested = False
        self.failed: List[Dict[str, str]] = []
        self.probe = netrun.ProbeRunner(opts.probe_budget)
        self.dups = dupscan.DupsScanner()   # each OSD's log: dups warnings of its last start
        self.phases = osdlog.StartPhases()     # the allocator rebuild, from each OSD's log
        self.rebuilding: Dict[int, float] = {}  # osd -> when this helper first saw it rebuild
        self.probe_request: Dict[str, Any] = {}
        self._last_problem: Tuple[Any, float] = (None, 0.0)
        self.full_map: Optional[Tuple[Dict[str, Any], Dict[str, Any]]] = None  # for the probe
        self.endpoint: Optional[Tuple[str, str]] = None   # the module's (url, token), if any
        # reports are numbered 1, 2, ... by this process, named by `instance`: the module
        # refuses one not newer than the last it took from this instance, so a report sent
        # through an abandoned handle and delivered late never overwrites a newer one; a
        # restarted helper is a new instance and starts again from 1
        self.new_instance()

    # -- signals: flags only -------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        def _stop(signum, _frame):
            self.stop_requested = True

        def _reload(signum, _frame):
            self.reload_requested = True
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
        signal.signal(signal.SIGHUP, _reload)

    def run(self) -> int:
        self.install_signal_handlers()
        log.info("helper_started", host=self.opts.host, launcher=self.launcher.name,
                 interval=self.opts.interval, state_dir=self.state.path)
        while not self.stop_requested:
            began = time.monotonic()
            if self.reload_requested:
                self.reload_requested = False
                self._disconnect()
                log.info("helper_reload")
            try:
                self.run_cycle(time.time())
            except (client.ClusterUnreachable, rados.Error) as exc:
                self._problem("cluster_unreachable", error=str(exc))
                self._disconnect()                  # reconnect next cycle
            except Exception as exc:    # noqa: BLE001 - a cycle must never kill the daemon
                self._problem("cycle_failed", error="%s: %s" % (type(exc).__name__, exc),
                              exc_info=True)
            self._sleep_until(began + self.opts.interval)
        self.close()
        log.info("helper_stopped", host=self.opts.host, exit_code=self.exit_code)
        return self.exit_code

    def close(self) -> None:
        self._disconnect()
        self.probe.close()

    def _problem(self, event: str, **kw: Any) -> None:
        """Log a recurring problem when it changes, else at most once a minute."""
        key = (event, kw.get("rc"), kw.get("error"))
        now = time.monotonic()
        if key != self._last_problem[0] or now - self._last_problem[1] >= PROBLEM_LOG_EVERY:
            self._last_problem = (key, now)
            log.warning(event, **kw)

    def _sleep_until(self, deadline: float) -> None:
        while not self.stop_requested and not self.reload_requested:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.2))

    # -- cluster ---------------------------------------------------------------------------
    def _connected(self):
        if self.cluster is None:
            o = self.opts
            self.cluster = client.connect(o.conf, o.name, o.keyring, o.timeout)
        return self.cluster

    def _mgr_connected(self):
        if self.mgr_cluster is None:
            o = self.opts
            self.mgr_cluster = client.connect(o.conf, o.name, o.keyring, o.timeout,
                                              op_timeout=False)
        return self.mgr_cluster

    def _mgr(self, prefix: str, **args: Any) -> Tuple[int, Any, str]:
        """A mgr command that can neither hang the helper nor corrupt its memory. It runs on its
        own handle without an op timeout (the only memory-safe mgr_command in librados, see
        client.connect), in a thread with this deadline. Past the deadline the handle is
        abandoned, never shut down: shutdown would wait for the stuck call, and the call's
        buffers must outlive it, so the handle and its thread stay referenced (a bounded
        number) and the next command connects a fresh handle."""
        cluster, box = self._mgr_connected(), {}

        def call() -> None:
            try:
                box["v"] = client.mgr_json(cluster, prefix, self.opts.timeout, **args)
            except BaseException as exc:   # noqa: BLE001 - re-raised in the caller's thread
                box["e"] = exc
        worker = threading.Thread(target=call, name="mgr-command", daemon=True)
        worker.start()
        deadline = self.mgr_deadline
        worker.join(deadline)
        if worker.is_alive():
            self._abandon_mgr(cluster, worker)
            raise client.ClusterUnreachable(
                "mgr command %r: no answer within %.0fs (lost in a mgr failover or a network "
                "cut?); connecting again" % (prefix, deadline))
        if "e" in box:
            raise box["e"]
        return box["v"]

    def _abandon_mgr(self, cluster: Any, worker: threading.Thread) -> None:
        """Keep a stuck handle alive; too many stuck at once means librados is wedged: exit
        so the service manager starts a clean process (leaving them is unsafe at exit)."""
        self.mgr_cluster = None
        self.abandoned = [(c, w) for c, w in self.abandoned if w.is_alive()]
        self.abandoned.append((cluster, worker))
        if len(self.abandoned) > MAX_ABANDONED:
            log.error("mgr_handles_stuck", count=len(self.abandoned))
            self.exit_code = 1
            self.stop_requested = True

    def _disconnect_mgr(self) -> None:
        """Shut the mgr handle down; only called when no command is in flight on it."""
        _shutdown(self.mgr_cluster)
        self.mgr_cluster = None

    def _disconnect(self) -> None:
        self._disconnect_mgr()
        _shutdown(self.cluster)
        self.cluster = None

    def _ok_to_stop(self, osd: int) -> Tuple[bool, str]:
        """Ask `ceph osd ok-to-stop` (a mgr command) right before stopping: the mgr's answer
        may be a few seconds old. Unanswered counts as not ok: never stop without clearance."""
        try:
            rc, out, outs = self._mgr("osd ok-to-stop", ids=[str(osd)])
        except Exception as exc:   # noqa: BLE001 - any failure means no clearance
            return False, "ok-to-stop unanswered: %s" % exc
        if isinstance(out, dict) and out.get("ok_to_stop") is True:
            return True, "ok-to-stop: yes"
        return False, "ok-to-stop refused osd.%d (rc %d): %s" % (osd, rc, outs.strip()
                                                                 or json.dumps(out)[:300])

    def refresh_view(self, now: float, want_epoch: Optional[int] = None) -> Dict[str, Any]:
        """This host's OSDs and their gate view; re-read from the mon only when stale."""
        view = self.state.load_view()
        epoch = int(((view or {}).get("osd_dump") or {}).get("epoch") or 0)
        stale = (view is None or self.full_map is None or view.get("host") != self.opts.host
                 or now - float(view.get("saved_at", 0)) > VIEW_MAX_AGE
                 or (want_epoch is not None and want_epoch > epoch))
        if not stale:
            return view
        dump, tree = client.osd_map_view(self._connected(), self.opts.timeout)
        self.full_map = (dump, tree)
        osds = gate.host_osds(self.opts.host, tree)
        small_dump, small_tree = gate.trim_view(osds, dump, tree)
        self.state.save_view(small_dump, small_tree, self.opts.host, osds, now)
        return self.state.load_view() or {}

    def _log_path(self, osd: int) -> Optional[str]:
        """The OSD's log file, where the launcher knows one (dupscan.py)."""
        fn = getattr(self.launcher, "log_path", None)
        return fn(osd) if fn is not None else None

    def new_instance(self) -> None:
        """Name this process's reports afresh (`instance`), numbered from 1 (`seq`)."""
        self.instance = "%d-%s" % (os.getpid(), uuid.uuid4().hex[:12])
        self.seq = 0

    # -- one cycle ------------------------------------------------------------------------
    def build(self, now: float, osds: List[int]) -> Dict[str, Any]:
        procs = [report.osd_process(o, self.launcher.pid(o), self.launcher.asok_path(o),
                                    self._log_path(o), self.phases,
                                    self.dups.count(self._log_path(o))) for o in osds]
        self.phases.keep(osds)
        self._log_phases(procs)
        network = self.probe.run(self.probe_context(now))
        self.seq += 1
        rep = report.build_report(self.opts.host, self.seq, now, self.read_memory(),
                                  procs, self.state.pending_done(), network, self.instance)
        if self.failed:
            rep["failed"] = list(self.failed)     # the mgr closes these instructions
        return rep

    def _log_phases(self, procs: List[Dict[str, Any]]) -> None:
        """Log each OSD's allocator rebuild as it begins and ends (with the duration its own
        end line gives, when the log shows one)."""
        for p in procs:
            osd, now = p["id"], time.time()
            if p.get("state") == DAEMON_REBUILDING:
                if osd not in self.rebuilding:
                    self.rebuilding[osd] = now
                    log.warning("osd_rebuilding_allocator", osd=osd, pid=p["pid"])
            elif osd in self.rebuilding:
                seen = self.rebuilding.pop(osd)
                log.info("osd_rebuild_over", osd=osd, process=p["process"],
                         state=p.get("state"), seen_s=round(now - seen, 1),
                         logged_s=self.phases.last_seconds(osd))

    def probe_context(self, now: float) -> Dict[str, Any]:
        """The dict netprobe.probe_cycle takes (see ProbeContext.from_mapping there)."""
        ctx: Dict[str, Any] = {"host": self.opts.host, "lab_dir": self.opts.lab_dir,
                               "request": self.probe_request, "now": now,
                               "budget_s": self.opts.probe_budget}
        if self.full_map is not None:
            ctx["osd_dump"], ctx["osd_tree"] = self.full_map
        cluster = self.cluster
        if cluster is not None:
            timeout = self.opts.timeout
            ctx["mon_rtt"] = lambda: client.mon_json(cluster, "mon stat", timeout, attempts=1)
            try:
                ctx["mon_addrs"] = client.mon_addrs(cluster)
            except Exception:   # noqa: BLE001 - the probe falls back to what it can find
                pass
        return ctx

    def run_cycle(self, now: float) -> Optional[protocol.Instructions]:
        view = self.refresh_view(now)
        rep = self.build(now, list(view.get("osds", [])))
        rc, reply, outs = self.send_report(rep)
        if rc != 0:
            self._problem("report_rejected", rc=rc, error=outs or "(no message)")
            if rc == -errno.ESTALE and "was replaced" in (outs or ""):
                # another process reported for this host since (a `run --once`, a restart
                # that overlapped): this one is alive, so it is the helper now; a new
                # instance is taken and numbered from 1 again
                self.new_instance()
            return None
        self._last_problem = (None, 0.0)
        self.failed = []
        try:
            ins = protocol.parse_instructions(reply)
        except protocol.ProtocolError as exc:
            log.error("bad_reply", error=str(exc), reply=str(reply)[:500])
            return None
        if ins.host != self.opts.host:
            log.error("reply_for_other_host", host=ins.host)
            return None
        self.state.save_instructions(protocol.instructions_to_dict(ins), now)
        self.state.acknowledge([i.id for i in ins.instructions])
        self.probe_request = dict(ins.probe)
        if ins.epoch > int(view.get("osd_dump", {}).get("epoch") or 0):
            view = self.refresh_view(now, want_epoch=ins.epoch)
        self.execute(ins, set(view.get("osds", [])))
        return ins

    def send_report(self, rep: Dict[str, Any]) -> Tuple[int, Any, str]:
        """To the module's report endpoint when it named one, else (or when it fails) by the
        command, whose reply names the endpoint again. A report the endpoint may have taken
        goes by the command with the next seq, so the module never refuses it as a replay."""
        host = self.opts.host
        if self.endpoint is not None:
            url, token = self.endpoint
            try:
                return endpoint.post_report(url, token, host, json.dumps(rep),
                                            self.opts.timeout)
            except endpoint.EndpointError as exc:
                log.warning("report_endpoint_failed", error=str(exc))
                self.endpoint = None
                self.seq += 1
                rep = dict(rep, seq=self.seq)
        # `host` is what a per-host key's cap pins (`with host=<h>`); the module checks it
        # names the report's host
        rc, reply, outs = self._mgr(REPORT_PREFIX, report=json.dumps(rep), host=host)
        if rc == 0 and isinstance(reply, dict):
            self.endpoint = reportauth.parse_endpoint(reply.get("endpoint"))
        return rc, reply, outs

    # -- instructions, exactly once -----------------------------------------------------------
    def execute(self, ins: protocol.Instructions, host_osds: set) -> None:
        done = set(self.state.executed_ids())
        for item in ins.instructions:
            if item.id in done:
                self._settle_interrupted(item)
                continue
            if item.osd not in host_osds:
                self._fail(item, "osd.%d is not on host %s" % (item.osd, self.opts.host))
                continue
            self.state.mark_executed(item.id, ok=False)   # before acting: never twice
            try:
                error = self._carry_out(item)
            except Exception as exc:   # noqa: BLE001 - report, keep going
                error = "%s: %s" % (type(exc).__name__, exc)
            if error:
                self._fail(item, error)
            else:
                self.state.mark_done(item.id)
                log.info("instruction_done", id=item.id, op=item.op, osd=item.osd,
                         reason=item.reason)

    def _settle_interrupted(self, item: protocol.Instruction) -> None:
        """An instruction begun but with no outcome recorded (the helper died between
        mark_executed and mark_done or _fail) that the mgr still lists: its outcome is read
        from the process table and reported, never carried out again. A listed id that
        finished in this process is in pending_done (done) or in self.failed (failed)."""
        if item.id in self.state.pending_done() or any(f["id"] == item.id for f in self.failed):
            return
        running = bool(self.launcher.pid(item.osd))
        if (item.op, running) in (("start", True), ("stop", False)):
            self.state.mark_done(item.id)
            log.info("instruction_done", id=item.id, op=item.op, osd=item.osd,
                     reason="found carried out after a helper restart")
            return
        self._fail(item, "the helper stopped while carrying out this %s; osd.%d is %s: not "
                   "carried out again" % (item.op, item.osd, "running" if running else "stopped"))

    def _fail(self, item: protocol.Instruction, error: str) -> None:
        self.state.mark_executed(item.id, ok=False)
        self.failed.append({"id": item.id, "error": error})
        log.error("instruction_failed", id=item.id, op=item.op, osd=item.osd, error=error)

    def _carry_out(self, item: protocol.Instruction) -> Optional[str]:
        """None when carried out, else why not. stop/restart need a fresh ok-to-stop."""
        if item.op in ("stop", "restart") and self.launcher.pid(item.osd):
            ok, why = self.ok_to_stop(item.osd)
            if not ok:
                return why
            if item.signal == "KILL":
                if not self.launcher.kill(item.osd, self.opts.stop_timeout):
                    return "osd.%d still running %ss after SIGKILL" % (
                        item.osd, self.opts.stop_timeout)
                log.warning("osd_killed", osd=item.osd, reason=item.reason)
            elif not self.launcher.stop(item.osd, self.opts.stop_timeout):
                return "osd.%d still running %ss after the stop request" % (
                    item.osd, self.opts.stop_timeout)
        if item.op == "stop":
            return None
        if self.launcher.start(item.osd) == "held":
            return "the boot gate held osd.%d despite the instruction" % item.osd
        return None
