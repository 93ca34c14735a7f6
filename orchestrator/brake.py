"""Act before the kernel: an OSD this run started that outgrows its host's budget.

Rules:
- watch: on a host above WATCH_AT x its budget, the run asks ok-to-stop every tick for the
  OSDs it let boot there (in flight or settling), so that a clearance is in the snapshot the
  moment it is needed (a query answered one tick later can come after the OOM kill: on the lab
  an OSD grew ~24 MB/s while peering, 146 -> 410 MB in 11 s).
- brake: on a host over its budget and above BRAKE_AT of its RAM (or cgroup limit: where the
  kernel kills; a budget breach below that costs no OSD and is answered by admission) where
  the over_budget policy has nothing to release or
  restart (it never touches OSDs this run has in flight or settling), the run stops the
  largest of those OSDs that outgrew the peak its start was admitted on (its prediction is
  void: nothing says where its growth ends; an OSD within its prediction is not stopped, the
  admission already counted its peak), before the kernel's OOM killer picks one; only with
  ok-to-stop True in this snapshot (never otherwise) and, where the snapshot has PG
  membership, only if no PG with min_size members up drops below it (StopCheck.may_stop), at
  most one per tick. The OSD is held again (noup), its peak so far becomes an observation
  (its next prediction is at least that) and it counts as a failed start
  (MAX_START_FAILURES): it is started again only when that peak fits.
"""
from __future__ import annotations

from typing import AbstractSet, List, Sequence

from .actions import Action, HoldOsd, QueryOkToStop, StopOsd
from .context import Context
from .model import KERNEL_HEADROOM, PROC_STOPPED, Columns
from .decision import fmt_bytes
from .learning import Lifecycle, fail_start
from .stageout import Budget, StageOut, join
from .stopcheck import StopCheck
from .view import View

WATCH_AT = 0.9
BRAKE_AT = 1.0 - KERNEL_HEADROOM    # of the host's RAM (or its cgroup limit), not of the budget


def _ours(ctx: Context, cols: Columns, new_restarts: AbstractSet[int], host: str) -> List:
    """OSDs of this run on `host` that are running and past their boot, and not restarted in
    this tick (`new_restarts`): largest rss first."""
    ids = (set(cols["booting"]) | set(cols["settling"])) - new_restarts
    return sorted((o for o in ctx.view.by_host.get(host, ()) if o.id in ids and
                   o.process != PROC_STOPPED and o.rss_bytes > 0),
                  key=lambda o: (-o.rss_bytes, o.id))


def watch(ctx: Context, budget: Budget, cols: Columns,
          new_restarts: AbstractSet[int]) -> StageOut:
    """The watch's ok-to-stop queries (module rules) for every host above WATCH_AT x its
    budget."""
    acts = []
    for host in ctx.view.scope_hosts():
        hm = ctx.view.hostmem.get(host)
        if hm is None or hm.mem_used <= WATCH_AT * budget(host):
            continue
        for o in _ours(ctx, cols, new_restarts, host):
            acts.append(("memory", QueryOkToStop(osd=o.id, reason=(
                "%s at %s of budget %s: keep an ok-to-stop answer ready for osd.%d" % (
                    host, fmt_bytes(hm.mem_used), fmt_bytes(budget(host)), o.id)))))
    return StageOut(actions=tuple(acts))


def brake(lc: Lifecycle, budget: Budget, new_restarts: AbstractSet[int],
          memory: Sequence[Action], host: str, stops: StopCheck) -> StageOut:
    """Stop the largest OSD this run let boot on an over-budget host (`memory`: this tick's
    memory stage so far; `new_restarts`: its restarts): the stop, its hold and its failed
    start, or why nothing was stopped. The peak its start was admitted on
    (Predictor.admitted_peak) is what it outgrew."""
    if new_restarts or any(isinstance(a, StopOsd) for a in memory):
        return StageOut()
    ctx, predictor = lc.ctx, lc.predictor
    hm = ctx.view.hostmem[host]
    if hm.mem_used <= BRAKE_AT * hm.cap:
        return StageOut()
    for o in _ours(ctx, lc.cols, new_restarts, host):
        if not stops.may_stop(o.id) or o.rss_bytes <= predictor.admitted_peak(o):
            continue
        acts = (("hold_osds", HoldOsd(osd=o.id, reason="stopped over budget: held again")),
                ("memory", StopOsd(osd=o.id, host=host, reason=(
                    "%s over budget (%s > %s) and nothing to release or restart: stop osd.%d "
                    "(rss %s, predicted %s) before the kernel kills one; ok-to-stop cleared it "
                    "and no PG drops below min_size" % (
                        host, fmt_bytes(hm.mem_used), fmt_bytes(budget(host)), o.id,
                        fmt_bytes(o.rss_bytes), fmt_bytes(predictor.predict(o.id)))))))
        held = (("held_osds", set(lc.held_osds) | {o.id}),)    # held again, after forget
        return join(StageOut(actions=acts), fail_start(lc, o, "stopped over budget"),
                    StageOut(records=held))
    return StageOut(reasons=("%s over budget: no ok-to-stop clearance (or a stop would take a "
                             "PG below min_size) for the OSDs this run started" % host,))


def memory_hosts(view: View, memory: Sequence[Action], cols: Columns) -> List[str]:
    """Hosts where this tick's memory stage (`memory`: its actions so far) makes room
    (release, restart, stop, a policy's wait or ok-to-stop query). The brake's watch queries
    (for OSDs of this run, booting or settling: the over_budget policies never pick those)
    only keep an answer ready."""
    booting, settling = cols["booting"], cols["settling"]
    out = set()
    for a in memory:
        host = getattr(a, "host", None)
        osd = getattr(a, "osd", None)
        if isinstance(a, QueryOkToStop) and (osd in booting or osd in settling):
            continue
        if host:
            out.add(host)
        elif osd is not None and view.host_of(osd):
            out.add(view.host_of(osd))
    return sorted(out)
