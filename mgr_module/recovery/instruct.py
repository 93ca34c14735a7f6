"""Helper instructions of a tick (Instructing, a mixin of the Engine): prepared under the
write-ahead, released as the tick carries the action out.

One state write per tick: a tick's start, restart and stop instructions are added to the run
state "prepared" before its one write-ahead (batch.py), so that write already holds them. A
helper is handed an instruction only once it is released: when the tick carries its action
out, in plan()'s order, after the holds before it. A prepared instruction the tick did not
carry out (the map epoch went back) is closed. A state loaded by a new mgr may hold
instructions its predecessor prepared: they are released only at the end of the new mgr's
first completed tick, which has re-issued the level-triggered holds and flags they rest on
(the helper carries an id out once: it keeps the ids it executed).
No mgr_module import.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from ceph_recovery import actions as A
from ceph_recovery.model import MODE_ABORT, Snapshot

from . import drillcli

INSTRUCTED = (A.GrantStart, A.RestartOsd, A.StopOsd)
NOT_CARRIED_OUT = "not carried out: the tick stopped before this action"


def op_of(action: A.Action) -> str:
    return "start" if isinstance(action, A.GrantStart) else (
        "stop" if isinstance(action, A.StopOsd) else "restart")


class Instructing(object):
    """The Engine's helper instructions (engine.py has the rest)."""
    run: Any
    _pending: Dict[Tuple[str, int], Tuple[Optional[Dict[str, Any]], str]]

    def _aborted_for(self, op: str, osd: int) -> bool:
        """Whether an abort stands in the way of this instruction. An aborting drill's starts
        need no run; stops go out (an abort stops the processes of the starts it withdraws)."""
        return self.run.intent.mode == MODE_ABORT and op != "stop" and not (
            op == "start" and osd in drillcli.starting(self))

    def _prepare(self, action: A.Action, snap: Snapshot, now: float) -> None:
        """The instruction of one of this tick's actions, added prepared (lock held), or the
        reason none is: its result once the action is carried out."""
        op = op_of(action)
        key = (op, action.osd)
        if self._aborted_for(op, action.osd):
            self._pending[key] = (None, "not instructed: the run is aborted")
            return
        if op == "stop":
            # a stop supersedes an open start of the same OSD: a helper away when the start
            # was sent must not carry it out on its return
            for ins in self.run.open_instructions(osd=action.osd):
                if ins["op"] == "start":
                    self.run.close(ins, "withdrawn", now, "superseded by a stop")
        if self.run.open_instructions(osd=action.osd):
            self._pending[key] = (None, "already instructed (open instruction), not repeated")
            return
        # A start is instructed even when the last report shows the process running: that
        # report may predate the process's death, and the helper checks its own process table
        # before starting (a running OSD is answered done, never started twice).
        ins = self.run.add_instruction(action.host, op, action.osd, action.reason, now,
                                       snap.epoch, kill=getattr(action, "kill", False),
                                       prepared=True)
        self._pending[key] = (ins, "")

    def _instruct(self, action: A.Action, snap: Snapshot, now: float) -> str:
        """Release the action's prepared instruction to its helper (lock held): the action's
        journal result. An abort that came while the tick was acting withdraws it instead."""
        op = op_of(action)
        key = (op, action.osd)
        if key not in self._pending:
            self._prepare(action, snap, now)
        ins, result = self._pending.pop(key)
        if ins is None:
            return result
        if self._aborted_for(op, action.osd):
            self.run.close(ins, "withdrawn", now, "the run was aborted while the tick acted")
            return "not instructed: the run is aborted"
        self.run.release(ins)
        return "instruction %s queued for helper on %s" % (ins["id"], action.host)

    def _drop_pending(self, now: float) -> None:
        """Close the prepared instructions of actions this tick did not carry out."""
        pending, self._pending = self._pending, {}
        for ins, _result in pending.values():
            if ins is not None:
                self.run.close(ins, "withdrawn", now, NOT_CARRIED_OUT)
