"""What one plan() call reads and never changes: its arguments, the view derived from them, and
the run state it decided on. A frozen value; the call's mutable part (the run's records, the
health lines and actions it makes) is the Decision (decision.py) built beside it.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import AbstractSet, Dict, Optional

from .dups import find_suspects
from .membership import up_ids
from .model import Intent, Progress, Snapshot
from .policy_types import Policies
from .view import View

AUTO_SLOTS = 1 << 16        # CONCURRENCY_AUTO: no slot count, memory admission decides


@dataclass(frozen=True)
class Context:
    """One plan() call's inputs. `progress` is the progress the call starts from (a new run's
    fresh progress, view.begin_run); `state` is "new" | "running" | "paused" | "abort", or
    None outside a run."""
    snapshot: Snapshot
    intent: Intent
    progress: Progress
    policies: Policies
    now: float
    view: View
    state: Optional[str]

    def slots(self) -> int:
        """Starts allowed in flight per host at all: intent.concurrency, AUTO_SLOTS for
        CONCURRENCY_AUTO. Those beyond warmup.concurrency are charged warmup.margin
        (admission.py)."""
        return self.intent.concurrency or AUTO_SLOTS

    # answers read from the inputs alone, computed once per call on first use (cached_property
    # writes the instance's own __dict__, which a frozen dataclass allows)
    @cached_property
    def up(self) -> AbstractSet[int]:
        """The OSDs up in this snapshot (membership.stop_breaks counts PG members against it)."""
        return up_ids(self.view.by_id)

    @cached_property
    def dups_suspects(self) -> Dict[int, str]:
        """Every OSD of the snapshot with a sign of inflated PG log dups -> why (dups.py)."""
        return find_suspects(self.snapshot.osds)


def context(snapshot: Snapshot, intent: Intent, progress: Progress, policies: Policies,
            now: float, state: Optional[str]) -> Context:
    """The call's Context, its view read from the same arguments."""
    return Context(snapshot, intent, progress, policies, now,
                   View(snapshot, intent, progress, now), state)
