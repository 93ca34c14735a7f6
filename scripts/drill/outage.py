"""What a drill fails and the budget it fits, from the lab's state and the module's dry run:
the failed hosts of `--fail`, the budget of `--fit-first` / `--fit-restart`.

Pure functions of the drill's client (moduledrill.py), kept out of runner.py, which calls that
client: imports flow one way (runner -> moduledrill -> outage), never back.
"""
from __future__ import annotations

from typing import Any, Dict, List

# --fit-first: the failed hosts' cgroup limit is the budget / this share (the rest is room for
# the growth the module can only answer a report and a tick later; see the memory drill test)
FIT_BUDGET_SHARE = 0.9


def failed_hosts(state: Dict[str, Any], fail: str) -> List[str]:
    kind, _, name = fail.partition(":")
    if kind == "host" and name in state["hosts"]:
        return [name]
    if kind == "rack":
        hosts = sorted(h for h, v in state["hosts"].items() if v.get("rack") == name)
        if hosts:
            return hosts
    raise ValueError("--fail %r names no lab host or rack (hosts: %s, racks: %s)" % (
        fail, sorted(state["hosts"]), sorted({v.get("rack") for v in state["hosts"].values()})))


def fitted_budget(preview: Dict[str, Any], hosts: List[str], factor: float,
                  restart: bool = False) -> Dict[str, Any]:
    """The tightest budget the module accepts for one OSD at a time: factor x the peak the
    module itself predicts (its dry run, with what it has learned) for the first OSD it would
    start on the failed hosts; their cgroups limited to that budget / FIT_BUDGET_SHARE.
    With `restart` (--fit-restart): the prediction for the second OSD of that host + factor x
    the first's, the largest over the failed hosts. With a factor between what a restarted
    OSD comes back at and what it settles at (as fractions of its predicted peak) the second
    start fits only once the first was restarted: the over-budget path runs on purpose."""
    planned: Dict[str, List[int]] = {}
    for e in preview.get("order") or []:
        if e["host"] in hosts:
            planned.setdefault(e["host"], []).append(int(e["predicted_bytes"]))
    fit: Dict[str, Any] = {}
    if restart:
        pairs = [(p[0], p[1]) for p in planned.values() if len(p) > 1]
        if not pairs:
            raise RuntimeError("--fit-restart: the dry run plans no second start on %s"
                               % ", ".join(hosts))
        budget, first, second = max((int(s + factor * f), f, s) for f, s in pairs)
        fit["predicted_second_bytes"] = second
    else:
        if not planned:
            raise RuntimeError("--fit-first: the dry run plans no start on %s"
                               % ", ".join(hosts))
        first = max(p[0] for p in planned.values())
        budget = int(factor * first)
    fit.update(factor=factor, predicted_first_bytes=first, budget_bytes=budget,
               host_mem_limit=int(budget / FIT_BUDGET_SHARE))
    return fit
