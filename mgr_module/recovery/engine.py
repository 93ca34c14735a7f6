"""The shell's engine: one tick = snapshot -> plan() -> carry out; the run's command verbs
are its mixin RunVerbs (runverbs.py).

No mgr_module import: the Module (module.py) hands in the Ceph dumps and a `ceph` object
(mon_command / osd_command), so this runs the same in unit tests with recorded dumps.
Commands only change intent (and wake the loop); only tick() acts on the cluster.
"""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ceph_recovery import actions as A
from ceph_recovery.model import (MODE_ABORT, MODE_CONTROLLED, MODE_IDLE, MODE_PAUSED,
                                 PHASE_ABORTED, PHASE_DONE, Intent, Snapshot)
from ceph_recovery.protocol import Report

from . import core
from .cluster import CrushIndex, build_snapshot, pg_view
from .executor import Executor, journal_facts, mon_cmd_for
from .helperproto import HelperProtocol
from .instruct import INSTRUCTED, Instructing
from .packed import ByPg
from .pgtrack import missed_entries, remember_members, remember_versions
from . import drillcli, maint, settle, statusdoc
from .batch import REPEATABLE, Acting
from .runverbs import RunVerbs
from .state import RunState, leftovers_from, windows_from

# checks about a run's budget and progress: raised only while a run is active (the last run's
# budget stays in the intent, but an idle cluster is not "over its recovery budget")
RUN_ONLY_CHECKS = ("RECOVERY_BUDGET_EXCEEDED", "RECOVERY_BUDGET_TOO_SMALL",
                   "RECOVERY_BOOT_TIMEOUT", "RECOVERY_RESTART_REFUSED")
REPEAT_WINDOW_S = 120.0


class Engine(Acting, Instructing, HelperProtocol, RunVerbs):
    def __init__(self, ceph: Any, log: Callable[..., None],
                 persist: Callable[[], None] = lambda: None,
                 wake: Callable[[], None] = lambda: None,
                 phase: Callable[[str, float], None] = lambda what, seconds: None) -> None:
        self.ceph = ceph
        self.log = log
        self.phase = phase          # (phase, seconds) of each tick: the module's meter
        self.persist = persist      # writes the run state (tick thread only: mon I/O)
        self.wake = wake            # asks the tick thread to run now (and persist)
        # guards every field below; held by commands and by the tick's decisions, never
        # while a mon or OSD command is in flight
        self.lock = threading.RLock()
        self.run = RunState()
        # this tick's instructions, prepared before its write-ahead (instruct.py)
        self._pending: Dict[Tuple[str, int], Tuple[Optional[Dict[str, Any]], str]] = {}
        self.executor = Executor(ceph)
        self.reports: Dict[str, Tuple[Report, float]] = {}
        self.retired_instances: Dict[str, Tuple[str, ...]] = {}   # helperproto.handle_report
        self.refused_protocols: Dict[str, Tuple[float, Any, str]] = {}   # versions.py
        self.network: Dict[str, Any] = {}
        self.findings: Tuple[Any, ...] = ()
        self.tput_requests: Dict[str, List[str]] = {}   # host -> peers, sent with its next reply
        # (epoch asked in, osd -> (answer, when asked)): view.fresh_ok_to_stop picks the valid
        self.ok_to_stop: Optional[Tuple[int, Dict[int, Tuple[bool, float]]]] = None
        self.snapshot: Optional[Snapshot] = None
        # `osd crush show-tunables` as the module last read it (tickreads.py); None = unread
        self.crush_tunables: Optional[Dict[str, int]] = None
        self.crush: Optional[CrushIndex] = None
        # ((osd map, tree, PG stats) as handed in, CrushIndex, pg_view, missed entries):
        # kept while the module hands in the same dumps (it reads them only as they change)
        self._memo: Optional[Tuple[Any, ...]] = None
        self._fresh = False      # build_views() built a memo that observe() did not use yet
        self.view_cost = 0.0     # seconds the last PG view took to build (tickreads.py)
        self._to_remember: Optional[Tuple[Any, Any]] = None   # observe() -> _remember()
        self._by_host: Optional[Tuple[Any, Dict[str, List[Any]]]] = None  # osds_of()
        self.plan_out: Optional[core.PlanOutput] = None
        self.last_wait: Optional[Tuple[str, str]] = None
        self.error: Optional[str] = None
        # checks raised by the shell itself (state store, ...): code -> (summary, detail)
        self.shell_checks: Dict[str, Tuple[str, List[str]]] = {}
        # pgid -> its members while complete (pgtrack.remember_members)
        self.members_seen: Mapping[str, Tuple[int, ...]] = ByPg()
        # missed entries (pgtrack.missed_entries): the last tick's PG versions, and per down
        # OSD its PGs' versions when it was first seen down (in memory: lost on failover)
        self.pg_versions: Mapping[str, int] = ByPg()
        self.down_versions: Dict[int, Dict[str, int]] = {}
        self.maint_health: Tuple[Any, ...] = ()   # RECOVERY_MAINTENANCE (maint.py)
        self.options: Dict[str, Any] = {"helper_stale_timeout": 30.0, "auto_hold": False,
                                        "restart_cooldown": 600.0, "boot_timeout": 600.0,
                                        "stall_limit": 600.0,
                                        "budget_default": "auto", "network_holds_starts": True,
                                        "instruction_ttl": 300.0}

    # ------------------------------------------------------------------ run state
    @property
    def active(self) -> bool:
        return (self.run.intent.mode in (MODE_CONTROLLED, MODE_PAUSED, MODE_ABORT)
                and self.run.progress.phase not in (PHASE_DONE, PHASE_ABORTED))

    def busy(self) -> bool:
        """Whether this tick needs the PG stats and each OSD's settings: a run, a
        maintenance window, a drill, or a restore still pending from one."""
        p = self.run.progress
        return bool(self.active or self.run.windows or drillcli.busy(self)
                    or p.saved_config or p.restoring or p.restoring_flags or self.run.leftovers)

    def effective_intent(self) -> Intent:
        o = self.options
        return replace(self.run.intent, holds=maint.holds(self), auto_hold=bool(o["auto_hold"]),
                       restart_cooldown_s=float(o["restart_cooldown"]),
                       boot_timeout_s=float(o["boot_timeout"]),
                       stall_limit_s=float(o["stall_limit"]))

    # ------------------------------------------------------------------ the tick
    def observe(self, osd_map: Mapping[str, Any], tree: Mapping[str, Any],
                pg_dump: Mapping[str, Any], now: float,
                memory_targets: Optional[Mapping[int, int]] = None,
                recovery_configs: Optional[Mapping[int, Tuple[Tuple[str, str], ...]]] = None,
                op_queues: Optional[Mapping[int, Optional[str]]] = None,
                versions: Optional[Mapping[int, str]] = None) -> Snapshot:
        self.build_views(osd_map, tree, pg_dump)
        self.crush = crush = self._memo[1]
        # each host's results stamped with when they arrived: the core expires old ones
        net = {h: dict(r.network, received_at=t) for h, (r, t) in self.reports.items()
               if r.network}
        self.network = net
        findings = core.network_findings(net, self.findings, now) if net else ()
        self.findings = findings
        self.snapshot = build_snapshot(
            osd_map, tree, pg_dump, self.reports, now,
            float(self.options["helper_stale_timeout"]), self.ok_to_stop,
            self.run.heap_support,
            core.findings_holding(findings, net, now)
            if self.options.get("network_holds_starts", True) and findings else (),
            self.run.pgs_seen, self.run.down_seen, memory_targets, self.members_seen,
            recovery_configs, self._memo[3], crush, self._memo[2], op_queues, versions,
            self.crush_tunables)
        if self._fresh:   # new PG stats viewed; the same ones again add nothing new
            self._fresh = False
            self._to_remember = (self.snapshot, pg_dump)
        for o in self.snapshot.osds:
            if o.up and o.pgs:
                self.run.pgs_seen[o.id] = o.pgs
            if o.up:
                self.run.down_seen.pop(o.id, None)
            elif o.id not in self.run.down_seen:
                self.run.down_seen[o.id] = now
        return self.snapshot

    def build_views(self, osd_map, tree, pg_dump) -> bool:
        """Build what new dumps hold (CRUSH index, PG view, missed entries); True when the PG
        stats are those of the last call. An unchanged read is handed in as the same object
        (module.py): the CRUSH index is rebuilt only with a new tree, the PG view only with
        new PG stats (a new map alone keeps it until the next read: the module reads them
        every tick where that is cheap). The tick calls it without the lock: the helpers'
        reports are answered meanwhile."""
        memo = self._memo
        if memo is not None and all(a is b for a, b in zip(memo[0], (osd_map, tree, pg_dump))):
            return True
        t0 = time.monotonic()
        crush = memo[1] if memo is not None and memo[0][1] is tree else CrushIndex(tree)
        if memo is not None and memo[0][2] is pg_dump:
            self._memo = ((osd_map, tree, pg_dump), crush, memo[2], memo[3])
            return True
        self._remember()
        self._memo = ((osd_map, tree, pg_dump), crush, pg_view(
            crush, osd_map, pg_dump, self.run.pgs_seen, self.members_seen),
            missed_entries(pg_dump, self.down_versions))
        self._fresh = True
        self.view_cost = time.monotonic() - t0
        return False

    def tick(self, osd_map, tree, pg_dump, now: float, epoch_now: Callable[[], int],
             memory_targets: Optional[Mapping[int, int]] = None,
             recovery_configs: Optional[Mapping[int, Tuple[Tuple[str, str], ...]]] = None,
             op_queues: Optional[Mapping[int, Optional[str]]] = None,
             versions: Optional[Mapping[int, str]] = None) -> None:
        """Decide under the lock, talk to the mons without it: status, abort and
        helper-report never wait for a mon command (each is bounded by its own timeout).
        First the requests the commands recorded (settle.py), on the last snapshot: one
        accepted now is acted on in this same tick."""
        settle.settle(self, now)
        t0 = time.monotonic()
        self.build_views(osd_map, tree, pg_dump)
        with self.lock:
            snap = self.observe(osd_map, tree, pg_dump, now, memory_targets, recovery_configs,
                                op_queues, versions)
            t1 = time.monotonic()
            out = core.call_plan(snap, self.effective_intent(), self.run.progress, now)
            t2 = time.monotonic()
            self.phase("view", t1 - t0)
            self.phase("plan", t2 - t1)
            out.actions = out.actions + maint.tick(self, snap, now)
            self.plan_out = out
            if snap.epoch < self.run.progress.epoch:
                self._note_wait(now, snap.epoch, "stale_map", "OSD map epoch %d older than "
                                "the last decided %d: not acting"
                                % (snap.epoch, self.run.progress.epoch))
                return
            # a run ends (done/aborted) only once this tick's actions (flag restores) were
            # carried out: status answers during them and must not show an end not yet reached
            ending = out.progress.phase in (PHASE_DONE, PHASE_ABORTED)
            self.run.progress = replace(out.progress, phase=self.run.progress.phase) \
                if ending else out.progress
        t3 = time.monotonic()
        done, wrote = self._act(out.actions, snap, now, epoch_now)
        self.phase("act", time.monotonic() - t3)
        with self.lock:
            if ending and done:
                self.run.progress = replace(self.run.progress, phase=out.progress.phase)
                maint.run_ended(self, snap, now)
                if self.run.intent.mode != MODE_IDLE:
                    self.run.intent = replace(self.run.intent, mode=MODE_IDLE)
            if done:     # what a predecessor prepared rests on holds this tick re-issued
                self.run.release_prepared()
            self._expire(now, snap.epoch)
            self.run.prune_instructions()
            maint.after_tick(self, now)
        # one state write per tick: the write-ahead (which holds this tick's instructions,
        # prepared: instruct.py), or this one when the tick carried nothing out
        if not wrote:
            self.persist()

    def _remember(self) -> None:
        """What the last observed PG stats add to the engine's memory (each PG's versions
        and members: pgtrack.py), taken in just before new PG stats are viewed (in the tick
        that is outside the lock: a pass over every PG)."""
        pending, self._to_remember = self._to_remember, None
        if pending is not None:
            snap, pg_dump = pending
            self.pg_versions = remember_versions(snap.osds, self.members_seen,
                                                 self.pg_versions, self.down_versions, pg_dump)
            self.members_seen = remember_members(snap.pg_map, self.members_seen)

    def _note_wait(self, now: float, epoch: int, kind: str, reason: str) -> None:
        if self.last_wait != (kind, reason):
            self.last_wait = (kind, reason)
            self.run.record(now, epoch, {"kind": kind, "reason": reason}, "noted")

    def _talk(self, action: A.Action) -> Tuple[Any, str]:
        """The mon/OSD side of an action (no lock held): (answer, journal result)."""
        if isinstance(action, A.QueryOkToStop):
            return self.executor.ok_to_stop(action.osd)
        if isinstance(action, A.HeapRelease):
            return self.executor.heap_release(action.osd)
        if mon_cmd_for(action) is not None:
            return self.executor.run_mon_action(action)
        return None, ""

    def carry_out(self, action: A.Action, snap: Snapshot, now: float,
                  entry: Optional[Dict[str, Any]] = None) -> None:
        if isinstance(action, A.Wait):
            with self.lock:
                self._note_wait(now, snap.epoch, "wait", action.describe())
            return
        answer, result = self._talk(action)
        with self.lock:
            self.last_wait = None
            if isinstance(action, A.Done):
                result = "noted"
            elif isinstance(action, A.QueryOkToStop):
                ep = int(snap.epoch)
                if self.ok_to_stop is None or self.ok_to_stop[0] != ep:
                    self.ok_to_stop = (ep, {})
                self.ok_to_stop[1][action.osd] = (answer, now)
            elif isinstance(action, A.HeapRelease):
                if answer is not None:
                    self.run.heap_support[action.osd] = answer
            elif isinstance(action, INSTRUCTED):
                result = self._instruct(action, snap, now)
            elif mon_cmd_for(action) is None:
                result = "ignored: unknown action"
            self._result(action, answer, result, entry, snap, now)
        self.log("action", action=action.to_dict(), result=result, epoch=snap.epoch)

    def _result(self, action: A.Action, answer: Any, result: str,
                entry: Optional[Dict[str, Any]], snap: Snapshot, now: float) -> None:
        """An action's result in its write-ahead journal entry, or a new entry (lock held)."""
        facts = journal_facts(action, answer, snap, self.run.progress)
        if entry is not None:
            entry["result"] = result
            entry.update(facts)
        else:
            self._journal(now, snap.epoch, action, result, facts)

    def _journal(self, now: float, epoch: int, action: A.Action, result: str,
                 facts: Optional[Dict[str, Any]] = None) -> None:
        """Record an action; a query or heap release repeated with the same answer within
        REPEAT_WINDOW_S only bumps the earlier entry's `repeats` (the journal stays readable)."""
        d = action.to_dict()
        if action.kind in REPEATABLE:
            key = (action.kind, d.get("osd"), result)
            for entry in reversed(self.run.journal):
                if now - entry["time"] > REPEAT_WINDOW_S:
                    break
                a = entry["action"]
                if (a.get("kind"), a.get("osd"), entry["result"]) == key:
                    entry["repeats"] = entry.get("repeats", 0) + 1
                    entry["last_time"], entry["last_epoch"] = round(now, 3), epoch
                    return
        self.run.record(now, epoch, d, result).update(facts or {})

    def health_checks(self) -> Tuple[Any, ...]:
        """plan()'s health checks, without the run-only ones when no run is active."""
        if self.plan_out is None:
            return ()
        health = self.plan_out.health if self.active else tuple(
            h for h in self.plan_out.health if h.code not in RUN_ONLY_CHECKS)
        return health + self.maint_health

    def state_unreadable(self, why: str, now: float, marks: Optional[str] = None) -> None:
        """The stored run state could not be read: say so until the next run starts, since
        flags and per-OSD noup a lost run set may still be on the cluster. What the state's
        marks show that run set is kept: the next run takes it over and restores it. The
        maintenance windows they name stay windows (held, noout kept, `maintenance exit`
        still ends them)."""
        self.run.leftovers = leftovers_from(marks)
        if not self.run.windows:
            self.run.windows = windows_from(marks)
        self.shell_checks["RECOVERY_STATE_UNREADABLE"] = (
            "recovery run state unreadable: flags or noup a lost run set may be left over",
            [why, "check `ceph osd dump` (flags, per-OSD noup) and `ceph osd tree` (group "
                  "noup); clear what no operator set, then start a new run"])
        self.run.record(now, 0, {"kind": "state_unreadable", "reason": why,
                                 "leftovers": self.run.leftovers,
                                 "windows": [w.bucket for w in self.run.windows]}, "noted")

    def shell_health(self) -> Dict[str, Dict[str, Any]]:
        """The shell's own checks, shaped for MgrModule.set_health_checks."""
        return {code: {"severity": "warning", "summary": summary, "count": len(detail),
                       "detail": list(detail)}
                for code, (summary, detail) in sorted(self.shell_checks.items())}

    # ------------------------------------------------------------------ status
    def host_table(self, intent: Optional[Intent] = None) -> Dict[str, Dict[str, Any]]:
        return statusdoc.host_table(self, intent)

    def status(self, now: float) -> Dict[str, Any]:
        return statusdoc.status(self, now)
