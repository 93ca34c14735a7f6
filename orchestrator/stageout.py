"""What a stage function returns: a value plan() applies to the call's Decision in order.

A stage function reads the call's Context and the records it is given, changes nothing, and
returns a StageOut:
  actions  (stage name, action) in the order it made them; the stage name is one of
           decision.STAGES, which fixes where the action lands in the returned list
  health   (check code, detail line, count) in the order it made them
  reasons  lines for the summary's "reasons", in the order it made them
  records  (record name, its new value): the Decision attribute it replaces (a set, dict or
           list record is updated in place, so every view of it stays the one object)
  learned  True where the records change what the Predictor learns from (an observation, a
           load): the predictions it made earlier in the call are made again
           (Predictor.learning_changed), once the records are applied
A stage that makes several decisions in turn, each reading what the earlier ones recorded
(the Predictor's learning among them), yields them: the driver applies each before it asks
for the next (Decision.apply_each).
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
    learned: bool = False


def join(*outs: StageOut) -> StageOut:
    """One StageOut that applies as `outs` applied in turn (a later record replaces an
    earlier one of the same name)."""
    return StageOut(actions=tuple(x for o in outs for x in o.actions),
                    health=tuple(x for o in outs for x in o.health),
                    reasons=tuple(x for o in outs for x in o.reasons),
                    records=tuple(x for o in outs for x in o.records),
                    learned=any(o.learned for o in outs))


def put(column: Mapping[int, Any], osd: int, value: Any) -> Dict[int, Any]:
    """A column's new value with `osd` set to `value` (its place kept where it was set)."""
    out = dict(column)
    out[osd] = value
    return out


def drop(column: Mapping[int, Any], osd: int) -> Dict[int, Any]:
    """A column's new value without `osd` (the others in their places)."""
    return {k: v for k, v in column.items() if k != osd}


def cleared(cols: Mapping[str, Mapping[int, Any]], osd: int,
            names: Tuple[str, ...]) -> Tuple[Tuple[str, Any], ...]:
    """The records that forget `osd` in the `names` columns of `cols` (those that hold it)."""
    return tuple((n, drop(cols[n], osd)) for n in names if osd in cols[n])
