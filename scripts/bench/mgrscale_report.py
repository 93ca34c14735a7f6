"""The mgr-scale bench's rows, plot and docs page, each drawn from the raw measurements
(mgrscale.py) or from DIR/mgr-scale.json."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from .mgrscale import BOOT_TIMEOUT_S, RATES, pct

MiB = 1 << 20
FIELDS = ("osds", "pgs", "hosts_reporting", "idle_module_cpu_frac",
          "idle_mgr_rss_delta_bytes", "tick_s_p50", "tick_s_p99", "first_tick_s",
          "state_writes_per_tick_max", "state_bytes_max", "mon_commands_per_tick_max",
          "report_rtt_ms_p50", "report_rtt_ms_p99", "reports_failed",
          "max_report_rate_per_s", "handler_max_ms")


def _r(v: Optional[float], n: int = 4) -> Optional[float]:
    return None if v is None else round(v, n)


def rate_limit(steps: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Per step the achieved rate and p99; the rate at which p99 first passes 1 s (None: it
    never did, and `lower_bound` is the highest rate reached)."""
    out, limit = [], None
    for st in steps:
        rate = st["sent"] / float(st.get("seconds") or 1.0)
        p99 = pct(st["rtt_ms"], 0.99)
        out.append({"rate_per_s": round(rate, 1), "p99_ms": _r(p99, 1),
                    "failed": st["failed"]})
        if limit is None and p99 is not None and p99 > 1000.0:
            limit = round(rate, 1)
    return {"steps": out, "max_report_rate_per_s": limit,
            "lower_bound": None if limit is not None else max(
                (s["rate_per_s"] for s in out), default=None)}


def run_ticks(raw: Dict[str, Any]) -> List[Dict[str, Any]]:
    start = raw["run"]["run_started"]
    return [t for t in raw["run"]["perf"]["ticks"] if t.get("active") and t["t"] >= start - 5]


def _still_going(raw: Dict[str, Any]) -> Optional[float]:
    """A first run tick that had not ended when the run phase did: its time so far (a lower
    bound of its length)."""
    cur = raw["run"]["perf"].get("current")
    return cur["running_s"] if cur and cur.get("active") is not False else None


def _phases(ticks: List[Dict[str, Any]], q: float) -> Dict[str, Optional[float]]:
    """Per tick phase (view, plan, act, persist: meter.py) its q-quantile over the ticks."""
    names = sorted({k for t in ticks for k in t.get("phases", {})})
    return {k: _r(pct([t.get("phases", {}).get(k, 0.0) for t in ticks], q)) for k in names}


def row(raw: Dict[str, Any]) -> Dict[str, Any]:
    ticks = run_ticks(raw)
    secs = [t["tick_s"] for t in ticks]
    steady = raw["run"]["steps"][0]
    handlers = raw["run"]["perf"]["handlers"]
    rate = rate_limit(raw["rate"]["steps"])
    by_command = rate_limit(raw["rate_command"]["steps"]) if raw.get("rate_command") else None
    ops = [o for v in raw["run"]["ops"].values() for o in v]
    rd = [t.get("reads", {}) for t in ticks]
    return {
        "osds": raw["osds"], "pgs": raw["pgs"], "hosts_reporting": raw["hosts"],
        "pg_dump_entries": raw["pg_dump_entries"],
        "idle_module_cpu_frac": _r(raw["idle_on"]["cpu_frac"] - raw["idle_off"]["cpu_frac"]),
        "idle_mgr_cpu_frac_disabled": _r(raw["idle_off"]["cpu_frac"]),
        "idle_mgr_rss_delta_bytes": int(raw["idle_on"]["rss"] - raw["idle_off"]["rss"]),
        "idle_ticks_s_p50": _r(pct([t["tick_s"] for t in raw["idle_perf"]["ticks"]], 0.5)),
        "idle_first_tick_s": raw.get("idle_first_tick_s"),
        "tick_s_p50": _r(pct(secs, 0.5)), "tick_s_p99": _r(pct(secs, 0.99)),
        "first_tick_s": ticks[0]["tick_s"] if ticks else _still_going(raw),
        "first_tick_unfinished": not ticks,
        "run_ticks": len(ticks),
        "state_writes_per_tick_max": max((t["state_writes"] for t in ticks), default=0),
        "state_bytes_max": max((t["state_bytes"] for t in ticks), default=0),
        "state_written_bytes_per_tick_max": max((t["written_bytes"] for t in ticks),
                                                default=0),
        "state_entries_per_tick_max": max((t.get("state_entries", 0) for t in ticks),
                                          default=0),
        "mon_commands_per_tick_max": max((t["mon_commands"] for t in ticks), default=0),
        "phase_s_p50": _phases(ticks, 0.5), "phase_s_p99": _phases(ticks, 0.99),
        "shell_s_p99": _r(pct([t["tick_s"] - t.get("phases", {}).get("plan", 0.0)
                               for t in ticks], 0.99)),
        "read_s_p50": {k: _r(pct([r.get(k, 0.0) for r in rd], 0.5))
                       for k in sorted({k for r in rd for k in r})},
        "report_rtt_ms_p50": _r(pct(steady["rtt_ms"], 0.5), 1),
        "report_rtt_ms_p99": _r(pct(steady["rtt_ms"], 0.99), 1),
        "reports_sent": steady["sent"], "reports_failed": steady["failed"],
        "report_errors": steady["errors"],
        "max_report_rate_per_s": rate["max_report_rate_per_s"],
        "report_rate_lower_bound_per_s": rate["lower_bound"], "rate_steps": rate["steps"],
        "report_transport": "endpoint",
        "command_rate_steps": by_command["steps"] if by_command else None,
        "command_max_report_rate_per_s": by_command["max_report_rate_per_s"]
        if by_command else None,
        "load_avg_1m_in_run": raw["run"].get("load_avg_1m"),
        "handler_max_ms": {k: v["max_ms"] for k, v in handlers.items()},
        # the PG stats read on the module's own thread, beside the ticks (pgreader.py)
        "pg_read_apart": raw["run"]["perf"].get("background", {}).get("pg_dump"),
        "lab_osd_metadata_requests_in_run": raw["run"].get("osd_metadata_requests"),
        "handler_p99_ms": {k: v["p99_ms"] for k, v in handlers.items()},
        "starts_instructed": sum(1 for o in ops if o["op"] in ("start", "restart")),
        "osds_started": len({o["osd"] for o in ops if o["op"] in ("start", "restart")}),
        "stops_instructed": sum(1 for o in ops if o["op"] == "stop"),
        "start_cmd_s": _r(raw["run"]["start_cmd_s"], 3),
        "lab_timings": raw["timings"], "wall_s": raw["wall_s"]}


def _steps(steps: Optional[List[Dict[str, Any]]], none: str = "not measured") -> str:
    if not steps:
        return none
    return ", ".join("%s: %s ms (%d)" % (st["rate_per_s"], st["p99_ms"], st["failed"])
                     for st in steps)


def plot(rows: List[Dict[str, Any]], path: str) -> None:
    """Each cost against the number of OSDs (one panel per cost)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = (("idle_module_cpu_frac", "idle module CPU (cores)", 0.01),
              ("tick_s_p99", "tick p99 (s)", 1.0), ("first_tick_s", "first tick (s)", 5.0),
              ("state_writes_per_tick_max", "state writes / tick (max)", 1),
              ("mon_commands_per_tick_max", "mon commands / tick (max)", None),
              ("report_rtt_ms_p99", "report RTT p99 (ms)", 250))
    fig, axes = plt.subplots(2, 3, figsize=(11, 6))
    for ax, (key, label, goal) in zip(axes.flat, panels):
        for tag, style in (("before", "o--"), ("after", "o-")):
            got = [(r["osds"], r.get(key)) for r in rows if r.get("code", "after") == tag
                   and r.get(key) is not None]
            if got:
                ax.plot([x for x, _ in got], [y for _, y in got], style, label=tag)
        if goal is not None:
            ax.axhline(goal, color="k", linestyle=":", linewidth=0.8)
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("OSDs", fontsize=8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _phase_table(rows: List[Dict[str, Any]]) -> List[str]:
    """The run's ticks split by phase (p99 s): the core's plan() beside the shell's view,
    acting and persisting; rows measured before the phases were timed are left out."""
    rows = [r for r in rows if r.get("phase_s_p99")]
    if not rows:
        return []
    out = ["The run's ticks by phase, p99 s (`plan` is the core's plan(); the rest is the "
           "shell's: `view` builds the snapshot, `act` carries out the actions, `persist` "
           "writes the state; entries: config-key entries written per tick, at most):", "",
           "| code | OSDs | tick | plan | view | act | persist | tick minus plan | entries |",
           "|---" * 9 + "|"]
    for r in rows:
        p = r["phase_s_p99"]
        out.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r.get("code", "after"), r["osds"], r["tick_s_p99"], p.get("plan"), p.get("view"),
            p.get("act"), p.get("persist"), r.get("shell_s_p99"),
            r.get("state_entries_per_tick_max")))
    return out


def page(doc: Dict[str, Any]) -> str:
    """docs/mgr-scale.md, generated from mgr-scale.json."""
    lines = ["# The mgr module at scale (generated by `ceph-recovery-bench --mgr-scale`)", "",
             "A real Tentacle mon and mgr; OSDs exist only in the map (never up); PGs stay "
             "`unknown`; one synthetic helper per host with its own key reports every 5 s, "
             "to the module's report endpoint once its first report's reply (by command) "
             "named it, as the helper does; the RTT columns are that transport's. "
             "A run of rack0 is measured through its decisions (boot timeout %d s: the OSDs "
             "never boot). Report rates tried: %s/s." % (BOOT_TIMEOUT_S, ", ".join(
                 "%d" % r for r in RATES)), "",
             "![each cost against the number of OSDs](data/mgr-scale/mgr-scale.png)", "",
             "| code | OSDs | PGs | hosts | idle CPU | idle RSS MiB | tick p50 s | tick p99 s "
             "| first tick s | writes/tick | state KiB | mon cmds/tick | RTT p50 ms | RTT p99 ms "
             "| failed | rate at p99 > 1 s |",
             "|---" * 16 + "|"]
    for r in doc["rows"]:
        rate = r["max_report_rate_per_s"]
        rate_txt = "%s" % rate if rate is not None else ">= %s" % r[
            "report_rate_lower_bound_per_s"]
        lines.append("| %s | %d | %d | %d | %s | %.1f | %s | %s | %s | %s | %.1f | %s | %s | "
                     "%s | %s | %s |" % (
                         r.get("code", "after"), r["osds"], r["pgs"], r["hosts_reporting"],
                         r["idle_module_cpu_frac"], r["idle_mgr_rss_delta_bytes"] / MiB,
                         r["tick_s_p50"], r["tick_s_p99"], r["first_tick_s"],
                         r["state_writes_per_tick_max"], r["state_bytes_max"] / 1024.0,
                         r["mon_commands_per_tick_max"], r["report_rtt_ms_p50"],
                         r["report_rtt_ms_p99"], r["reports_failed"], rate_txt))
    table = _phase_table(doc["rows"])
    lines += [""] + table if table else []
    lines += ["", "Report rates by transport (achieved rate/s: p99 ms, failed), the load "
              "average of the machine at the end of the run phase:", ""]
    for r in doc["rows"]:
        lines.append("- %s %d OSDs: endpoint %s; command %s; load average %s" % (
            r.get("code", "after"), r["osds"], _steps(r.get("rate_steps")),
            _steps(r.get("command_rate_steps"), "not measured (--mgr-scale-command)"),
            r.get("load_avg_1m_in_run")))
    lines += ["", "Command handlers, longest (ms), and the run's instructions:", ""]
    for r in doc["rows"]:
        lines.append("- %s %d OSDs: %s; %d starts instructed (%d OSDs), %d stops%s" % (
            r.get("code", "after"), r["osds"], ", ".join(
                "%s %.1f" % kv for kv in sorted(r["handler_max_ms"].items())),
            r["starts_instructed"], r["osds_started"], r["stops_instructed"],
            ". " + r["note"] if r.get("note") else ""))
    lines += ["", "The lab's own load on the mon during the run phase: ceph-mgr asks the mon "
              "for the metadata of every OSD that never booted at each new OSD map epoch (a "
              "real cluster's OSDs have booted); `osd metadata` commands the mon handled:", ""]
    lines += ["- %s %d OSDs: %s" % (r.get("code", "after"), r["osds"],
                                    r.get("lab_osd_metadata_requests_in_run", "not counted"))
              for r in doc["rows"]]
    lines += ["", "PG stats reads on the module's own thread during the run (not in any "
              "tick; none where a read is fast enough to stay in the tick):", ""]
    for r in doc["rows"]:
        apart = r.get("pg_read_apart")
        lines.append("- %s %d OSDs: %s" % (r.get("code", "after"), r["osds"], "none" if not apart
                                           else "%d reads, p50 %.1f s, longest %.1f s" % (
                                               apart["count"], apart["p50_ms"] / 1000.0,
                                               apart["max_ms"] / 1000.0)))
    lines += ["", "Machine: %s; bench wall time %s s." % (doc.get("machine"),
                                                        doc.get("total_wall_s")), ""]
    return "\n".join(lines)
