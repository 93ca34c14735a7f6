"""The pinned policy signatures and the `Policies` bundle plan() receives.

plan() depends on these types only, never on the concrete policies (an import-linter contract
forbids `ceph_recovery.plan` -> `ceph_recovery.policies`). Concrete policies live in
`ceph_recovery.policies` (registries of plain functions); `ceph_recovery.policies.resolve(intent)`
builds a `Policies` from the names in an `Intent`.

Signatures (every policy is a pure, deterministic function that mutates nothing):

  start_order(candidates: Sequence[OsdState], snapshot: Snapshot) -> list[OsdState]
      the same OSDs, in the order they should start (a permutation of `candidates`)
  budget(host: HostMem, budget: Budget) -> int
      bytes of `host.mem_used` allowed on this host (>= 0)
  footprint(osd: OsdState, observations: Sequence[Observation], now: float) -> int
      predicted peak RSS in bytes of this OSD from process start until its PGs are active (> 0);
      a footprint function with the attribute `takes_running_rss = True` is also passed
      running_rss=: the largest rss of the cluster's up OSDs the run did not start (None: none),
      the cluster's own size for its prior
  over_budget(host, osds_on_host, snapshot, progress, intent, now) -> Optional[Action]
      one of HeapRelease / QueryOkToStop / RestartOsd / Wait, or None (nothing helps)
  throttle(osd: OsdState) -> tuple[tuple[str, str], ...]
      the recovery settings ((name, value), ...) to set on a returning OSD that still recovers
      on a host near its budget (ceph_recovery.throttle); () changes nothing. Optional in the
      bundle: None = the run changes no recovery setting
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

from .actions import Action
from .model import Budget, HostMem, Intent, Observation, OsdState, Progress, Snapshot

StartOrderFn = Callable[[Sequence[OsdState], Snapshot], List[OsdState]]
BudgetFn = Callable[[HostMem, Budget], int]
FootprintFn = Callable[[OsdState, Sequence[Observation], float], int]
OverBudgetFn = Callable[[HostMem, Sequence[OsdState], Snapshot, Progress, Intent, float],
                        Optional[Action]]
ThrottleFn = Callable[[OsdState], Tuple[Tuple[str, str], ...]]

POLICY_KINDS = ("start_order", "budget", "footprint", "over_budget")


@dataclass(frozen=True)
class Policies:
    """The four policy callables of one run, plus the names they were resolved from."""

    start_order: StartOrderFn
    budget: BudgetFn
    footprint: FootprintFn
    over_budget: OverBudgetFn
    names: tuple = ()          # (start_order, budget, footprint, over_budget) names, for status
    throttle: Optional[ThrottleFn] = None   # None: no recovery setting is changed
