"""Drill metrics from the samples and the module's journal, and the PNG timeline."""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional


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


def plot(path: str, samples: List[Dict[str, Any]], t_start: float,
         budgets: Dict[str, Optional[int]], title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    ts = [s["time"] - t_start for s in samples]
    for host in sorted(samples[0]["mem"]) if samples else []:
        line, = ax1.plot(ts, [(s["mem"][host].get("usage") or 0) / 2**20 for s in samples],
                         label="%s used" % host)
        if budgets.get(host):
            ax1.axhline(budgets[host] / 2**20, linestyle="--", color=line.get_color(),
                        label="%s budget" % host)
    peak = max([(m.get("usage") or 0) for s in samples for m in s["mem"].values()] or [1])
    shown = [b for b in budgets.values() if b and b < 3 * peak]
    ax1.set_ylim(0, 1.15 * max([peak] + shown) / 2**20)
    ax1.set_ylabel("cgroup memory (MiB)")
    ax1.legend(loc="upper left", fontsize=8)
    ax1.set_title(title)
    cl = [s.get("cluster") or {} for s in samples]
    ax2.plot(ts, [len(c.get("up", [])) for c in cl], label="OSDs up", color="tab:green")
    ax2.set_ylabel("OSDs up")
    ax3 = ax2.twinx()
    ax3.plot(ts, [c.get("pgs_active", 0) for c in cl], label="PGs active", color="tab:blue")
    ax3.plot(ts, [c.get("pgs_clean", 0) for c in cl], label="PGs clean", color="tab:gray")
    ax3.set_ylabel("PGs")
    ax2.set_xlabel("seconds since recovery start")
    for ax in (ax2, ax3):
        ax.axvline(0, color="k", linewidth=0.5)
    h1, l1 = ax2.get_legend_handles_labels()
    h2, l2 = ax3.get_legend_handles_labels()
    ax2.legend(h1 + h2, l1 + l2, loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
