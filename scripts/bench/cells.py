"""The sweep's table cells: the 80-column text table of one set of runs (cells_table(),
render()) and the pieces of an acceptance line, shared by the sweep's report (report.py) and
its host-out table (hostout.py). Their own module so that report.py imports hostout.py and
hostout.py imports these, never report.py: imports flow one way."""
from __future__ import annotations

import io
from typing import Dict, List, Optional

from rich import box
from rich.console import Console
from rich.table import Table

WIDTH = 80
# A rule under the header (the box's third line) and nothing else: no column dividers, so 80
# columns hold 14 columns. Cells fold, never end in "...", when the terminal is narrower.
HEAD_RULE = box.Box("    \n    \n ── \n    \n    \n    \n    \n    \n")
ABBR = {"naive": "naive", "controlled": "ctl", "ctl-1": "ctl-1", "ctl-cover": "ctl-cover",
        "ctl-auto": "ctl-auto", "unlimited": "unlim", "oracle": "oracle",
        "oracle-0.9": "orc-0.9", "ctl-0.95": "ctl-.95",
        "ctl-together": "ctl-tog"}


def _t(v) -> str:
    return "-" if v is None else "%.0f" % v


def _t1(v) -> str:
    """Times in acceptance details: exact to the event (a peering's end), so one decimal."""
    return "-" if v is None else "%.1f" % v


def _ended(r: dict) -> str:
    """plan()-driven runs: yes when plan() said Done (its phase is done or aborted)."""
    if r.get("plan_done") is None:
        return ""
    return "yes" if (r.get("plan_done") or r.get("plan_phase") in ("done", "aborted")) else "no"


def render(table: Table, width: int = WIDTH) -> str:
    """A rich table as plain text at `width` columns (folds, never truncates with '...')."""
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None, legacy_windows=False).print(table)
    return buf.getvalue()


def cells_table(rows: List[dict], title: str, feas: Dict[str, dict]) -> Table:
    t = Table(title=title, box=HEAD_RULE, pad_edge=False, padding=(0, 0, 0, 0),
              title_justify="left", show_edge=False)
    for col in ("hosts", "GiB", "fit", "strategy", "active", "minsz", "clean", "PGh", "OOM",
                "inact", "down", "pk/RAM", "end", "wall"):   # headers no wider than their cells
        t.add_column(col, justify="left" if col in ("strategy", "fit") else "right",
                     overflow="fold")
    last = None
    for r in rows:
        key = (r["hosts_n"], r["ram_gib"])
        f = feas.get(str(r["ram_gib"]), {})
        fit = ("D" if f.get("fits_default") else "") + ("m" if f.get("fits_min_target") else "")
        head = (str(r["hosts_n"]), str(r["ram_gib"]), fit or "-") if key != last else ("", "", "")
        last = key
        name = ABBR.get(r["variant"], r["variant"])
        if "error" in r:
            t.add_row(*head, name, "n/a", "", "", "", "", "", "", "", "", "")
            continue
        t.add_row(*head, name, _t(r["time_to_all_pgs_active_s"]),
                  _t(r["time_to_all_pgs_min_size_s"]), _t(r["time_to_all_pgs_clean_s"]),
                  pg_hours(r.get("inactive_pg_s")), str(r["oom_kills"]),
                  str(r["pgs_inactive_at_end"]), str(r["osds_down_at_end"]),
                  "%.2f" % (r["peak_host_mem_bytes"] / r["host_ram_bytes"]), _ended(r),
                  "%.0f" % r["wall_s"])
    return t


def pg_hours(pg_s: Optional[float]) -> str:
    """PG-seconds without client I/O as whole PG-hours; ? for a JSON written before the sweep
    recorded them."""
    return "?" if pg_s is None else "%.0f" % (pg_s / 3600.0)


def _ok(r: Optional[dict]) -> bool:
    return r is not None and "error" not in r


def _line(name: str, ok: Optional[bool], detail: str) -> dict:
    return {"check": name, "result": "n/a" if ok is None else ("PASS" if ok else "FAIL"),
            "detail": detail}
