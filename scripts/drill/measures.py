"""Measurements a drill report carries beyond its timeline, computed from the drill's own samples
(rss per OSD every sampling interval) and the module's journal, never typed by hand:

- `predictions`: for every start the module granted on a prediction (a grant_start that is not
  a re-grant, nor a drill abort's start-everything, which carries no prediction), the
  peak it was admitted on (`predicted_bytes`) against the peak rss that OSD reached from its
  grant until its next start, restart or stop (or the end of the drill); error = predicted /
  observed - 1 (> 0: an overestimate). A start whose OSD never booted (never ran, or a probe
  kept in preboot: its rss is its load, not a peak) has no error. Once it booted, also the
  rss it had loaded in preboot (`load_bytes`, journal allow_boot `load_rss_bytes`) and the
  peak gate 2 let it boot on (`boot_predicted_bytes`, allow_boot `predicted_bytes`: its
  load + the learned growth), with `boot_error` the same way. `pgs` and `missed_entries`
  (the log entries its PGs wrote while it was down) are what the grant's snapshot showed of
  it (journal `observed`; None where the module did not know them).
- `heap_release_effects`: for every heap release, the OSD's rss the snapshot showed when the
  module asked (journal `observed.rss_bytes`) and the lowest sampled rss within
  HEAP_AFTER_S after it.

summarize() aggregates the predictions of several reports in their order (first start of the
first report = the first prediction on that cluster; the goal is counted from the second on).
"""
from __future__ import annotations

import statistics
from typing import Any, Dict, Iterable, List, Optional

HEAP_AFTER_S = 6.0          # helper report (2 s) + tick (2 s) + sampling slack
ENDS_WINDOW = ("grant_start", "restart_osd", "stop_osd")


def _kind(j: Dict[str, Any]) -> str:
    return (j.get("action") or {}).get("kind", "")


def _is_start(j: Dict[str, Any]) -> bool:
    a = j.get("action") or {}
    return a.get("kind") == "grant_start" and bool(a.get("predicted_bytes")) and \
        not str(a.get("reason", "")).startswith("re-grant")


def _peak(samples: List[Dict[str, Any]], osd: str, t0: float, t1: Optional[float]) -> int:
    return max((int((s.get("rss") or {}).get(osd) or 0) for s in samples
                if s["time"] >= t0 and (t1 is None or s["time"] < t1)), default=0)


def predictions(samples: List[Dict[str, Any]], journal: List[Dict[str, Any]],
                t_start: float) -> List[Dict[str, Any]]:
    out: List[Dict[str, Any]] = []
    for i, j in enumerate(journal):
        if not _is_start(j) or j["time"] < t_start - 1.0:
            continue
        osd = j["action"]["osd"]
        ends = [k["time"] for k in journal[i + 1:]
                if (k.get("action") or {}).get("osd") == osd and (
                    _is_start(k) or _kind(k) in ENDS_WINDOW[1:])]
        end = ends[0] if ends else None
        observed = _peak(samples, str(osd), j["time"], end)
        predicted = int(j["action"].get("predicted_bytes") or 0)
        boot = _boot(journal[i + 1:], osd, end)
        booted = boot is not None
        at_boot = (boot or {}).get("action", {}).get("predicted_bytes")
        seen = j.get("observed") or {}
        out.append({"osd": osd, "time": j["time"], "predicted_bytes": predicted,
                    "pgs": seen.get("pgs"), "missed_entries": seen.get("missed_entries"),
                    "observed_peak_bytes": observed or None, "booted": booted,
                    "probe": str(j["action"].get("reason", "")).startswith("probe"),
                    "error": round(predicted / observed - 1.0, 4)
                    if observed and booted else None,
                    "load_bytes": (boot or {}).get("load_rss_bytes"),
                    "boot_predicted_bytes": at_boot,
                    "boot_error": round(at_boot / observed - 1.0, 4)
                    if observed and at_boot else None})
    return out


def _boot(after: List[Dict[str, Any]], osd: int, end: Optional[float]) -> Optional[Dict]:
    """The first allow_boot of `osd` in `after` before `end` (None: it never booted)."""
    return next((k for k in after if _kind(k) == "allow_boot" and k["action"].get("osd") == osd
                 and (end is None or k["time"] < end)), None)


def mark_booted(report: Dict[str, Any]) -> Dict[str, Any]:
    """Reports written before predictions carried `booted`: derive it from their journal."""
    journal = report.get("journal") or []
    for p in report.get("predictions") or []:
        if "boot_predicted_bytes" not in p:     # before they were reported: from the journal
            later = [k for k in journal if k["time"] > p["time"]]
            boot = _boot(later, p["osd"], None) or {}
            p["load_bytes"] = boot.get("load_rss_bytes")
            at_boot, seen = boot.get("action", {}).get("predicted_bytes"), \
                p.get("observed_peak_bytes")
            p["boot_predicted_bytes"] = at_boot
            p["boot_error"] = round(at_boot / seen - 1.0, 4) if at_boot and seen else None
        if "booted" in p:
            continue
        ends = [k["time"] for k in journal if k["time"] > p["time"]
                and (k.get("action") or {}).get("osd") == p["osd"]
                and (_is_start(k) or _kind(k) in ENDS_WINDOW[1:])]
        p["booted"] = any(_kind(k) == "allow_boot" and k["action"].get("osd") == p["osd"]
                          and k["time"] > p["time"] and (not ends or k["time"] < ends[0])
                          for k in journal)
        if not p["booted"]:
            p["error"] = None
    return report


def heap_release_effects(samples: List[Dict[str, Any]],
                         journal: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for j in journal:
        if _kind(j) != "heap_release":
            continue
        osd = str(j["action"]["osd"])
        after = [int((s.get("rss") or {}).get(osd) or 0) for s in samples
                 if j["time"] < s["time"] <= j["time"] + HEAP_AFTER_S]
        after = [a for a in after if a > 0]
        out.append({"osd": int(osd), "time": j["time"],
                    "supported": (j.get("answer") or {}).get("heap_supported"),
                    "rss_before_bytes": (j.get("observed") or {}).get("rss_bytes"),
                    "rss_after_bytes": min(after) if after else None})
    return out


def summarize(reports: Iterable[Dict[str, Any]]) -> Dict[str, Any]:
    """Predictions of `reports` in order: the first one, then median and worst |error| of all
    and of those from the second start on (starts with an observed peak only)."""
    every = [p for r in reports for p in r.get("predictions") or []]
    starts = [p for p in every if p["error"] is not None]
    errs = [abs(p["error"]) for p in starts]
    rest = errs[1:]
    boot = [abs(p["boot_error"]) for p in every[1:] if p.get("boot_error") is not None]
    return {
        "boot_starts": len(boot),
        "boot_median_abs_error_from_second": round(statistics.median(boot), 4) if boot else None,
        "boot_worst_abs_error_from_second": round(max(boot), 4) if boot else None,
        "kept_in_preboot": [p for p in every if not p.get("booted")
                            and (p.get("observed_peak_bytes") or 0) > 0],
        "starts": len(starts),
        "first": starts[0] if starts else None,
        "median_abs_error": round(statistics.median(errs), 4) if errs else None,
        "worst_abs_error": round(max(errs), 4) if errs else None,
        "median_abs_error_from_second": round(statistics.median(rest), 4) if rest else None,
        "worst_abs_error_from_second": round(max(rest), 4) if rest else None,
    }
