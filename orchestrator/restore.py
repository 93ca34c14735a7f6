"""Confirmed restores: what a run changed is forgotten only once the cluster shows it back.

Rules:
- a RestoreConfig (settings.py, throttle.py) moves its key from Progress.saved_config to
  Progress.restoring with the value to restore and when it was sent; an UnsetFlag of a run
  flag puts the flag in Progress.restoring_flags. Nothing is dropped when the action goes out:
  the mon may refuse it (a cap, a mon out of quorum, a command timeout).
- confirmed: the snapshot shows the value back (the OSD's own setting in `config dump`: the
  value, or none set for a restore to None; the flag absent from the OSD map's flags). Only
  then is the entry dropped.
- until confirmed, the restore is sent again every RESTORE_RETRY_S, whatever the run's phase
  (also long after it ended), and from the tick after the first send RECOVERY_RESTORE_PENDING
  names each entry with the command that clears it by hand.
- a setting whose OSD is gone from the map, or whose value the snapshot cannot tell (`config
  dump` unread), stays pending: unknown is not confirmed.
- a new run never adopts a pending restore as the operator's own: it takes the entry back
  (the value to restore becomes its saved value, the flag one it set itself), so its own end
  restores what was there before the earlier run.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, List, Mapping, Optional, Tuple

from .actions import RestoreConfig, UnsetFlag
from .context import Context
from .stageout import Health, Staged, StageOut

RESTORE_RETRY_S = 30.0
MEMORY_TARGET = "osd_memory_target"
PENDING = "RECOVERY_RESTORE_PENDING"


def restore_into(saved_config: Dict[str, Optional[str]],
                 restoring: Dict[str, Tuple[Optional[str], float]], who: str, name: str,
                 value: Optional[str], reason: str, now: float) -> RestoreConfig:
    """The RestoreConfig of `who name`, its key moved from `saved_config` to `restoring`
    (both updated here: the caller's own maps), pending until the snapshot confirms it."""
    saved_config.pop("%s %s" % (who, name), None)
    restoring["%s %s" % (who, name)] = (value, now)
    return RestoreConfig(who=who, name=name, value=value, reason=reason)


def unset_flag(ctx: Context, restoring_flags: Mapping[str, float], flag: str,
               reason: str) -> StageOut:
    """An UnsetFlag of a run flag, pending (the restoring_flags record) until the OSD map
    shows it gone."""
    pending = dict(restoring_flags)
    pending[flag] = ctx.now
    return StageOut(actions=(("tail", UnsetFlag(flag=flag, reason=reason)),),
                    records=(("restoring_flags", pending),))


def current(ctx: Context, who: str, name: str):
    """(known, value) of an OSD's own setting in this snapshot: value None = none set."""
    o = ctx.view.by_id.get(int(who[4:])) if who.startswith("osd.") and who[4:].isdigit() else None
    if o is None:
        return False, None
    if name == MEMORY_TARGET:
        if o.memory_target is None:
            return False, None
        return True, (str(o.memory_target) if o.memory_target else None)
    if o.recovery_config is None:
        return False, None
    return True, dict(o.recovery_config).get(name)


def _same(value: Optional[str], now_value: Optional[str]) -> bool:
    if value is None or now_value is None:
        return value is now_value
    try:
        return float(value) == float(now_value)
    except ValueError:
        return value == now_value


def confirm(ctx: Context, restoring: Mapping[str, Tuple[Optional[str], float]],
            restoring_flags: Mapping[str, float]) -> StageOut:
    """Every tick: drop confirmed restores, resend the others every RESTORE_RETRY_S, and name
    them in RECOVERY_RESTORE_PENDING (`restoring`: "who name" -> (value, sent);
    `restoring_flags`: flag -> sent)."""
    configs, flags = dict(restoring), dict(restoring_flags)
    acts: List[Staged] = []
    lines: List[Health] = []
    for k in sorted(restoring):
        value, sent = restoring[k]
        who, name = k.split(" ", 1)
        known, now_value = current(ctx, who, name)
        if known and _same(value, now_value):
            del configs[k]
            continue
        if ctx.now - sent >= RESTORE_RETRY_S:
            acts.append(("tail", RestoreConfig(who=who, name=name, value=value, reason=(
                "restore still not seen in the config (sent %.0fs ago): again"
                % (ctx.now - sent)))))
            configs[k] = (value, ctx.now)
        if ctx.now > sent:
            clear = ("ceph config rm %s %s" % (who, name) if value is None else
                     "ceph config set %s %s %s" % (who, name, value))
            lines.append((PENDING, "%s %s: restore to %s not confirmed (%s); by hand: %s" % (
                who, name, "its default" if value is None else value,
                "now %s" % now_value if known else "value unknown", clear), 1))
    for f in sorted(restoring_flags):
        sent = restoring_flags[f]
        if f not in ctx.snapshot.cluster_flags:
            del flags[f]
            continue
        if ctx.now - sent >= RESTORE_RETRY_S:
            acts.append(("tail", UnsetFlag(flag=f, reason="flag %s the run set still set %.0fs "
                                           "after its unset: again" % (f, ctx.now - sent))))
            flags[f] = ctx.now
        if ctx.now > sent:
            lines.append((PENDING, "cluster flag %s: unset not confirmed; by hand: ceph osd "
                          "unset %s" % (f, f), 1))
    return StageOut(actions=tuple(acts), health=tuple(lines),
                    records=(("restoring", configs), ("restoring_flags", flags)))


def adopt(saved_config: Mapping[str, Optional[str]],
          restoring: Mapping[str, Tuple[Optional[str], float]],
          saved_flags: Optional[FrozenSet[str]],
          restoring_flags: Mapping[str, float]) -> StageOut:
    """A new run takes over what an earlier run has not restored yet (module docstring)."""
    saved = dict(saved_config)
    for k, (value, _sent) in sorted(restoring.items()):
        saved.setdefault(k, value)
    if saved_flags is not None:
        saved_flags = frozenset(saved_flags) - frozenset(restoring_flags)
    return StageOut(records=(("saved_config", saved), ("restoring", {}),
                             ("saved_flags", saved_flags), ("restoring_flags", {})))


def before_value(restoring: Dict[str, Tuple[Optional[str], float]], k: str,
                 current_value: Optional[str]) -> Optional[str]:
    """The value to record before changing setting `k` again: a restore still pending is
    what was there before the run (the snapshot's value may still be the run's own); it
    leaves `restoring` (the caller's own map)."""
    if k in restoring:
        return restoring.pop(k)[0]
    return current_value
