"""What a stage function returns: a value plan() applies to the call's Decision in order.

A stage function reads the call's Context and the records it is given, changes nothing, and
returns a StageOut:
  actions  (stage name, action) in the order it made them; the stage name is one of
           decision.STAGES, which fixes where the action lands in the returned list
  health   (check code, detail line, count) in the order it made them
  reasons  lines for the summary's "reasons", in the order it made them
  records  (record name, its new value): the Decision attribute it replaces (a set or dict
           record is updated in place, so every view of it stays the one object)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Tuple

from .actions import Action

Staged = Tuple[str, Action]
Health = Tuple[str, str, int]
Budget = Callable[[str], int]     # a host's memory budget in bytes (Decision.budget)


@dataclass(frozen=True)
class StageOut:
    actions: Tuple[Staged, ...] = ()
    health: Tuple[Health, ...] = ()
    reasons: Tuple[str, ...] = ()
    records: Tuple[Tuple[str, Any], ...] = ()


def join(*outs: StageOut) -> StageOut:
    """One StageOut that applies as `outs` applied in turn (a later record replaces an
    earlier one of the same name)."""
    return StageOut(actions=tuple(x for o in outs for x in o.actions),
                    health=tuple(x for o in outs for x in o.health),
                    reasons=tuple(x for o in outs for x in o.reasons),
                    records=tuple(x for o in outs for x in o.records))


def put(column: Mapping[int, Any], osd: int, value: Any) -> Dict[int, Any]:
    """A column's new value with `osd` set to `value` (its place kept where it was set)."""
    out = dict(column)
    out[osd] = value
    return out
