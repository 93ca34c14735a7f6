"""ceph-recovery-bench: every start strategy on 60, 1,200 and 6,000 OSDs (one rack down 1 h),
plus plan()'s decision-tick time on a synthetic 10,000-OSD snapshot. Prints a table, writes JSON.

    ceph-recovery-bench --out bench.json
    ceph-recovery-bench --sweep --out DIR     # hosts x RAM x strategies, see sweep.py
    ceph-recovery-bench report                # docs/measurements.md from docs/data/*.json
    ceph-recovery-bench --mgr-scale --out DIR # the mgr module on a scale lab (mgrscale.py)
    ceph-recovery-bench --throttle-lever --out DIR  # the throttle on a real OSD (lever.py)
    ceph-recovery-bench --crush-return --out DIR    # a host's OSDs back one at a time, in
                                                    # crushtool (crushreturn_run.py)
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import platform
import sys
import time
from typing import List, Optional

from rich.console import Console
from rich.table import Table

from ceph_recovery_tools.bench.cells import HEAD_RULE, pg_hours
from ceph_recovery_tools.progress import steps
from ceph_recovery_tools.common.version import add_version
from ceph_recovery_tools.sim.cli import parser as sim_parser
from ceph_recovery_tools.sim.cli import run as sim_run

GiB = 1 << 30
ABBR = {"controlled": "ctl", "unlimited": "unlim"}
SIZES = ((60, 5, 5), (1200, 100, 10), (6000, 500, 50))
STRATEGIES = ("naive", "serial", "controlled", "unlimited")


def run_sims(sizes, strategies, extra: List[str], console: Console) -> List[dict]:
    out = []
    with steps("simulations", len(sizes) * len(strategies)) as advance:
        for n, h, r in sizes:
            for s in strategies:
                argv = ["--osds", str(n), "--hosts", str(h), "--racks", str(r), "--fail",
                        "rack:1", "--downtime", "3600", "--strategy", s] + extra
                console.log("sim %s" % " ".join(argv))
                res = sim_run(sim_parser().parse_args(argv))
                out.append(res)
                advance(description="%d OSDs, %s" % (n, s))
    return out


def _t(v) -> str:
    return "never" if v is None else "%.0f" % v


def _t1(v) -> str:
    """A simulated time in a check's detail (exact to the event): one decimal."""
    return "never" if v is None else "%.1f" % v


def sims_table(rows: List[dict]) -> Table:
    """74 columns wide (plan() decisions and peak bytes are in the JSON); in a narrower
    terminal the cells fold rather than end in an ellipsis."""
    t = Table(title="One rack down 1 h (sim s; never = not within the horizon)",
              box=HEAD_RULE, pad_edge=False, padding=(0, 0, 0, 0), title_justify="left",
              show_edge=False)
    for col in ("OSDs", "strat", "up", "minsz", "active", "clean", "PGh", "pk/bud", "OOM",
                "rst", "heap", "fail", "wall"):
        t.add_column(col, justify="right" if col != "strat" else "left", overflow="fold")
    for r in rows:
        t.add_row(str(r["osds"]), ABBR.get(r["strategy"], r["strategy"]),
                  _t(r["time_to_all_up_s"]), _t(r["time_to_all_pgs_min_size_s"]),
                  _t(r["time_to_all_pgs_active_s"]), _t(r["time_to_all_pgs_clean_s"]),
                  pg_hours(r.get("inactive_pg_s")), "%.3f" % r["peak_host_mem_over_budget"],
                  str(r["oom_kills"]),
                  str(r["restarts"]), str(r["heap_releases"]), str(r["units_failed"]),
                  "%.1f" % r["wall_s"])
    return t


def acceptance(rows: List[dict], tick: dict) -> List[dict]:
    """The bench's acceptance checks, evaluated on this run's numbers."""
    by = {(r["osds"], r["strategy"]): r for r in rows}
    checks = []

    def add(name, ok, detail):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    c, u, s, nv = (by.get((1200, k)) for k in ("controlled", "unlimited", "serial", "naive"))
    if c and u and s and nv:
        ca, ua, sa = (x["time_to_all_pgs_active_s"] for x in (c, u, s))
        add("1200: controlled oom_kills == 0", c["oom_kills"] == 0, str(c["oom_kills"]))
        add("1200: controlled peak/budget <= 1.0", c["peak_host_mem_over_budget"] <= 1.0,
            "%.4f" % c["peak_host_mem_over_budget"])
        add("1200: controlled active <= 1.3 x unlimited",
            ca is not None and ua is not None and ca <= 1.3 * ua,
            "%s vs 1.3 x %s" % (_t1(ca), _t1(ua)))
        add("1200: controlled active <= serial / 3",
            ca is not None and (sa is None or ca <= sa / 3.0),
            "%s vs %s / 3" % (_t1(ca), _t1(sa)))
        na = nv["time_to_all_pgs_active_s"]
        add("1200: naive cascades (oom_kills > 0, slower or never)", nv["oom_kills"] > 0 and (
            na is None or not nv["converged"] or (ua is not None and na > ua)),
            "oom %d, active %s, converged %s" % (nv["oom_kills"], _t1(na), nv["converged"]))
    for r in rows:
        if r["osds"] == 6000:
            add("6000 %s: wall <= 60 s" % r["strategy"], r["wall_s"] <= 60, "%.1f" % r["wall_s"])
    if tick:
        add("plan() median <= 50 ms", tick["plan_median_ms"] <= 50, "%.1f ms" %
            tick["plan_median_ms"])
    return checks


def main_sweep(args, console: Console) -> int:
    """--sweep: DIR/sweep.json, DIR/sweep.txt (80 columns), DIR/sweep_heatmap.png."""
    from . import report
    from .sweep import DEFAULT_HORIZON_S, check_sim_args, run_sweep
    try:
        check_sim_args(args.sim_arg)
    except ValueError as e:
        print("ceph-recovery-bench: %s" % e, file=sys.stderr)
        return errno.EINVAL
    os.makedirs(args.out, exist_ok=True)
    doc = run_sweep(seed=args.seed, horizon=args.horizon or DEFAULT_HORIZON_S,
                    big=not args.no_big, log=console.log, sim_args=args.sim_arg,
                    host_out=args.host_out)
    doc["acceptance"] = report.acceptance(doc["rows"])
    out = report.sweep_text(doc)
    console.print(out, markup=False, highlight=False)
    with open(os.path.join(args.out, "sweep.txt"), "w") as f:
        f.write(out + "\n")
    with open(os.path.join(args.out, "sweep.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    if args.host_out:
        console.print("wrote %s/sweep.json, sweep.txt" % args.out)
        return 0
    report.heatmap(doc["rows"], os.path.join(args.out, "sweep_heatmap.png"))
    console.print("wrote %s/sweep.json, sweep.txt, sweep_heatmap.png" % args.out)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["report"]:
        from .measurements import main as report_main
        return report_main(argv[1:])
    ap = argparse.ArgumentParser(prog="ceph-recovery-bench", description=__doc__.split("\n")[0])
    add_version(ap, "ceph-recovery-bench")
    ap.add_argument("--out", default=None, help="JSON file (default bench.json); with --sweep "
                    "a directory (default sweep)")
    ap.add_argument("--sweep", action="store_true",
                    help="hosts {30,100,500} x RAM {40..64 GiB} x strategies, + 10,080 OSDs")
    ap.add_argument("--seed", type=int, default=1, help="--sweep: the runs' seed")
    ap.add_argument("--horizon", type=float, default=None,
                    help="--sweep: simulated seconds per run (default 6 h)")
    ap.add_argument("--no-big", action="store_true", help="--sweep: skip the 10,080-OSD table")
    ap.add_argument("--host-out", action="store_true",
                    help="--sweep: instead of the rack cells, one or two hosts down 1 h and "
                    "4 h (marked out, back by a backfill), naive and controlled")
    ap.add_argument("--sizes", default="60,1200,6000", help="subset of 60,1200,6000")
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--ticks", type=int, default=50, help="plan() ticks to time")
    ap.add_argument("--sim-arg", action="append", default=[],
                    help="extra ceph-recovery-sim argument (repeat), e.g. --sim-arg=--seed=2; "
                    "with --sweep it goes to every run, e.g. "
                    "--sim-arg=--param=peer_entries_per_s=60000")
    ap.add_argument("--mgr-scale", action="store_true",
                    help="the mgr module's own cost on a scale lab (real mon+mgr, map-only "
                    "OSDs, synthetic helpers): DIR/mgr-scale.json, .png, .md")
    ap.add_argument("--mgr-scale-sizes", default="1000,2000,5000")
    ap.add_argument("--mgr-scale-command", action="store_true",
                    help="--mgr-scale: at the largest size, also the report rate of helpers "
                    "that send every report as an mgr command (the transport before the "
                    "module's endpoint), for comparison")
    ap.add_argument("--render", action="store_true", help="--mgr-scale: only draw the plot "
                    "and page again from DIR/mgr-scale.json")
    ap.add_argument("--lab-dir", default="/tmp/crscale")
    ap.add_argument("--code", default="after", help="--mgr-scale: a label for this code's rows "
                    "(`before` rows are kept beside later runs)")
    ap.add_argument("--throttle-lever", action="store_true",
                    help="one returning OSD's recovery rate and memory growth with each "
                    "throttle variant and without, on a lab: DIR/lever.json, DIR/lever.md")
    ap.add_argument("--crush-return", action="store_true",
                    help="PGs per OSD while a marked-out host's OSDs return one at a time, in "
                    "crushtool --test (no daemons): DIR/crush-return.json, DIR/crush-return.md")
    ap.add_argument("--ceph", default="tentacle", help="--throttle-lever, --crush-return: the "
                    "lab's release")
    ap.add_argument("--lever-objects", type=int, default=120,
                    help="--throttle-lever: objects written while the OSD is down, per round")
    ap.add_argument("--lever-object-size", type=int, default=4 << 20)
    ap.add_argument("--lever-reps", type=int, default=2, help="--throttle-lever: rounds")
    args = ap.parse_args(argv)
    console = Console()
    if args.crush_return:
        from .crushreturn_run import run as crush_return
        doc = crush_return(args.out or "crush-return", args.ceph, console.log)
        console.print("wrote %s/crush-return.json, crush-return.md (hard limit %g PGs per OSD)"
                      % (args.out or "crush-return", doc["hard_limit"]))
        return 0
    if args.throttle_lever:
        from .lever import run as lever
        from ..lab.bootstrap import module_dir_from
        doc = lever(args.out or "lever", "/tmp/crlever", module_dir_from(None, os.getcwd()),
                    args.ceph, args.lever_objects, args.lever_object_size, args.lever_reps,
                    console.log)
        console.print(json.dumps(doc["summary"], indent=1, sort_keys=True))
        return 0
    if args.mgr_scale and args.render:
        from .mgrscale_cli import render
        render(args.out or "mgr-scale")
        return 0
    if args.mgr_scale:
        from .mgrscale_cli import run as mgr_scale
        from ..lab.bootstrap import module_dir_from
        mgr_scale(args.out or "mgr-scale", [int(x) for x in args.mgr_scale_sizes.split(",")],
                  args.lab_dir, module_dir_from(None, os.getcwd()), args.code, console.log,
                  command=args.mgr_scale_command)
        return 0
    if args.sweep:
        args.out = args.out or "sweep"
        return main_sweep(args, console)
    args.out = args.out or "bench.json"
    wanted = {int(x) for x in args.sizes.split(",") if x}
    sizes = [s for s in SIZES if s[0] in wanted]
    strategies = [s for s in args.strategies.split(",") if s]
    t0 = time.perf_counter()
    rows = run_sims(sizes, strategies, args.sim_arg, console)
    console.print(sims_table(rows))
    tick = {}
    if args.ticks > 0:
        from .plantick import measure
        tick = measure(ticks=args.ticks)
        console.print("plan() on %(osds)d OSDs / %(hosts)d hosts / %(pgs)d PGs, %(ticks)d ticks: "
                      "median %(plan_median_ms).1f ms, p99 %(plan_p99_ms).1f ms; baseline "
                      "(build the snapshot) median %(baseline_median_ms).1f ms, p99 "
                      "%(baseline_p99_ms).1f ms; plan/baseline %(ratio_plan_to_baseline).2f" % tick)
    checks = acceptance(rows, tick)
    for c in checks:
        console.print("[%s] %s: %s" % ("green]PASS[/green" if c["ok"] else "red]FAIL[/red",
                                       c["check"], c["detail"]))
    doc = {"runs": rows, "plan_tick": tick, "acceptance": checks,
           "machine": {"python": platform.python_version(), "node": platform.node(),
                       "processor": platform.processor(), "cpus": os.cpu_count(),
                       "load_avg_1m": round(os.getloadavg()[0], 2)},
           "total_wall_s": round(time.perf_counter() - t0, 2)}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    console.print("wrote %s (%.1f s)" % (args.out, doc["total_wall_s"]))
    if rows:
        from .plots import bench
        png = os.path.splitext(args.out)[0] + ".png"
        bench(doc, png)
        console.print("wrote %s" % png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
