"""check_invariants(): the invariants of plan() (see plan.py's docstring), checked on a result.

Used by the unit/property tests and by the simulator after every tick. Returns a list of
violations (empty = all hold); it never raises on a well-formed result.
"""
from __future__ import annotations

import re
from typing import Dict, List, Optional

from .actions import (AllowBoot, Done, GrantStart, HeapRelease, HoldBucket, HoldOsd, MarkOut,
                      StopOsd, QueryOkToStop, ReleaseBucket, RestartOsd, SetConfig, SetFlag,
                      UnsetFlag, Wait)
from .model import (MODE_CONTROLLED, PHASE_ABORTED, PHASE_DONE, PHASE_PAUSED, PHASE_RUNNING,
                    PROC_STOPPED, RUN_CLUSTER_FLAGS, Intent, Progress, Snapshot, budget_now)
from .view import View, begin_run, in_restart_cooldown, osd_path, starts_run
from .predict import PROBE_LOAD_FRACTION
from .staging import PEERING_PER_HOST, peering_on
from .dups import why_suspect


def check_invariants(snapshot: Snapshot, intent: Intent, progress: Progress, result,
                     policies=None, now: Optional[float] = None) -> List[str]:
    """Violations of I1..I11 by `result` = plan(snapshot, intent, progress, policies, now)."""
    actions, newp, health, summary = result
    if snapshot.epoch < progress.epoch:
        errs = []
        if len(actions) != 1 or not isinstance(actions[0], Wait):
            errs.append("I1: stale epoch %d < %d must give exactly one Wait, got %s"
                        % (snapshot.epoch, progress.epoch, [a.kind for a in actions]))
        if newp != progress:
            errs.append("I1: stale epoch must leave progress unchanged")
        return errs
    if now is None:
        now = float(summary.get("time", 0.0))
    errs = [] if newp.epoch == snapshot.epoch else [
        "I1: new progress epoch %d != snapshot epoch %d" % (newp.epoch, snapshot.epoch)]
    base = begin_run(intent, progress, snapshot, now) if starts_run(intent, progress) \
        else progress
    old = View(snapshot, intent, base, now)
    new = View(snapshot, intent, newp, now)
    errs += _in_flight(actions, intent, newp, new)
    errs += _grants(actions, intent, base, old, summary, policies, newp)
    errs += _restarts(actions, snapshot, intent, base, now)
    errs += _prefix(actions, intent, newp, old)
    errs += _modes(actions, intent, progress, newp,
                   {o.id: o.up for o in snapshot.osds})
    errs += _ends(actions, newp, new, health)
    errs += _marked_out(actions, intent, snapshot)
    errs += _settings(actions, progress, newp, health)
    errs += _staged_boots(actions, base, newp, old)
    errs += _alone(actions, base, newp, new)
    return errs


def _alone(actions, progress, newp, new: View) -> List[str]:
    """I11: a start granted this tick leaves no OSD that may load inflated PG log dups
    (dups.why_suspect) in flight beside another on its host (dups.py)."""
    hosts = {a.host for a in actions if isinstance(a, GrantStart)
             and a.osd not in progress.osd_map("granted")}
    flight = new.in_flight(newp.osd_map("granted"))
    errs = []
    for h in sorted(hosts):
        ids = flight.get(h, [])
        sus = [x for x in ids if why_suspect(new.by_id[x]) is not None]
        if sus and len(ids) > 1:
            errs.append("I11: osd.%s may load inflated PG log dups, in flight on %s beside "
                        "osd.%s" % (",".join(map(str, sus)), h, ",".join(
                            str(x) for x in ids if x not in sus) or ",".join(map(str, sus))))
    return errs


def _staged_boots(actions, progress, newp, old: View) -> List[str]:
    """I10: a staged OSD's first AllowBoot only while fewer than PEERING_PER_HOST OSDs let
    boot on its host are still peering: those let boot before this tick and not finished in
    it, and those let boot earlier in this list."""
    errs, booted = [], set(progress.osd_map("booting")) & set(newp.osd_map("booting"))
    for a in actions:
        if not isinstance(a, AllowBoot) or a.osd in booted:
            continue
        o = old.by_id.get(a.osd)
        if a.osd in progress.osd_map("staged") and o is not None:
            peering = peering_on(old.by_id, booted, progress.osd_map("granted"), o.host)
            if len(peering) >= PEERING_PER_HOST:
                errs.append("I10: staged osd.%d let boot while osd.%s peer on %s" % (
                    a.osd, ",".join(map(str, peering)), o.host))
        booted.add(a.osd)
    return errs


def _settings(actions, progress, newp, health) -> List[str]:
    """I9: every SetConfig is recorded write-ahead (its "who name" in the new
    saved_config); in the tick that ends the run (Done, or the abort), every setting still
    saved is named by RECOVERY_SETTING_KEPT (all others were restored)."""
    errs = ["I9: %s %s set without its value before in saved_config" % (a.who, a.name)
            for a in actions if isinstance(a, SetConfig)
            and "%s %s" % (a.who, a.name) not in newp.saved_config]
    ends = any(isinstance(a, Done) for a in actions) or (
        newp.phase == PHASE_ABORTED and progress.phase != PHASE_ABORTED)
    if ends and newp.saved_config:
        kept = " ".join(line for h in health if h.code == "RECOVERY_SETTING_KEPT"
                        for line in h.detail)
        errs += ["I9: %s left changed at the end and not named by RECOVERY_SETTING_KEPT" % k
                 for k in sorted(newp.saved_config)
                 if not re.search(r"(^|[\s,])%s\b" % re.escape(k.split(" ")[0]), kept)]
    return errs


def _marked_out(actions, intent, snapshot) -> List[str]:
    """I8: an OSD is marked out only by --leave-out, only when down, and only in the tick
    that ends the run (Done)."""
    outs = [a for a in actions if isinstance(a, MarkOut)]
    if not outs:
        return []
    errs = [] if intent.leave_out else ["I8: MarkOut without --leave-out"]
    if not any(isinstance(a, Done) for a in actions):
        errs.append("I8: MarkOut outside the tick that ends the run")
    up = {o.id for o in snapshot.osds if o.up}
    return errs + ["I8: osd.%d marked out while up" % a.osd for a in outs if a.osd in up]


def _in_flight(actions, intent, newp, new: View) -> List[str]:
    """I2, where a restart made for the boot of an OSD kept in preboot (RestartOsd.room_for:
    granted on its host, still down, not let boot in this tick) shares that OSD's slot."""
    touched = {a.host for a in actions if isinstance(a, (GrantStart, RestartOsd))}
    flight = new.in_flight(newp.osd_map("granted"))
    if not intent.concurrency:
        return []
    booted = {a.osd for a in actions if isinstance(a, AllowBoot)}
    lent: Dict[str, int] = {}
    for a in actions:
        o = new.by_id.get(a.room_for) if isinstance(a, RestartOsd) and \
            a.room_for is not None else None
        if o is not None and o.host == a.host and not o.up and o.id not in booted and \
                o.id in newp.osd_map("granted"):
            lent[a.host] = lent.get(a.host, 0) + 1
    return ["I2: host %s has %d in flight > concurrency %d after granting/restarting"
            % (h, len(flight.get(h, ())), intent.concurrency) for h in sorted(touched)
            if len(flight.get(h, ())) - lent.get(h, 0) > intent.concurrency]


def _grants(actions, intent, progress, old: View, summary, policies, newp) -> List[str]:
    errs: List[str] = []
    need: Dict[str, int] = {}
    probes: Dict[str, int] = {}
    for a in actions:
        if not isinstance(a, GrantStart):
            continue
        o = old.by_id.get(a.osd)
        if o is None or o.up or o.id not in old.in_scope:
            errs.append("I3: osd.%d granted but is not a down in-scope candidate" % a.osd)
            continue
        if o.host != a.host:
            errs.append("I3: osd.%d granted on %s, lives on %s" % (a.osd, a.host, o.host))
        if o.id in old.op_held:
            errs.append("I3: osd.%d granted under held bucket %s" % (a.osd, old.op_held[o.id]))
        if old.helper_missing(o.host) or old.findings_for(o.host):
            errs.append("I3: osd.%d granted on %s without a fresh helper or with a network "
                        "finding" % (a.osd, o.host))
            continue
        if o.id in progress.osd_map("granted"):
            continue            # a re-grant: admitted (and reserved) when first granted
        # a staged start is admitted on its load (at least PROBE_LOAD_FRACTION of its peak)
        share = PROBE_LOAD_FRACTION if a.osd in newp.osd_map("staged") else 1.0
        need[o.host] = need.get(o.host, 0) + max(0, int(a.predicted_bytes * share) - o.rss_bytes)
        probes[o.host] = probes.get(o.host, 0) + 1
        if a.predicted_bytes <= 0:
            errs.append("I3: osd.%d granted with predicted_bytes %d" % (a.osd, a.predicted_bytes))
    for h, n in sorted(need.items()):
        hm = old.hostmem[h]
        if policies is not None:
            budget = policies.budget(hm, budget_now(intent.budget, newp.budget_state))
        else:
            budget = (summary.get("hosts", {}).get(h) or {}).get("budget")
        if budget is not None and probes[h] == 1 and _probe(old, progress, newp, h) and \
                hm.mem_used + n * PROBE_LOAD_FRACTION <= budget:
            continue        # a probe: only its load must fit (admission._probe_fits)
        if budget is None or hm.mem_used + n > budget:
            errs.append("I3: grants on %s need %d + used %d > budget %s"
                        % (h, n, hm.mem_used, budget))
    return errs


def _probe(old: View, progress, newp, host: str) -> bool:
    """Nothing of this run in flight or settling on `host` (where a probe start may go). A
    grant this tick ended (a failed start given up, a finished one) is not in flight."""
    kept = {o: t for o, t in progress.osd_map("granted").items() if o in newp.osd_map("granted")}
    return not old.in_flight(kept).get(host) and \
        not any(old.host_of(x) == host for x in progress.osd_map("settling")) and \
        not any(o.up or o.process != PROC_STOPPED for o in old.by_host.get(host, ()))


def _down(snapshot, osd_id: int) -> bool:
    """A down OSD serves no PG: stopping its process (a withdrawn start) needs no ok-to-stop."""
    o = snapshot.osd(osd_id)
    return o is not None and not o.up


def _restarts(actions, snapshot, intent, progress, now) -> List[str]:
    errs = []
    if sum(isinstance(a, RestartOsd) for a in actions) > 1:
        errs.append("I4: more than one restart in one tick (ok-to-stop answers are per OSD)")
    for a in actions:
        if isinstance(a, StopOsd) and snapshot.ok_to_stop.get(a.osd) is not True and \
                not _down(snapshot, a.osd):
            errs.append("I4: stop of up osd.%d without ok-to-stop True" % a.osd)
        if isinstance(a, RestartOsd):
            if snapshot.ok_to_stop.get(a.osd) is not True:
                errs.append("I4: restart of osd.%d without ok-to-stop True" % a.osd)
            last = progress.osd_map("restarted").get(a.osd)
            o = snapshot.osd(a.osd)
            lost = o is not None and o.process_started_at is not None and \
                o.process_started_at < (last or 0.0)      # that restart never happened
            if in_restart_cooldown(a.osd, progress, intent, now) and not lost:
                errs.append("I4: osd.%d restarted again %.0fs after its last restart "
                            "(cooldown %.0fs)" % (a.osd, now - last, intent.restart_cooldown_s))
    return errs


def _prefix(actions, intent, newp, old: View) -> List[str]:
    errs: List[str] = []
    held_now = {o.id for o in old.snapshot.osds if "noup" in o.flags}
    released = False
    active = newp.phase in (PHASE_RUNNING, PHASE_PAUSED)
    for k, a in enumerate(actions):
        if isinstance(a, (SetFlag, HoldBucket, HoldOsd)) and released:
            errs.append("I5: %s at #%d comes after a ReleaseBucket" % (a.kind, k))
        if isinstance(a, HoldOsd):
            held_now.add(a.osd)
        elif isinstance(a, ReleaseBucket):
            released = True
            if a.bucket in intent.holds:
                errs.append("I5: operator-held bucket %s released" % a.bucket)
            if active:
                errs += _unheld_under(a.bucket, held_now, newp, old)
        elif isinstance(a, GrantStart) and a.osd not in held_now:
            errs.append("I5: osd.%d granted without a per-OSD noup before it" % a.osd)
    return errs


def _unheld_under(bucket, held_now, newp, old: View) -> List[str]:
    bad = [o.id for o in old.candidates
           if bucket in osd_path(o) and o.id not in held_now
           and o.id not in newp.osd_map("booting")]
    return ["I5: release of %s leaves down osd(s) %s without a per-OSD hold" % (bucket, bad)] \
        if bad else []


def _modes(actions, intent, progress, newp, up) -> List[str]:
    errs: List[str] = []
    kinds = [a.kind for a in actions]
    running = intent.mode == MODE_CONTROLLED
    for a in actions:
        if isinstance(a, (GrantStart, AllowBoot, RestartOsd)) and not running:
            errs.append("I6: %s osd.%d while mode is %s" % (a.kind, a.osd, intent.mode))
        if isinstance(a, AllowBoot) and a.osd not in newp.osd_map("granted") and not up.get(a.osd):
            errs.append("I6: AllowBoot osd.%d that this run did not grant" % a.osd)
        if isinstance(a, UnsetFlag):
            saved = newp.saved_flags or frozenset()
            if a.flag not in RUN_CLUSTER_FLAGS or a.flag in saved:
                errs.append("I6: UnsetFlag %s that the run did not set" % a.flag)
            if "done" not in kinds and newp.phase not in (PHASE_ABORTED, PHASE_DONE):
                errs.append("I6: UnsetFlag %s outside Done/abort" % a.flag)
    if "done" in kinds and not isinstance(actions[-1], Done):
        errs.append("I6: Done is not the last action")
    return errs


def _ends(actions, newp, new: View, health) -> List[str]:
    """Per-tick form of I7: a running run with nothing in flight and nothing granted this tick
    that still has candidates must say why in a health check."""
    if newp.phase != PHASE_RUNNING or newp.osd_map("granted") or new.restarting or \
            newp.osd_map("settling"):
        return []
    if any(isinstance(a, (GrantStart, RestartOsd, QueryOkToStop, HeapRelease, AllowBoot))
           or (isinstance(a, Wait) and a.host) for a in actions):
        return []       # making progress, or a policy's deliberate wait on one host
    if new.candidates and not health:
        return ["I7: %d candidate(s) left, nothing in flight, and no health check says why"
                % len(new.candidates)]
    return []
