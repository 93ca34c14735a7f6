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

from typing import List

from .actions import HoldOsd, QueryOkToStop, StopOsd
from .model import KERNEL_HEADROOM, PROC_STOPPED
from .inflight import fail_start
from .decision import Decision, fmt_bytes

WATCH_AT = 0.9
BRAKE_AT = 1.0 - KERNEL_HEADROOM    # of the host's RAM (or its cgroup limit), not of the budget


def _ours(t: Decision, host: str) -> List:
    """OSDs of this run on `host` that are running and past their boot, and not restarted in
    this tick: largest rss first."""
    ids = (set(t.booting) | set(t.settling)) - t.new_restarts
    return sorted((o for o in t.ctx.view.by_host.get(host, ()) if o.id in ids and
                   o.process != PROC_STOPPED and o.rss_bytes > 0),
                  key=lambda o: (-o.rss_bytes, o.id))


def watch(t: Decision) -> None:
    for host in t.ctx.view.scope_hosts():
        hm = t.ctx.view.hostmem.get(host)
        if hm is None or hm.mem_used <= WATCH_AT * t.budget(host):
            continue
        for o in _ours(t, host):
            t.emit("memory", QueryOkToStop(osd=o.id, reason="%s at %s of budget %s: keep an "
                                           "ok-to-stop answer ready for osd.%d" % (
                                               host, fmt_bytes(hm.mem_used),
                                               fmt_bytes(t.budget(host)), o.id)))


def _admitted(t: Decision, o) -> int:
    """The peak this OSD's start was admitted on (Predictor.admitted_peak)."""
    return t.predictor.admitted_peak(o)


def brake(t: Decision, host: str) -> bool:
    """Stop the largest OSD this run let boot on an over-budget host. True if it acted."""
    if t.new_restarts or any(isinstance(a, StopOsd) for a in t.stage["memory"]):
        return False
    hm = t.ctx.view.hostmem[host]
    if hm.mem_used <= BRAKE_AT * hm.cap:
        return False
    for o in _ours(t, host):
        if not t.stops.may_stop(o.id) or o.rss_bytes <= _admitted(t, o):
            continue
        t.emit("hold_osds", HoldOsd(osd=o.id, reason="stopped over budget: held again"))
        t.emit("memory", StopOsd(osd=o.id, host=host, reason=(
            "%s over budget (%s > %s) and nothing to release or restart: stop osd.%d "
            "(rss %s, predicted %s) before the kernel kills one; ok-to-stop cleared it and no "
            "PG drops below min_size" % (
                host, fmt_bytes(hm.mem_used), fmt_bytes(t.budget(host)), o.id,
                fmt_bytes(o.rss_bytes), fmt_bytes(t.predictor.predict(o.id))))))
        fail_start(t, o, "stopped over budget")
        t.held_osds.add(o.id)
        return True
    t.reasons.append("%s over budget: no ok-to-stop clearance (or a stop would take a PG below "
                     "min_size) for the OSDs this run started" % host)
    return False


def memory_hosts(t: Decision) -> List[str]:
    """Hosts where this tick's memory stage makes room (release, restart, stop, a policy's
    wait or ok-to-stop query). The brake's watch queries (for OSDs of this run, booting or
    settling: the over_budget policies never pick those) only keep an answer ready."""
    out = set()
    for a in t.stage["memory"]:
        host = getattr(a, "host", None)
        osd = getattr(a, "osd", None)
        if isinstance(a, QueryOkToStop) and (osd in t.booting or osd in t.settling):
            continue
        if host:
            out.add(host)
        elif osd is not None and t.ctx.view.host_of(osd):
            out.add(t.ctx.view.host_of(osd))
    return sorted(out)
