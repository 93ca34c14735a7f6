"""Throttle recovery on a host near its budget: the first response, before heap release,
restart or the brake (it needs no tcmalloc and no ok-to-stop clearance, so it works on
Debian's Pacific build and on OSDs ok-to-stop will not clear).

Rules:
- tight: a host whose used memory is above THROTTLE_AT x its budget (over budget: the same
  line as the other responses, which it precedes; the budget is below the kernel's line, by
  default 0.9 of the RAM, model.DEFAULT_BUDGET_FRACTION).
- throttle: on a tight host, every OSD this run let boot (booting or settling) that runs, is
  up and still has degraded PGs gets the throttle policy's settings (policies/throttle.py,
  default osd_recovery_max_active=1, osd_max_backfills=1) with SetConfig, one per setting,
  in stage "memory" before any other memory response. Only where the OSD's own settings are
  known (OsdState.recovery_config not None: the restore puts back exactly that), and only the
  RECOVERY_KEYS (osd_memory_target is settings.py's lever).
- write-ahead: the value before (the OSD's own setting, None = it had none) goes into
  Progress.saved_config in the tick that emits the SetConfig, exactly as settings.py does.
- release: a throttled OSD's settings are restored (RestoreConfig) once its host is at or
  below RELEASE_AT x its budget (brake.WATCH_AT), or once it no longer recovers (settled,
  down, stopped, or no longer this run's). At done, abort, an incomplete end and after the run,
  settings.restore_settings restores every saved setting (these keys are never kept).

What the throttle buys, in the simulator's model (scripts/sim/levers.py, docs/memory-model.md
"Levers"): a recovering OSD holds its recovery ops' data in memory,
    (own osd_recovery_max_active + own osd_max_backfills x the primaries'
     osd_recovery_max_active) x recovery_op_bytes
  recovery_op_bytes   4 MiB   [F] a 4 MiB RBD/RGW object fits one push
                              (osd_recovery_max_chunk 8 MiB [C])
  own max_active      3 -> 1  [C] 16.2 wpq osd_recovery_max_active_hdd default
  own max_backfills   1 -> 1  [C] osd_max_backfills default; it also bounds the PGs the OSD
                              accepts as a recovery target (Ceph "Recovery Reservation")
so at Ceph's defaults the throttle bounds that part at 16 MiB instead of 24 MiB per OSD, and
where operators raised the settings to speed recovery (the lab drill's max_active 8,
max_backfills 4: 40 ops, 160 MiB) at 36 MiB. It bounds nothing else: peering memory and the
missed history do not depend on recovery throttles (the model's largest growth is peering's),
and a slower recovery keeps the history memory longer. A host that keeps growing is answered
by the next responses (heap release, restart, brake).
"""
from __future__ import annotations

from typing import AbstractSet, Dict, List, Mapping, Optional, Sequence, Tuple

from .actions import SetConfig
from .brake import WATCH_AT
from .context import Context
from .model import PROC_STOPPED, Columns, OsdState
from .decision import fmt_bytes
from .restore import before_value, restore_into
from .stageout import Budget, Staged, StageOut
from . import shrink

RECOVERY_KEYS = ("osd_recovery_max_active", "osd_max_backfills", "osd_recovery_sleep",
                 "osd_mclock_override_recovery_settings", "osd_mclock_profile")
THROTTLE_AT = 1.0   # of the budget. At 0.9 (brake.WATCH_AT) the sweep (ceph-recovery-bench
                    # --sweep) took up to 14 % longer to all PGs active (500 hosts x 64 GiB)
                    # and two "<= 1.2 x oracle" checks failed; at 1.0 at most 8 % and none,
                    # with the same effect on tests/sim/test_throttle.py's tight cell: a slower
                    # recovery holds the history memory longer, so throttle only when needed
RELEASE_AT = WATCH_AT   # 10 % of the budget below, so that a host hovering at the line does
                        # not flip its OSDs' settings every tick (each flip is a config-db
                        # commit on the mons)


def key(osd_id: int, name: str) -> str:
    return "osd.%d %s" % (osd_id, name)


def _parse(k: str) -> Tuple[Optional[int], str]:
    who, _, name = k.partition(" ")
    num = who[4:] if who.startswith("osd.") else ""
    return (int(num) if num.isdigit() else None), name


def _tight(ctx: Context, budget: Budget, host: str, line: float) -> bool:
    hm = ctx.view.hostmem.get(host)
    return hm is not None and hm.mem_used > line * budget(host)


def _recovering(ours: AbstractSet[int], o: Optional[OsdState]) -> bool:
    """An OSD this run let boot (`ours`: booting or settling) that runs, is up and still has
    degraded PGs."""
    return o is not None and o.id in ours and o.up and \
        o.process != PROC_STOPPED and o.pgs_degraded > 0


def throttle(ctx: Context, budget: Budget, cols: Columns,
             saved_config: Mapping[str, Optional[str]],
             restoring: Mapping[str, Tuple[Optional[str], float]]) -> StageOut:
    """Release what no longer needs a throttle, then throttle the tight hosts' returning OSDs.
    Both move settings between the run's saved and restoring maps (records of the same
    names)."""
    if ctx.state not in ("new", "running", "paused"):
        return StageOut()
    ours = set(cols["booting"]) | set(cols["settling"])
    saved, pending = dict(saved_config), dict(restoring)
    acts = _release(ctx, budget, ours, saved, pending)
    if ctx.policies.throttle is not None:
        for host in ctx.view.scope_hosts():
            if not _tight(ctx, budget, host, THROTTLE_AT):
                continue
            for o in sorted(ctx.view.by_host.get(host, ()), key=lambda x: x.id):
                if _recovering(ours, o) and o.recovery_config is not None:
                    acts.extend(_apply(ctx, budget, o, saved, pending))
    if not acts:        # every change to the maps comes with its action
        return StageOut()
    return StageOut(actions=tuple(acts),
                    records=(("saved_config", saved), ("restoring", pending)))


def _apply(ctx: Context, budget: Budget, o: OsdState, saved: Dict[str, Optional[str]],
           pending: Dict[str, Tuple[Optional[str], float]]) -> List[Staged]:
    own = dict(o.recovery_config or ())
    hm = ctx.view.hostmem[o.host]
    acts: List[Staged] = []
    for name, value in ctx.policies.throttle(o):
        k = key(o.id, name)
        if name not in RECOVERY_KEYS or k in saved:
            continue
        saved[k] = before_value(pending, k, own.get(name))
        acts.append(("memory", SetConfig(who="osd.%d" % o.id, name=name, value=str(value),
                                         reason=(
            "%s at %s > %.0f %% of budget %s while osd.%d recovers (%d PGs degraded): "
            "throttle its recovery first (no ok-to-stop or tcmalloc needed)" % (
                o.host, fmt_bytes(hm.mem_used), THROTTLE_AT * 100, fmt_bytes(budget(o.host)),
                o.id, o.pgs_degraded)))))
    return acts


def _release(ctx: Context, budget: Budget, ours: AbstractSet[int],
             saved: Dict[str, Optional[str]],
             pending: Dict[str, Tuple[Optional[str], float]]) -> List[Staged]:
    acts: List[Staged] = []
    for k in sorted(saved):
        osd_id, name = _parse(k)
        if osd_id is None or name not in RECOVERY_KEYS:
            continue
        o = ctx.view.by_id.get(osd_id)
        if not _recovering(ours, o):
            why = "osd.%d no longer recovers" % osd_id
        elif not _tight(ctx, budget, o.host, RELEASE_AT):
            why = "%s back at or below %.0f %% of its budget" % (o.host, RELEASE_AT * 100)
        else:
            continue
        acts.append(("memory", restore_into(saved, pending, "osd.%d" % osd_id, name, saved[k],
                                            "%s: restore its recovery setting" % why,
                                            ctx.now)))
    return acts


def memory_eta(need: int, settling: Sequence[Tuple[int, int, float, float]], now: float,
               settle_max_s: float, shed: float = 0.0) -> Dict[str, Optional[float]]:
    """When a host waiting for memory may fit its next OSD. Pure.

    need      bytes the host's used memory must lose (used + the candidate's need - budget;
              <= 0: only the settling OSDs' reserves are in the way)
    settling  (rss, peak, peak_at, settling_since) of the host's settling OSDs: each has
              shrunk from its peak (reached at peak_at, Progress.grew_at) to rss since then
    shed      bytes/s the host's recovering OSDs shed besides (shrink.rate)
    Returns {"rate": bytes/s the host sheds (the measured rss decline of its settling OSDs),
             "eta_s": seconds until `need` is shed at that rate (0 when need <= 0, None when
             nothing sheds), "latest_s": seconds until the last of them stops settling at
             the latest (settle_max_s after it began; then its reserve frees and it is
             restartable), None without settling OSDs}."""
    rate = float(shed)
    for rss, peak, peak_at, _since in settling:
        if rss < peak and now > peak_at:
            rate += (peak - rss) / (now - peak_at)
    latest = max((since + settle_max_s - now for _r, _p, _a, since in settling), default=None)
    if latest is not None:
        latest = max(0.0, latest)
    eta = 0.0 if need <= 0 else (need / rate if rate > 0 else None)
    return {"rate": rate, "eta_s": eta, "latest_s": latest}


def _eta_text(e: Dict[str, Optional[float]]) -> str:
    parts = []
    if e["eta_s"] is not None and e["rate"]:
        parts.append("ETA ~%.0f s at the measured shrink of %s/s" % (
            e["eta_s"], fmt_bytes(e["rate"])))
    elif e["eta_s"] == 0:
        parts.append("fits once they settle")
    else:
        parts.append("no shrink measured yet")
    if e["latest_s"] is not None:
        parts.append("they settle within %.0f s at the latest" % e["latest_s"])
    return ", ".join(parts)


def report_waits(ctx: Context, cols: Columns, hosts_summary: Mapping[str, dict],
                 settle_max_s: float, acted: Sequence[str]) -> StageOut:
    """For every host whose next OSD waits for memory with nothing in flight and nothing
    released or restarted there this tick (`acted`: hosts with a memory action), say in the
    summary (reasons, hosts[h]["waiting_for"] and ["eta_s"]: the shrink ETA, else the
    latest the settling ends, None when neither is known) what it waits for and when."""
    v, settling = ctx.view, cols["settling"]
    summary = dict(hosts_summary)
    reasons = []
    for host, hs in sorted(hosts_summary.items()):
        if hs.get("waiting_on") != "memory" or hs.get("in_flight") or host in acted or \
                hs.get("predicted") is None or hs.get("used") is None:
            continue
        nxt = v.by_id.get(hs.get("next_osd"))
        if nxt is None:
            continue
        ids = sorted(x for x in settling if v.host_of(x) == host)
        rows = [(v.by_id[x].rss_bytes, cols["peaks"].get(x, 0),
                 cols["grew_at"].get(x, settling[x]), settling[x]) for x in ids
                if x in v.by_id]
        need = hs["used"] + max(0, hs["predicted"] - nxt.rss_bytes) - hs["budget"]
        rec = shrink.recovering(ctx, cols, host)
        e = memory_eta(need, rows, ctx.now, settle_max_s, shrink.rate(rec, ctx.now))
        hs = summary[host] = dict(hs)
        hs["eta_s"] = e["eta_s"] if e["eta_s"] else e["latest_s"]
        what = " and ".join(
            ["%s osd.%s" % (kind, ",".join(str(x) for x in xs)) for kind, xs in (
                ("settling", ids), ("recovering", [r[0] for r in rec])) if xs]) or \
            "memory to be freed (nothing settles or can be released)"
        hs["waiting_for"] = what
        reasons.append("%s waits for %s to fit osd.%d (needs %s more): %s" % (
            host, what, nxt.id, fmt_bytes(max(0, need)), _eta_text(e) if ids or rec else
            "no ETA"))
    if not reasons:
        return StageOut()
    return StageOut(reasons=tuple(reasons), records=(("hosts_summary", summary),))
