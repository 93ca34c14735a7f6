"""The run's command verbs (RunVerbs, a mixin of the Engine): start-controlled and its dry
run, pause, resume, abort, hold and release.

Each one checks its input against the engine's last snapshot and changes only the run's
intent and journal (the caller holds the engine's lock); only the next tick acts on the
cluster (engine.py). No mgr_module import.
"""
from __future__ import annotations

import errno
from dataclasses import replace
from typing import Any, Callable, Dict, Optional

from ceph_recovery.model import (MODE_ABORT, MODE_CONTROLLED, MODE_PAUSED, Intent,
                                 Progress)

from . import core
from .inputs import (InputError, budget_text, check_buckets, check_concurrency,
                     check_start_order, parse_budget, split_scope)


class RunVerbs(object):
    """The Engine's run commands (engine.py has the tick and the status)."""
    run: Any
    snapshot: Any
    crush: Any
    options: Dict[str, Any]
    shell_checks: Dict[str, Any]
    active: bool
    effective_intent: Callable[[], Intent]
    host_table: Callable[..., Dict[str, Dict[str, Any]]]
    _withdraw_starts: Callable[..., None]

    def start(self, budget: Optional[str], scope, concurrency: int, now: float,
              leave_out: bool = False, start_order: Optional[str] = None) -> Intent:
        if self.active:
            raise InputError(errno.EBUSY, "a recovery run is already active (run %s, phase %s):"
                             " pause/abort it or wait for it to finish"
                             % (self.run.progress.run_id, self.run.progress.phase))
        return self.prepare(budget, scope, concurrency, now, leave_out, start_order)

    def prepare(self, budget: Optional[str], scope, concurrency: Any, now: float,
                leave_out: bool = False, start_order: Optional[str] = None) -> Intent:
        b = parse_budget(budget if budget is not None else str(self.options["budget_default"]))
        concurrency = check_concurrency("auto" if concurrency is None else concurrency)
        order = check_start_order(Intent.start_order if start_order is None else start_order)
        if self.crush is None:
            raise InputError(errno.EAGAIN, "no OSD map seen yet, retry in a few seconds")
        buckets = check_buckets(split_scope(scope or ()), self.crush.buckets())
        run_id = "r%d" % int(now)
        return replace(self.run.intent, mode=MODE_CONTROLLED, budget=b, scope=buckets,
                       concurrency=concurrency, leave_out=bool(leave_out), run_id=run_id,
                       start_order=order)

    def begin(self, intent: Intent, now: float) -> None:
        self.shell_checks.pop("RECOVERY_STATE_UNREADABLE", None)
        old = self.run.progress
        self.run.intent = intent
        epoch = self.snapshot.epoch if self.snapshot else 0
        lost = self.run.take_over_leftovers(
            intent.run_id, self.snapshot.cluster_flags if self.snapshot else frozenset(),
            now, epoch)
        self.run.progress = replace(lost or Progress(), run_id=(lost or intent).run_id,
                                    epoch=old.epoch, observations=old.observations
                                    ).with_columns(peaks=old.osd_map("peaks"),
                                                   restarted=old.osd_map("restarted"),
                                                   heap_released=old.osd_map("heap_released"))
        self.run.record(now, epoch,
                        {"kind": "command", "reason": "start-controlled run %s budget %s "
                         "scope %s concurrency %s start order %s%s" % (
                             intent.run_id, budget_text(intent.budget), list(intent.scope),
                             intent.concurrency or "auto", intent.start_order,
                             " leave-out" if intent.leave_out else "")},
                        "accepted")

    def dry_run(self, intent: Intent, now: float) -> Dict[str, Any]:
        snap = self.snapshot
        assert snap is not None
        progress = Progress(epoch=self.run.progress.epoch,
                            observations=self.run.progress.observations)
        eff = replace(self.effective_intent(), mode=MODE_CONTROLLED, budget=intent.budget,
                      scope=intent.scope, concurrency=intent.concurrency, run_id=intent.run_id)
        out = core.call_plan(snap, eff, progress, now)
        pre = core.preview(snap, eff, progress, now)
        hosts = self.host_table(eff)
        for h in hosts.values():
            mine = [x["predicted_bytes"] for x in pre["order"] if x["osd"] in h["down"]]
            if h["budget"] is not None and h["used"] is not None:
                h["headroom_bytes"] = h["budget"] - h["used"]
                h["headroom_after_first_bytes"] = (h["budget"] - h["used"] - mine[0]
                                                   if mine else h["headroom_bytes"])
        return {"dry_run": True, "epoch": snap.epoch, "budget": dict(intent.budget.__dict__),
                "scope": list(intent.scope), "concurrency": intent.concurrency,
                "order": pre["order"], "policies": pre["policies"], "hosts": hosts,
                "pglog_dups": pre["pglog_dups"],
                "first_actions": core.actions_list(out.actions),
                "health": [h.code for h in out.health]}

    def set_mode(self, verb: str, now: float) -> None:
        mode = self.run.intent.mode
        if verb == "pause":
            if not self.active or mode != MODE_CONTROLLED:
                raise InputError(errno.EINVAL, "no running recovery run to pause")
            new = MODE_PAUSED
        elif verb == "resume":
            if not self.active or mode != MODE_PAUSED:
                raise InputError(errno.EINVAL, "no paused recovery run to resume")
            new = MODE_CONTROLLED
        else:
            if not self.active:
                raise InputError(errno.EINVAL, "no recovery run to abort")
            new = MODE_ABORT
        self.run.intent = replace(self.run.intent, mode=new)
        epoch = self.snapshot.epoch if self.snapshot else 0
        self.run.record(now, epoch, {"kind": "command", "reason": verb}, "accepted")
        if new == MODE_ABORT:      # not yet carried out: no helper may start them any more
            self._withdraw_starts(now, epoch, "the run is aborted")

    def hold(self, bucket: str, on: bool, now: float) -> None:
        if self.crush is None:
            raise InputError(errno.EAGAIN, "no OSD map seen yet, retry in a few seconds")
        (name,) = check_buckets([bucket], self.crush.buckets())
        holds = set(self.run.intent.holds)
        if on:
            holds.add(name)
        elif name in holds:
            holds.discard(name)
        self.run.intent = replace(self.run.intent, holds=frozenset(holds))
        self.run.record(now, self.snapshot.epoch if self.snapshot else 0,
                        {"kind": "command", "bucket": name,
                         "reason": "%s %s" % ("hold" if on else "release", name)}, "accepted")
