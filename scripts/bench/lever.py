"""`ceph-recovery-bench --throttle-lever --out DIR`: the throttle lever on a real lab.

One OSD of a Tentacle lab (mClock, the default scheduler there) is stopped, objects are
written while it is down, and it is started again; its recovery is watched until no object
is degraded. Each variant sets the throttle policy's settings on that OSD (the settings the
run sets: ceph_recovery.policies.throttle for an mClock OSD) before the start, and removes
them after; `none` sets nothing. The `raised/` variants run on the cluster operators tune
for speed (RAISED on every OSD: the override, osd_max_backfills 4, osd_recovery_max_active
8), where the throttle has more to take. The variants alternate, `--reps` rounds each, in
one lab.

Measured per round:
  pg_rate           objects/s: the objects recovered in the PGs that hold it (pg dump:
                    num_objects_recovered) over the seconds from its boot to the last of
                    those PGs' last_clean stamp (the OSDs' own clocks, not the sampled PG
                    stats, which lag by a stats period)
  rss_growth        its peak RSS (psutil) minus its RSS when it came up
  buffer_anon_peak  peak of its buffer_anon mempool (admin socket dump_mempools): the
                    recovery ops' data it holds
  host_peak         peak usage of its host's memory cgroup
  effective         what the OSD itself runs (`ceph config show osd.N`): the settings took

DIR/lever.json holds every round and the medians; DIR/lever.md is the page.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import psutil

from ceph_recovery.model import MCLOCK, OsdState
from ceph_recovery.policies.throttle import PROFILE, THROTTLE

from ..lab import build, launch, release, teardown
from ..lab.inrelease import LabObjects

SHOWN = ("osd_op_queue", "osd_mclock_override_recovery_settings", "osd_recovery_max_active",
         "osd_max_backfills", "osd_mclock_profile")
OSD = 0
SAMPLE_S = 0.5
MiB = 1 << 20


# what operators set to speed recovery up (the lab drill's values), on every OSD: where the
# throttle has something to take
RAISED = (("osd_mclock_override_recovery_settings", "true"), ("osd_max_backfills", "4"),
          ("osd_recovery_max_active", "8"))


def variants() -> List[Tuple[str, Tuple[Tuple[str, str], ...]]]:
    """(name, settings on the returning OSD) as the run sets them on an mClock OSD; the
    `raised/` ones on a cluster with RAISED on every OSD."""
    mclock = OsdState(id=OSD, host="h1", crush_path=(), up=True, op_queue=MCLOCK)
    lever = THROTTLE["recovery_min"](mclock)
    return [("none", ()), ("recovery_min", lever),
            ("client_profile", ((PROFILE, "high_client_ops"),)),
            ("raised/none", ()), ("raised/recovery_min", lever)]


def _baseline(state: Dict[str, Any], raised: bool) -> None:
    for key, value in RAISED:
        args = ("config", "set", "osd", key, value) if raised else ("config", "rm", "osd", key)
        launch.ceph(state, *args, json_out=False)


def _status(state: Dict[str, Any]) -> Dict[str, Any]:
    return launch.ceph(state, "status", timeout=20).get("pgmap", {})


def _up(state: Dict[str, Any], osd: int) -> bool:
    dump = launch.ceph(state, "osd", "dump", timeout=20)
    return any(o["osd"] == osd and o["up"] for o in dump.get("osds", []))


def _asok(state: Dict[str, Any], osd: int, *cmd: str) -> Optional[Dict[str, Any]]:
    sock = launch.admin_socket(state["dir"], "osd.%d" % osd)
    try:
        out = subprocess.run(release.tool(state, "ceph") + ["--admin-daemon", sock] +
                             list(cmd), capture_output=True, text=True, timeout=10)
        return json.loads(out.stdout)
    except (ValueError, OSError, subprocess.TimeoutExpired):
        return None


def _buffer_anon(state: Dict[str, Any], osd: int) -> Optional[int]:
    """Its buffer_anon mempool bytes, from its admin socket (None when it does not answer)."""
    pools = _asok(state, osd, "dump_mempools") or {}
    return pools.get("mempool", {}).get("by_pool", {}).get("buffer_anon", {}).get("bytes")


def _effective(state: Dict[str, Any], osd: int) -> Dict[str, str]:
    out = {}
    for name in SHOWN:
        out[name] = launch.ceph(state, "config", "show", "osd.%d" % osd, name,
                                json_out=False, timeout=20).strip()
    return out


def _degraded(state: Dict[str, Any], limit: float = 120) -> int:
    """Degraded objects once the PG stats show the round's writes: two equal readings > 0
    (the mgr's PG stats lag the writes by a stats period)."""
    last, t0 = -1, time.monotonic()
    while time.monotonic() - t0 < limit:
        deg = int(_status(state).get("degraded_objects", 0))
        if deg > 0 and deg == last:
            return deg
        last = deg
        time.sleep(2)
    return max(last, 0)


def _pg_recovery(state: Dict[str, Any], osd: int) -> Tuple[Dict[str, int], List[str], float]:
    """(pgid -> objects recovered so far, the PGs that hold `osd` now, the latest last_clean
    stamp among them) from `pg dump pgs`: the PG stats carry the OSDs' own stamps, unlike
    the sampled totals, which lag by a stats period."""
    dump = launch.ceph(state, "pg", "dump", "pgs", timeout=30)
    stats = dump.get("pg_stats", dump) if isinstance(dump, dict) else dump
    counts, mine, last = {}, [], 0.0
    for pg in stats or ():
        counts[pg["pgid"]] = int(pg.get("stat_sum", {}).get("num_objects_recovered", 0))
        if osd in (pg.get("up") or []) + (pg.get("acting") or []):
            mine.append(pg["pgid"])
            last = max(last, _stamp(pg.get("last_clean", "")))
    return counts, mine, last


def _stamp(text: str) -> float:
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
    except ValueError:
        return 0.0


def _watch(state: Dict[str, Any], osd: int, host: str, degraded: int,
           limit: float) -> Dict[str, Any]:
    """Sample from the start until the OSD is up and no object is degraded: its boot time and
    the peaks of its RSS, buffer_anon mempool and host cgroup (the rate comes from the PGs'
    stamps afterwards: round_once)."""
    t0, up_at, rss_up = time.monotonic(), None, None
    rss_peak = anon_peak = host_peak = 0
    deg = degraded
    while time.monotonic() - t0 < limit:
        pid = launch.osd_pid(state, osd)
        rss = psutil.Process(pid).memory_info().rss if pid else 0
        host_peak = max(host_peak, launch.cgroup_memory(state, host).get("usage") or 0)
        if up_at is None and _up(state, osd):
            up_at, rss_up = time.monotonic(), rss
        if up_at is not None:
            rss_peak = max(rss_peak, rss)
            anon_peak = max(anon_peak, _buffer_anon(state, osd) or 0)
            deg = int(_status(state).get("degraded_objects", 0))
            if deg == 0:
                break
        time.sleep(SAMPLE_S)
    return {"boot_s": round(up_at - t0, 1) if up_at else None,
            "until_clean_s": round(time.monotonic() - up_at, 1) if up_at else None,
            "degraded_at_up": degraded,
            "rss_at_up": rss_up, "rss_peak": rss_peak,
            "rss_growth": rss_peak - (rss_up or 0), "buffer_anon_peak": anon_peak,
            "host_peak": host_peak, "clean": deg == 0}


def round_once(state: Dict[str, Any], objs: LabObjects, name: str,
               settings: Tuple[Tuple[str, str], ...], n: int, k: int) -> Dict[str, Any]:
    osd, host = OSD, state["osds"][str(OSD)]["host"]
    launch.ceph(state, "osd", "set", "noout", json_out=False)
    launch.stop_osd(state, osd)
    while _up(state, osd):
        time.sleep(1)
    objs.write_aio("%s-%d-" % (name, k), n)
    for key, value in settings:
        launch.ceph(state, "config", "set", "osd.%d" % osd, key, value, json_out=False)
    degraded = _degraded(state)
    before, _mine, _last = _pg_recovery(state, osd)
    started = time.time()
    launch.start_osd(state, osd)
    row = _watch(state, osd, host, degraded, 900)
    launch.wait_pgs_clean(state, 600)
    after, mine, last_clean = _pg_recovery(state, osd)
    done = sum(after[p] - before.get(p, 0) for p in mine)
    span = last_clean - started - (row["boot_s"] or 0.0)
    row.update(pg_recovered=done, pg_span_s=round(span, 2),
               pg_rate=round(done / span, 1) if span > 0 else None)
    row.update(variant=name, round=k, settings=[list(s) for s in settings],
               effective=_effective(state, osd))
    for key, _value in settings:
        launch.ceph(state, "config", "rm", "osd.%d" % osd, key, json_out=False)
    launch.ceph(state, "osd", "unset", "noout", json_out=False)
    launch.wait_pgs_clean(state, 600)
    return row


def summary(rows: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    out = {}
    for name in dict.fromkeys(r["variant"] for r in rows):
        mine = [r for r in rows if r["variant"] == name]
        med = {k: statistics.median(r[k] for r in mine if r.get(k) is not None)
               for k in ("rss_growth", "buffer_anon_peak", "host_peak", "pg_rate",
                         "pg_span_s", "pg_recovered")
               if any(r.get(k) is not None for r in mine)}
        out[name] = dict(med, rounds=len(mine), effective=mine[-1]["effective"])
    for s in out.values():       # the page's rate: the PG stamps' (pg_rate)
        s["rate"] = s.get("pg_rate")
    for name, s in out.items():
        base = out.get("raised/none" if name.startswith("raised/") else "none")
        if base and base["rate"] and base["rss_growth"]:
            s["rate_vs_none"] = round(s["rate"] / base["rate"], 3)
            s["growth_vs_none"] = round(s["rss_growth"] / base["rss_growth"], 3)
    return out


def run(out_dir: str, lab_dir: str, module_dir: str, ceph: str, objects: int,
        object_size: int, reps: int, log: Callable[..., None]) -> Dict[str, Any]:
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.monotonic()
    state = build.up(lab_dir, build.LabOptions(ceph=ceph, module_dir=module_dir,
                                               helpers=False))
    rows: List[Dict[str, Any]] = []
    try:
        objs = LabObjects(state, object_size)
        for k in range(reps):
            for name, settings in variants():
                if name in ("none", "raised/none"):
                    _baseline(state, raised=name.startswith("raised/"))
                log("lever: round %d/%d, %s" % (k + 1, reps, name))
                rows.append(round_once(state, objs, name, settings, objects, k))
                log(json.dumps({x: rows[-1][x] for x in (
                    "pg_rate", "pg_span_s", "pg_recovered", "rss_growth",
                    "buffer_anon_peak")}))
        ok, bad = objs.verify()
    finally:
        teardown.down(lab_dir)
    doc = {"ceph": ceph, "objects_per_round": objects, "object_size": object_size,
           "rounds": rows, "summary": summary(rows), "verified_ok": ok, "verified_bad": bad,
           "total_wall_s": round(time.monotonic() - t0, 1),
           "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                       "load_avg_1m": round(os.getloadavg()[0], 2)}}
    with open(os.path.join(out_dir, "lever.json"), "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    with open(os.path.join(out_dir, "lever.md"), "w") as f:
        f.write(page(doc))
    return doc


def page(doc: Dict[str, Any]) -> str:
    lines = ["# The throttle lever on a real OSD (generated)", "",
             "`ceph-recovery-bench --throttle-lever` on a %s lab: one OSD stopped, %d objects "
             "of %d KiB written while it was down, started again with each variant's settings; "
             "medians of %d rounds. `raised/`: every OSD at osd_max_backfills 4, "
             "osd_recovery_max_active 8 behind the override; ratios against the same "
             "cluster's `none`. Effective = what `ceph config show` says the OSD runs." % (
                 doc["ceph"], doc["objects_per_round"], doc["object_size"] // 1024,
                 min(s["rounds"] for s in doc["summary"].values())), "",
             "| variant | recovery objects/s | vs none | RSS growth MiB | vs none | "
             "buffer_anon peak MiB | effective max_active / backfills / profile |",
             "|---|---|---|---|---|---|---|"]
    for name, s in doc["summary"].items():
        e = s["effective"]
        lines.append("| %s | %.1f | %s | %.0f | %s | %.0f | %s / %s / %s |" % (
            name, s["rate"], s.get("rate_vs_none", "-"), s["rss_growth"] / MiB,
            s.get("growth_vs_none", "-"), s["buffer_anon_peak"] / MiB,
            e.get("osd_recovery_max_active"), e.get("osd_max_backfills"),
            e.get("osd_mclock_profile")))
    lines += ["", "Objects verified after every round: %d ok, %d bad. Wall time %.0f s." % (
        doc["verified_ok"], len(doc["verified_bad"]), doc["total_wall_s"]), ""]
    return "\n".join(lines)
