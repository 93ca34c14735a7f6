"""`ceph-recovery-drill`: the lab tool as a thin client of the module's drill.

The module decides and acts (`ceph recovery drill start`: ok-to-stop, hold, the helpers stop
the bucket's OSDs, the downtime, the controlled start or the abort); the tool only
- writes `--objects` checksummed objects into the lab pool before the drill, starts it
  (`--fail host:NAME|rack:NAME` -> `drill start --fail NAME`; `--write-load` is the drill's
  own pool and writer; `--stall-limit` the module's stall_limit for the drill, restored
  after), polls `drill report` until the bucket is down, then writes `--objects` more (the
  history the returning OSDs must recover: what makes them grow);
- once the report says `down` and its writes are done: records the module's dry run of the
  exit (its planned order) and applies the lab-only part: the failed hosts' cgroup limit
  (`--host-mem-limit`, cleared at the end; with `--fit-first` the budget the dry run admits
  one start in, set by `drill budget`, and the limit from it) and `--naive` as `drill abort`
  (start everything), after which the lab stands in for systemd's Restart= of the OSDs the
  kernel kills (naive.py);
- polls `ceph recovery wait` until the drill ends (restarting a dead lab helper as systemd
  would), then writes `drill report -f json` as `drill` in its JSON and renders its PNG;
- samples beside it what only the lab can measure (host cgroup usage, per-OSD RSS, process
  starts, OOM kills from the cgroups, the module's stall checks) and derives the per-start
  predicted vs observed peaks (measures.py).
`d` is the runner's Drill (its lab, rados handle, result and options).
"""
from __future__ import annotations

import errno
import json
import os
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import structlog

from ceph_recovery.drill import STOP_CLEAN, STOP_MODES
from ceph_recovery_tools.lab import launch

from . import cgroup_limit, measures, naive, report
from .objects import ObjectSet
from .outage import failed_hosts, fitted_budget
from .sampler import Sampler, stalled

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
    if o.inactive_grace is not None:
        cmd["inactive_grace"] = "%ds" % int(round(o.inactive_grace))
    return cmd


def check_options(o: Any) -> Optional[str]:
    """Why these options do not go together (None: they do)."""
    if o.stop not in STOP_MODES:
        return "--stop must be %s" % " or ".join(STOP_MODES)
    if o.write_load is not None and not 0 <= o.write_load <= 500:
        return "--write-load must be 0 to 500 objects/s"
    if o.stall_limit is not None and o.stall_limit < 10:
        return "--stall-limit must be at least 10 s (the module's minimum)"
    return None


def override(d: Any, who: str, key: str, value: str) -> Optional[str]:
    """Set a config option for the drill; returns what restore_option() puts back: its value
    in the monitors' config database before (None: it was not set there)."""
    dump = launch.ceph(d.state, "config", "dump")
    before = next((str(e.get("value")) for e in dump or []
                   if e.get("section") == who and e.get("name") == key), None)
    launch.ceph(d.state, "config", "set", who, key, value, json_out=False)
    return before


def restore_option(d: Any, who: str, key: str, before: Optional[str]) -> None:
    if before is None:
        launch.ceph(d.state, "config", "rm", who, key, json_out=False, check=False)
    else:
        launch.ceph(d.state, "config", "set", who, key, before, json_out=False, check=False)


def overrides(o: Any) -> List[Tuple[str, str, str]]:
    """The options the drill sets and restores: --write-load needs mon_allow_pool_delete (the
    drill removes its pool); --stall-limit is the module's stall_limit."""
    out = [("mon", "mon_allow_pool_delete", "true")] if o.write_load else []
    if o.stall_limit is not None:
        out.append(("mgr", "mgr/recovery/stall_limit", str(int(o.stall_limit))))
    return out


def until_down(d: Any, drill_id: str) -> Dict[str, Any]:
    """Poll `drill report` until the bucket is down (or the drill went past it / ended). A
    drill is `requested` until the module's next tick has asked ok-to-stop for it."""
    deadline = time.time() + DOWN_LIMIT_S
    while True:
        d.ensure_helpers()
        rep = _must(d.cluster, {"prefix": "recovery drill report", "drill_id": drill_id})
        if rep["phase"] not in ("requested", "preparing", "entering"):
            return rep
        if time.time() > deadline:
            raise RuntimeError("drill %s still %s after %ds" % (drill_id, rep["phase"],
                                                                DOWN_LIMIT_S))
        time.sleep(POLL_S)


def until_end(d: Any, drill_id: str, limit: float, restart_at: Optional[float] = None,
              each: Optional[Callable[[], None]] = None) -> Tuple[int, str]:
    """`ceph recovery wait` polled every POLL_S while it answers ETIMEDOUT: (rc, its text). Past
    `limit` the drill is aborted and waited for again; past that too, (-ETIMEDOUT, why): the
    caller writes its report all the same.
    restart_at: the time ceph-mgr is killed and started again (--restart-mgr-after); each:
    called every round (--naive: systemd's Restart= of the lab's OSDs)."""
    deadline = time.time() + limit
    aborted = False
    while True:
        d.ensure_helpers()
        if each is not None:
            each()
        if restart_at is not None and time.time() >= restart_at:
            log.info("restarting ceph-mgr in the middle of the drill")
            launch.restart_mgr(d.state)
            d.result["mgr_restarted_at_s"] = round(
                (d.o.restart_mgr_after or 0.0) + time.time() - restart_at, 1)
            restart_at = None
        try:
            rc, _body, err = mgr_call(d.cluster, {"prefix": "recovery wait"})
        except Exception as e:     # noqa: BLE001 - mgr restarting: keep waiting
            log.info("waiting", error=str(e)[:200])
            rc, err = -errno.ETIMEDOUT, ""
        if rc != -errno.ETIMEDOUT:
            return rc, (err or "").strip()
        time.sleep(POLL_S)         # wait answers at once: poll, do not spin
        if not aborted and time.time() >= deadline:
            log.warning("drill did not end within the timeout: aborting it", timeout=limit)
            d.result["timed_out"] = True
            mgr_call(d.cluster, {"prefix": "recovery drill abort"})
            aborted, deadline = True, time.time() + limit
        elif aborted and time.time() >= deadline:
            # the report is still written: what the drill did is the operator's evidence
            why = "drill %s not ended %ss after its abort" % (drill_id, limit)
            log.warning("drill not ended after its abort", id=drill_id, timeout=limit)
            d.result["not_ended_after_abort"] = True
            return -errno.ETIMEDOUT, why


def run(d: Any) -> Dict[str, Any]:
    """The drill through the module; the lab-only measures beside it; the report written."""
    o, st = d.o, d.state
    hosts = failed_hosts(st, o.fail)
    failed = sorted(x for h in hosts for x in st["hosts"][h]["osds"])
    d.result.update(engine="module", failed_hosts=hosts, failed_osds=failed,
                    host_mem_limit=o.host_mem_limit, write_load=o.write_load or 0,
                    stop=o.stop, stall_limit=o.stall_limit,
                    # what the module knew before: OSDs whose heap release it found unsupported
                    heap_support_before=d._status().get("heap_support") or {})
    ioctx = d.cluster.open_ioctx(st.get("pool", "lab"))
    objs = ObjectSet(ioctx, o.object_size)
    objs.write_aio("before", o.objects if o.objects_before is None else o.objects_before)
    sampler = Sampler(st, d.cluster, 0.5, with_module=True)
    oom0 = {h: launch.cgroup_memory(st, h).get("oom_kill") or 0 for h in st["hosts"]}
    befores = [(w, k, override(d, w, k, v)) for w, k, v in overrides(o)]
    sampler.start()
    t0 = time.time()
    limited: Dict[str, Any] = {}     # host: its watermark since its limit was set
    try:
        t_down, wait = _drive(d, hosts, failed, limited, objs)
        time.sleep(4 * sampler.interval)   # the sampler's own view catches up with the end
    finally:
        samples = sampler.stop()
        # the kernel's peak since each limit was set: an OOM kill comes between two samples
        d.result["kernel_peak_mem_bytes_by_host"] = {h: w.read() for h, w in limited.items()}
        for h, w in limited.items():
            w.close()
            cgroup_limit.set_limit(st, h, None)
        for w, k, before in befores:
            restore_option(d, w, k, before)
    oom1 = {h: launch.cgroup_memory(st, h).get("oom_kill") or 0 for h in st["hosts"]}
    ok, bad = objs.verify()
    ioctx.close()
    d.result["tool_objects"] = {"written": len(objs.sums), "verified_ok": ok, "bad": bad[:50]}
    rep = _must(d.cluster, {"prefix": "recovery drill report", "drill_id": d.result["drill_id"]})
    return write(d, rep, samples, t0, t_down, failed, wait,
                 {h: oom1[h] - oom0[h] for h in oom1})


def preview(d: Any, bucket: str, budget: str) -> Dict[str, Any]:
    """The module's dry run of the drill's exit (a controlled start scoped to the bucket)."""
    return _must(d.cluster, {"prefix": "recovery start-controlled", "dry_run": True,
                             "scope": [bucket], "budget": budget})


def fit_budget(d: Any, drill_id: str, bucket: str, hosts: List[str],
               planned: Dict[str, Any]) -> int:
    """--fit-first or --fit-restart once the bucket is down: fitted_budget() gives the budget
    from the exit's predicted starts (its dry run, `planned`); `drill budget` makes that
    the exit's budget. The cgroup limit to apply is returned; where no budget can be fitted
    the drill is aborted (everything comes back) and the error raised."""
    try:
        fit = fitted_budget(planned, hosts, d.o.fit_restart or d.o.fit_first or 1.0,
                            restart=bool(d.o.fit_restart))
        _must(d.cluster, {"prefix": "recovery drill budget",
                          "budget": str(fit["budget_bytes"])})
    except RuntimeError:
        mgr_call(d.cluster, {"prefix": "recovery drill abort"})   # bring the bucket back
        raise
    d.result.update(budget=str(fit["budget_bytes"]), fit_first=fit,
                    host_mem_limit=fit["host_mem_limit"])
    log.info("drill budget fitted to the planned starts", id=drill_id, **fit)
    return int(fit["host_mem_limit"])


def at_down(d: Any, drill_id: str, bucket: str, hosts: List[str]) -> Optional[int]:
    """What the tool does once the bucket is down and its writes are done (the history they
    add is part of what the module predicts): the exit's planned order (under the fitted
    budget with --fit-first or --fit-restart), and the cgroup limit to apply."""
    planned = preview(d, bucket, d.o.budget)
    limit = d.o.host_mem_limit
    if d.o.fit_first or d.o.fit_restart:
        limit = fit_budget(d, drill_id, bucket, hosts, planned)
        planned = preview(d, bucket, d.result["budget"])
    d.result["planned_order"] = planned.get("order") or []
    return limit


def _drive(d: Any, hosts: List[str], failed: List[int], limited: Dict[str, Any],
           objs: ObjectSet) -> Tuple[float, Tuple[int, str]]:
    """drill start, the lab-only part and the tool's writes once down, then wait for the
    drill's end (--naive: and for its OSDs to settle, as systemd would leave them)."""
    o = d.o
    ans = _must(d.cluster, start_command(o))
    d.result["drill_id"] = ans["id"]
    log.info("drill started", id=ans["id"], bucket=ans["bucket"], osds=ans["osds"])
    rep = until_down(d, ans["id"])
    t_down = time.time()
    supervise = None
    if rep["phase"] == "down":
        # a limit given as such goes on before the writes: on a loaded machine they can
        # outlast the downtime, and the exit must not start under the unlimited host's budget
        # (a fitted limit needs the history the writes add, so it follows them)
        early = None if o.fit_first or o.fit_restart else o.host_mem_limit
        for h in hosts if early else ():
            cgroup_limit.set_limit(d.state, h, early)
            limited[h] = cgroup_limit.watermark(d.state, h)
        t_w = time.time()
        objs.write_aio("during", o.objects)
        d.result["write_rate_obj_s"] = round(o.objects / max(1e-3, time.time() - t_w))
        limit = at_down(d, ans["id"], ans["bucket"], hosts)
        for h in hosts if limit and not early else ():
            cgroup_limit.set_limit(d.state, h, limit)
            limited[h] = cgroup_limit.watermark(d.state, h)
        if o.naive:
            _must(d.cluster, {"prefix": "recovery drill abort"})
            d.result["naive_abort_after_down_s"] = round(time.time() - t_down, 1)
            supervise = naive.Systemd(d, failed)
    else:
        log.warning("drill went past down before the tool saw it", phase=rep["phase"])
    restart_at = None if o.restart_mgr_after is None else \
        t_down + o.downtime + o.restart_mgr_after       # seconds into the exit (about)
    wait = until_end(d, ans["id"], o.timeout + o.downtime, restart_at,
                     supervise.tick if supervise else None)
    log.info("drill ended", rc=wait[0], text=wait[1])
    if supervise is not None:
        supervise.settle(t_down + o.timeout + o.downtime)
    return t_down, wait


def write(d: Any, rep: Dict[str, Any], samples: List[Dict[str, Any]], t0: float,
          t_down: float, failed: List[int], wait: Tuple[int, str],
          ooms: Dict[str, int]) -> Dict[str, Any]:
    """The tool's JSON: the module's report as `drill`, the lab-only measures beside it."""
    st, r = d.state, d.result
    back = rep.get("exit_at") or rep.get("aborted_at") or t_down
    journal = [j for j in d._status().get("journal", []) if j.get("time", 0) >= t0]
    budgets = {h: v.get("budget_bytes") for h, v in (rep.get("hosts") or {}).items()}
    host_osds = {h: v["osds"] for h, v in st["hosts"].items()}
    r.update(times(rep, samples, back, d.o.naive))
    r.update({
        "drill": rep, "outcome": rep["outcome"], "reason": rep.get("reason"),
        "wait_rc": wait[0], "wait_text": wait[1], "downtime_s": rep.get("downtime_s"),
        "inactive_pg_seconds": rep.get("inactive_pg_seconds"),
        "start_order": [e["osd"] for e in report.journal_events(journal, "grant_start")
                        if e["time"] >= back - 1.0],
        "budget_bytes_by_host": budgets,
        "peak_mem_bytes_by_host": report.peaks(samples, t_down),
        "over_budget_by_host": report.over_budget(samples, back, budgets),
        "max_in_flight_per_host": report.max_in_flight(samples, back, host_osds),
        "module_max_in_flight_per_host": report.module_max_in_flight(samples),
        "peak_rss_bytes_by_osd": report.peak_rss(samples, t_down),
        "process_starts_by_osd": report.process_starts(samples, t_down, failed),
        "naive_starts_by_osd": {str(k): v for k, v in d.naive_starts.items()},
        "oom_kills_by_host": ooms, "stalled": stalled(samples),
        "heap_releases": [e for e in report.journal_events(journal, "heap_release")
                          if e["time"] >= back - 1.0],
        "restarts": [e for e in report.journal_events(journal, "restart_osd")
                     if e["time"] >= back - 1.0],
        "predictions": measures.predictions(samples, journal, back),
        "heap_release_effects": measures.heap_release_effects(samples, journal),
        "final_health": d._health(), "journal": journal, "samples": len(samples)})
    r.update(objects(r["tool_objects"], rep.get("write_load") or {}))
    # the tool's own samples (every host's cgroup, OSDs up, PGs), also after the module's
    # drill ended: a naive run's starts and OOM kills come after its abort
    start = rep.get("started_at") or t0
    r["tool_timeline"] = report.timeline(samples, start, budgets, "drill on %s" % d.o.fail)
    r["tool_timeline"]["t_return"] = round(back - start, 1)
    r["timeline_png"] = os.path.splitext(d.o.json_out)[0] + ".png"
    report.render_module_report(rep, r["timeline_png"])
    with open(d.o.json_out, "w") as f:
        json.dump(r, f, indent=1, sort_keys=True, default=str)
    return r


def times(rep: Dict[str, Any], samples: List[Dict[str, Any]],
          back: float, naive: bool = False) -> Dict[str, Optional[float]]:
    """Times from the bucket's return: the module's, or where it did not measure them (an
    abort ends once every OSD is up; --naive waits on for clean) the tool's samples'. A naive
    run's are the tool's alone: the module stops watching at its abort, before the kernel
    kills what it started and the PGs go inactive again."""
    seen = report.recovery_times(samples, back)
    if naive:
        return seen
    mine = {"time_to_all_up_s": rep.get("time_to_all_up_s"),
            "time_to_all_pgs_active_s": rep.get("time_to_all_active_s"),
            "time_to_all_pgs_clean_s": rep.get("time_to_clean_s")}
    return {k: v if v is not None else seen[k] for k, v in mine.items()}


def objects(tool: Dict[str, Any], load: Dict[str, Any]) -> Dict[str, Any]:
    """The tool's objects (lab pool) and the drill's write load (its own pool), together."""
    return {"objects_written": int(load.get("objects_written") or 0) + tool["written"],
            "objects_verified_ok": int(load.get("objects_verified") or 0) + tool["verified_ok"],
            "objects_bad": int(load.get("objects_bad") or 0) + len(tool["bad"])}
