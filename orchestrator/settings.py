"""Settings a run changes for its duration, and their restore: the osd_memory_target lever.

Rule (a constrained host): when the OSDs of a host, each at its osd_memory_target, plus the
largest predicted peak among the host's candidates, do not fit the host's budget,

    n_osds x target x ratio + max predicted peak > budget - base

(base: the host's memory not held by OSD processes; ratio: TARGET_RSS_RATIO where every OSD
of the host is known to have tcmalloc, else BLIND_RSS_RATIO), the run lowers
osd_memory_target on every OSD of that host whose own setting is known (memory_target not
None: it is what the restore puts back) to

    (budget - base - max predicted peak) / n_osds / ratio,  at least MIN_TARGET.

The lowered target only sizes caches (docs/design.md: it cannot bound PG-log or peering
memory); it makes room for the settled OSDs so the next start fits. With tcmalloc
(heap_release True) the autotuner trims a running OSD's caches to it within a second. Without
tcmalloc (Debian's 16.2.15 build) the autotuner never runs: the cache budget is fixed when the
process starts, from the target it reads then (0.85 x target - osd_memory_base; lab: 2,714 MiB
at 4 GiB, 205 MiB after a restart at 1.2 GB, unchanged by a `config set` while it ran). So
there it sizes the OSDs this run starts or restarts after the SetConfig (the grants come in
the same tick, after it), and an OSD started under the lowered target keeps its smaller
caches after the restore until its next start.

Write-ahead: the value before (the OSD's own setting, None = it had none and inherits) is
recorded in Progress.saved_config in the same tick that emits SetConfig. At the end of the
run (done, ended, aborted) every recorded setting is restored with RestoreConfig (confirmed
against the next snapshots and sent again until it is: restore.py), except on a
host whose RAM cannot hold its OSDs at the restored target (n x target x ratio + base > RAM):
there the lowered value stays and RECOVERY_SETTING_KEPT names it (restoring it would have the
kernel kill OSDs once their caches refill).
"""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional, Tuple

from .actions import SetConfig
from .context import Context
from .model import OsdState
from .decision import fmt_bytes
from .predict import Predictor
from .restore import before_value, restore_into
from .stageout import Budget, StageOut

MEMORY_TARGET = "osd_memory_target"
DEFAULT_TARGET = 4 << 30        # Ceph's osd_memory_target default
MIN_TARGET = 896 << 20          # the option's minimum (16.2.15 refuses less)
TARGET_RSS_RATIO = 1.1          # RSS runs above the target (docs/design.md: up to 20 %)
BLIND_RSS_RATIO = 1.2           # the same without tcmalloc: nothing trims caches for history


def key(osd_id: int) -> str:
    return "osd.%d %s" % (osd_id, MEMORY_TARGET)


def _target(o: OsdState) -> int:
    return o.memory_target or DEFAULT_TARGET


def _base(ctx: Context, host: str) -> int:
    hm = ctx.view.hostmem[host]
    return max(0, hm.mem_used - sum(o.rss_bytes for o in ctx.view.by_host.get(host, ())))


def lower_targets(ctx: Context, predictor: Predictor, budget: Budget,
                  saved_config: Mapping[str, Optional[str]],
                  restoring: Mapping[str, Tuple[Optional[str], float]]) -> StageOut:
    """First tick of a run (and while it runs): lower the target on constrained hosts. The
    SetConfigs, and each value before recorded write-ahead (the saved_config record; a
    restore still pending leaves the restoring record, restore.before_value)."""
    saved, pending, acts = dict(saved_config), dict(restoring), []
    down = {c.id for c in ctx.view.candidates}
    for host in ctx.view.scope_hosts():
        if host not in ctx.view.hostmem:
            continue
        osds = ctx.view.by_host.get(host, [])
        cands = [o for o in osds if o.id in down]
        if not cands:
            continue
        room = budget(host) - _base(ctx, host) - max(predictor.predict(o.id) for o in cands)
        ratio = TARGET_RSS_RATIO if all(o.heap_release is True for o in osds) else BLIND_RSS_RATIO
        want = max(MIN_TARGET, int(room / len(osds) / ratio))
        for o in osds:
            if o.memory_target is None or key(o.id) in saved or want >= _target(o):
                continue
            saved[key(o.id)] = before_value(
                pending, key(o.id), str(o.memory_target) if o.memory_target else None)
            acts.append(("flags", SetConfig(
                who="osd.%d" % o.id, name=MEMORY_TARGET, value=str(want),
                reason="%s: %d OSDs x %s do not leave room for the next start in budget %s: "
                "caches trimmed for the run" % (host, len(osds), fmt_bytes(_target(o)),
                                                fmt_bytes(budget(host))))))
    if not acts:
        return StageOut()
    return StageOut(actions=tuple(acts), records=(("saved_config", saved),
                                                  ("restoring", pending)))


def restore_settings(ctx: Context, saved_config: Mapping[str, Optional[str]],
                     restoring: Mapping[str, Tuple[Optional[str], float]],
                     why: str) -> StageOut:
    """RestoreConfig for every setting this run changed (each key moves from the
    saved_config record to the restoring record, restore.restore_into), except those a host
    cannot hold."""
    saved, pending, acts = dict(saved_config), dict(restoring), []
    kept: Dict[str, List[str]] = {}
    for k in sorted(saved_config):
        who, name = k.split(" ", 1)
        before = saved_config[k]
        o = ctx.view.by_id.get(int(who[4:])) if who.startswith("osd.") else None
        if o is not None and name == MEMORY_TARGET and not _fits(ctx, o.host, before):
            kept.setdefault(o.host, []).append(who)
            continue
        acts.append(("tail", restore_into(saved, pending, who, name, before, (
            "%s: restore the setting saved at start" % why) + _until_restart(o, name),
            ctx.now)))
    health = tuple(("RECOVERY_SETTING_KEPT", "%s: %s kept lowered on %s: %d OSDs at the "
                    "restored target would not fit the host's RAM (restore by hand: ceph "
                    "config rm <osd> %s)" % (host, MEMORY_TARGET, ", ".join(whos),
                                             len(ctx.view.by_host.get(host, ())),
                                             MEMORY_TARGET), len(whos))
                   for host, whos in sorted(kept.items()))
    return StageOut(actions=tuple(acts), health=health,
                    records=(("saved_config", saved), ("restoring", pending)))


def _until_restart(o, name: str) -> str:
    """What a restored target does not undo without tcmalloc (module docstring)."""
    if o is None or name != MEMORY_TARGET or o.heap_release is True:
        return ""
    if o.heap_release is False:
        return " (no tcmalloc: caches sized at its start stay so until its next start)"
    return " (if built without tcmalloc, caches sized at its start stay so until its next start)"


def _fits(ctx: Context, host: str, before) -> bool:
    hm = ctx.view.hostmem.get(host)
    if hm is None:
        return True
    target = int(before) if before else DEFAULT_TARGET
    n = len(ctx.view.by_host.get(host, ()))
    return _base(ctx, host) + n * target * TARGET_RSS_RATIO <= hm.mem_total
