"""The memory stage: a host over its budget, and room made for a start or a boot.

Rules:
- a host over its budget raises RECOVERY_BUDGET_EXCEEDED; in a running run the over_budget
  policy answers it (heap release, ok-to-stop query, restart), else the brake (brake.py);
- a restart goes out only with ok-to-stop True in this snapshot, no PG taken below min_size
  (StopCheck.stop_refusal), out of its cooldown and within the host's slots (_restart_allowed);
- the same policy makes room for a host's next start that does not fit (admission._no_fit)
  and for an OSD gate 2 keeps in preboot (room_for_boots), where what restarts could free
  (room) covers the deficit.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

from .actions import Action, HeapRelease, QueryOkToStop, RestartOsd, Wait
from .model import PROC_STOPPED
from .decision import Decision, fmt_bytes
from .view import MIN_RESTART_GAIN, in_restart_cooldown, restart_gain, still_peering
from .brake import brake, memory_hosts, watch
from .inflight import boot_growth
from .staging import boot_deficit
from .reserve import flight, plain_slots


def memory_stage(t: Decision) -> None:
    """Find hosts over budget; in a running run ask the over_budget policy what to do."""
    v = t.ctx.view
    for h in v.scope_hosts():
        hm = v.hostmem.get(h)
        if hm is None:
            continue
        budget = t.budget(h)
        if hm.mem_used <= budget:
            continue
        t.over.add(h)
        t.health("RECOVERY_BUDGET_EXCEEDED", "%s: used %s > budget %s" % (
            h, fmt_bytes(hm.mem_used), fmt_bytes(budget)))
        if t.ctx.state in ("new", "running", "paused") and not respond(t, h, "over budget") \
                and t.ctx.state != "paused":
            brake(t, h)
    if t.ctx.state in ("new", "running"):
        watch(t)


def respond(t: Decision, host: str, why: str, lends: Optional[int] = None) -> bool:
    """One over_budget policy decision for `host`; validate and record it. True if acted.
    `lends`: the OSD kept in preboot the decision makes room for; a restart may share its
    slot (_restart_allowed), and names it (RestartOsd.room_for) where the slots are full."""
    v = t.ctx.view
    hm = v.hostmem[host]
    act = t.ctx.policies.over_budget(hm, tuple(v.by_host.get(host, ())), _guarded(t, host),
                            t.progress(), t.ctx.intent, t.ctx.now)
    if act is None:
        t.reasons.append("%s %s: nothing to release or restart" % (host, why))
        return False
    if isinstance(act, Wait):
        t.emit("memory", Wait(host=host, reason="%s %s: %s" % (host, why, act.reason)))
        return True
    if isinstance(act, HeapRelease):
        t.heap_released[act.osd] = t.ctx.now
        t.heap_rss[act.osd] = v.by_id[act.osd].rss_bytes
    elif isinstance(act, RestartOsd):
        if not _restart_allowed(t, host, act, lends):
            return False
        if lends is not None and len(flight(t).get(host, ())) >= plain_slots(t):
            act = replace(act, room_for=lends, reason="%s; in the slot of osd.%d, kept in "
                          "preboot until this restart is done" % (act.reason, lends))
        if t.new_restarts:     # ok-to-stop cleared each OSD alone, not the two together
            t.emit("memory", Wait(host=host, reason="%s %s: restart of osd.%d waits for the "
                                  "next snapshot's ok-to-stop: osd.%s restarts in this tick"
                                  % (host, why, act.osd, min(t.new_restarts))))
            return True
        t.restarted[act.osd] = t.ctx.now
        t.restart_rss[act.osd] = v.by_id[act.osd].rss_bytes
        t.fresh_rss.pop(act.osd, None)
        t.new_restarts.add(act.osd)
    elif not isinstance(act, QueryOkToStop):
        t.reasons.append("%s: ignored %s from over_budget policy" % (host, act.kind))
        return False
    t.emit("memory", act)
    return True


def _guarded(t: Decision, host: str):
    """The snapshot the over_budget policy sees: where PG membership says a stop of an up OSD
    on `host` would take a PG below min_size, its ok-to-stop answer reads False, so the
    policy passes over it to the next restartable OSD instead of asking for it."""
    if t.ctx.snapshot.pg_map is None:
        return t.ctx.snapshot
    refused = {o.id: False for o in t.ctx.view.by_host.get(host, ()) if t.stops.stop_breaks(o.id)}
    if not refused:
        return t.ctx.snapshot
    answers = dict(t.ctx.snapshot.ok_to_stop)
    answers.update(refused)
    return replace(t.ctx.snapshot, ok_to_stop=answers)


def _restart_allowed(t: Decision, host: str, act: RestartOsd,
                     lends: Optional[int] = None) -> bool:
    """Never restart without ok-to-stop True in this snapshot, within cooldown, or off-slot.
    An OSD kept in preboot (`lends`) lends its slot to the restart that makes room for its
    boot: it grows no further while held, and at concurrency 1 it would otherwise hold the
    only slot until the run stalls. It boots only once that restart is done (inflight.boots,
    invariant I2)."""
    osd = act.osd
    if t.ctx.state == "paused":
        t.reasons.append("%s: restart of osd.%d deferred: paused" % (host, osd))
        return False
    if t.ctx.snapshot.ok_to_stop.get(osd) is not True:
        t.health("RECOVERY_RESTART_REFUSED",
                 "osd.%d on %s: no ok-to-stop clearance in this snapshot" % (osd, host))
        return False
    why = t.stops.stop_refusal(osd)
    if why:
        t.health("RECOVERY_RESTART_REFUSED", "osd.%d on %s: %s" % (osd, host, why))
        return False
    if in_restart_cooldown(osd, t.progress(), t.ctx.intent, t.ctx.now):
        t.health("RECOVERY_RESTART_REFUSED", "osd.%d on %s: restarted %.0fs ago (cooldown %.0fs)"
                 % (osd, host, t.ctx.now - t.restarted[osd], t.ctx.intent.restart_cooldown_s))
        return False
    busy = len([x for x in flight(t).get(host, ()) if x != lends])
    if busy >= plain_slots(t):
        t.reasons.append("%s: restart of osd.%d waits for a free slot (%d in flight)"
                         % (host, osd, busy))
        return False
    return True


def make_room(t: Decision, host: str, why: str, deficit: int, free: int,
              lends: Optional[int] = None) -> Optional[Action]:
    """Where what restarts on `host` could free (`free`, room()) covers `deficit`, one
    over_budget decision (respond, `lends` as there) to make room; its action, or None. A
    restart made for room is marked (Decision.room_restarts): a run that ends in the same tick
    takes it back (ending.py)."""
    if deficit > free or not respond(t, host, why, lends):
        return None
    act = t.stage["memory"][-1]
    if isinstance(act, RestartOsd):
        t.room_restarts.add(act.osd)
    return act


def room_for_boots(t: Decision) -> None:
    """An OSD gate 2 keeps in preboot (inflight._boot_fits: its growth to its peak does not
    fit) waits for memory as a next start does: the over_budget policy makes room for it
    (make_room), one action per host per tick and none on a host whose memory stage already
    acted. Otherwise it would hold its grant in preboot until recovery freed the memory. A
    staged OSD kept in preboot (staging.room_to_peak) needs its deficit under that rule."""
    acted = set(memory_hosts(t))
    for osd_id in sorted(t.kept_preboot):
        o = t.ctx.view.by_id.get(osd_id)
        hm = t.ctx.view.hostmem.get(o.host) if o is not None else None
        if hm is None or o.host in acted:
            continue
        deficit = boot_deficit(t, o)[0] if osd_id in t.staged else \
            hm.mem_used + boot_growth(t, o)[1] - t.budget(o.host)
        if deficit > 0 and make_room(t, o.host, "boot of osd.%d" % osd_id, deficit,
                                     room(t, o.host), lends=osd_id) is not None:
            acted.add(o.host)


def room(t: Decision, host: str) -> int:
    """What restarts on `host` could free, one after the other: the sum of the expected gains
    (view.restart_gain) of its up, running OSDs that this run does not have in flight or
    still peering (view.still_peering: the over_budget policies do not restart those), that
    ok-to-stop did not refuse in this snapshot and that are out of their restart cooldown.
    An OSD whose stop PG membership refuses (StopCheck.stop_breaks) still counts: the room is
    an estimate that decides whether to try, and the over_budget policy then restarts the
    next OSD that may stop (leaving them out, 1,200 OSDs x 48 GiB: all PGs active 2,830 s
    instead of 2,275 s).
    A deficit larger than one OSD's gain is closed by several restarts, one per tick/slot."""
    progress = t.progress()
    total = 0
    for x in t.ctx.view.by_host.get(host, ()):
        if not x.up or x.process == PROC_STOPPED or x.id in t.granted or \
                still_peering(x, progress) or t.ctx.snapshot.ok_to_stop.get(x.id) is False:
            continue
        if in_restart_cooldown(x.id, progress, t.ctx.intent, t.ctx.now):
            continue
        gain = restart_gain(x, progress)
        if gain >= MIN_RESTART_GAIN:
            total += gain
    return total
