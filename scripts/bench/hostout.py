"""The host-out table of `ceph-recovery-bench --sweep --host-out`: one or two hosts down past
mon_osd_down_out_interval, marked out by the model's monitor and back by a backfill.

Acceptance per cell: controlled keeps 0 OOM kills and is never worse than naive (time to all
PGs active no later than naive's, or naive never gets there).
"""
from __future__ import annotations

from typing import Dict, List, Tuple

from .cells import ABBR, _line, _ok, _t1, cells_table, render

TABLE = "host-out"


def label(r: dict) -> str:
    """`ctl h1 1h`, `naive h1+2 4h`: the strategy, the hosts down and how long."""
    hosts = "+".join(p.split(":")[1] for p in r.get("fail", "").split(",") if ":" in p)
    return "%s h%s %gh" % (ABBR.get(r["variant"], r["variant"]), hosts,
                           float(r.get("downtime_s") or 0) / 3600.0)


def _cells(rows: List[dict]) -> Dict[Tuple, Dict[str, dict]]:
    out: Dict[Tuple, Dict[str, dict]] = {}
    for r in rows:
        if r.get("table") == TABLE:
            key = (r["hosts_n"], r["ram_gib"], r.get("fail"), r.get("downtime_s"))
            out.setdefault(key, {})[r["variant"]] = r
    return out


def acceptance(rows: List[dict]) -> List[dict]:
    """Per host-out cell: 0 OOM kills for controlled, and no later than naive."""
    out = []
    for (h, ram, fail, down), v in sorted(_cells(rows).items()):
        c, nv = v.get("controlled"), v.get("naive")
        name = label(c or nv or {"variant": "controlled", "fail": fail, "downtime_s": down})
        if not _ok(c):
            lines = [_line("controlled available", None, (c or {}).get("error", "not run"))]
        else:
            ct = c["time_to_all_pgs_active_s"]
            lines = [_line("0 OOM kills", c["oom_kills"] == 0, "oom %d, marked out %s" % (
                c["oom_kills"], c.get("osds_marked_out")))]
            nt = nv["time_to_all_pgs_active_s"] if _ok(nv) else None
            lines.append(_line("never worse than naive", None if nt is None and not _ok(nv)
                               else (nt is None or (ct is not None and ct <= nt)),
                               "%s vs %s" % (_t1(ct), _t1(nt))))
        for ln in lines:
            ln.update(hosts=h, ram_gib=ram, variant=name)
            out.append(ln)
    return out


def text(rows: List[dict], feas: dict, seed: int) -> str:
    """The host-out rows as an 80-column table, each strategy labelled with its cell."""
    mine = [dict(r, variant=label(r)) for r in rows if r.get("table") == TABLE]
    if not mine:
        return ""
    mine.sort(key=lambda r: (r["hosts_n"], r["ram_gib"], r["variant"].split(" ", 1)[1],
                             r["variant"]))
    return render(cells_table(mine, "Hosts down past mon_osd_down_out_interval (marked out, "
                              "back by a backfill), seed %d" % seed, feas))


__all__ = ["acceptance", "text", "label", "TABLE"]
