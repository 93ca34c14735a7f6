"""The pictures and text blocks of `ceph-recovery-bench report`, each drawn from its JSON."""
from __future__ import annotations

from typing import Any, Dict

from ..drill import report as drill_report
from . import report as sweep_report

STRATEGIES = ("naive", "serial", "controlled", "unlimited")


def bench(doc: Dict[str, Any], path: str) -> None:
    """Per size and strategy: time to all PGs active (log scale; a run that never got there
    is a hatched bar at the horizon) and peak host memory / budget (the budget at 1.0)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = doc["runs"]
    sizes = sorted({r["osds"] for r in runs})
    names = [s for s in STRATEGIES if any(r["strategy"] == s for r in runs)]
    by = {(r["osds"], r["strategy"]): r for r in runs}
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    width = 0.8 / max(1, len(names))
    for k, name in enumerate(names):
        xs = [i + (k - (len(names) - 1) / 2) * width for i in range(len(sizes))]
        got = [by.get((n, name)) for n in sizes]
        times = [(r or {}).get("time_to_all_pgs_active_s") for r in got]
        horizon = [(r or {}).get("horizon_s") or 1 for r in got]
        bars = ax1.bar(xs, [t if t is not None else h for t, h in zip(times, horizon)], width,
                       label=name)
        for bar, t in zip(bars, times):
            if t is None:
                bar.set_hatch("//")
                bar.set_alpha(0.4)
        ax2.bar(xs, [(r or {}).get("peak_host_mem_over_budget", 0) for r in got], width,
                label=name, color=bars[0].get_facecolor()[:3])
    ax1.set_yscale("log")
    ax1.set_ylabel("all PGs active (sim s, log)\nhatched: never")
    ax1.legend(fontsize=8, ncol=len(names))
    ax2.axhline(1.0, color="k", linestyle="--", linewidth=0.8)
    ax2.set_ylabel("peak host memory / budget")
    ax2.set_xticks(range(len(sizes)), ["%d OSDs" % n for n in sizes])
    ax1.set_title("One rack down 1 h, then power returns (ceph-recovery-bench)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def drill_timeline(timeline: Dict[str, Any], path: str) -> None:
    drill_report.draw(timeline, path)


def sweep_text(doc: Dict[str, Any]) -> str:
    return sweep_report.sweep_text(doc)


def sweep_heatmap(doc: Dict[str, Any], path: str) -> None:
    sweep_report.heatmap(doc["rows"], path)
