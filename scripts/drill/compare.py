"""The naive return beside the controlled start: two drill reports of the same host under the
same kind of memory limit, as one summary and one picture.

  ceph-recovery-drill compare --naive N.json --controlled C.json --out DIR

writes DIR/summary.json (one object per run: `naive`, `controlled`, each with oom_kills,
time_to_all_pgs_active_s, objects_written and objects_verified_ok, and what else the table
shows) and DIR/compare.png (each run's memory against its budget and limit, then OSDs up and
PGs active), and prints the side-by-side table. Exit 0 when both reports were read."""
from __future__ import annotations

import argparse
import json
import os
from typing import Any, Dict, List, Optional

from . import report

MiB = 1 << 20
RUNS = ("naive", "controlled")


def _sum(d: Optional[Dict[str, Any]]) -> int:
    return sum(int(v or 0) for v in (d or {}).values())


def run_summary(r: Dict[str, Any]) -> Dict[str, Any]:
    """One run's line: what the kernel did (OOM kills), when service was back (every PG
    active), what came back, and whether every object read back with its checksum."""
    drill = r.get("drill") or {}
    osds = sorted({int(o) for o in (r.get("process_starts_by_osd") or {})})
    failed = set(r.get("failed_hosts") or ())       # the drill's hosts, under the limit
    return {"oom_kills": _sum(r.get("oom_kills_by_host")),
            "time_to_all_pgs_active_s": r.get("time_to_all_pgs_active_s"),
            "time_to_all_up_s": r.get("time_to_all_up_s"),
            "objects_written": int(r.get("objects_written") or 0),
            "objects_verified_ok": int(r.get("objects_verified_ok") or 0),
            "process_starts": _sum(r.get("process_starts_by_osd")),
            "osds": len(osds),
            "host_mem_limit_bytes": r.get("host_mem_limit"),
            # the kernel's watermark since the limit was set (where the kernel can say)
            # beside the 0.5 s samples: an OOM kill comes between two samples, the
            # watermark saw the limit reached
            "peak_mem_bytes": max([int(v or 0) for k in ("peak_mem_bytes_by_host",
                                                         "kernel_peak_mem_bytes_by_host")
                                   for h, v in (r.get(k) or {}).items() if h in failed] or [0]),
            "outcome": r.get("outcome"), "reason": r.get("reason") or drill.get("reason")}


def summary(naive: Dict[str, Any], controlled: Dict[str, Any]) -> Dict[str, Any]:
    return {"naive": run_summary(naive), "controlled": run_summary(controlled)}


def _fmt(key: str, v: Any) -> str:
    if v is None:
        return "never" if key.startswith("time") else "-"
    if key.endswith("_bytes"):
        return "%.0f MiB" % (float(v) / MiB)
    if key.endswith("_s"):
        return "%.1f s" % float(v)
    return str(v)


ROWS = (("OOM kills", "oom_kills"), ("OSD process starts", "process_starts"),
        ("time to all PGs active", "time_to_all_pgs_active_s"),
        ("time to all OSDs up", "time_to_all_up_s"),
        ("host memory limit", "host_mem_limit_bytes"), ("failed hosts' memory peak", "peak_mem_bytes"),
        ("objects written", "objects_written"), ("objects verified", "objects_verified_ok"),
        ("outcome", "outcome"))


def table_rows(s: Dict[str, Any]) -> List[List[str]]:
    return [[label] + [_fmt(key, s[run].get(key)) for run in RUNS] for label, key in ROWS]


def print_table(s: Dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table
    t = Table(title="the same host back under the same kind of memory limit")
    for col in ("", "naive (all at once)", "controlled (ceph recovery)"):
        t.add_column(col)
    for row in table_rows(s):
        t.add_row(*row)
    Console().print(t)


def figure(naive: Dict[str, Any], controlled: Dict[str, Any]):
    """Two columns (naive, controlled) of the drill timeline: memory of the failed host
    against its budget and cgroup limit; OSDs up and PGs active."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    fig, axes = plt.subplots(2, 2, figsize=(14, 7), sharex="col", sharey="row")
    for col, (name, r) in enumerate((("naive: every OSD at once", naive),
                                      ("controlled: ceph recovery", controlled))):
        tl = r.get("tool_timeline") or report.module_timeline(r.get("drill") or {})
        failed = set(r.get("failed_hosts") or tl["used"])
        ax1, ax2 = axes[0][col], axes[1][col]
        for host, used in sorted(tl["used"].items()):
            if host not in failed:
                continue
            line, = ax1.plot(tl["t"], [u / MiB for u in used], label="%s used" % host)
            # a naive run starts everything whatever the budget: its budget applied to nothing
            if tl["budgets"].get(host) and r.get("mode") != "naive":
                ax1.axhline(tl["budgets"][host] / MiB, linestyle="--",
                            color=line.get_color(), label="%s budget" % host)
        if r.get("host_mem_limit"):
            ax1.axhline(int(r["host_mem_limit"]) / MiB, color="red", linewidth=1,
                        label="cgroup limit (OOM killer)")
        ax1.set_title("%s: %s OOM kill(s)" % (name, _sum(r.get("oom_kills_by_host"))))
        ax1.legend(loc="upper left", fontsize=7)
        ax2.plot(tl["t"], tl["up"], color="tab:green", label="OSDs up")
        ax2.yaxis.set_major_locator(MaxNLocator(integer=True))
        twin = ax2.twinx()
        twin.yaxis.set_major_locator(MaxNLocator(integer=True))
        twin.plot(tl["t"], tl["pgs_active"], color="tab:blue", label="PGs active")
        ax2.set_xlabel(tl.get("xlabel", "seconds since drill start"))
        for ax in (ax2, twin):
            ax.axvline(tl.get("t_return", 0), color="k", linewidth=0.5)
        h1, l1 = ax2.get_legend_handles_labels()
        h2, l2 = twin.get_legend_handles_labels()
        ax2.legend(h1 + h2, l1 + l2, loc="lower right", fontsize=7)
    axes[0][0].set_ylabel("cgroup memory (MiB)")
    axes[1][0].set_ylabel("OSDs up")
    fig.tight_layout()
    return fig


def write(naive: Dict[str, Any], controlled: Dict[str, Any], out: str) -> Dict[str, Any]:
    """DIR/summary.json and DIR/compare.png; the summary."""
    import matplotlib.pyplot as plt
    os.makedirs(out, exist_ok=True)
    s = summary(naive, controlled)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(s, f, indent=1, sort_keys=True)
    fig = figure(naive, controlled)
    fig.savefig(os.path.join(out, "compare.png"), dpi=90)
    plt.close(fig)
    return s


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(prog="ceph-recovery-drill compare", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--naive", required=True, help="the naive drill's --json report")
    p.add_argument("--controlled", required=True, help="the controlled drill's --json report")
    p.add_argument("--out", required=True, help="directory for summary.json and compare.png")
    a = p.parse_args(argv)
    try:
        with open(a.naive) as f:
            naive = json.load(f)
        with open(a.controlled) as f:
            controlled = json.load(f)
    except (OSError, ValueError) as e:
        print("ceph-recovery-drill compare: %s" % e)
        return 2
    s = write(naive, controlled, a.out)
    print_table(s)
    print("summary: %s\npicture: %s" % (os.path.join(a.out, "summary.json"),
                                       os.path.join(a.out, "compare.png")))
    return 0
