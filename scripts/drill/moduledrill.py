"""`ceph-recovery-drill --engine module`: the lab tool as a thin client of the module's drill.

The module decides and acts (`ceph recovery drill start`: ok-to-stop, hold, the helpers stop
the bucket's OSDs, the downtime, the controlled start or the abort); the tool only
- writes `--objects` checksummed objects into the lab pool before the drill, starts it
  (`--fail host:NAME|rack:NAME` -> `drill start --fail NAME`; `--write-load` is the drill's
  own pool and writer), polls `drill report` until the bucket is down, then writes
  `--objects` more (the history the returning OSDs must recover: what makes them grow);
- applies the lab-only part once the report says `down`: the failed hosts' cgroup limit
  (`--host-mem-limit`, cleared at the end; with `--fit-first` the budget the module's dry run
  of the exit admits one start in, set by `drill budget`, and the limit from it) and `--naive`
  as `drill abort` (start everything);
- polls `ceph recovery wait` until the drill ends (restarting a dead lab helper as systemd
  would), then writes `drill report -f json` as `drill` in its JSON and renders its PNG;
- samples beside it what only the lab can measure (host cgroup usage, per-OSD RSS, process
  starts, OOM kills from the cgroups): the same sampler as the lab engine.
`d` is the runner's Drill (its lab, rados handle, result and options).
"""
from __future__ import annotations

import errno
import json
import os
import time
from typing import Any, Dict, List, Optional, Tuple

import structlog

from ceph_recovery.drill import STOP_CLEAN, STOP_MODES
from ceph_recovery_tools.lab import launch

from . import cgroup_limit, report
from .objects import ObjectSet
from .sampler import Sampler

log = structlog.get_logger("drill")

POLL_S = 1.0
DOWN_LIMIT_S = 300.0           # drill start to every OSD of the bucket down (pool first)
FINAL = ("done", "aborted")


def mgr_call(cluster: Any, cmd: Dict[str, Any], timeout: int = 30) -> Tuple[int, Any, str]:
    """(rc, parsed JSON or None, stderr) of a mgr command."""
    rc, out, err = cluster.mgr_command(json.dumps(dict(cmd, format="json")), b"",
                                       timeout=timeout)
    try:
        body = json.loads(out) if out else None
    except ValueError:
        body = None
    return rc, body, err


def _must(cluster: Any, cmd: Dict[str, Any]) -> Any:
    rc, body, err = mgr_call(cluster, cmd)
    if rc != 0:
        raise RuntimeError("ceph %s -> rc %d: %s" % (cmd["prefix"], rc, err))
    return body


def start_command(o: Any) -> Dict[str, Any]:
    """`drill start` for the tool's options (host:NAME / rack:NAME: the bucket NAME)."""
    kind, _, name = o.fail.partition(":")
    if kind not in ("host", "rack") or not name:
        raise ValueError("--fail must be host:NAME or rack:NAME, not %r" % o.fail)
    cmd: Dict[str, Any] = {"prefix": "recovery drill start", "fail": name,
                           "downtime": "%ds" % max(1, int(round(o.downtime))),
                           "budget": o.budget}
    if o.concurrency is not None:
        cmd["concurrency"] = str(o.concurrency)
    if o.write_load:
        cmd["write_load"] = int(o.write_load)
    if o.stop != STOP_CLEAN:
        cmd["stop"] = o.stop
    return cmd


def check_options(o: Any) -> Optional[str]:
    """Why these options do not go with --engine module (None: they do)."""
    if o.scope:
        return "--scope is the lab engine's (start-controlled) only"
    if o.stop not in STOP_MODES:
        return "--stop must be %s" % " or ".join(STOP_MODES)
    if o.write_load is not None and not 0 <= o.write_load <= 500:
        return "--write-load must be 0 to 500 objects/s"
    return None


def allow_pool_delete(d: Any) -> str:
    """--write-load needs the monitors' mon_allow_pool_delete (the drill removes its pool):
    on for the drill; its value before, for restore_pool_delete()."""
    before = launch.ceph(d.state, "config", "get", "mon", "mon_allow_pool_delete",
                         json_out=False, check=False).strip()
    launch.ceph(d.state, "config", "set", "mon", "mon_allow_pool_delete", "true",
                json_out=False)
    return before


def restore_pool_delete(d: Any, before: str) -> None:
    if before != "true":
        launch.ceph(d.state, "config", "rm", "mon", "mon_allow_pool_delete", json_out=False,
                    check=False)


def until_down(d: Any, drill_id: str) -> Dict[str, Any]:
    """Poll `drill report` until the bucket is down (or the drill went past it / ended)."""
    deadline = time.time() + DOWN_LIMIT_S
    while True:
        d.ensure_helpers()
        rep = _must(d.cluster, {"prefix": "recovery drill report", "id": drill_id})
        if rep["phase"] not in ("preparing", "entering"):
            return rep
        if time.time() > deadline:
            raise RuntimeError("drill %s still %s after %ds" % (drill_id, rep["phase"],
                                                                DOWN_LIMIT_S))
        time.sleep(POLL_S)


def until_end(d: Any, drill_id: str, limit: float,
              restart_at: Optional[float] = None) -> Tuple[int, str]:
    """`ceph recovery wait` in a loop while it answers ETIMEDOUT: (rc, its text). Past
    `limit` the drill is aborted (its abort brings everything back) and waited for again.
    restart_at: the time ceph-mgr is killed and started again (--restart-mgr-after)."""
    deadline = time.time() + limit
    aborted = False
    while True:
        d.ensure_helpers()
        if restart_at is not None and time.time() >= restart_at:
            log.info("restarting ceph-mgr in the middle of the drill")
            launch.restart_mgr(d.state)
            d.result["mgr_restarted_at_s"] = round(
                (d.o.restart_mgr_after or 0.0) + time.time() - restart_at, 1)
            restart_at = None
        try:
            rc, _body, err = mgr_call(d.cluster, {"prefix": "recovery wait", "timeout": 2.0})
        except Exception as e:     # noqa: BLE001 - mgr restarting: keep waiting
            log.info("waiting", error=str(e)[:200])
            rc, err = -errno.ETIMEDOUT, ""
            time.sleep(POLL_S)
        if rc != -errno.ETIMEDOUT:
            return rc, (err or "").strip()
        if not aborted and time.time() >= deadline:
            log.warning("drill did not end within the timeout: aborting it", timeout=limit)
            d.result["timed_out"] = True
            mgr_call(d.cluster, {"prefix": "recovery drill abort"})
            aborted, deadline = True, time.time() + limit
        elif aborted and time.time() >= deadline:
            raise TimeoutError("drill %s not ended %ss after its abort" % (drill_id, limit))


def run(d: Any) -> Dict[str, Any]:
    """The drill through the module; the lab-only measures beside it; the report written."""
    from .runner import failed_hosts
    o, st = d.o, d.state
    hosts = failed_hosts(st, o.fail)
    failed = sorted(x for h in hosts for x in st["hosts"][h]["osds"])
    d.result.update(engine="module", failed_hosts=hosts, failed_osds=failed,
                    host_mem_limit=o.host_mem_limit, write_load=o.write_load or 0,
                    stop=o.stop)
    pool_before = allow_pool_delete(d) if o.write_load else "true"
    ioctx = d.cluster.open_ioctx(st.get("pool", "lab"))
    objs = ObjectSet(ioctx, o.object_size)
    objs.write_aio("before", o.objects)
    sampler = Sampler(st, d.cluster, 0.5, with_module=True)
    for h in st["hosts"]:
        cgroup_limit.reset_peak(st, h)
    oom0 = {h: launch.cgroup_memory(st, h).get("oom_kill") or 0 for h in st["hosts"]}
    sampler.start()
    t0 = time.time()
    limited: List[str] = []
    try:
        t_down, wait = _drive(d, hosts, limited, objs)
        time.sleep(4 * sampler.interval)   # the sampler's own view catches up with the end
    finally:
        samples = sampler.stop()
        for h in limited:
            cgroup_limit.set_limit(st, h, None)
        restore_pool_delete(d, pool_before)
    oom1 = {h: launch.cgroup_memory(st, h).get("oom_kill") or 0 for h in st["hosts"]}
    ok, bad = objs.verify()
    ioctx.close()
    d.result["tool_objects"] = {"written": len(objs.sums), "verified_ok": ok, "bad": bad[:50]}
    rep = _must(d.cluster, {"prefix": "recovery drill report", "id": d.result["drill_id"]})
    return write(d, rep, samples, t0, t_down, failed, wait,
                 {h: oom1[h] - oom0[h] for h in oom1})


def fit_first(d: Any, drill_id: str, bucket: str, hosts: List[str]) -> int:
    """--fit-first once the bucket is down: the module's dry run of the exit (scoped to the
    bucket) gives its predicted first start, fit_first_budget() the budget that admits it;
    `drill budget` makes that the exit's budget. The cgroup limit to apply is returned; where
    no budget can be fitted the drill is aborted (everything comes back) and the error raised."""
    from .runner import fit_first_budget
    try:
        preview = _must(d.cluster, {"prefix": "recovery start-controlled", "dry_run": True,
                                    "scope": [bucket], "budget": d.o.budget})
        fit = fit_first_budget(preview, hosts, d.o.fit_first or 1.0)
        _must(d.cluster, {"prefix": "recovery drill budget",
                          "budget": str(fit["budget_bytes"])})
    except RuntimeError:
        mgr_call(d.cluster, {"prefix": "recovery drill abort"})   # bring the bucket back
        raise
    d.result.update(budget=str(fit["budget_bytes"]), fit_first=fit,
                    host_mem_limit=fit["host_mem_limit"])
    log.info("drill budget fitted to the first start", id=drill_id, **fit)
    return int(fit["host_mem_limit"])


def _drive(d: Any, hosts: List[str], limited: List[str],
           objs: ObjectSet) -> Tuple[float, Tuple[int, str]]:
    """drill start, the lab-only part and the tool's writes once down, then wait for the
    drill's end."""
    o = d.o
    ans = _must(d.cluster, start_command(o))
    d.result["drill_id"] = ans["id"]
    log.info("drill started", id=ans["id"], bucket=ans["bucket"], osds=ans["osds"])
    rep = until_down(d, ans["id"])
    t_down = time.time()
    if rep["phase"] == "down":
        limit = fit_first(d, ans["id"], ans["bucket"], hosts) if o.fit_first else \
            o.host_mem_limit
        t_w = time.time()
        objs.write_aio("during", o.objects)
        d.result["write_rate_obj_s"] = round(o.objects / max(1e-3, time.time() - t_w))
        for h in hosts if limit else ():
            cgroup_limit.set_limit(d.state, h, limit)
            limited.append(h)
        if o.naive:
            _must(d.cluster, {"prefix": "recovery drill abort"})
            d.result["naive_abort_after_down_s"] = round(time.time() - t_down, 1)
    else:
        log.warning("drill went past down before the tool saw it", phase=rep["phase"])
    restart_at = None if o.restart_mgr_after is None else \
        t_down + o.downtime + o.restart_mgr_after       # seconds into the exit (about)
    wait = until_end(d, ans["id"], o.timeout + o.downtime, restart_at)
    log.info("drill ended", rc=wait[0], text=wait[1])
    return t_down, wait


def write(d: Any, rep: Dict[str, Any], samples: List[Dict[str, Any]], t0: float,
          t_down: float, failed: List[int], wait: Tuple[int, str],
          ooms: Dict[str, int]) -> Dict[str, Any]:
    """The tool's JSON: the module's report as `drill`, the lab-only measures beside it."""
    from .runner import process_starts
    st, r = d.state, d.result
    back = rep.get("exit_at") or rep.get("aborted_at") or t_down
    journal = [j for j in d._status().get("journal", []) if j.get("time", 0) >= t0]
    w = rep.get("write_load") or {}
    budgets = {h: v.get("budget_bytes") for h, v in (rep.get("hosts") or {}).items()}
    host_osds = {h: v["osds"] for h, v in st["hosts"].items()}
    r.update({
        "drill": rep, "outcome": rep["outcome"], "reason": rep.get("reason"),
        "wait_rc": wait[0], "wait_text": wait[1],
        "downtime_s": rep.get("downtime_s"), "time_to_all_up_s": rep.get("time_to_all_up_s"),
        "time_to_all_pgs_active_s": rep.get("time_to_all_active_s"),
        "time_to_all_pgs_clean_s": rep.get("time_to_clean_s"),
        "inactive_pg_seconds": rep.get("inactive_pg_seconds"),
        "start_order": [e["osd"] for e in report.journal_events(journal, "grant_start")
                        if e["time"] >= back - 1.0],
        "budget_bytes_by_host": budgets,
        "peak_mem_bytes_by_host": report.peaks(samples, t_down),
        "kernel_peak_mem_bytes_by_host": {h: launch.cgroup_memory(st, h).get("max_usage")
                                          for h in st["hosts"]},
        "over_budget_by_host": report.over_budget(samples, back, budgets),
        "max_in_flight_per_host": report.max_in_flight(samples, back, host_osds),
        "module_max_in_flight_per_host": report.module_max_in_flight(samples),
        "peak_rss_bytes_by_osd": report.peak_rss(samples, t_down),
        "process_starts_by_osd": process_starts(samples, t_down, failed),
        "oom_kills_by_host": ooms,
        # the tool's objects (lab pool) and the drill's write load (its own pool), together
        "objects_written": int(w.get("objects_written") or 0) + r["tool_objects"]["written"],
        "objects_verified_ok": int(w.get("objects_verified") or 0)
        + r["tool_objects"]["verified_ok"],
        "objects_bad": int(w.get("objects_bad") or 0) + len(r["tool_objects"]["bad"]),
        "final_health": d._health(), "journal": journal, "samples": len(samples)})
    r["timeline_png"] = os.path.splitext(d.o.json_out)[0] + ".png"
    report.render_module_report(rep, r["timeline_png"])
    with open(d.o.json_out, "w") as f:
        json.dump(r, f, indent=1, sort_keys=True, default=str)
    return r
