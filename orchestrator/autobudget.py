"""`--budget auto` (the default): the budget rises from 0.9 to 0.95 of each host's RAM (or
cgroup limit) once this run's own starts show that their predictions hold.

Rules (Progress.budget_state, persisted, so a failover keeps what the run learnt):
- "" (not raised): Budget.value of the RAM, 0.9 by default (model.DEFAULT_BUDGET_FRACTION:
  the room above it holds one tick of growth of an OSD that outgrows its prediction,
  model.KERNEL_HEADROOM).
- "raised": AUTO_RAISED_FRACTION (0.95) once at least AUTO_EVIDENCE OSDs this run let boot
  are past their peak (reserve.past_peak), each at or below the peak its start was
  admitted on (Predictor.admitted_peak), and nothing holds it (below). Where predictions hold,
  what the room above the budget must hold is what an OSD grows past its prediction within
  one tick, and none did.
  The same evidence ends the warm-up of concurrency auto (warmup.warmed_up: starts beside
  others on their plain predictions), before any start settled.
- "held": once this run's OSDs on one host together grew past the peaks their starts were
  admitted on by more than AUTO_OUTGROWTH_SHARE of the room above the raised budget
  (outgrown), or at the first failed start (a start that died, or that the brake stopped),
  the budget goes back to (or stays at) Budget.value for the rest of the run: predictions
  that failed on this cluster by that much are reason enough to keep the full room.
A fixed budget (`--budget 90%`, `--budget 24G`) follows the same rules without moving: its
state becomes "validated" where an auto budget's is raised (warmup.warmed_up: concurrency
auto's warm-up margin goes), and "held" where an auto one is held (the margin stays).
Measured (simulator, the hosts x RAM sweep, seeds 1-3; docs/memory-model.md "The budget rises
where predictions hold"): failing lines 9 -> 5, the sum of the times to all PGs active -10 %,
0 OOM kills, also without tcmalloc and with peering 4x faster.
"""
from __future__ import annotations

from typing import Dict, List

from .context import Context
from .reserve import past_peak
from .decision import fmt_bytes
from .predict import Predictor
from .stageout import StageOut
from .model import (AUTO_RAISED_FRACTION, BUDGET_AUTO, BUDGET_HELD, BUDGET_RAISED,
                    BUDGET_VALIDATED, Columns)

AUTO_EVIDENCE = 3      # OSDs past their peak within their predictions before the raise
AUTO_OUTGROWTH_SHARE = 0.5   # of the room above a raised budget (5 % of RAM): OSDs of a host
                             # grown past their predictions by more hold the budget at its base


def _ours(ctx: Context, cols: Columns) -> List:
    ids = set(cols["booting"]) | set(cols["settling"])
    return [ctx.view.by_id[x] for x in sorted(ids) if x in ctx.view.by_id]


def outgrown(ctx: Context, predictor: Predictor, cols: Columns) -> List[str]:
    """Hosts where this run's OSDs (booting or settling) together grew past the peaks their
    starts were admitted on by more than AUTO_OUTGROWTH_SHARE of the room above a raised
    budget: that room holds one tick of growth past a prediction."""
    over: Dict[str, int] = {}
    peaks = cols["peaks"]
    for o in _ours(ctx, cols):
        top = max(peaks.get(o.id, 0), o.rss_bytes)
        # admitted_peak >= load_bound: nothing outgrown, and the footprint policy is not
        # asked (plan()'s cost)
        if top <= predictor.load_bound(o.id):
            continue
        over[o.host] = over.get(o.host, 0) + max(0, top - predictor.admitted_peak(o))
    hostmem = ctx.view.hostmem
    return ["%s (%s past their predictions)" % (h, fmt_bytes(n)) for h, n in sorted(over.items())
            if h in hostmem and n > AUTO_OUTGROWTH_SHARE * (1.0 - AUTO_RAISED_FRACTION)
            * hostmem[h].cap]


def within(ctx: Context, predictor: Predictor, cols: Columns) -> List[int]:
    """OSDs of this run past their peak, that peak at or below the one admitted."""
    peaks = cols["peaks"]
    return [o.id for o in _ours(ctx, cols) if o.id in cols["settling"] and
            past_peak(predictor, peaks, o) and peaks.get(o.id, 0) <= predictor.admitted_peak(o)]


def update(ctx: Context, predictor: Predictor, cols: Columns, budget_state: str) -> StageOut:
    """The budget_state record moved by the rules above (once per tick, before any budget is
    used), and the reason that says so."""
    if ctx.state is None or budget_state == BUDGET_HELD:
        return StageOut()
    auto = ctx.intent.budget.kind == BUDGET_AUTO
    failed = sorted(x for x, n in cols["failures"].items() if n > 0)
    over = outgrown(ctx, predictor, cols)
    if failed or over:
        state = BUDGET_HELD
        note = "%s: %s" % ("held at %g%%" % (ctx.intent.budget.value * 100) if auto else
                           "warm-up margin kept", (
            "OSDs on %s" % over[0]) if over else (
            "osd.%d failed a start" % failed[0]))
    elif budget_state in (BUDGET_RAISED, BUDGET_VALIDATED):
        return StageOut()
    else:
        ok = within(ctx, predictor, cols)
        if len(ok) < AUTO_EVIDENCE:
            return StageOut()
        state = BUDGET_RAISED if auto else BUDGET_VALIDATED
        note = "%s: osd.%s peaked within their predictions" % (
            "raised to %g%%" % (AUTO_RAISED_FRACTION * 100) if auto else
            "predictions validated, warm-up margin off",
            ", osd.".join(str(x) for x in ok[:AUTO_EVIDENCE]))
    return StageOut(reasons=("budget %s %s" % (ctx.intent.budget.kind, note),),
                    records=(("budget_state", state),))
