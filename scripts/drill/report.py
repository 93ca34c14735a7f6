"""Drill metrics from the samples and the module's journal, and the PNG timeline."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, List, Optional

from ..common.sizes import MiB, format_bytes


def settled_time(samples: List[Dict[str, Any]], t_start: float, pred) -> Optional[float]:
    """Seconds from t_start to the sample from which `pred` holds until the end (a state
    reached and lost again, e.g. PGs active before the next OSD's peering, does not count)."""
    first = None
    for s in samples:
        if s["time"] < t_start or not s.get("cluster"):
            continue
        if pred(s["cluster"]):
            first = s["time"] if first is None else first
        else:
            first = None
    return None if first is None else round(first - t_start, 1)


def recovery_times(samples: List[Dict[str, Any]], t_start: float) -> Dict[str, Optional[float]]:
    """Seconds from the start of the recovery until every OSD is up for good; until (with every
    OSD up) every PG stays active; until every PG stays active+clean."""
    def all_up(c): return len(c["up"]) == c["osds"]
    up = settled_time(samples, t_start, all_up)
    active = settled_time(samples, t_start, lambda c: all_up(c) and c["pgs_active"] == c["pgs"])
    clean = settled_time(samples, t_start, lambda c: all_up(c) and c["pgs_clean"] == c["pgs"])
    return {"time_to_all_up_s": up, "time_to_all_pgs_active_s": active,
            "time_to_all_pgs_clean_s": clean}


def peaks(samples: List[Dict[str, Any]], t_start: float) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for s in samples:
        if s["time"] < t_start:
            continue
        for host, m in s["mem"].items():
            out[host] = max(out.get(host, 0), int(m.get("usage") or 0))
    return out


def peak_rss(samples: List[Dict[str, Any]], t_start: float) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for s in samples:
        if s["time"] >= t_start:
            for osd, rss in (s.get("rss") or {}).items():
                out[osd] = max(out.get(osd, 0), int(rss or 0))
    return out


def process_starts(samples: List[Dict[str, Any]], t_start: float,
                   osds: List[int]) -> Dict[str, int]:
    """How many new ceph-osd processes (new pids) each OSD got after the recovery started."""
    out = {str(o): 0 for o in osds}
    prev: Dict[str, Any] = {str(o): None for o in osds}
    for s in samples:
        for o in out:
            pid = s["procs"].get(o)
            if pid and pid != prev[o] and s["time"] >= t_start:
                out[o] += 1
            if pid:
                prev[o] = pid
    return out


def over_budget(samples: List[Dict[str, Any]], t_start: float,
                budgets: Dict[str, Optional[int]]) -> Dict[str, Dict[str, Any]]:
    """Per host with a budget: the largest excess of sampled cgroup usage over the budget
    (<= 0: never above) and how many samples were above it."""
    out: Dict[str, Dict[str, Any]] = {}
    for host, budget in budgets.items():
        if not budget:
            continue
        used = [int(s["mem"][host].get("usage") or 0) for s in samples
                if s["time"] >= t_start and host in s["mem"]]
        if used:
            out[host] = {"max_excess_bytes": max(used) - budget,
                         "samples_above": sum(1 for u in used if u > budget),
                         "samples": len(used)}
    return out


def max_in_flight(samples: List[Dict[str, Any]], t_start: float,
                  host_osds: Dict[str, Iterable[int]]) -> Dict[str, int]:
    """Per host, the most OSDs at once whose process runs while the OSD is not yet up
    (started, loading or peering: the memory-hungry phase), over the recovery window."""
    out = {h: 0 for h in host_osds}
    for s in samples:
        c = s.get("cluster")
        if s["time"] < t_start or not c:
            continue
        up = set(c["up"])
        for h, osds in host_osds.items():
            n = sum(1 for o in osds if s["procs"].get(str(o)) and o not in up)
            out[h] = max(out[h], n)
    return out


def module_max_in_flight(samples: List[Dict[str, Any]]) -> Dict[str, int]:
    """Per host, the most OSDs the recovery module itself counted in flight (status)."""
    out: Dict[str, int] = {}
    for s in samples:
        m = s.get("module") or {}
        for h, osds in (m.get("in_flight") or {}).items():
            out[h] = max(out.get(h, 0), len(osds))
    return out


def journal_events(journal: List[Dict[str, Any]], kind: str) -> List[Dict[str, Any]]:
    return [{"time": j["time"], "osd": j["action"].get("osd"), "host": j["action"].get("host"),
             "reason": j["action"].get("reason"), "result": j.get("result")}
            for j in journal if j.get("action", {}).get("kind") == kind]


def timeline(samples: List[Dict[str, Any]], t_start: float, budgets: Dict[str, Optional[int]],
             title: str) -> Dict[str, Any]:
    """What the timeline picture shows, as data: kept beside the PNG so that
    `ceph-recovery-bench report` can draw it again."""
    cl = [s.get("cluster") or {} for s in samples]
    hosts = sorted(samples[0]["mem"]) if samples else []
    return {"title": title, "budgets": {h: b for h, b in budgets.items() if b},
            "t": [round(s["time"] - t_start, 1) for s in samples],
            "used": {h: [int(s["mem"].get(h, {}).get("usage") or 0) for s in samples]
                     for h in hosts},
            "up": [len(c.get("up", [])) for c in cl],
            "pgs_active": [c.get("pgs_active", 0) for c in cl],
            "pgs_clean": [c.get("pgs_clean", 0) for c in cl]}


def memory_axis(used: Iterable[int], budgets: Iterable[int]) -> Dict[str, Any]:
    """The memory axis (MiB) holds every usage and every budget line. A budget more than 3 x
    the highest usage (an 80 % budget of a large host) would flatten the usage on a linear
    axis: then the axis is logarithmic."""
    used = [u for u in used if u > 0] or [MiB]
    top = max(list(used) + [b for b in budgets if b])
    if top > 3 * max(used):
        return {"scale": "log", "bottom": min(used) / MiB / 2, "top": 2 * top / MiB}
    return {"scale": "linear", "bottom": 0, "top": 1.15 * top / MiB}


def figure(tl: Dict[str, Any]):
    """The two-panel timeline: cgroup memory with the budget lines, then OSDs up (integer
    ticks) and PGs active / clean; a third panel with the client write latency when the
    timeline has one (a drill with --write-load)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    lat = tl.get("write_ms")
    fig, axes = plt.subplots(3 if lat else 2, 1, figsize=(11, 10 if lat else 7), sharex=True)
    ax1, ax2 = axes[0], axes[1]
    ts = tl["t"]
    for host, used in sorted(tl["used"].items()):
        line, = ax1.plot(ts, [u / MiB for u in used], label="%s used" % host)
        if tl["budgets"].get(host):
            ax1.axhline(tl["budgets"][host] / MiB, linestyle="--", color=line.get_color(),
                        label="%s budget %s" % (host, format_bytes(tl["budgets"][host])))
    axis = memory_axis([u for used in tl["used"].values() for u in used],
                       tl["budgets"].values())
    ax1.set_yscale(axis["scale"])
    ax1.set_ylim(axis["bottom"], axis["top"])
    ax1.set_ylabel("cgroup memory (MiB%s)" % (", log" if axis["scale"] == "log" else ""))
    ax1.legend(loc="upper left", fontsize=8)
    ax1.set_title(tl["title"])
    ax2.plot(ts, tl["up"], label="OSDs up", color="tab:green")
    ax2.set_ylabel("OSDs up")
    ax2.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax3 = ax2.twinx()
    ax3.plot(ts, tl["pgs_active"], label="PGs active", color="tab:blue")
    ax3.plot(ts, tl["pgs_clean"], label="PGs clean", color="tab:gray")
    ax3.set_ylabel("PGs")
    ax3.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1].set_xlabel(tl.get("xlabel", "seconds since recovery start"))
    for ax in (ax2, ax3):
        ax.axvline(tl.get("t_return", 0), color="k", linewidth=0.5)
    h1, l1 = ax2.get_legend_handles_labels()
    h2, l2 = ax3.get_legend_handles_labels()
    ax2.legend(h1 + h2, l1 + l2, loc="lower right", fontsize=8)
    if lat:
        for name, ys in sorted(lat.items()):
            axes[2].plot(ts, ys, marker=".", label="write %s" % name)
        axes[2].set_ylabel("client write latency (ms, log)")
        axes[2].set_yscale("log")
        axes[2].legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    return fig


def series_count(fig) -> int:
    """Lines drawn in a figure (data series and budget lines; the return marker excluded)."""
    return sum(1 for ax in fig.axes for ln in ax.get_lines()
               if not str(ln.get_label()).startswith("_"))


def module_timeline(rep: Dict[str, Any]) -> Dict[str, Any]:
    """`ceph recovery drill report -f json` as timeline data for figure(): memory of the
    bucket's hosts against their budgets, OSDs up, PGs active / clean and, with a write
    load, the write latency p50 / p99 per sample (None: no write completed in it)."""
    tl = rep.get("timeline") or []
    hosts = sorted({h for s in tl for h in (s.get("mem_used") or {})})
    budgets = {h: (rep.get("hosts") or {}).get(h, {}).get("budget_bytes") for h in hosts}
    back = rep.get("exit_at") or rep.get("aborted_at")
    out = {"title": "drill %s on %s: %s%s" % (rep.get("id"), rep.get("bucket"),
                                               rep.get("outcome"), " (%s)" % rep["reason"]
                                               if rep.get("reason") else ""),
           "budgets": {h: b for h, b in budgets.items() if b},
           "t": [s["t"] for s in tl],
           "used": {h: [int((s.get("mem_used") or {}).get(h) or 0) for s in tl]
                    for h in hosts},
           "up": [s["osds_up"] for s in tl], "pgs_active": [s["pgs_active"] for s in tl],
           "pgs_clean": [s["pgs_clean"] for s in tl], "xlabel": "seconds since drill start",
           "t_return": round(back - rep["started_at"], 1) if back else 0}
    if rep.get("write_load"):
        nan = float("nan")
        out["write_ms"] = {k: [nan if s.get("write_%s_ms" % k) is None
                               else s["write_%s_ms" % k] for s in tl] for k in ("p50", "p99")}
    return out


def render_module_report(rep: Dict[str, Any], path: str) -> int:
    """The drill report's PNG at `path`; the number of series drawn, also stored in the
    PNG's text chunk "Series" (so a test checks the picture without comparing pixels)."""
    import matplotlib.pyplot as plt
    fig = figure(module_timeline(rep))
    n = series_count(fig)
    fig.savefig(path, dpi=90, metadata={"Series": str(n), "Title": fig.axes[0].get_title()})
    plt.close(fig)
    return n


def draw(tl: Dict[str, Any], path: str) -> None:
    import matplotlib.pyplot as plt
    fig = figure(tl)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def timeline_file(png_path: str) -> str:
    return os.path.splitext(png_path)[0] + ".timeline.json"


def plot(path: str, samples: List[Dict[str, Any]], t_start: float,
         budgets: Dict[str, Optional[int]], title: str) -> None:
    """The PNG timeline at `path`, and its data beside it (timeline_file(path))."""
    tl = timeline(samples, t_start, budgets, title)
    with open(timeline_file(path), "w") as f:
        json.dump(tl, f, separators=(",", ":"))
    draw(tl, path)
