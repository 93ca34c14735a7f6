"""The module's durable run state: Intent, Progress, journal, helper instructions.

Serialised to one JSON document under a schema version and stored with `set_store`
(module store: durable, survives mgr failover). Pure: the module does the store I/O.
Intent and Progress are written and read by the core's own `ceph_recovery.persist`.
"""
from __future__ import annotations

import json
from collections import deque
from typing import Any, Deque, Dict, FrozenSet, List, Mapping, Optional, Tuple

from ceph_recovery import drill as drill_core
from ceph_recovery import maintenance as maint
from ceph_recovery import persist
from . import statecheck
from ceph_recovery.model import (PHASE_ABORTING, PHASE_PAUSED, PHASE_RUNNING,
                                 RUN_CLUSTER_FLAGS, Intent, Progress)

SCHEMA_VERSION = 1
STORE_KEY = "run_state"
MAX_TEXT = 400          # one journal string (reasons, results); longer ones are cut
KEEP_DONE = 100         # done instructions kept (the helper acknowledges them by id)
KEEP_OUTCOMES = 20      # ends of runs and maintenance windows kept (`ceph recovery wait`)

# one serializer of the run's intent and progress: the core's (ceph_recovery.persist)
intent_to_dict, intent_from_dict = persist.intent_to_dict, persist.intent_from_dict
progress_to_dict, progress_from_dict = persist.progress_to_dict, persist.progress_from_dict


def _bounded(v: Any) -> Any:
    if isinstance(v, str) and len(v) > MAX_TEXT:
        return v[:MAX_TEXT - 3] + "..."
    if isinstance(v, dict):
        return {k: _bounded(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_bounded(x) for x in v]
    return v


class RunState(object):
    """Everything the module persists. Mutated under the module's lock only."""

    def __init__(self, journal_len: int = 200) -> None:
        self.intent = Intent()
        self.progress = Progress()
        self.journal: Deque[Dict[str, Any]] = deque(maxlen=journal_len)
        # instruction id -> {"id","host","op","osd","reason","issued_at","epoch","done_at"}
        self.instructions: Dict[str, Dict[str, Any]] = {}
        self.seq = 0
        self.heap_support: Dict[int, bool] = {}
        self.starts: Dict[int, int] = {}      # osd -> start/restart instructions carried out
        self.pgs_seen: Dict[int, int] = {}    # osd -> PG count last seen while it was up
        self.down_seen: Dict[int, float] = {}  # osd -> when this module first saw it down
        self.windows: List[maint.Window] = []  # maintenance windows (ceph_recovery.maintenance)
        self.outcomes: Deque[maint.Outcome] = deque(maxlen=KEEP_OUTCOMES)
        self.drills: List[drill_core.Drill] = []   # the last KEEP_DRILLS drills (drillcli.py)
        # what a run whose state was lost left on the cluster: {"run_id", "flags", "noup"}
        # (see leftovers_from); the next run takes it over as its own and restores it
        self.leftovers: Optional[Dict[str, Any]] = None

    # --- journal -------------------------------------------------------------------------
    def resize_journal(self, n: int) -> None:
        if n != self.journal.maxlen:
            self.journal = deque(self.journal, maxlen=max(10, int(n)))

    def record(self, now: float, epoch: int, action: Mapping[str, Any],
               result: str) -> Dict[str, Any]:
        entry = {"time": round(now, 3), "epoch": epoch, "action": _bounded(dict(action)),
                 "result": _bounded(result)}
        self.journal.append(entry)
        return entry

    # --- helper instructions ---------------------------------------------------------------
    def open_instructions(self, host: Optional[str] = None,
                          osd: Optional[int] = None) -> List[Dict[str, Any]]:
        return [i for i in self.instructions.values()
                if i.get("done_at") is None and i.get("closed") is None
                and (host is None or i["host"] == host) and (osd is None or i["osd"] == osd)]

    def sent_instructions(self, host: str) -> List[Dict[str, Any]]:
        """The open instructions a helper is handed: the released ones (instruct.py)."""
        return [i for i in self.open_instructions(host=host) if not i.get("prepared")]

    def add_instruction(self, host: str, op: str, osd: int, reason: str, now: float,
                        epoch: int, kill: bool = False, prepared: bool = False
                        ) -> Dict[str, Any]:
        self.seq += 1
        iid = "%s:%d" % (self.progress.run_id or "run", self.seq)
        ins = {"id": iid, "host": host, "op": op, "osd": osd, "reason": _bounded(reason),
               "issued_at": now, "epoch": epoch, "done_at": None}
        if kill:
            ins["signal"] = "KILL"
        if prepared:
            ins["prepared"] = True
        self.instructions[iid] = ins
        return ins

    @staticmethod
    def release(ins: Dict[str, Any]) -> None:
        ins.pop("prepared", None)

    def release_prepared(self) -> List[Dict[str, Any]]:
        """Release every open instruction still prepared (instruct.py: those a new mgr
        loaded, after its first completed tick)."""
        held = [i for i in self.open_instructions() if i.get("prepared")]
        for ins in held:
            self.release(ins)
        return held

    def mark_done(self, host: str, ids: Tuple[str, ...], now: float) -> List[Dict[str, Any]]:
        newly = []
        for iid in ids:
            ins = self.instructions.get(iid)
            # a late `done` for an expired or withdrawn instruction still counts: it happened
            if ins is not None and ins["host"] == host and ins.get("done_at") is None:
                ins["done_at"] = now
                self.starts[ins["osd"]] = self.starts.get(ins["osd"], 0) + 1
                newly.append(ins)
        return newly

    def close(self, ins: Dict[str, Any], how: str, now: float, why: str) -> None:
        """End an open instruction without a `done`: how = failed | expired | withdrawn."""
        ins["closed"], ins["closed_at"], ins["error"] = how, now, _bounded(why)

    def mark_failed(self, host: str, failed: List[Dict[str, str]],
                    now: float) -> List[Dict[str, Any]]:
        """The helper's `failed` list: each open instruction of this host it names is closed."""
        newly = []
        for f in failed:
            ins = self.instructions.get(f["id"])
            if ins is not None and ins["host"] == host and ins in self.open_instructions():
                self.close(ins, "failed", now, f.get("error", ""))
                newly.append(ins)
        return newly

    def expire(self, now: float, ttl: float) -> List[Dict[str, Any]]:
        """Open instructions issued more than `ttl` seconds ago are closed as expired."""
        old = [i for i in self.open_instructions() if now - float(i["issued_at"]) > ttl]
        for ins in old:
            self.close(ins, "expired", now, "no done or failed from the helper within %.0fs"
                       % ttl)
        return old

    def withdraw(self, op: str, now: float, why: str,
                 keep: FrozenSet[int] = frozenset()) -> List[Dict[str, Any]]:
        """Close the open `op` instructions, but those for the OSDs in `keep`."""
        gone = [i for i in self.open_instructions() if i["op"] == op and i["osd"] not in keep]
        for ins in gone:
            self.close(ins, "withdrawn", now, why)
        return gone

    def reseed(self, now: float) -> None:
        """Instruction ids never repeat, even when this state is older than the last one
        written (a lost write before a failover): the counter restarts at least at the
        current time in milliseconds, beyond any id issued before."""
        self.seq = max(self.seq, int(now * 1000))

    def prune_instructions(self, keep: int = KEEP_DONE) -> None:
        done = sorted((i for i in self.instructions.values()
                       if i.get("done_at") is not None or i.get("closed") is not None),
                      key=lambda i: i.get("done_at") or i.get("closed_at") or 0)
        for ins in done[:max(0, len(done) - keep)]:
            del self.instructions[ins["id"]]

    # --- (de)serialisation -------------------------------------------------------------------
    def dumps(self) -> str:
        return json.dumps({
            "schema": SCHEMA_VERSION, "intent": intent_to_dict(self.intent),
            "progress": progress_to_dict(self.progress), "journal": list(self.journal),
            "instructions": self.instructions, "seq": self.seq,
            "heap_support": {str(k): v for k, v in self.heap_support.items()},
            "starts": {str(k): v for k, v in self.starts.items()},
            "pgs_seen": {str(k): v for k, v in self.pgs_seen.items()},
            "down_seen": {str(k): v for k, v in self.down_seen.items()},
            "windows": [maint.window_to_dict(w) for w in self.windows],
            "outcomes": [maint.outcome_to_dict(o) for o in self.outcomes],
            "drills": [drill_core.drill_to_dict(x) for x in self.drills],
            "leftovers": self.leftovers}, sort_keys=True)

    @classmethod
    def loads(cls, text: str, journal_len: int = 200) -> "RunState":
        """The state stored by dumps(); ValueError when anything in it is malformed (a field
        of the wrong type included: the module then reports the state unreadable, and no
        conversion error may escape to serve())."""
        d = statecheck.decode(text)
        if d.get("schema") != SCHEMA_VERSION:
            raise ValueError("unsupported run state schema %r (expected %d)"
                             % (d.get("schema"), SCHEMA_VERSION))
        try:
            return cls._from_doc(d, journal_len)
        except (TypeError, KeyError, AttributeError, OverflowError, RecursionError) as e:
            raise ValueError("run state malformed: %s: %s" % (type(e).__name__, e))

    @classmethod
    def _from_doc(cls, d: Dict[str, Any], journal_len: int) -> "RunState":
        st = cls(journal_len)
        st.intent = intent_from_dict(d.get("intent", {}))
        st.progress = progress_from_dict(d.get("progress", {}))
        st.journal.extend(d.get("journal", []))
        st.instructions = dict(d.get("instructions", {}))
        st.seq = int(d.get("seq", 0))
        st.heap_support = {int(k): bool(v) for k, v in d.get("heap_support", {}).items()}
        st.starts = {int(k): int(v) for k, v in d.get("starts", {}).items()}
        st.pgs_seen = {int(k): int(v) for k, v in d.get("pgs_seen", {}).items()}
        st.down_seen = {int(k): float(v) for k, v in d.get("down_seen", {}).items()}
        st.windows = [maint.window_from_dict(w) for w in d.get("windows", [])]
        st.outcomes.extend(maint.outcome_from_dict(o) for o in d.get("outcomes", []))
        st.drills = [drill_core.drill_from_dict(x) for x in d.get("drills", [])]
        st.leftovers = d.get("leftovers")
        return st

    def take_over_leftovers(self, run_id: str, cluster_flags: FrozenSet[str], now: float,
                            epoch: int) -> Optional[Progress]:
        """The progress a new run starts from when a lost run left flags and per-OSD noup:
        that lost run, still going on, so the new run takes it over (the core keeps a taken
        over run's saved flags and held OSDs) and restores what it set. Journaled, and the
        leftovers are then the new run's. Without leftovers: None (a fresh run, whose saved
        flags are the cluster's flags at its start)."""
        left = self.leftovers
        if not left or not (left.get("flags") or left.get("noup")):
            return None
        flags = sorted(left.get("flags") or ())
        noup = sorted(int(x) for x in left.get("noup") or ())
        lost = str(left.get("run_id") or "lost")
        self.record(now, epoch, {"kind": "leftovers_taken_over", "flags": flags, "noup": noup,
                                 "reason": "run %s takes over what lost run %s set: flags %s, "
                                 "noup on %s" % (run_id, lost, flags, noup)}, "accepted")
        self.leftovers = None
        return Progress(run_id=lost, phase=PHASE_RUNNING, started_at=now,
                        saved_flags=frozenset(cluster_flags) - frozenset(flags),
                        held_osds=frozenset(noup))


ACTIVE = (PHASE_RUNNING, PHASE_PAUSED, PHASE_ABORTING)
MAX_MARK_OSDS = 4096      # held OSD ids kept in the marks (the entry stays below ~40 KB)


def marks_of(text: str) -> Optional[str]:
    """The small record kept beside the state (its own config-key entry): which run, its
    phase, the cluster flags saved at its start, the OSDs it holds by per-OSD noup, any
    leftovers it has not taken over yet, and the maintenance windows (their group noup and
    noout stay on the cluster). Enough to tell what a run set and which buckets are in
    maintenance when the state itself is lost or corrupt. None for a text that is not a run
    state."""
    try:
        d = json.loads(text)
        p = d["progress"]
    except (ValueError, TypeError, KeyError):
        return None
    return json.dumps({"run_id": p.get("run_id"), "phase": p.get("phase"),
                       "saved_flags": p.get("saved_flags"),
                       "held_osds": sorted(p.get("held_osds") or ())[:MAX_MARK_OSDS],
                       "leftovers": d.get("leftovers"),
                       "windows": d.get("windows") or []}, sort_keys=True)


def windows_from(marks: Optional[str]) -> List[maint.Window]:
    """The maintenance windows the marks name (malformed ones left out: the state is
    unreadable already, its health check says what to check)."""
    try:
        m = json.loads(marks) if marks else None
    except (ValueError, TypeError, RecursionError):
        return []
    ws = m.get("windows") if isinstance(m, dict) else None
    out = []
    for w in ws if isinstance(ws, list) else ():
        try:
            if statecheck.FIELDS["windows"]([w]):
                out.append(maint.window_from_dict(w))
        except (ValueError, TypeError, AttributeError, OverflowError):
            continue
    return out


def leftovers_from(marks: Optional[str]) -> Optional[Dict[str, Any]]:
    """What the run described by `marks` may have left on the cluster: the RUN_CLUSTER_FLAGS
    it set (not among its saved flags) and its per-OSD noup, when it was active; plus the
    leftovers it carried itself. None when nothing is known to be left."""
    try:
        m = json.loads(marks) if marks else None
    except (ValueError, TypeError, RecursionError):
        return None
    if not isinstance(m, dict):
        return None
    old = m.get("leftovers") if statecheck.FIELDS["leftovers"](m.get("leftovers")) else None
    old = old or {}
    flags, noup = set(old.get("flags") or ()), set(old.get("noup") or ())
    saved, held = m.get("saved_flags"), m.get("held_osds")
    if m.get("phase") in ACTIVE and isinstance(saved, list):
        flags |= set(RUN_CLUSTER_FLAGS) - set(x for x in saved if isinstance(x, str))
        noup |= set(int(x) for x in (held if isinstance(held, list) else ())
                    if statecheck.FIELDS["seq"](x))
    if not flags and not noup:
        return None
    rid = m.get("run_id") if isinstance(m.get("run_id"), str) else None
    return {"run_id": rid or old.get("run_id"), "flags": sorted(flags),
            "noup": sorted(noup)}
