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
from typing import Any, Callable, Tuple

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
