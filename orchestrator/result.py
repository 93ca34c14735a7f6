"""PlanResult: what plan() returns (also unpacks as a 4-tuple)."""
from __future__ import annotations

from typing import NamedTuple, Tuple

from .actions import Action
from .model import HealthCheck, Progress


class PlanResult(NamedTuple):
    """Ordered actions, the new progress, health checks and a JSON-able status summary.

    `actions, progress, health, summary = plan(...)` works (NamedTuple)."""

    actions: Tuple[Action, ...]
    progress: Progress
    health: Tuple[HealthCheck, ...]
    summary: dict
