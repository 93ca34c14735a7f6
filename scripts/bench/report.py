"""The sweep's outputs: an 80-column text table, the sweep's acceptance lines per cell, and the
controlled / naive heatmap (PNG)."""
from __future__ import annotations

import math
import textwrap
from typing import Dict, List, Optional, Tuple

from . import hostout
from .cells import ABBR, WIDTH, _ended, _line, _ok, _t, _t1, cells_table, pg_hours, render


def _by_cell(rows: List[dict]) -> Dict[Tuple[int, float], Dict[str, dict]]:
    out: Dict[Tuple[int, float], Dict[str, dict]] = {}
    for r in rows:
        out.setdefault((r["hosts_n"], r["ram_gib"]), {})[r["variant"]] = r
    return out


def acceptance_cell(v: Dict[str, dict], ctl_key: str = "controlled") -> List[dict]:
    """The sweep's acceptance lines for one (hosts, RAM) cell and one controlled variant."""
    c, nv, u, o = (v.get(k) for k in (ctl_key, "naive", "unlimited", "oracle"))
    if not _ok(c):
        return [_line("%s available" % ctl_key, None, (c or {}).get("error", "not run"))]
    ct = c["time_to_all_pgs_active_s"]
    ended = _ended(c) == "yes"
    out = [_line("0 OOM kills and ended", c["oom_kills"] == 0 and ended,
                 "oom %d, ended %s, health %s" % (c["oom_kills"], ended,
                                                  _codes(c.get("plan_last_health"))))]
    if _ok(nv) and nv["time_to_all_pgs_active_s"] is not None:
        nt = nv["time_to_all_pgs_active_s"]
        lim = nt if nv["oom_kills"] > 0 else 1.3 * nt
        out.append(_line("all active where naive is, <= %s" % (
            "naive" if nv["oom_kills"] > 0 else "1.3 x naive"),
            ct is not None and ct <= lim, "%s vs %s" % (_t1(ct), _t1(lim))))
    else:
        out.append(_line("all active where naive is", None, "naive never all active"))
    if _ok(u) and u["peak_host_mem_bytes"] <= 0.9 * u["host_ram_bytes"]:
        ut = u["time_to_all_pgs_active_s"]
        out.append(_line("<= 1.3 x unlimited (its peak <= 0.9 RAM)",
                         ct is not None and ut is not None and ct <= 1.3 * ut,
                         "%s vs 1.3 x %s" % (_t1(ct), _t1(ut))))
    elif _ok(o) and o["time_to_all_pgs_active_s"] is not None:
        ot = o["time_to_all_pgs_active_s"]
        out.append(_line("<= 1.2 x oracle", ct is not None and ct <= 1.2 * ot,
                         "%s vs 1.2 x %s" % (_t1(ct), _t1(ot))))
        out += _same_budget_oracle(ct, v.get("oracle-0.9"))
        if ctl_key == "controlled":
            out += _at_oracle_budget(v.get("ctl-0.95"), ot)
    else:
        out.append(_line("<= 1.2 x oracle", None, "oracle never all active"))
    if _ok(o) and o["pgs_inactive_at_end"] == 0:
        out.append(_line("no PG inactive at end (oracle fits)", c["pgs_inactive_at_end"] == 0,
                         "%d inactive" % c["pgs_inactive_at_end"]))
    return out


def _same_budget_oracle(ct: Optional[float], o8: Optional[dict]) -> List[dict]:
    """The oracle at controlled's default budget (0.9 of RAM, not its own 0.95): what perfect
    footprints alone would gain, apart from the budget. Reported beside the sweep's
    <= 1.2 x oracle line."""
    if not _ok(o8) or o8["time_to_all_pgs_active_s"] is None:
        return []
    ot = o8["time_to_all_pgs_active_s"]
    return [_line("<= 1.2 x oracle at the same budget (0.9)", ct is not None and ct <= 1.2 * ot,
                  "%s vs 1.2 x %s" % (_t1(ct), _t1(ot)))]


def _at_oracle_budget(c95: Optional[dict], ot: float) -> List[dict]:
    """Controlled at the oracle's budget (0.95 of RAM, `--budget 0.95`): its decisions against
    perfect footprints with the budget set aside; it must stay at 0 OOM kills there too."""
    if not _ok(c95):
        return []
    ct = c95["time_to_all_pgs_active_s"]
    return [_line("at the oracle's budget (ctl --budget 0.95): 0 OOM, <= 1.2 x oracle",
                  c95["oom_kills"] == 0 and ct is not None and ct <= 1.2 * ot,
                  "oom %d, %s vs 1.2 x %s" % (c95["oom_kills"], _t1(ct), _t1(ot)))]


def service_text(rows: List[dict], ctl_key: str = "controlled") -> str:
    """Service lost (PGh) by controlled against naive and unlimited, over every cell: not one
    of the sweep's acceptance lines, which time the last PG; this sums every PG's time
    without I/O."""
    out = []
    cells = _by_cell(rows)
    for other in ("naive", "unlimited"):
        ratios = [v[other]["inactive_pg_s"] / max(1.0, v[ctl_key]["inactive_pg_s"])
                  for v in cells.values() if all(
                      _ok(v.get(k)) and "inactive_pg_s" in v[k] for k in (ctl_key, other))]
        if ratios:
            out.append("PG-hours without I/O, %s / %s: %d of %d cells >= 1 (%.1f-%.1f x)" % (
                other, ABBR.get(ctl_key, ctl_key), sum(r >= 1.0 for r in ratios), len(ratios),
                min(ratios), max(ratios)))
    return "\n".join(out) + "\n" if out else ""


def _codes(health) -> str:
    codes = sorted({h.split(":")[0] for h in (health or ())})
    return ",".join(codes) or "-"


def acceptance(rows: List[dict]) -> List[dict]:
    out = []
    for (h, ram), v in sorted(_by_cell([r for r in rows if r["table"] == "sweep"]).items()):
        for key in ("controlled", "ctl-1", "ctl-cover"):
            for line in acceptance_cell(v, key):
                line.update(hosts=h, ram_gib=ram, variant=key)
                out.append(line)
    return out + hostout.acceptance(rows)


def acceptance_text(lines: List[dict], width: int = WIDTH) -> str:
    out = []
    for ln in lines:
        out.append(textwrap.fill("%3d x %2s GiB %-8s %-4s %s: %s" % (
            ln["hosts"], ln["ram_gib"], ABBR.get(ln["variant"], ln["variant"]), ln["result"],
            ln["check"], ln["detail"]), width=width, subsequent_indent=" " * 27))
    n = {k: sum(ln["result"] == k for ln in lines) for k in ("PASS", "FAIL", "n/a")}
    out.append("acceptance: %(PASS)d pass, %(FAIL)d fail, %(n/a)d n/a" % n)
    return "\n".join(out)


def heatmap(rows: List[dict], path: str, ctl_key: str = "controlled") -> None:
    """controlled / naive time to all PGs active, hosts x RAM, log2 colour, annotated; only one
    of them all active: the scale's end on its side; neither: grey."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cells = _by_cell([r for r in rows if r["table"] == "sweep"])
    hosts = sorted({h for h, _ in cells})
    rams = sorted({ram for _, ram in cells})
    grid = [[math.nan] * len(rams) for _ in hosts]
    text = [[""] * len(rams) for _ in hosts]
    for i, h in enumerate(hosts):
        for j, ram in enumerate(rams):
            v = cells.get((h, ram), {})
            c, nv = v.get(ctl_key), v.get("naive")
            ct = c.get("time_to_all_pgs_active_s") if _ok(c) else None
            nt = nv.get("time_to_all_pgs_active_s") if _ok(nv) else None
            if ct is not None and nt is not None:
                grid[i][j] = math.log2(ct / nt)
                text[i][j] = "%.2f" % (ct / nt)
            else:           # only one got there: the colour of "infinitely" better / worse
                if (ct is None) != (nt is None):
                    grid[i][j] = -3.0 if nt is None else 3.0
                text[i][j] = "ctl %s\nnaive %s" % (_t(ct), _t(nt))
    fig, ax = plt.subplots(figsize=(7, 3.2))
    cmap = matplotlib.colormaps["RdYlGn_r"].with_extremes(bad="#d9d9d9")  # NaN: neither
    im = ax.imshow(grid, cmap=cmap, vmin=-3, vmax=3, aspect="auto")
    ax.set_xticks(range(len(rams)), ["%s GiB" % r for r in rams])
    ax.set_yticks(range(len(hosts)), ["%d hosts" % h for h in hosts])
    for i in range(len(hosts)):
        for j in range(len(rams)):
            ax.text(j, i, text[i][j], ha="center", va="center", fontsize=8)
    ax.set_title("%s / naive: time to all PGs active (- = never)" % ctl_key, fontsize=9)
    fig.colorbar(im, ax=ax, label="log2 ratio")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


FIT_LEGEND = ("fit: D = 12 settled OSDs + system fit the RAM at osd_memory_target's default; "
              "m = they fit at its minimum (896 MiB, never below the PG-log load). pk/RAM: "
              "peak host memory / host RAM (any host). PGh: PG-hours without client I/O from "
              "the return on (inactive PGs, and each stop's re-peering). end: plan() said Done. "
              "wall: simulator seconds of that run.")
ORDER = ("naive", "controlled", "ctl-auto", "unlimited", "oracle", "oracle-0.9", "ctl-0.95")


def _ordered(rows: List[dict]) -> List[dict]:
    return sorted(rows, key=lambda r: (r["table"], r["hosts_n"], r["ram_gib"],
                                       ORDER.index(r["variant"]) if r["variant"] in ORDER
                                       else 99))


def sweep_text(doc: dict) -> str:
    """The sweep's tables, legend and acceptance lines as 80-column text."""
    rows = _ordered(doc["rows"])
    sweep = [r for r in rows if r["table"] == "sweep"]
    text = [] if not sweep else [render(cells_table(
        sweep,
        "One rack down 1 h, 12 OSDs/host, seed %d (sim s; - = never within %.0f h)%s"
        % (doc["seed"], doc["horizon_s"] / 3600,
           "".join(" " + a for a in doc.get("sim_args") or ())), doc["feasibility"]))]
    big = [r for r in rows if r["table"] == "big"]
    if big:
        text.append(render(cells_table(big, "10,080 OSDs (840 hosts x 12)", doc["feasibility"])))
    host_out = hostout.text(rows, doc["feasibility"], doc["seed"])
    if host_out:
        text.append(host_out)
    text.append(textwrap.fill(FIT_LEGEND, width=WIDTH) + "\n")
    text.append(service_text([r for r in rows if r["table"] != hostout.TABLE]))
    text.append(acceptance_text(doc.get("acceptance") or acceptance(doc["rows"])))
    text.append("total wall %.1f s, %d workers" % (doc["total_wall_s"], doc["workers"]))
    return "\n".join(text)


__all__ = ["render", "cells_table", "acceptance", "acceptance_text", "heatmap", "pg_hours",
           "service_text", "sweep_text"]
