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

from typing import Dict, List

from .actions import SetConfig
from .model import OsdState
from .decision import Decision, fmt_bytes
from .restore import before_value, restore_config

MEMORY_TARGET = "osd_memory_target"
DEFAULT_TARGET = 4 << 30        # Ceph's osd_memory_target default
MIN_TARGET = 896 << 20          # the option's minimum (16.2.15 refuses less)
TARGET_RSS_RATIO = 1.1          # RSS runs above the target (docs/design.md: up to 20 %)
BLIND_RSS_RATIO = 1.2           # the same without tcmalloc: nothing trims caches for history


def key(osd_id: int) -> str:
    return "osd.%d %s" % (osd_id, MEMORY_TARGET)


def _target(o: OsdState) -> int:
    return o.memory_target or DEFAULT_TARGET


def _base(t: Decision, host: str) -> int:
    hm = t.ctx.view.hostmem[host]
    return max(0, hm.mem_used - sum(o.rss_bytes for o in t.ctx.view.by_host.get(host, ())))


def lower_targets(t: Decision) -> None:
    """First tick of a run (and while it runs): lower the target on constrained hosts."""
    down = {c.id for c in t.ctx.view.candidates}
    for host in t.ctx.view.scope_hosts():
        if host not in t.ctx.view.hostmem:
            continue
        osds = t.ctx.view.by_host.get(host, [])
        cands = [o for o in osds if o.id in down]
        if not cands:
            continue
        room = t.budget(host) - _base(t, host) - max(t.predictor.predict(o.id) for o in cands)
        ratio = TARGET_RSS_RATIO if all(o.heap_release is True for o in osds) else BLIND_RSS_RATIO
        want = max(MIN_TARGET, int(room / len(osds) / ratio))
        for o in osds:
            if o.memory_target is None or key(o.id) in t.saved_config or want >= _target(o):
                continue
            t.saved_config[key(o.id)] = before_value(
                t.restoring, key(o.id), str(o.memory_target) if o.memory_target else None)
            t.emit("flags", SetConfig(who="osd.%d" % o.id, name=MEMORY_TARGET, value=str(want),
                                      reason="%s: %d OSDs x %s do not leave room for the next "
                                      "start in budget %s: caches trimmed for the run" % (
                                          host, len(osds), fmt_bytes(_target(o)),
                                          fmt_bytes(t.budget(host)))))


def restore_settings(t: Decision, why: str) -> None:
    """RestoreConfig for every setting this run changed, except those a host cannot hold."""
    kept: Dict[str, List[str]] = {}
    for k in sorted(t.saved_config):
        who, name = k.split(" ", 1)
        before = t.saved_config[k]
        o = t.ctx.view.by_id.get(int(who[4:])) if who.startswith("osd.") else None
        if o is not None and name == MEMORY_TARGET and not _fits(t, o.host, before):
            kept.setdefault(o.host, []).append(who)
            continue
        restore_config(t, who, name, before, "tail", (
            "%s: restore the setting saved at start" % why) + _until_restart(o, name))
    for host, whos in sorted(kept.items()):
        t.health("RECOVERY_SETTING_KEPT", "%s: %s kept lowered on %s: %d OSDs at the restored "
                 "target would not fit the host's RAM (restore by hand: ceph config rm "
                 "<osd> %s)" % (host, MEMORY_TARGET, ", ".join(whos),
                                len(t.ctx.view.by_host.get(host, ())), MEMORY_TARGET),
                 count=len(whos))


def _until_restart(o, name: str) -> str:
    """What a restored target does not undo without tcmalloc (module docstring)."""
    if o is None or name != MEMORY_TARGET or o.heap_release is True:
        return ""
    if o.heap_release is False:
        return " (no tcmalloc: caches sized at its start stay so until its next start)"
    return " (if built without tcmalloc, caches sized at its start stay so until its next start)"


def _fits(t: Decision, host: str, before) -> bool:
    hm = t.ctx.view.hostmem.get(host)
    if hm is None:
        return True
    target = int(before) if before else DEFAULT_TARGET
    n = len(t.ctx.view.by_host.get(host, ()))
    return _base(t, host) + n * target * TARGET_RSS_RATIO <= hm.mem_total
