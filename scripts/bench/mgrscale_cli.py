"""`ceph-recovery-bench --mgr-scale --out DIR`: runs mgrscale.py at each size, writes
DIR/mgr-scale.json (one row per size; the raw measurements in DIR/mgr-scale-raw.json),
DIR/mgr-scale.png and DIR/mgr-scale.md (the docs page, from the JSON)."""
from __future__ import annotations

import json
import os
import platform
import time
from typing import Any, Callable, Dict, List

from . import mgrscale, mgrscale_report


def run(out_dir: str, sizes: List[int], lab_dir: str, module_dir: str, code: str,
        log: Callable[..., None], command: bool = False) -> Dict[str, Any]:
    """`command`: the command transport's report rate too, at the largest size."""
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.monotonic()
    raws, rows = [], []
    for osds, hosts, racks, pgs in mgrscale.SIZES:
        if osds not in sizes:
            continue
        log("mgr-scale: %d OSDs, %d hosts, %d PGs" % (osds, hosts, pgs))
        raw = mgrscale.measure_size(lab_dir, osds, hosts, racks, pgs, module_dir, log,
                                    command and osds == max(sizes))
        raws.append(raw)
        rows.append(dict(mgrscale_report.row(raw), code=code))
        log(json.dumps({k: rows[-1].get(k) for k in mgrscale_report.FIELDS}))
    doc = {"rows": rows, "total_wall_s": round(time.monotonic() - t0, 1),
           "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                       "load_avg_1m": round(os.getloadavg()[0], 2)}}
    merged = merge_before(out_dir, doc)
    with open(os.path.join(out_dir, "mgr-scale.json"), "w") as f:
        json.dump(merged, f, indent=1, sort_keys=True)
    with open(os.path.join(out_dir, "mgr-scale-raw-%s.json" % code), "w") as f:
        json.dump(raws, f)
    render(out_dir, merged)
    return merged


def render(out_dir: str, doc: Dict[str, Any] = None) -> None:
    """DIR/mgr-scale.png and DIR/mgr-scale.md from DIR/mgr-scale.json (or `doc`)."""
    if doc is None:
        with open(os.path.join(out_dir, "mgr-scale.json")) as f:
            doc = json.load(f)
    rows = doc.get("before", []) + doc["rows"]
    mgrscale_report.plot(rows, os.path.join(out_dir, "mgr-scale.png"))
    with open(os.path.join(out_dir, "mgr-scale.md"), "w") as f:
        f.write(mgrscale_report.page(dict(doc, rows=rows)))


def merge_before(out_dir: str, doc: Dict[str, Any]) -> Dict[str, Any]:
    """Rows measured with another code (`--code before`) kept beside this run's, under
    "before" (the plot and the page show both)."""
    path = os.path.join(out_dir, "mgr-scale-before.json")
    if doc["rows"] and doc["rows"][0]["code"] == "before":
        with open(path, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
        return dict(doc, before=[])
    if os.path.exists(path):
        with open(path) as f:
            doc = dict(doc, before=json.load(f)["rows"])
    return doc
