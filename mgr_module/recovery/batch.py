"""One tick's actions carried out in groups (Acting, a mixin of the Engine).

Consecutive per-OSD `noup` changes (HoldOsd, AllowBoot) go out as ONE mon command: Ceph's
`osd add-noup` / `osd rm-noup` take several ids, and the mon applies them in one map change.
So the mon commands of a tick do not grow with the number of OSDs in a run's scope (a rack's
first tick holds all of its down OSDs). Every other action is a group of its own; plan()'s
order is kept.
No mgr_module import.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ceph_recovery import actions as A
from ceph_recovery.model import Snapshot

from .executor import mon_cmd_for
from .instruct import INSTRUCTED

REPEATABLE = ("query_ok_to_stop", "heap_release")

# one command's id list stays well below the mon's message size (a few KiB)
MAX_IDS = 1000
BATCHED = {A.HoldOsd: "osd add-noup", A.AllowBoot: "osd rm-noup"}


def groups(actions: Sequence[A.Action]) -> List[List[int]]:
    """Indexes of `actions` in carry-out groups: runs of the same batchable kind (up to
    MAX_IDS), every other action alone."""
    out: List[List[int]] = []
    for k, a in enumerate(actions):
        prev = actions[out[-1][0]] if out else None
        if prev is not None and type(a) in BATCHED and type(a) is type(prev) \
                and len(out[-1]) < MAX_IDS:
            out[-1].append(k)
        else:
            out.append([k])
    return out


def batch_command(actions: Sequence[A.Action]) -> Optional[Dict[str, Any]]:
    """The one mon command of a group of HoldOsd or AllowBoot (None for any other group)."""
    prefix = BATCHED.get(type(actions[0])) if actions else None
    if prefix is None or len(actions) < 2:
        return None
    return {"prefix": prefix, "ids": ["osd.%d" % a.osd for a in actions]}


class Acting(object):
    """The Engine's carrying out of a tick's actions (engine.py has the rest)."""
    lock: Any
    run: Any
    executor: Any
    last_wait: Any
    persist: Callable[[], None]
    log: Callable[..., None]
    carry_out: Callable[..., None]
    _note_wait: Callable[..., None]
    _journal: Callable[..., None]
    _result: Callable[..., None]
    _prepare: Callable[..., None]
    _pending: Dict[Any, Any]
    _drop_pending: Callable[..., None]

    def _act(self, actions, snap: Snapshot, now: float, epoch_now: Callable[[], int]
             ) -> Tuple[bool, bool]:
        """Carry out a tick's actions in plan()'s order: (all carried out, state written).

        Write-ahead, once per tick: every acting step is journaled "in progress" and the
        state persisted ONCE before the first of them goes out, so an mgr killed mid-list
        still shows each one (a crash re-plans from the map: level triggered). One write,
        not one per action: each is a mon commit (config-key), and a rack's first tick has
        hundreds of actions. The results the actions leave are written by the next
        tick's write. The tick's helper instructions are in this write too, prepared
        (instruct.py): a start lost with the mgr would be retried as a failed start.
        The map epoch is checked before each group that talks to the mons, not before each
        action (each check copies the OSD map)."""
        acting = [k for k, a in enumerate(actions) if a.kind not in REPEATABLE + ("wait", "done")]
        entries: Dict[int, Dict[str, Any]] = {}
        if acting:
            with self.lock:
                # what an earlier tick left pending (it raised mid-list) stays prepared in
                # the state: released at the end of this tick, if it completes
                self._pending.clear()
                for k in acting:
                    entries[k] = self.run.record(now, snap.epoch, actions[k].to_dict(),
                                                 "in progress")
                    if isinstance(actions[k], INSTRUCTED):
                        self._prepare(actions[k], snap, now)
            self.persist()
        checked = False
        for group in groups(actions):
            acts = [actions[k] for k in group]
            talks = any(mon_cmd_for(a) is not None or a.kind in REPEATABLE for a in acts)
            if talks or not checked:
                checked, cur = True, epoch_now()
                if cur < snap.epoch:
                    self._not_carried_out(entries, group[0], now, snap.epoch, cur)
                    return False, bool(acting)
            cmd = batch_command(acts)
            if cmd is None:
                for k in group:
                    self.carry_out(actions[k], snap, now, entries.get(k))
            else:
                self._carry_out_batch(cmd, acts, [entries.get(k) for k in group], snap, now)
        return True, bool(acting)

    def _not_carried_out(self, entries: Dict[int, Dict[str, Any]], first: int, now: float,
                         epoch: int, cur: int) -> None:
        with self.lock:
            self._drop_pending(now)
            self._note_wait(now, epoch, "stale_map", "epoch went back to %d" % cur)
            for k, entry in entries.items():
                if k >= first:
                    entry["result"] = "not carried out: OSD map epoch went back to %d" % cur

    def _carry_out_batch(self, cmd: Dict[str, Any], acts: List[A.Action],
                         entries: List[Optional[Dict[str, Any]]], snap: Snapshot,
                         now: float) -> None:
        """One mon command for a group of per-OSD noup changes (batch.py); each action's
        journal entry gets its result."""
        rc, out, err = self.executor.mon(cmd)
        ok = rc == 0
        result = "ok" if ok else "%s failed rc=%d %s" % (cmd["prefix"], rc,
                                                         (err or out).strip()[:200])
        with self.lock:
            self.last_wait = None
            for action, entry in zip(acts, entries):
                self._result(action, ok, result, entry, snap, now)
        self.log("actions", prefix=cmd["prefix"], osds=[a.osd for a in acts], result=result,
                 epoch=snap.epoch)
