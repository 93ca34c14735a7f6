"""Memory admission: over-budget responses and start grants (stages "memory" and "grants").

Admission rule for the next OSD on a host (strict per-host start order, no skipping):

    used + reserved + need <= budget(host)

  used      host.mem_used as the helper reports it (host RAM, or the cgroup's usage)
  reserved  for every OSD in flight on that host (granted and not yet finished, or
            restarting: a restarted OSD loads its PGs and peers again):
            max(0, predicted - rss), the growth it is still expected to make (its current rss
            is already in `used`; a restarted OSD's predicted is at most the rss it was
            restarted at, view.still_peering); for every OSD finished and still settling
            (inflight.py): the same while it is at its peak so far, or only its way back up
            once it has fallen SETTLE_DROP below that peak (settling_reserve)
  need      max(0, predicted - rss) of the candidate (a process already sitting in preboot has
            already spent part of its footprint)

With nothing in flight and an empty reserve this is exactly `used + predicted <= budget`.

predicted = max(footprint policy, peer floor): the peer floor is 1.2 x the median rss of the
up, running OSDs not in flight (same configuration, so a returning OSD ends up at least that
big, and RSS can run 20 % over osd_memory_target; it protects the first wave when the policy's
prior is far below this cluster's real sizes).
Until WARMUP_OBSERVATIONS starts were measured (real peaks), predictions were shaped by the
prior and lower bounds only. A host's first start in flight is admitted on the rule above
(warmup.concurrency: 1); a start beside others in flight (up to Context.slots: intent.concurrency,
or as many as memory admits with `auto`) only where the rule holds with every prediction in
it x warmup.margin: the candidate's, and those behind the reservations of the OSDs in
flight and settling on that host (a settling OSD past its peak keeps its plain way back up).
Where every OSD still waiting on that host fits on its plain prediction (_queue_fits), starting
them together costs nothing and they boot as they load; where they do not, a start beside
others is staged (staging.py): at most STAGED_PER_HOST wait loaded in preboot, and they peer
in turn.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet, Dict, List, Mapping, Optional, Tuple, Union

from .actions import GrantStart, Wait
from .context import Context
from .model import PROC_STOPPED, Columns, OsdState
from .inflight import MAX_START_FAILURES
from .staging import PEERING_PER_HOST, STAGED_PER_HOST
from .decision import Decision, fmt_bytes
from .predict import PROBE_LOAD_FRACTION, Predictor
from .stageout import Budget, StageOut, put
from .stopcheck import StopCheck
from .view import HELPER_STALE_S
from .room import ask, start_room
from .reserve import flight as flight_now, host_margin, plain_slots, reserved, staged_rest
from . import dups


def _host_gate(ctx: Context, host: str, in_flight: List[int],
               over: AbstractSet[str]) -> Optional[str]:
    """Why no new start may be granted on this host now (None = it may; `over`: the hosts
    over budget in this tick)."""
    v = ctx.view
    if v.helper_missing(host):
        return "helper missing"
    if v.findings_for(host):
        return "network finding"
    if host in over:
        return "over budget"
    alone = dups.alone_gate(ctx.dups_suspects, in_flight)
    if alone is not None:
        return alone
    if len(in_flight) >= ctx.slots():
        return "%d in flight" % len(in_flight)
    return None


def _stopping(ctx: Context, stopped: Mapping[int, float],
              granted: Mapping[int, float]) -> StageOut:
    """A withdrawn start whose process is still being stopped is not granted again until the
    helper reports it stopped (inflight.track_stops): its host waits on it."""
    by_host: Dict[str, List[int]] = {}
    for o in ctx.view.candidates:
        if o.id in stopped and o.id not in granted:
            by_host.setdefault(o.host, []).append(o.id)
    return StageOut(actions=tuple(
        ("grants", Wait(host=host, reason="osd.%s: the process of a withdrawn start is being "
                        "stopped; granted again once it is" % ",".join(str(x) for x in ids)))
        for host, ids in sorted(by_host.items())))


@dataclass(frozen=True)
class Admit:
    """What the grant decisions read: the call's Context, the Predictor, the run's columns
    (a grant's records update them in place, so later decisions and predictions see it), its
    budget state and the hosts' budgets."""
    ctx: Context
    predictor: Predictor
    cols: Columns
    budget_state: str
    budget: Budget


@dataclass(frozen=True)
class NoFit:
    """A host with nothing in flight whose next OSD does not fit: room is to be made for it
    (room.start_room), from the over_budget decision's values as they stand then."""
    host: str
    deficit: int
    line: str


def grant_stage(t: Decision, over: AbstractSet[str], stops: StopCheck) -> None:
    """Grant starts in start_order, per host while slots and budget admit (strict order);
    none on a host `over` its budget. Room is made (room.make_room) where `stops` allows.
    Each decision's StageOut is applied before the next is made."""
    v = t.ctx.view
    g = Admit(t.ctx, t.predictor, t.cols, t.budget_state, t.budget)
    flight = flight_now(t.ctx, t.granted, t.new_restarts)
    eligible = [o for o in v.candidates if o.id not in t.granted and o.id not in t.stopped]
    t.apply(_stopping(t.ctx, t.stopped, t.granted))
    queues: Dict[str, List[OsdState]] = {}
    for o in eligible:
        if o.id not in v.op_held and not _failed_out(t.failures, o):
            queues.setdefault(o.host, []).append(o)
    hosts: Dict[str, dict] = {}
    for o in t.ctx.policies.start_order(eligible, t.ctx.snapshot):
        if o.id in v.op_held or _failed_out(t.failures, o):
            continue
        st = hosts.get(o.host)
        if st is None:
            st, out = _open_host(g, o.host, flight.get(o.host, []), over)
            t.apply(out)
            hosts[o.host] = st
            st["queue"] = queues.get(o.host, [])
        if st["gate"] is not None or st["blocked"]:
            if st["next_osd"] is None:
                st["next_osd"] = o.id
            continue
        res = _try_grant(g, o, st)
        if isinstance(res, NoFit):
            res = start_room(ask(t, stops), res.host, res.deficit, res.line,
                             t.room_restarts)
        t.apply(res)
    for h in sorted(set(flight) - set(hosts)):
        if v.helper_missing(h):         # only its granted OSDs wait for that helper
            t.health(*_helper_missing(t.ctx, h, " (osd.%s granted there)" % ", osd.".join(
                str(x) for x in sorted(flight[h]))))
    t.apply(_summary(g, hosts, t.hosts_summary))


def _summary(g: Admit, hosts: Mapping[str, dict], summary: Mapping[str, dict]) -> StageOut:
    """The hosts_summary record: each host's row as the stage left it."""
    out = dict(summary)
    for h, st in hosts.items():
        if st["next_osd"] is not None and st["predicted"] is None and h in g.ctx.view.hostmem:
            st["predicted"] = g.predictor.predict(st["next_osd"])
        out[h] = {"budget": st["budget"], "used": st["used"],
                  "in_flight": len(st["in_flight"]), "in_flight_osds": list(st["in_flight"]),
                  "next_osd": st["next_osd"], "predicted": st["predicted"],
                  "gate": st["gate"],
                  "waiting_on": st["gate"] or ("memory" if st["blocked"] else None)}
    return StageOut(records=(("hosts_summary", out),))


def _failed_out(failures: Mapping[int, int], o: OsdState) -> bool:
    """No longer granted: as many failed starts as it may have (dups.max_failures)."""
    return failures.get(o.id, 0) >= dups.max_failures(o, MAX_START_FAILURES)


def _helper_missing(ctx: Context, host: str, extra: str) -> Tuple[str, str]:
    """RECOVERY_HELPER_MISSING for `host` (code, line): since when its helper is silent, if it
    ever reported."""
    seen = ctx.snapshot.helpers_seen.get(host)
    if seen is None and host in ctx.view.hostmem:
        seen = ctx.view.hostmem[host].reported_at
    return "RECOVERY_HELPER_MISSING", "%s: %s%s" % (
        host, "no helper report in this mgr's memory" if seen is None else
        "last helper report %.0fs ago (stale after %.0fs)" % (ctx.now - seen, HELPER_STALE_S),
        extra)


def _open_host(g: Admit, host: str, in_flight: List[int],
               over: AbstractSet[str]) -> Tuple[dict, StageOut]:
    """The host's row for this stage (what the grants on it read and update) and the health
    lines its gate raises."""
    ctx, predictor, cols = g.ctx, g.predictor, g.cols
    gate = _host_gate(ctx, host, in_flight, over)
    hm = ctx.view.hostmem.get(host)
    health: Tuple[Tuple[str, str, int], ...] = ()
    if gate == "helper missing":
        health = (_helper_missing(ctx, host, "") + (1,),)
    elif gate == "network finding":
        health = tuple(("RECOVERY_NETWORK_DEGRADED", "%s %s: %s %s (starts held on %s)" % (
            "<->".join(f.hosts), f.kind, f.value, f.detail, host), 1)
            for f in ctx.view.findings_for(host))
    margin = host_margin(ctx, g.budget_state, predictor)
    plain = margined = peaks = 0
    if hm is not None:
        plain = reserved(ctx, predictor, cols, host, in_flight)
        margined = reserved(ctx, predictor, cols, host, in_flight, margin)
        peaks = plain + staged_rest(ctx, predictor, cols, in_flight)
    return {"gate": gate, "blocked": False, "next_osd": None, "predicted": None,
            "budget": g.budget(host) if hm is not None else None,
            "used": hm.mem_used if hm is not None else None,
            "in_flight": list(in_flight), "slots": ctx.slots() - len(in_flight),
            "reserved": plain, "margin": margin, "reserved_margin": margined,
            "reserved_peaks": peaks}, StageOut(health=health)


def _waiting(host: str, why: str) -> StageOut:
    return StageOut(reasons=("waiting for in-flight OSDs: %s: %s" % (host, why),))


def _try_grant(g: Admit, o: OsdState, st: dict) -> Union[StageOut, NoFit]:
    """The decision on the host's next OSD `o` (its row `st` updated): a grant, a wait, or
    a NoFit where room is to be made."""
    pred = g.predictor.predict(o.id)
    need = max(0, pred - o.rss_bytes)
    need_margin = max(0, int(pred * st["margin"]) - o.rss_bytes)
    if st["next_osd"] is None:
        st["next_osd"], st["predicted"] = o.id, pred
    if o.id in g.ctx.dups_suspects:
        return _try_alone(g, o, st, pred, need)
    if st["in_flight"] and _staged_full(g, st):
        st["blocked"] = True
        return _waiting(o.host, _staged_why(g.cols["staged"], st))
    if st["in_flight"] and not _queue_fits(g, st):
        return _try_staged(g, o, st, pred)
    plain = plain_slots(g.ctx, g.budget_state, g.predictor)
    if len(st["in_flight"]) >= plain:     # beside others: charged with the margin
        return _try_beside(g, o, st, pred, need, need_margin)
    probe = False
    if st["used"] + st["reserved"] + need > st["budget"]:
        probe = _probe_fits(g.ctx, g.cols["settling"], o, st, pred)
        if not probe:
            st["blocked"] = True
            return _no_fit(o, st, pred, need)
    return _grant(g, o, st, pred, need, need_margin, (
        "probe: predicted peak %s does not fit budget %s (used %s), its load (at most "
        "%.2f of the peak) does; it boots only if its peak, re-predicted from the load "
        "it shows in preboot, fits" % (fmt_bytes(pred), fmt_bytes(st["budget"]),
                                       fmt_bytes(st["used"]), PROBE_LOAD_FRACTION))
        if probe else "used %s + reserved %s + predicted %s <= budget %s%s" % (
            fmt_bytes(st["used"]), fmt_bytes(st["reserved"]), fmt_bytes(need),
            fmt_bytes(st["budget"]), "; " + _queue_note(g, st) if st["in_flight"] else ""))


def _try_alone(g: Admit, o: OsdState, st: dict, pred: int,
               need: int) -> Union[StageOut, NoFit]:
    """A start that may load inflated PG log dups (dups.py): only with nothing else in flight
    on its host, where its plain prediction fits, charged the host's whole room."""
    suspect = g.ctx.dups_suspects[o.id]
    if st["in_flight"]:
        st["blocked"] = True
        return _waiting(o.host, "osd.%d starts alone (PG log dups: %s)" % (o.id, suspect))
    if st["used"] + st["reserved"] + need > st["budget"]:
        st["blocked"] = True
        return _no_fit(o, st, pred, need)
    whole = max(need, st["budget"] - st["used"] - st["reserved"])
    out = _grant(g, o, st, max(pred, o.rss_bytes + whole), whole, whole,
                 "alone on its host (PG log dups: %s): charged the host's whole room %s "
                 "(predicted %s), used %s + reserved %s, budget %s" % (
                     suspect, fmt_bytes(whole), fmt_bytes(pred), fmt_bytes(st["used"]),
                     fmt_bytes(st["reserved"]), fmt_bytes(st["budget"])))
    st["gate"] = "osd.%d starts alone (PG log dups)" % o.id
    return out


def _try_beside(g: Admit, o: OsdState, st: dict, pred: int, need: int,
                need_margin: int) -> StageOut:
    """A start beside others in flight on its host: admitted on every prediction x the
    margin (the staging limit was checked before, _try_grant)."""
    if st["used"] + st["reserved_margin"] + need_margin > st["budget"]:
        st["blocked"] = True
        return _waiting(o.host, "osd.%d needs %s (predicted %s x margin %.2f), used %s + "
                        "reserved %s x margin, budget %s" % (
                            o.id, fmt_bytes(need_margin), fmt_bytes(pred), st["margin"],
                            fmt_bytes(st["used"]), fmt_bytes(st["reserved_margin"]),
                            fmt_bytes(st["budget"])))
    return _grant(g, o, st, pred, need, need_margin, "used %s + reserved %s + predicted %s, "
                  "each x margin %.2f, <= budget %s; %s" % (
                      fmt_bytes(st["used"]), fmt_bytes(st["reserved_margin"]),
                      fmt_bytes(need_margin), st["margin"], fmt_bytes(st["budget"]),
                      _queue_note(g, st)))


def _try_staged(g: Admit, o: OsdState, st: dict, pred: int) -> StageOut:
    """A start beside others on a host whose queue does not fit: staged (staging.py),
    admitted on its load (Predictor.expected_load; x the margin beside others while the run
    warms up): it boots only once its growth to its peak fits (staging.room_to_peak)."""
    load = g.predictor.expected_load(o.id)
    plain = plain_slots(g.ctx, g.budget_state, g.predictor)
    beside = len(st["in_flight"]) >= plain
    margin = st["margin"] if beside else 1.0
    res = st["reserved_margin"] if beside else st["reserved"]
    need, need_margin = max(0, load - o.rss_bytes), max(0, int(load * margin) - o.rss_bytes)
    if st["used"] + res + need_margin > st["budget"]:
        st["blocked"] = True
        return _waiting(o.host, "osd.%d's load needs %s (expected %s x margin %.2f), used %s "
                        "+ reserved %s, budget %s" % (
                            o.id, fmt_bytes(need_margin), fmt_bytes(load), margin,
                            fmt_bytes(st["used"]), fmt_bytes(res), fmt_bytes(st["budget"])))
    return _grant(g, o, st, pred, need, need_margin, "used %s + reserved %s + its load %s, "
                  "each x margin %.2f, <= budget %s; %s" % (
                      fmt_bytes(st["used"]), fmt_bytes(res), fmt_bytes(need_margin), margin,
                      fmt_bytes(st["budget"]), _queue_note(g, st)))


def _grant(g: Admit, o: OsdState, st: dict, pred: int, need: int, need_margin: int,
           reason: str) -> StageOut:
    """The grant of `o` and its records; charged to its host's row `st`."""
    cols, now = g.cols, g.ctx.now
    records = [("granted", put(cols["granted"], o.id, now))]
    if o.down_since is not None:
        records.append(("downtime", put(cols["downtime"], o.id, max(0.0, now - o.down_since))))
    if o.missed_entries is not None:
        records.append(("missed", put(cols["missed"], o.id, o.missed_entries)))
    if st["in_flight"] and not _queue_fits(g, st):   # known before any grant beside others
        records.append(("staged", put(cols["staged"], o.id, now)))
    st["reserved"] += need
    st["reserved_margin"] += need_margin
    st["reserved_peaks"] += max(0, pred - o.rss_bytes)
    st["slots"] -= 1
    st["in_flight"].append(o.id)
    st["next_osd"], st["predicted"] = None, None
    if st["slots"] <= 0:
        st["gate"] = "%d in flight" % len(st["in_flight"])
    return StageOut(actions=(("grants", GrantStart(osd=o.id, host=o.host, predicted_bytes=pred,
                                                   reason=reason)),),
                    records=tuple(records))


def _queue_fits(g: Admit, st: dict) -> bool:
    """Room for every OSD still waiting on the host (st["queue"], this one included) on their
    plain predictions, beside what is used and reserved: where they cannot all fit, a start
    beside others is staged (staging.py) instead of peering beside them, which slows each
    one's peering and has them all settling (not yet restartable) at once (simulator, one
    rack down 1 h, bench seed 0, margin-admitted starts without this check: 60 OSDs 1,735 ->
    2,290 s to all PGs active, 1,200 OSDs 1,515 -> 1,655 s). Cached for the tick: a grant
    moves its OSD's need from the queue into st["reserved_peaks"], the sum stays the same
    (an OSD granted earlier in this tick is counted there, not in the queue)."""
    if st.get("queue_fits") is None:
        granted = g.cols["granted"]
        need = sum(max(0, g.predictor.predict(x.id) - x.rss_bytes) for x in st["queue"]
                   if x.id not in granted)
        st["queue_fits"] = st["used"] + st["reserved_peaks"] + need <= st["budget"]
    return st["queue_fits"]


def _staged(staged: Mapping[int, float], st: dict) -> List[int]:
    """The host's staged OSDs not yet let boot."""
    return [x for x in st["in_flight"] if x in staged]


def _staged_full(g: Admit, st: dict) -> bool:
    """Where the host's queue does not fit, at most STAGED_PER_HOST staged OSDs wait there."""
    return not _queue_fits(g, st) and len(_staged(g.cols["staged"], st)) >= STAGED_PER_HOST


def _staged_why(staged: Mapping[int, float], st: dict) -> str:
    """Why no further start is staged on the host."""
    return "osd.%s staged in preboot, its %d waiting OSD(s) do not all fit" % (
        ",".join(map(str, _staged(staged, st))), len(st["queue"]))


def _queue_note(g: Admit, st: dict) -> str:
    """The grant reason's word on the host's queue (staged or not)."""
    if _queue_fits(g, st):
        return "the host's %d waiting OSD(s) fit" % len(st["queue"])
    return "staged: its %d waiting OSD(s) do not all fit, it boots when fewer than %d peer " \
        "and its growth to its peak fits" % (len(st["queue"]), PEERING_PER_HOST)


def _probe_fits(ctx: Context, settling: Mapping[int, float], o: OsdState, st: dict,
                pred: int) -> bool:
    """A probe start: on a host where no OSD runs (the run's first start there: nothing in
    flight, settling or restartable), an OSD whose predicted peak does not fit may still start
    if its load does: a process in preboot holds only its
    load (at most PROBE_LOAD_FRACTION of its peak), and gate 2
    (inflight._boot_fits) lets it boot only if the peak re-predicted from the load it shows
    fits. A prediction too high for this cluster then costs a preboot, not a refused start.
    It rests on the load being at most PROBE_LOAD_FRACTION of the predicted peak: a larger
    load (spent in init(), before any gate can act) goes over the budget."""
    host = o.host
    if st["in_flight"] or any(ctx.view.host_of(x) == host for x in settling) or \
            ctx.state not in ("new", "running") or o.process != PROC_STOPPED or \
            any(x.up or x.process != PROC_STOPPED for x in ctx.view.by_host.get(host, ())):
        return False
    return st["used"] + st["reserved"] + pred * PROBE_LOAD_FRACTION <= st["budget"]


def _no_fit(o: OsdState, st: dict, pred: int, need: int) -> Union[StageOut, NoFit]:
    """The host's next OSD does not fit: it waits for those in flight, or, if the host is
    quiescent, room is to be made (NoFit)."""
    line = "%s: osd.%d needs %s (predicted %s), used %s + reserved %s, budget %s" % (
        o.host, o.id, fmt_bytes(need), fmt_bytes(pred), fmt_bytes(st["used"]),
        fmt_bytes(st["reserved"]), fmt_bytes(st["budget"]))
    if st["in_flight"]:
        return StageOut(reasons=("waiting for in-flight OSDs: " + line,))
    return NoFit(o.host, st["used"] + st["reserved"] + need - st["budget"], line)
