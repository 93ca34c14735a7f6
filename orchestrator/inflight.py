"""Lifecycle of the OSDs a run started: peaks, finish, failed starts, boots, re-grants.

Timing constants (seconds):
  BOOT_OBSERVE_S   a granted process sits in preboot under noup at least this long, with a
                   non-zero rss that has stopped growing (no more than BOOT_FLAT_TOL above the
                   peak seen in the earlier snapshots), before its noup goes: the load-time
                   footprint (PG log load) must be known, not its first megabytes. Where the
                   helper reports the daemon's own state, "preboot" says it at once (the
                   OSD enters it only after loading every PG) and this wait is skipped.
  BOOT_OBSERVE_MAX_S  ... unless it has run this long (rss still growing, or not reported):
                   the boot is allowed anyway, and the reason says so.
  PEERING_GRACE_S  an up OSD whose PGs are still inactive this long after its boot was allowed
                   is counted finished anyway: its remaining inactive PGs wait for other OSDs
                   (e.g. two replicas in the same held domain), and holding its slot would
                   deadlock the host.
  GRANT_RETRY_S    a granted OSD whose process is not running this long after its grant is a
                   failed start (it died before any report showed it, or the instruction was
                   lost): admitted again like any failed start.
A granted OSD that reports DAEMON_REBUILDING (BlueStore rebuilding its allocator after an
unclean stop, before it loads any PG) holds its boot clock while the rebuild lasts, at most
bootclock.REBUILD_MAX_S (bootclock.rebuild_clock): boot_timeout and BOOT_OBSERVE_MAX_S count from
the rebuild's end. No timeout of the run stops it, even past that maximum (a stop only starts
the rebuild again): it is then named in RECOVERY_BOOT_TIMEOUT and is no progress, so the
stall rule still ends the run in bounded time (ending.py). Its rss is in its host's `used`
all along, and its grant reserves the growth still predicted, like any start in flight.
A granted OSD whose process died after it ran (OOM kill, crash) is a failed start: its peak so
far becomes an Observation (so the footprint policy learns it was bigger than predicted), it
goes back to the candidates (held, re-admitted with the new prediction), and after
MAX_START_FAILURES in one run it is no longer granted (RECOVERY_START_FAILED says so).
A finished OSD settles (Progress.settling) while its PGs are still degraded and it still grows
(by 1 % within SETTLE_QUIET_S), at most SETTLE_MAX_S: it no longer takes a slot, but its
remaining predicted growth stays reserved (admission.py) and a higher settled peak becomes a
second Observation.
"""
from __future__ import annotations

from typing import AbstractSet, Any, Iterator, Mapping, Optional, Tuple

from .actions import AllowBoot
from .model import (DAEMON_PREBOOT, DAEMON_REBUILDING, PROC_RUNNING, PROC_STOPPED,
                    SETTLE_MARKERS, Columns)
from .context import Context
from .bootclock import REBUILD_MAX_S, grant_clock, rebuild_clock, rebuilding
from .decision import fmt_bytes
from .predict import Predictor
from .learning import (MAX_START_FAILURES, Lifecycle, fail_start, forget, observe,
                       settled_observation)
from .stageout import StageOut, cleared, join, put
from .view import RESTART_SETTLE_S
from .staging import Preboot, staged_wait
from .reserve import flight, plain_slots
from .withdraw import stop_process
from . import dups, shrink

BOOT_OBSERVE_S = 10.0
BOOT_OBSERVE_MAX_S = 60.0
BOOT_FLAT_TOL = 0.02
PEERING_GRACE_S = 60.0
GRANT_RETRY_S = 30.0
SETTLE_MAX_S = 900.0
# s without 1 % of growth after which a finished OSD has settled although its PGs are still
# degraded (in a rack's return they stay degraded until its own recovery ends, which the
# run's throttles stretch): its caches are at their ceiling and its history only shrinks
# from there (recovery trims it; the model's rss after peering is caches refilling to their
# ceiling plus a history that recovery shrinks). Its peak then teaches the footprint policy
# and its reservation ends. Simulator, one rack down 1 h, the sweep's 15 cells x seeds 1-3,
# 240 instead of 600 s: 0 OOM kills, time to all PGs active summed 50,790 -> 47,850 s
SETTLE_QUIET_S = 240.0


def track_in_flight(lc: Lifecycle) -> Iterator[StageOut]:
    """Peaks, finishes (up + PGs active) and boot timeouts of granted OSDs. Each StageOut is
    applied before the next is made: what follows an OSD's measure reads its new peak."""
    ctx, cols = lc.ctx, lc.cols
    for osd_id in sorted(cols["granted"]):
        o = ctx.view.by_id.get(osd_id)
        if o is None:
            yield StageOut(records=forget(lc, osd_id))
            continue
        yield _measure(lc, o)
        booted = cols["booting"].get(osd_id)
        if o.up and ((o.pgs > 0 and o.pgs_inactive == 0) or (
                booted is not None and ctx.now - booted >= PEERING_GRACE_S)):
            yield _finish(lc, o)
            continue
        if not o.up and o.process == PROC_STOPPED and (cols["peaks"].get(osd_id, 0) > 0 or
                                                       booted):
            yield fail_start(lc, o, "process died during its start")
            continue
        yield track_rebuild(ctx, cols, o)
        since = grant_clock(osd_id, cols["granted"], cols["booting"], cols["rebuild_seen"],
                            cols["rebuild_from"])
        # a staged OSD waiting for its turn to peer is kept by the run, not late (staging.py)
        if not o.up and osd_id not in cols["staged"] and \
                ctx.now - since >= ctx.intent.boot_timeout_s:
            yield _timed_out(lc, o, booted is not None, ctx.now - since)


def _measure(lc: Lifecycle, o) -> StageOut:
    """A granted OSD's peak so far, and whether its rss stopped growing (no more than
    BOOT_FLAT_TOL above that peak)."""
    peaks = lc.cols["peaks"]
    before = peaks.get(o.id, 0)
    records: Tuple[Tuple[str, Any], ...] = ()
    if before > 0 and o.rss_bytes <= before * (1.0 + BOOT_FLAT_TOL):
        records += (("rss_flat", set(lc.rss_flat) | {o.id}),)
    if o.rss_bytes > before:
        records += (("peaks", put(peaks, o.id, o.rss_bytes)),)
    return StageOut(records=records)


def _finish(lc: Lifecycle, o) -> StageOut:
    """A granted OSD up with its PGs active (or past PEERING_GRACE_S): observed, finished,
    settling from now, its noup cleared."""
    cols = lc.cols
    acts = (("boots", AllowBoot(osd=o.id, reason="up: clear the noup this run set")),) \
        if "noup" in o.flags else ()
    return StageOut(actions=acts, records=observe(lc, o, cols["peaks"].get(o.id, 0)) + (
        ("finished", set(lc.finished) | {o.id}),) +
        cleared(cols, o.id, ("granted", "booting", "staged")) + (
        ("held_osds", set(lc.held_osds) - {o.id}),
        ("settling", put(cols["settling"], o.id, lc.ctx.now))))


def track_rebuild(ctx: Context, cols: Columns, o) -> StageOut:
    """A granted OSD down and running that reports DAEMON_REBUILDING: first and last seen so
    (bootclock.rebuild_clock holds its boot clock meanwhile)."""
    if o.up or o.process != PROC_RUNNING or o.daemon_state != DAEMON_REBUILDING:
        return StageOut()
    rebuild_from = cols["rebuild_from"]
    first = rebuild_from.get(o.id, ctx.now)
    if o.id not in rebuild_from:
        rebuild_from = put(rebuild_from, o.id, first)
    return StageOut(reasons=("osd.%d rebuilds its allocator (unclean stop) for %.0fs: %s" % (
        o.id, ctx.now - first, "its boot clock waits for the end (at most %.0fs)" %
        REBUILD_MAX_S if ctx.now - first <= REBUILD_MAX_S else
        "past the %.0fs its boot clock waits" % REBUILD_MAX_S),),
        records=(("rebuild_from", rebuild_from),
                 ("rebuild_seen", put(cols["rebuild_seen"], o.id, ctx.now))))


def _timed_out(lc: Lifecycle, o, booted: bool, age: float) -> StageOut:
    """A grant older than boot_timeout whose OSD is not up. Allowed to boot, or its process
    not running (never started, died unseen, its helper gone): a failed start, its process
    stopped and the OSD held again (a start that will not come up must not keep the run, nor
    stay loaded outside it). Loaded and kept in preboot by the run itself (no room to peak):
    not the OSD's fault; the stall rule ends the run if room never comes (ending.py). Still
    rebuilding its allocator past REBUILD_MAX_S: named, never stopped (a stop only starts the
    rebuild again); the stall rule ends the run."""
    ctx, cols = lc.ctx, lc.cols
    what = "allowed to boot" if booted else "granted"
    if rebuilding(o.id, cols["rebuild_seen"], ctx.now):
        return _late("osd.%d on %s: still rebuilding its allocator %.0fs after it began "
                     "(unclean stop), past the %.0fs the run waits for it: not stopped (a "
                     "stop starts the rebuild again), no longer progress" % (
                         o.id, o.host, ctx.now - cols["rebuild_from"].get(o.id, ctx.now),
                         REBUILD_MAX_S))
    if booted or o.process != PROC_RUNNING:
        why = "not up %.0fs after it was %s (boot_timeout)" % (age, what)
        return join(_late("osd.%d on %s: %s %.0fs ago, still down (%s): counted a failed "
                          "start, stopped and held" % (o.id, o.host, what, age, o.process)),
                    fail_start(lc, o, why), stop_process(ctx, cols["stopped"], o, why))
    return _late("osd.%d on %s: %s %.0fs ago, loaded and kept in preboot: no room to peak" % (
        o.id, o.host, what, age))


def _late(line: str) -> StageOut:
    return StageOut(health=(("RECOVERY_BOOT_TIMEOUT", line, 1),))


def track_restarts(ctx: Context, restarted: Mapping[int, float],
                   fresh_rss: Mapping[int, int]) -> StageOut:
    """Record the rss an OSD came back at after its restart (what a restart really frees).
    A restart whose process was never restarted (lost instruction: the process start time is
    older than the restart) is forgotten, so that it may be retried without the cooldown."""
    kept, fresh, reasons = dict(restarted), dict(fresh_rss), []
    for osd_id, when in sorted(restarted.items()):
        o = ctx.view.by_id.get(osd_id)
        if o is None or not o.up or osd_id in fresh or \
                not RESTART_SETTLE_S <= ctx.now - when <= ctx.intent.boot_timeout_s:
            continue
        if o.process_started_at is not None and o.process_started_at < when:
            del kept[osd_id]
            reasons.append("osd.%d was not restarted (instruction lost?)" % osd_id)
        else:
            fresh[osd_id] = o.rss_bytes
    if len(kept) == len(restarted) and len(fresh) == len(fresh_rss):
        return StageOut()
    return StageOut(reasons=tuple(reasons),
                    records=(("restarted", kept), ("fresh_rss", fresh)))


def track_settling(lc: Lifecycle, new_restarts: AbstractSet[int]) -> Iterator[StageOut]:
    """A finished OSD keeps growing while its PGs recover. Until its PGs are no longer
    degraded, or it has not grown by 1 % for SETTLE_QUIET_S, or SETTLE_MAX_S passed, its
    peak is tracked and its predicted growth stays reserved on its host; a settled peak above
    the one observed at finish is observed again. Its process dying meanwhile (the kernel's
    OOM killer, a crash; not a restart of this run's, `new_restarts` in this tick) is a failed
    start (fail_start): counted towards MAX_START_FAILURES, its peak so far the floor of its
    next prediction. Each StageOut is applied before the next is made: the settled
    observation reads the peak recorded just before it."""
    ctx, cols = lc.ctx, lc.cols
    for osd_id, since in sorted(cols["settling"].items()):
        o = ctx.view.by_id.get(osd_id)
        if o is not None and not o.up and o.process == PROC_STOPPED and \
                osd_id not in ctx.view.restarting and osd_id not in new_restarts:
            yield fail_start(lc, o, "process died while its PGs recovered")
            continue
        if o is None or not o.up:
            yield StageOut(records=cleared(cols, osd_id, SETTLE_MARKERS))
            continue
        peaks, grew_at = cols["peaks"], cols["grew_at"]
        if o.rss_bytes > peaks.get(osd_id, 0) * 1.01:
            grew_at = put(grew_at, osd_id, ctx.now)
        if osd_id not in peaks or o.rss_bytes > peaks[osd_id]:
            peaks = put(peaks, osd_id, max(peaks.get(osd_id, 0), o.rss_bytes))
        quiet = ctx.now - grew_at.get(osd_id, since) >= SETTLE_QUIET_S
        yield StageOut(records=(("grew_at", grew_at), ("peaks", peaks)))
        if (o.pgs > 0 and o.pgs_degraded == 0) or quiet or ctx.now - since >= SETTLE_MAX_S:
            yield settled_observation(lc, o)
            yield join(StageOut(records=cleared(cols, osd_id, SETTLE_MARKERS)),
                       shrink.begin(ctx, cols, o))


def boots(p: Preboot, rss_flat: AbstractSet[int], over: AbstractSet[str]) -> Iterator[StageOut]:
    """AllowBoot a granted OSD once its load-time footprint is known (_loaded: the daemon
    reports preboot, or its rss sat flat BOOT_OBSERVE_S, `rss_flat`), or BOOT_OBSERVE_MAX_S in
    any case -- but never when that load-time rss already exceeds the predicted peak its grant
    was admitted on (peering only adds to it): it stays in preboot and
    RECOVERY_BUDGET_TOO_SMALL says why. None is let boot on a host `over` its budget in this
    tick. Each StageOut is applied before the next is made: the next OSD's prediction knows
    the load recorded at this one's boot."""
    ctx, cols = p.ctx, p.cols
    granted, booting, rebuild_seen = cols["granted"], cols["booting"], cols["rebuild_seen"]
    for osd_id in sorted(granted):
        o = ctx.view.by_id[osd_id]
        if o.up or o.process != "running" or o.id in ctx.view.op_held or o.host in over:
            continue
        if "noup" not in o.flags:      # nothing holds it: it is booting
            if osd_id not in booting:
                yield StageOut(records=(("booting", put(booting, osd_id, ctx.now)),))
            continue
        if rebuilding(osd_id, rebuild_seen, ctx.now):    # no PG loaded yet, whatever its rss
            continue
        started = o.process_started_at if o.process_started_at is not None else granted[osd_id]
        ran = ctx.now - max(started, rebuild_clock(osd_id, rebuild_seen, cols["rebuild_from"])
                            or started)
        known = _loaded(rss_flat, o, ran)
        again = osd_id in booting
        if not (known or again) and ran < BOOT_OBSERVE_MAX_S:
            continue
        kept = None if again else _kept(p, o)
        yield kept if kept is not None else _allow(p, o, again, _load_note(o, ran, known))


def _kept(p: Preboot, o) -> Optional[StageOut]:
    """What keeps `o` in preboot, from the first gate that does (staging.staged_wait, gate 2,
    a lent slot); None where none does."""
    waits, out = staged_wait(p, o)
    if waits:
        return out
    fits, out = _boot_fits(p, o)
    if not fits:
        return out
    lent, out = _lent(p, o)
    return out if lent else None


def _allow(p: Preboot, o, again: bool, note: str) -> StageOut:
    """The AllowBoot of `o`, booting from now; its first boot records its load-time rss (the
    Predictor learns from it)."""
    cols = p.cols
    peak = None if again or o.rss_bytes <= 0 else p.predictor.boot_peak(o)
    act = AllowBoot(osd=o.id, predicted_bytes=peak, reason="%s: %s%s" % (
        "noup still set, again" if again else "preboot", note,
        "" if peak is None else ", predicted peak %s" % fmt_bytes(peak)))
    records = () if again else (("booting", put(cols["booting"], o.id, p.ctx.now)),)
    records += cleared(cols, o.id, ("staged",))
    learn = not again and o.rss_bytes > 0
    if learn:
        records += (("load_rss", put(cols["load_rss"], o.id, o.rss_bytes)),)
    return StageOut(actions=(("boots", act),), records=records, learned=learn)


def _lent(p: Preboot, o) -> Tuple[bool, StageOut]:
    """An OSD kept in preboot that lent its slot to a restart making room for it
    (room._restart_refusal) boots only once its host's restarts no longer hold more slots
    than it has: the restarting OSD loads and peers again, and two growing at once is what a
    slot count forbids. Whether it stays, and why."""
    here = flight(p.ctx, p.cols["granted"], p.new_restarts).get(o.host, ())
    restarting = [x for x in here if x in p.ctx.view.restarting or x in p.new_restarts]
    if not restarting or len(here) <= plain_slots(p.ctx, p.budget_state, p.predictor):
        return False, StageOut()
    return True, StageOut(reasons=("%s: osd.%d stays in preboot while osd.%s restarts in its "
                                   "slot" % (o.host, o.id, ",".join(map(str, restarting))),))


def _load_note(o, ran: float, known: bool) -> str:
    rss = "load-time rss %.0f MiB " % (o.rss_bytes / 1048576.0)
    if o.daemon_state is not None:
        return rss + ("in preboot (the daemon's state) after %.0fs" % ran if known else
                      "still %s after %.0fs (allowed anyway)" % (o.daemon_state, ran))
    return rss + ("flat after %.0fs in preboot" % ran if known else
                  "not flat yet after %.0fs in preboot (allowed anyway)" % ran)


def _loaded(rss_flat: AbstractSet[int], o, ran: float) -> bool:
    """Its load-time footprint is known: the daemon says it is in preboot (init() loaded
    every PG), or, where its state is not reported, its rss has been flat (`rss_flat`) for
    BOOT_OBSERVE_S. A daemon that reports another state (initializing) is still loading,
    however flat its rss looks."""
    if o.rss_bytes <= 0:
        return False
    if o.daemon_state is not None:
        return o.daemon_state == DAEMON_PREBOOT
    return o.id in rss_flat and ran >= BOOT_OBSERVE_S


def boot_growth(predictor: Predictor, o) -> Tuple[int, int]:
    """(peak, growth) of a granted OSD in preboot for gate 2: Predictor.boot_peak, and that
    peak minus the rss it already holds (in the host's `used`)."""
    peak = predictor.boot_peak(o)
    return peak, max(0, peak - o.rss_bytes)


def _boot_fits(p: Preboot, o) -> Tuple[bool, StageOut]:
    """Gate 2: boot only if the growth still to come fits the host's budget. The peak is
    Predictor.boot_peak (load + learned growth, or without a learned growth the larger of the
    prediction and LOAD_TO_PEAK_MIN x the load); the growth is that peak minus the rss already
    in `used`. Otherwise the OSD stays in preboot (noup) and RECOVERY_BUDGET_TOO_SMALL says
    why. Whether it fits, and the line and record where it does not."""
    peak, growth = boot_growth(p.predictor, o)
    hm = p.ctx.view.hostmem.get(o.host)
    if hm is None or hm.mem_used + growth <= p.budget(o.host):
        return True, StageOut()
    budget = p.budget(o.host)
    return False, StageOut(health=(("RECOVERY_BUDGET_TOO_SMALL", "%s: osd.%d needs %.0f MiB "
                                    "more to peak (load-time rss %.0f MiB, predicted peak "
                                    "%.0f MiB), used %.0f MiB, budget %.0f MiB: kept in "
                                    "preboot (noup), not booted" % (
                                        o.host, o.id, growth / 1048576.0,
                                        o.rss_bytes / 1048576.0, peak / 1048576.0,
                                        hm.mem_used / 1048576.0, budget / 1048576.0), 1),),
                           records=(("kept_preboot", set(p.kept_preboot) | {o.id}),))


def clear_stale_noup(ctx: Context, held_osds: AbstractSet[int],
                     granted: Mapping[int, float]) -> StageOut:
    """An OSD this run held that is up (it booted anyway, or was brought up outside the run)
    must not keep its per-OSD noup: it would stay down at its next restart."""
    gone, acts = set(), []
    for osd_id in sorted(held_osds):
        o = ctx.view.by_id.get(osd_id)
        if o is None or (o.up and osd_id not in granted):
            gone.add(osd_id)
            if o is not None and "noup" in o.flags:
                acts.append(("boots", AllowBoot(osd=osd_id,
                                                reason="up: clear the noup this run set")))
    if not gone:
        return StageOut()
    return StageOut(actions=tuple(acts), records=(("held_osds", set(held_osds) - gone),))


def regrants(lc: Lifecycle, over: AbstractSet[str]) -> Iterator[StageOut]:
    """A granted OSD whose process is still (or again) stopped GRANT_RETRY_S after its grant
    is a failed start (its process died before a report showed it running, or the start
    instruction was lost): counted like any failed start, so it is granted again at most
    MAX_START_FAILURES times in a run, GRANT_RETRY_S apart, never once per tick. Not on a
    host `over` its budget in this tick. Each failed start is applied before the next
    OSD is looked at (Decision.apply_each)."""
    v, granted = lc.ctx.view, lc.cols["granted"]
    for osd_id in sorted(granted):
        o = v.by_id[osd_id]
        if o.up or o.process != PROC_STOPPED or lc.ctx.now - granted[osd_id] < GRANT_RETRY_S:
            continue
        if o.id in v.op_held or v.helper_missing(o.host) or o.host in over:
            continue
        yield fail_start(lc, o, "process not running %.0fs after its grant (it died at start, "
                         "or the start instruction was lost)" % (lc.ctx.now - granted[osd_id]))


def report_failures(ctx: Context, failures: Mapping[int, int], finished: AbstractSet[int],
                    failed_now: AbstractSet[int]) -> StageOut:
    """Every OSD with a failed start in this run stays named while the run goes on (not only in
    the tick it failed, `failed_now`, which names it itself): retried ones with their count,
    those at MAX_START_FAILURES as given up (not granted again in this run)."""
    lines = []
    for osd_id, n in sorted(failures.items()):
        if osd_id in finished or osd_id in failed_now:
            continue
        o = ctx.view.by_id.get(osd_id)
        most = MAX_START_FAILURES if o is None else dups.max_failures(o, MAX_START_FAILURES)
        if n >= most:
            lines.append(("RECOVERY_START_FAILED", "osd.%d: gave up after %d failed starts in "
                          "this run (see its log; start it by hand or raise the budget)"
                          % (osd_id, n), 1))
        elif ctx.state is not None:
            lines.append(("RECOVERY_START_FAILED", "osd.%d: %d failed start(s) in this run; "
                          "started again when it fits (at most %d)" % (osd_id, n, most), 1))
    return StageOut(health=tuple(lines))
