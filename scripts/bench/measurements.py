"""`ceph-recovery-bench report`: docs/measurements.md and its pictures from the measured JSON.

    ceph-recovery-bench report [--data docs/data] [--out docs/measurements.md] [--img docs/img]

DATA holds the numbers' only source:
  bench.json          `ceph-recovery-bench --out DATA/bench.json`
  sweep.json          `ceph-recovery-bench --sweep --out DIR` (optional; DIR/sweep.json)
  drill-NAME.json     `ceph-recovery-drill ... --json DATA/drill-NAME.json` (any number), with
                      drill-NAME.timeline.json beside it when the drill kept its timeline
  measurements.in.md  the text, with placeholders the report fills in:
    {{sim.table}} {{sim.acceptance}} {{plan.table}} {{drills.table}} {{drills.timelines}}
    {{sweep.table}} {{bench.plot}} {{sweep.heatmap}}            generated blocks
    {{run OSDS STRATEGY FIELD [FMT]}}   one field of a simulator run in bench.json
    {{tick FIELD [FMT]}}                one field of bench.json's plan() timing
    {{bench FIELD [FMT]}}               a top-level field of bench.json (sweep: sweep.json)
    {{drill NAME FIELD[.KEY] [FMT]}}    a field of drill-NAME.json (a list: its length)
  FMT: bytes (binary units), x (a ratio, 2 decimals), or nothing (the number as measured).
A placeholder naming something the data does not have is an error naming it; nothing is
written then.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
from typing import Any, Callable, Dict, List, Optional

from ..common.sizes import format_bytes
from . import plots
from .report import pg_hours

PLACEHOLDER = re.compile(r"\{\{\s*(.+?)\s*\}\}")
TIMELINE = ".timeline.json"


class ReportError(ValueError):
    pass


def load(data_dir: str) -> Dict[str, Any]:
    """Every input of the report; ReportError when bench.json or the text is missing."""
    def read(name: str) -> Any:
        with open(os.path.join(data_dir, name)) as f:
            return json.load(f) if name.endswith(".json") else f.read()
    for need in ("bench.json", "measurements.in.md"):
        if not os.path.exists(os.path.join(data_dir, need)):
            raise ReportError("%s: no %s (see ceph-recovery-bench report --help)"
                              % (data_dir, need))
    drills, timelines = {}, {}
    for path in sorted(glob.glob(os.path.join(data_dir, "drill-*.json"))):
        name = os.path.basename(path)[len("drill-"):-len(".json")]
        if name.endswith(".timeline"):
            timelines[name[:-len(".timeline")]] = read(os.path.basename(path))
        else:
            drills[name] = read(os.path.basename(path))
    sweep = read("sweep.json") if os.path.exists(os.path.join(data_dir, "sweep.json")) else None
    return {"bench": read("bench.json"), "sweep": sweep, "drills": drills,
            "timelines": timelines, "text": read("measurements.in.md")}


def fmt(value: Any, how: str = "") -> str:
    if isinstance(value, list):
        value = len(value)
    if value is None:
        return "never" if how != "bytes" else "-"
    if how == "bytes":
        return format_bytes(value)
    if how == "x":
        return "%.2f" % value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, float) and not value.is_integer():
        return "{:,}".format(value)
    return "{:,}".format(int(value))


def fmt_s(value: Any) -> str:
    """A simulated time exact to the event, to the second (as the tick-read ones)."""
    return fmt(value if value is None else round(value))


def _field(doc: Any, path: str, where: str) -> Any:
    for key in path.split("."):
        if not isinstance(doc, dict) or key not in doc:
            raise ReportError("%s has no %s" % (where, path))
        doc = doc[key]
    return doc


def _run(data: Dict[str, Any], osds: str, strategy: str) -> Dict[str, Any]:
    for r in data["bench"]["runs"]:
        if str(r["osds"]) == osds and r["strategy"] == strategy:
            return r
    raise ReportError("bench.json has no run of %s OSDs, strategy %s" % (osds, strategy))


def value(data: Dict[str, Any], words: List[str]) -> str:
    """One placeholder's value: {{run ...}}, {{tick ...}}, {{bench ...}}, {{drill ...}}."""
    how = words.pop() if len(words) > 2 and words[-1] in ("bytes", "x") else ""
    kind, args = words[0], words[1:]
    if kind == "run" and len(args) == 3:
        got = _field(_run(data, args[0], args[1]), args[2], "run %s" % args[:2])
        if args[2].endswith("_s") and isinstance(got, float) and not how:
            got = round(got, 1)     # simulated times are exact to the event: 0.1 s is plenty
        return fmt(got, how)
    if kind == "tick" and len(args) == 1:
        return fmt(_field(data["bench"]["plan_tick"], args[0], "plan_tick"), how)
    if kind in ("bench", "sweep") and len(args) == 1:
        doc = _need(data[kind], kind + ".json")
        return fmt(_field(doc, args[0], kind + ".json"), how)
    if kind == "drill" and len(args) == 2:
        if args[0] not in data["drills"]:
            raise ReportError("no drill-%s.json" % args[0])
        return fmt(_field(data["drills"][args[0]], args[1], "drill-%s.json" % args[0]), how)
    raise ReportError("unknown placeholder {{%s}}" % " ".join(words))


def render(data: Dict[str, Any], blocks: Dict[str, Callable[[], str]]) -> str:
    """The text with every placeholder filled; ReportError names the first bad one."""
    def fill(match: "re.Match[str]") -> str:
        inner = match.group(1)
        if inner in blocks:
            return blocks[inner]()
        return value(data, inner.split())
    return PLACEHOLDER.sub(fill, data["text"])


def _table(head: List[str], rows: List[List[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def sim_table(bench: Dict[str, Any]) -> str:
    rows = [[fmt(r["osds"]), r["strategy"], fmt(r["time_to_all_up_s"]),
             fmt_s(r["time_to_all_pgs_active_s"]), fmt(r["time_to_all_pgs_clean_s"]),
             pg_hours(r.get("inactive_pg_s")), "%.3f" % r["peak_host_mem_over_budget"],
             fmt(r["oom_kills"]), fmt(r["restarts"]), fmt(r["heap_releases"]),
             "%.1f" % r["wall_s"]]
            for r in bench["runs"]]
    return _table(["OSDs", "strategy", "all up", "all PGs active", "all clean",
                   "PG-hours without I/O", "peak/budget", "OOM kills", "restarts",
                   "heap releases", "wall s"], rows)


def acceptance_list(bench: Dict[str, Any]) -> str:
    return "\n".join("- %s %s: %s" % ("PASS" if c["ok"] else "**FAIL**", c["check"], c["detail"])
                     for c in bench.get("acceptance", []))


def plan_table(bench: Dict[str, Any]) -> str:
    t = bench["plan_tick"]
    return _table(["what", "number"], [
        ["plan() per tick, median", "%.1f ms" % t["plan_median_ms"]],
        ["plan() per tick, p99", "%.1f ms" % t["plan_p99_ms"]],
        ["building that snapshot (the baseline), median", "%.1f ms" % t["baseline_median_ms"]],
        ["plan() / snapshot build", "%.2fx" % t["ratio_plan_to_baseline"]]])


def drill_row(name: str, d: Dict[str, Any]) -> List[str]:
    """One drill on its (first) failed host: budget, limit, peak, OOM kills, actions, times."""
    host = (d.get("failed_hosts") or ["-"])[0]
    naive = d.get("mode") == "naive"
    budget = None if naive else (d.get("budget_bytes_by_host") or {}).get(host)
    starts = sum((d.get("process_starts_by_osd") or {}).values())
    return [name, d.get("mode", "-"), format_bytes(budget), format_bytes(d.get("host_mem_limit")),
            format_bytes((d.get("peak_mem_bytes_by_host") or {}).get(host)),
            fmt((d.get("oom_kills_by_host") or {}).get(host)), fmt(starts),
            fmt(d.get("restarts") or []), fmt(d.get("heap_releases") or []),
            fmt(d.get("time_to_all_up_s")), fmt(d.get("time_to_all_pgs_clean_s")),
            "%s/%s" % (fmt(d.get("objects_verified_ok")), fmt(d.get("objects_written"))),
            drill_end(d)]


def drill_end(d: Dict[str, Any]) -> str:
    """How the drill ended: the module drill's outcome (with the stall check that ended its
    exit) and the final health; reports of the lab tool's former engine: why it aborted the
    run, else the final health."""
    health = (d.get("final_health") or {}).get("status", "-")
    if d.get("aborted_run") or not d.get("outcome"):
        return d.get("aborted_run") or health
    why = ((d.get("stalled") or {}).get("checks") or [""])[0]
    return "%s%s, %s" % (d["outcome"], " (%s)" % why if why else "", health)


def drills_table(drills: Dict[str, Dict[str, Any]]) -> str:
    return _table(["drill", "mode", "budget", "cgroup limit", "peak (cgroup)", "OOM kills",
                   "OSD process starts", "restarts", "heap releases", "all up s",
                   "all clean s", "objects verified", "end"],
                  [drill_row(n, d) for n, d in drills.items()])


def blocks(data: Dict[str, Any], img_dir: str, img_rel: str) -> Dict[str, Callable[[], str]]:
    """The generated blocks; the pictures are drawn into img_dir when their block is used."""
    def picture(name: str, draw: Callable[[str], None], alt: str) -> str:
        draw(os.path.join(img_dir, name))
        return "![%s](%s/%s)" % (alt, img_rel, name)

    def timelines() -> str:
        shown = [picture("drill-%s.png" % n, lambda p, t=t: plots.drill_timeline(t, p),
                         "drill %s timeline" % n) for n, t in sorted(data["timelines"].items())]
        return "\n\n".join(shown) or "(no drill kept its timeline data)"
    sweep = data["sweep"] or {}
    return {
        "sim.table": lambda: sim_table(data["bench"]),
        "sim.acceptance": lambda: acceptance_list(data["bench"]),
        "plan.table": lambda: plan_table(data["bench"]),
        "drills.table": lambda: drills_table(data["drills"]),
        "drills.timelines": timelines,
        "bench.plot": lambda: picture("bench.png", lambda p: plots.bench(data["bench"], p),
                                      "simulator: time to all PGs active and peak/budget"),
        "sweep.table": lambda: "```\n%s```" % plots.sweep_text(_need(sweep, "sweep.json")),
        "sweep.heatmap": lambda: picture("sweep_heatmap.png", lambda p: plots.sweep_heatmap(
            _need(sweep, "sweep.json"), p), "controlled / naive heatmap"),
    }


def _need(doc: Optional[Dict[str, Any]], name: str) -> Dict[str, Any]:
    if not doc:
        raise ReportError("the text uses %s, which is not in the data directory" % name)
    return doc


HEADER = ("<!-- Generated by `ceph-recovery-bench report` from docs/data/ (measurements.in.md "
          "and the JSON files): edit those and run it again, not this file. -->\n")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="ceph-recovery-bench report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="docs/data", help="the JSON and the text (docs/data)")
    ap.add_argument("--out", default="docs/measurements.md")
    ap.add_argument("--img", default=None, help="pictures (default: img/ beside --out)")
    args = ap.parse_args(argv)
    img = args.img or os.path.join(os.path.dirname(os.path.abspath(args.out)), "img")
    try:
        data = load(args.data)
        os.makedirs(img, exist_ok=True)
        rel = os.path.relpath(img, os.path.dirname(os.path.abspath(args.out)))
        text = render(data, blocks(data, img, rel))
    except (ReportError, OSError, json.JSONDecodeError) as exc:
        print("ceph-recovery-bench report: %s" % exc, file=sys.stderr)
        return 2
    with open(args.out, "w") as f:
        f.write(HEADER + text)
    print("wrote %s and its pictures in %s" % (args.out, img))
    return 0
