"""The policy registries and resolve(intent) -> Policies.

REGISTRY = {"start_order": {...}, "budget": {...}, "footprint": {...}, "over_budget": {...},
            "throttle": {...}}
Names come from the Intent: start_order, footprint, over_budget; the budget policy is named by
intent.budget.kind ("fraction" | "bytes"). The throttle policy is throttle.DEFAULT for every
run (the Intent has no name for it; a driver such as the simulator may replace it in the
bundle to compare runs without it).
"""
from __future__ import annotations

from typing import Callable, Dict

from ceph_recovery.model import Intent
from ceph_recovery.policy_types import Policies

from .budget import BUDGET
from .footprint import FOOTPRINT
from .over_budget import OVER_BUDGET
from .start_order import START_ORDER
from .throttle import DEFAULT as THROTTLE_DEFAULT, THROTTLE

REGISTRY: Dict[str, Dict[str, Callable]] = {
    "start_order": START_ORDER,
    "budget": BUDGET,
    "footprint": FOOTPRINT,
    "over_budget": OVER_BUDGET,
    "throttle": THROTTLE,
}


def pick(kind: str, name: str) -> Callable:
    """The policy `name` of registry `kind`; ValueError naming the known ones otherwise."""
    table = REGISTRY[kind]
    if name not in table:
        raise ValueError("unknown %s policy %r (known: %s)"
                         % (kind, name, ", ".join(sorted(table))))
    return table[name]


def resolve(intent: Intent) -> Policies:
    """The Policies bundle for an intent; ValueError naming the known policies otherwise."""
    names = (intent.start_order, intent.budget.kind, intent.footprint, intent.over_budget)
    return Policies(start_order=pick("start_order", names[0]), budget=pick("budget", names[1]),
                    footprint=pick("footprint", names[2]),
                    over_budget=pick("over_budget", names[3]), names=names,
                    throttle=THROTTLE[THROTTLE_DEFAULT])
