"""A run's warm-up: until predictions are shaped by real peaks, one start in flight per host is
charged its plain prediction and the starts beside it a margin (admission.py).

Each function reads the run's budget state (Progress.budget_state, autobudget.py), the count
of observations of real peaks (Predictor.final_observations) and, for concurrency, the slots
per host (Context.slots).
"""
from __future__ import annotations

from .model import BUDGET_RAISED, BUDGET_VALIDATED
from .predict import WARMUP_OBSERVATIONS

WARMUP_MARGIN = 1.7         # below WARMUP_OBSERVATIONS (predict.py) a start beside another in
                            # flight on its host, and the OSDs in flight and settling
                            # beside it, are charged prediction x this: the worst measured
                            # under-prediction of a prediction no real peak shaped (simulator,
                            # one rack down 1 h: peaks 6.1-6.6 GiB on predictions 3.9-4.9 GiB,
                            # 6.6 / 3.9 = 1.69; docs/memory-model.md "Auto concurrency holds
                            # the budget"; lab: 2.7 x the load where 2 x was assumed, 1.35)


def concurrency(budget_state: str, final_observations: int, slots: int) -> int:
    """Starts in flight per host charged their plain prediction (and restarts allowed
    beside them): 1 until warmed_up(), then `slots` (Context.slots). Starts beyond it, up to
    `slots`, are charged margin() (admission.py). Lower bounds do not open it (load floors,
    peaks so far of OSDs still settling, even those already past a peak: the first to pass
    theirs missed the least history): every start admitted on a prediction that only lower
    bounds shaped adds its under-prediction to the host (simulator, one rack down 1 h:
    1.14 x the budget at 1,200 OSDs when load floors opened it, 1.06 when past peaks did;
    0.93 with real peaks, and faster)."""
    if not warmed_up(budget_state, final_observations):
        return 1
    return slots


def margin(budget_state: str, final_observations: int) -> float:
    """The factor on predictions that charges a start beyond concurrency() (until
    warmed_up(), WARMUP_MARGIN): more starts per host
    when memory admits them with that margin, instead of one until three starts settled
    (simulator, one rack down 1 h, 30 hosts, seed 1, all PGs active: 64 GiB 715 -> 230 s,
    48 GiB 1,090 -> 805 s, 44 GiB 1,215 -> 1,065 s, failed hosts' peak <= 0.93 x the
    budget; with a margin of 1.0 the 44 GiB cell peaked at 1.18 x the budget). 1.0 once
    warmed_up()."""
    if not warmed_up(budget_state, final_observations):
        return WARMUP_MARGIN
    return 1.0


def warmed_up(budget_state: str, final_observations: int) -> bool:
    """Predictions are shaped by real peaks: WARMUP_OBSERVATIONS settled starts are known
    (`final_observations`), or this run's auto budget was raised, or its fixed one validated
    (autobudget.py: AUTO_EVIDENCE OSDs it let boot are past their peaks, each within the peak
    its start was admitted on, and none outgrew its prediction on a host or failed a start; a
    budget held later ends this again). Settling takes minutes
    (inflight.SETTLE_QUIET_S); peaks within their predictions show the same sooner
    (measured in docs/memory-model.md, "Staged starts: a host's OSDs peer in turn")."""
    return budget_state in (BUDGET_RAISED, BUDGET_VALIDATED) or \
        final_observations >= WARMUP_OBSERVATIONS
