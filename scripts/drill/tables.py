"""Markdown tables from drill reports (the JSON of ceph-recovery-drill --json), for docs:

  python3 -m ceph_recovery_tools.drill.tables [--release NAME] [LABEL=]REPORT.json ...

Reports are read in the order given (a run's position matters: the module learns, and the
lab's OSDs grow, from one run to the next). Prints three tables: one row per run (the failed
hosts' sampled peak usage (the kernel's memory.peak covers the cgroup's whole life) and
per-OSD peaks, OOM kills, starts, restarts, heap releases, times); every start's
predicted vs observed peak, at its grant and at its boot (its load + the learned growth; with
--replay also the core's rule replayed on the reports), with the summary
(measures.summarize); every heap release's rss before and after. With --returning: per returning OSD the log entries it missed, its load-time
rss, peak, the core's load-to-peak rules with their errors, and the run's times. Nothing in them is typed by hand.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any, Dict, List, Optional, Tuple

from .measures import mark_booted, summarize

MiB = 1 << 20


def _mib(n: Optional[float]) -> str:
    return "-" if n is None else "%.0f" % (float(n) / MiB)


def _s(n: Optional[float]) -> str:
    return "-" if n is None else "%.0f" % n


def load(args: List[str]) -> List[Tuple[str, Dict[str, Any]]]:
    out = []
    for a in args:
        label, _, path = a.rpartition("=")
        with open(path) as f:
            r = mark_booted(json.load(f))
        out.append((label or os.path.splitext(os.path.basename(path))[0], r))
    return out


def runs_table(reports: List[Tuple[str, Dict[str, Any]]]) -> List[str]:
    rows = ["| run | mode | budget MiB | cgroup limit MiB | host peak MiB (sampled) | OSD peaks MiB | "
            "OOM kills | starts | restarts | heap releases | all up s | clean s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, r in reports:
        hosts = r.get("failed_hosts") or []
        osds = r.get("failed_osds") or []
        peaks = r.get("peak_rss_bytes_by_osd") or {}
        budgets = r.get("budget_bytes_by_host") or {}
        rows.append("| %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %s | %s |" % (
            label, r.get("mode"), ", ".join(_mib(budgets.get(h)) for h in hosts),
            _mib(r.get("host_mem_limit")),
            ", ".join(_mib((r.get("peak_mem_bytes_by_host") or {}).get(h)) for h in hosts),
            ", ".join("osd.%s %s" % (o, _mib(peaks.get(str(o)))) for o in osds),
            sum(int(v or 0) for h, v in (r.get("oom_kills_by_host") or {}).items()
                if h in hosts),
            ", ".join("%s" % v for v in (r.get("process_starts_by_osd") or {}).values()),
            len(r.get("restarts") or []), len(r.get("heap_release_effects") or []),
            _s(r.get("time_to_all_up_s")), _s(r.get("time_to_all_pgs_clean_s"))))
    return rows


def _err(v: Optional[float]) -> str:
    return "-" if v is None else "%+.0f %%" % (100 * v)


def replay(reports: List[Tuple[str, Dict[str, Any]]]) -> None:
    """Sets `replay_bytes` / `replay_error` on every booted start with a known load: the peak
    the core's rule (ceph_recovery.growth.peak_from_load) predicts from that load, its missed
    entries where the report has them, and the (peak - load, missed entries) of the booted
    starts of the EARLIER reports, in the order given (a report does not say when its own
    starts settled, so their growths count from the next report on). For comparing the
    rule of one commit with another's on the same reports."""
    from ceph_recovery.growth import GROWTH_WINDOW, peak_from_load
    samples: List[Tuple[int, Optional[int]]] = []
    for _label, r in reports:
        done = []
        for p in r.get("predictions") or []:
            load, seen = p.get("load_bytes"), p.get("observed_peak_bytes")
            missed = p.get("missed_entries")
            if not p.get("booted"):     # kept in preboot: its rss is its load, no peak
                if seen:
                    p["replay_bytes"] = peak_from_load(int(seen), samples[-GROWTH_WINDOW:],
                                                       missed)
                continue
            if not load:
                continue
            p["replay_bytes"] = peak_from_load(int(load), samples[-GROWTH_WINDOW:], missed)
            p["replay_error"] = round(p["replay_bytes"] / seen - 1.0, 4) if seen else None
            if seen:
                done.append((max(0, int(seen) - int(load)), missed))
        samples += done


def predictions_table(reports: List[Tuple[str, Dict[str, Any]]],
                      with_replay: bool = False) -> List[str]:
    """Every start: the peak its grant was admitted on, its preboot load, the peak gate 2 let
    it boot on (load + learned growth), with --replay the rule replayed on older reports,
    the observed peak and the errors."""
    head = ["run", "osd", "predicted at grant MiB", "load MiB", "predicted at boot MiB"] + (
        ["replayed MiB"] if with_replay else []) + [
        "observed peak MiB", "error at grant", "error at boot"] + (
        ["replay error"] if with_replay else [])
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, r in reports:
        for p in r.get("predictions") or []:
            cells = [label, "osd.%s%s%s" % (p["osd"], " (probe)" if p.get("probe") else "",
                                             "" if p.get("booted", True) else " (not booted)"),
                     _mib(p["predicted_bytes"]), _mib(p.get("load_bytes")),
                     _mib(p.get("boot_predicted_bytes"))]
            cells += [_mib(p.get("replay_bytes"))] if with_replay else []
            cells += [_mib(p["observed_peak_bytes"]), _err(p["error"]), _err(p.get("boot_error"))]
            cells += [_err(p.get("replay_error"))] if with_replay else []
            rows.append("| " + " | ".join(cells) + " |")
    return rows + [""] + _summary_lines(reports, with_replay)


def _summary_lines(reports: List[Tuple[str, Dict[str, Any]]], with_replay: bool) -> List[str]:
    s = summarize(r for _, r in reports)
    pct = (lambda v: "-" if v is None else "%.0f %%" % (100 * v))
    out = ["Starts that booted: %d. |error| at grant: median %s, worst %s; from the second "
           "start on: median %s, worst %s." % (
               s["starts"], pct(s["median_abs_error"]), pct(s["worst_abs_error"]),
               pct(s["median_abs_error_from_second"]), pct(s["worst_abs_error_from_second"])),
           "|error| at boot (load + learned growth), from the second start on: %d starts, "
           "median %s, worst %s." % (s["boot_starts"],
                                     pct(s["boot_median_abs_error_from_second"]),
                                     pct(s["boot_worst_abs_error_from_second"]))]
    if with_replay:
        errs = sorted(abs(p["replay_error"]) for _, r in reports
                      for p in (r.get("predictions") or [])[:] if p.get("replay_error") is not None)
        first = next((p for _, r in reports for p in r.get("predictions") or []), None)
        if first is not None and first.get("replay_error") is not None:
            errs.remove(abs(first["replay_error"]))
        out.append("|error| of the replayed rule, from the second start on: %d starts, median "
                   "%s, worst %s." % (len(errs), pct(statistics.median(errs)) if errs else "-",
                                      pct(errs[-1]) if errs else "-"))
    budget = {id(p): max([b for b in (r.get("budget_bytes_by_host") or {}).values() if b]
                         or [None], key=lambda b: b or 0)
              for _, r in reports for p in r.get("predictions") or []}
    for p in s["kept_in_preboot"]:
        out.append("Kept in preboot (never booted): osd.%s, preboot rss %s MiB, predicted at "
                   "grant %s MiB%s, budget %s MiB." % (
                       p["osd"], _mib(p["observed_peak_bytes"]), _mib(p["predicted_bytes"]),
                       ", replayed peak from its load %s MiB" % _mib(p["replay_bytes"])
                       if p.get("replay_bytes") else "", _mib(budget.get(id(p)))))
    return out


def returning_table(reports: List[Tuple[str, Dict[str, Any]]]) -> List[str]:
    """Per returning OSD: the log entries its PGs wrote while it was down (journal grant_start
    `observed`), the rss it loaded in preboot (journal allow_boot, controlled runs), its peak,
    the peak the core's rules predict from that load (ceph_recovery.growth: by_missed, and
    LOAD_TO_PEAK_MIN x the load) with their errors, and the run's times."""
    from ceph_recovery.growth import LOAD_TO_PEAK_MIN, by_missed
    rows = ["| run | osd | missed entries | load-time rss MiB | peak MiB | by missed entries MiB "
            "| its error | %g x load error | all up s | all PGs active s | clean s |"
            % LOAD_TO_PEAK_MIN, "|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, r in reports:
        journal = r.get("journal") or []
        loads = {j["action"]["osd"]: j.get("load_rss_bytes") for j in journal
                 if (j.get("action") or {}).get("kind") == "allow_boot"}
        missed = {j["action"]["osd"]: (j.get("observed") or {}).get("missed_entries")
                  for j in journal if (j.get("action") or {}).get("kind") == "grant_start"}
        for o in r.get("failed_osds") or []:
            load, m = loads.get(o), missed.get(o)
            peak = (r.get("peak_rss_bytes_by_osd") or {}).get(str(o))
            rule = by_missed(load, m) if load else None
            rows.append("| %s | osd.%s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                label, o, "-" if m is None else m, _mib(load), _mib(peak), _mib(rule),
                _err(rule / peak - 1.0) if rule and peak else "-",
                _err(load * LOAD_TO_PEAK_MIN / peak - 1.0) if load and peak else "-",
                _s(r.get("time_to_all_up_s")), _s(r.get("time_to_all_pgs_active_s")),
                _s(r.get("time_to_all_pgs_clean_s"))))
    return rows


def heap_table(reports: List[Tuple[str, Dict[str, Any]]]) -> List[str]:
    rows = ["| run | osd | supported | rss before MiB | lowest rss after MiB |",
            "|---|---|---|---|---|"]
    for label, r in reports:
        for e in r.get("heap_release_effects") or []:
            rows.append("| %s | osd.%s | %s | %s | %s |" % (
                label, e["osd"], e["supported"], _mib(e["rss_before_bytes"]),
                _mib(e["rss_after_bytes"])))
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="ceph-recovery-drill-tables", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--release", default=None, help="heading: the reports' Ceph release")
    p.add_argument("--returning", action="store_true",
                   help="only the returning OSDs' table (load, peak, times)")
    p.add_argument("--replay", action="store_true",
                   help="also replay the core's load + learned growth rule on the reports "
                        "(for reports written before the module reported it)")
    p.add_argument("reports", nargs="+", help="[LABEL=]drill report JSON, in run order")
    a = p.parse_args(argv)
    try:
        reports = load(a.reports)
    except (OSError, ValueError) as e:
        print("ceph-recovery-drill-tables: %s" % e, file=sys.stderr)
        return 2
    if a.release:
        print("### %s\n" % a.release)
    if a.returning:
        print("\n".join(returning_table(reports)))
        return 0
    if a.replay:
        replay(reports)
    print("\n".join(runs_table(reports) + [""] + predictions_table(reports, a.replay) + [""]
                    + heap_table(reports)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
