"""The memory stage: a host over its budget, and room made for a start or a boot.

Rules:
- a host over its budget raises RECOVERY_BUDGET_EXCEEDED; in a running run the over_budget
  policy answers it (heap release, ok-to-stop query, restart), else the brake (brake.py);
- a restart goes out only with ok-to-stop True in this snapshot, no PG taken below min_size
  (StopCheck.stop_refusal), out of its cooldown and within the host's slots (_restart_refusal);
- the same policy makes room for a host's next start that does not fit (start_room)
  and for an OSD gate 2 keeps in preboot (room_for_boots), where what restarts could free
  (room) covers the deficit.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import AbstractSet, Any, FrozenSet, Mapping, Optional, Tuple

from .actions import Action, HeapRelease, QueryOkToStop, RestartOsd, Wait
from .context import Context
from .model import PROC_STOPPED, Columns, Progress, Snapshot
from .decision import Decision, fmt_bytes
from .stageout import StageOut, join, put
from .stopcheck import StopCheck
from .view import MIN_RESTART_GAIN, in_restart_cooldown, restart_gain, still_peering
from .brake import brake, memory_hosts, watch
from .learning import lifecycle
from .inflight import boot_growth
from .staging import boot_deficit, preboot
from .reserve import flight, plain_slots
from . import shrink


@dataclass(frozen=True)
class Ask:
    """What one over_budget decision reads: the call's Context, the run's columns and its
    progress as they stand before it, this tick's restarts so far, the stop check and the
    host's plain slots (reserve.plain_slots)."""
    ctx: Context
    cols: Columns
    progress: Progress
    new_restarts: AbstractSet[int]
    stops: StopCheck
    plain_slots: int


def ask(t: Decision, stops: StopCheck) -> Ask:
    """The values the next over_budget decision reads, taken from the decision so far."""
    return Ask(t.ctx, t.cols, t.progress(), frozenset(t.new_restarts), stops,
               plain_slots(t.ctx, t.budget_state, t.predictor))


def memory_stage(t: Decision, stops: StopCheck) -> FrozenSet[str]:
    """Find hosts over budget; in a running run ask the over_budget policy what to do. The
    hosts over budget (no start is granted or let boot there in this tick)."""
    v = t.ctx.view
    over = set()
    for h in v.scope_hosts():
        hm = v.hostmem.get(h)
        if hm is None:
            continue
        budget = t.budget(h)
        if hm.mem_used <= budget:
            continue
        over.add(h)
        t.health("RECOVERY_BUDGET_EXCEEDED", "%s: used %s > budget %s" % (
            h, fmt_bytes(hm.mem_used), fmt_bytes(budget)))
        if t.ctx.state in ("new", "running", "paused"):
            acted, out = respond(ask(t, stops), h, "over budget")
            t.apply(out)
            if not acted and t.ctx.state != "paused":
                t.apply(brake(lifecycle(t), t.budget, t.new_restarts, t.stage["memory"], h,
                              stops))
    if t.ctx.state in ("new", "running"):
        t.apply(watch(t.ctx, t.budget, t.cols, t.new_restarts))
    return frozenset(over)


def respond(a: Ask, host: str, why: str,
            lends: Optional[int] = None) -> Tuple[bool, StageOut]:
    """One over_budget policy decision for `host`, validated: whether it acted, and what it
    emits and records (a heap release or a restart of the OSD the policy picked). `lends`:
    the OSD kept in preboot the decision makes room for; a restart may share its slot
    (_restart_refusal), and names it (RestartOsd.room_for) where the slots are full."""
    ctx, cols = a.ctx, a.cols
    hm = ctx.view.hostmem[host]
    act = ctx.policies.over_budget(hm, tuple(ctx.view.by_host.get(host, ())),
                                   _guarded(ctx, a.stops, host), a.progress, ctx.intent,
                                   ctx.now)
    if act is None:
        return False, StageOut(reasons=("%s %s: nothing to release or restart" % (host, why),))
    if isinstance(act, Wait):
        return True, StageOut(actions=(("memory", Wait(host=host, reason="%s %s: %s" % (
            host, why, act.reason))),))
    records: Tuple[Tuple[str, Any], ...] = ()
    if isinstance(act, HeapRelease):
        rss = ctx.view.by_id[act.osd].rss_bytes
        records = (("heap_released", put(cols["heap_released"], act.osd, ctx.now)),
                   ("heap_rss", put(cols["heap_rss"], act.osd, rss)))
    elif isinstance(act, RestartOsd):
        refused = _restart_refusal(a, host, act, lends)
        if refused is not None:
            return False, refused
        if lends is not None and len(flight(ctx, cols["granted"], a.new_restarts).get(
                host, ())) >= a.plain_slots:
            act = replace(act, room_for=lends, reason="%s; in the slot of osd.%d, kept in "
                          "preboot until this restart is done" % (act.reason, lends))
        if a.new_restarts:     # ok-to-stop cleared each OSD alone, not the two together
            return True, StageOut(actions=(("memory", Wait(host=host, reason=(
                "%s %s: restart of osd.%d waits for the next snapshot's ok-to-stop: osd.%s "
                "restarts in this tick" % (host, why, act.osd, min(a.new_restarts))))),))
        rss = ctx.view.by_id[act.osd].rss_bytes
        records = (("restarted", put(cols["restarted"], act.osd, ctx.now)),
                   ("restart_rss", put(cols["restart_rss"], act.osd, rss)),
                   ("fresh_rss", {k: x for k, x in cols["fresh_rss"].items() if k != act.osd}),
                   ("new_restarts", set(a.new_restarts) | {act.osd}))
    elif not isinstance(act, QueryOkToStop):
        return False, StageOut(reasons=("%s: ignored %s from over_budget policy" % (
            host, act.kind),))
    return True, StageOut(actions=(("memory", act),), records=records)


def _guarded(ctx: Context, stops: StopCheck, host: str) -> Snapshot:
    """The snapshot the over_budget policy sees: where PG membership says a stop of an up OSD
    on `host` would take a PG below min_size, its ok-to-stop answer reads False, so the
    policy passes over it to the next restartable OSD instead of asking for it."""
    if ctx.snapshot.pg_map is None:
        return ctx.snapshot
    refused = {o.id: False for o in ctx.view.by_host.get(host, ()) if stops.stop_breaks(o.id)}
    if not refused:
        return ctx.snapshot
    answers = dict(ctx.snapshot.ok_to_stop)
    answers.update(refused)
    return replace(ctx.snapshot, ok_to_stop=answers)


def _restart_refusal(a: Ask, host: str, act: RestartOsd,
                     lends: Optional[int] = None) -> Optional[StageOut]:
    """Why this restart may not go out (its health line or reason), None where it may. Never
    without ok-to-stop True in this snapshot, within cooldown, or off-slot.
    An OSD kept in preboot (`lends`) lends its slot to the restart that makes room for its
    boot: it grows no further while held, and at concurrency 1 it would otherwise hold the
    only slot until the run stalls. It boots only once that restart is done (inflight.boots,
    invariant I2)."""
    ctx, osd = a.ctx, act.osd
    refused = "RECOVERY_RESTART_REFUSED"
    if ctx.state == "paused":
        return StageOut(reasons=("%s: restart of osd.%d deferred: paused" % (host, osd),))
    if ctx.snapshot.ok_to_stop.get(osd) is not True:
        return StageOut(health=((refused, "osd.%d on %s: no ok-to-stop clearance in this "
                                 "snapshot" % (osd, host), 1),))
    why = a.stops.stop_refusal(osd)
    if why:
        return StageOut(health=((refused, "osd.%d on %s: %s" % (osd, host, why), 1),))
    if in_restart_cooldown(osd, a.progress, ctx.intent, ctx.now):
        return StageOut(health=((refused, "osd.%d on %s: restarted %.0fs ago (cooldown %.0fs)"
                                 % (osd, host, ctx.now - a.cols["restarted"][osd],
                                    ctx.intent.restart_cooldown_s), 1),))
    busy = len([x for x in flight(ctx, a.cols["granted"], a.new_restarts).get(host, ())
                if x != lends])
    if busy >= a.plain_slots:
        return StageOut(reasons=("%s: restart of osd.%d waits for a free slot (%d in flight)"
                                 % (host, osd, busy),))
    return None


def make_room(a: Ask, host: str, why: str, deficit: int, free: int,
              room_restarts: AbstractSet[int],
              lends: Optional[int] = None) -> Tuple[Optional[Action], StageOut]:
    """Where what restarts on `host` could free (`free`, room()) covers `deficit`, one
    over_budget decision (respond, `lends` as there) to make room: its action (or None) and
    what it emits and records. A restart made for room is marked (the room_restarts record,
    `room_restarts` so far): a run that ends in the same tick takes it back (ending.py)."""
    if deficit > free:
        return None, StageOut()
    acted, out = respond(a, host, why, lends)
    if not acted:
        return None, out
    act = out.actions[-1][1]
    if isinstance(act, RestartOsd):
        out = replace(out, records=out.records + (
            ("room_restarts", set(room_restarts) | {act.osd}),))
    return act, out


def start_room(a: Ask, host: str, deficit: int, line: str,
               room_restarts: AbstractSet[int]) -> StageOut:
    """Room for the next start of a host with nothing in flight, `deficit` short of its
    budget (`line` says so): one over_budget decision where what restarts could free covers
    the deficit (make_room), else why the host waits."""
    ctx = a.ctx
    free = room(ctx, a.progress, a.cols["granted"], host)
    settling = sorted(x for x in a.cols["settling"] if ctx.view.host_of(x) == host)
    act, out = None, StageOut()
    if ctx.state in ("new", "running"):
        act, out = make_room(a, host, "next start", deficit, free, room_restarts)
    if act is not None:
        line += "; making room (%s restartable): %s" % (fmt_bytes(free), act.describe())
    elif settling:     # not a stall: their peaks are still coming, then they are restartable
        return join(out, StageOut(reasons=("waiting for settling osd.%s: %s" % (
            ",".join(str(x) for x in settling), line),)))
    elif shrink.waits(ctx, a.cols, host):    # recovery trims them (shrink.py)
        line += "; waiting for " + shrink.describe(ctx, a.cols, host, deficit)
    else:
        line += "; nothing can be released or restarted to make room (%s restartable)" % (
            fmt_bytes(free))
    return join(out, StageOut(health=(("RECOVERY_BUDGET_TOO_SMALL", line, 1),)))


def room_for_boots(t: Decision, stops: StopCheck) -> None:
    """An OSD gate 2 keeps in preboot (inflight._boot_fits: its growth to its peak does not
    fit) waits for memory as a next start does: the over_budget policy makes room for it
    (make_room), one action per host per tick and none on a host whose memory stage already
    acted. Otherwise it would hold its grant in preboot until recovery freed the memory. A
    staged OSD kept in preboot (staging.room_to_peak) needs its deficit under that rule."""
    acted = set(memory_hosts(t.ctx.view, t.stage["memory"], t.cols))
    for osd_id in sorted(t.kept_preboot):
        o = t.ctx.view.by_id.get(osd_id)
        hm = t.ctx.view.hostmem.get(o.host) if o is not None else None
        if hm is None or o.host in acted:
            continue
        deficit = boot_deficit(preboot(t), o)[0] if osd_id in t.staged else \
            hm.mem_used + boot_growth(t.predictor, o)[1] - t.budget(o.host)
        if deficit <= 0:
            continue
        a = ask(t, stops)
        act, out = make_room(a, o.host, "boot of osd.%d" % osd_id, deficit,
                             room(a.ctx, a.progress, t.granted, o.host), t.room_restarts,
                             lends=osd_id)
        t.apply(out)
        if act is not None:
            acted.add(o.host)


def room(ctx: Context, progress: Progress, granted: Mapping[int, float], host: str) -> int:
    """What restarts on `host` could free, one after the other: the sum of the expected gains
    (view.restart_gain) of its up, running OSDs that this run does not have in flight or
    still peering (view.still_peering: the over_budget policies do not restart those), that
    ok-to-stop did not refuse in this snapshot and that are out of their restart cooldown.
    An OSD whose stop PG membership refuses (StopCheck.stop_breaks) still counts: the room is
    an estimate that decides whether to try, and the over_budget policy then restarts the
    next OSD that may stop (leaving them out, 1,200 OSDs x 48 GiB: all PGs active 2,830 s
    instead of 2,275 s).
    A deficit larger than one OSD's gain is closed by several restarts, one per tick/slot."""
    total = 0
    for x in ctx.view.by_host.get(host, ()):
        if not x.up or x.process == PROC_STOPPED or x.id in granted or \
                still_peering(x, progress) or ctx.snapshot.ok_to_stop.get(x.id) is False:
            continue
        if in_restart_cooldown(x.id, progress, ctx.intent, ctx.now):
            continue
        gain = restart_gain(x, progress)
        if gain >= MIN_RESTART_GAIN:
            total += gain
    return total
