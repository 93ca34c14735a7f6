"""The drill's steps: lab, data, outage, recovery (naive or controlled), measurement, verify."""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional

import structlog

from ceph_recovery.drill import STOP_CLEAN
from ceph_recovery_tools.common.wait import wait_until
from ceph_recovery_tools.lab import build, launch, procs, teardown
from ceph_recovery_tools.lab.state import load_state

from . import cgroup_limit, measures, naive, report
from .objects import ObjectSet
from .sampler import Sampler, mgr_json, pg_summary

log = structlog.get_logger("drill")

# Lab tuning applied before the outage (DrillOptions.tune): recovery at full speed (the hdd
# defaults sleep 0.1 s per recovery op and take ~30 min for 20k objects), and RocksDB without
# the page cache so a host cgroup's usage is the OSDs' own memory (bluefs_buffered_io=true
# puts RocksDB's files in the page cache, which the cgroup counts as usage).
LAB_TUNING = (("osd_recovery_sleep_hdd", "0"), ("osd_max_backfills", "4"),
              ("osd_recovery_max_active_hdd", "8"), ("bluefs_buffered_io", "false"))

# a controlled run whose module keeps saying it cannot go on is reported as stalled
STALL_CHECKS = ("RECOVERY_BUDGET_TOO_SMALL", "RECOVERY_INCOMPLETE", "RECOVERY_BOOT_TIMEOUT")
STALL_ABORT_S = 90.0

# --fit-first: the failed hosts' cgroup limit is the budget / this share (the rest is room for
# the growth the module can only answer a report and a tick later; see the memory drill test)
FIT_BUDGET_SHARE = 0.9



@dataclass
class DrillOptions:
    lab_dir: str
    fail: str                       # host:h2 | rack:r1
    budget: str = "80%"
    host_mem_limit: Optional[int] = None
    naive: bool = False
    objects: int = 2000
    object_size: int = 4096
    downtime: float = 30.0
    timeout: float = 600.0
    keep: bool = False
    restart_mgr_after: Optional[float] = None
    json_out: str = "drill.json"
    module_dir: Optional[str] = None
    tune: bool = True
    scope: Optional[str] = None     # start-controlled --scope (default: the whole cluster)
    fit_first: Optional[float] = None   # budget = this x the module's prediction (see _fit_first)
    concurrency: Optional[str] = None   # start-controlled --concurrency (None: the module's default)
    engine: str = "lab"             # "module": a thin client of `ceph recovery drill` (moduledrill)
    write_load: Optional[int] = None    # --engine module: the drill's --write-load (objects/s)
    stop: str = STOP_CLEAN          # --engine module: the drill's --stop (STOP_MODES)


def failed_hosts(state: Dict[str, Any], fail: str) -> List[str]:
    kind, _, name = fail.partition(":")
    if kind == "host" and name in state["hosts"]:
        return [name]
    if kind == "rack":
        hosts = sorted(h for h, v in state["hosts"].items() if v.get("rack") == name)
        if hosts:
            return hosts
    raise ValueError("--fail %r names no lab host or rack (hosts: %s, racks: %s)" % (
        fail, sorted(state["hosts"]), sorted({v.get("rack") for v in state["hosts"].values()})))


def fit_first_budget(preview: Dict[str, Any], hosts: List[str], factor: float) -> Dict[str, Any]:
    """The tightest budget the module accepts for one OSD at a time: factor x the peak the
    module itself predicts (its dry run, with what it has learned) for the first OSD it would
    start on the failed hosts; their cgroups limited to that budget / FIT_BUDGET_SHARE."""
    first: Dict[str, int] = {}
    for e in preview.get("order") or []:
        first.setdefault(e["host"], int(e["predicted_bytes"]))
    planned = [first[h] for h in hosts if h in first]
    if not planned:
        raise RuntimeError("--fit-first: the dry run plans no start on %s" % ", ".join(hosts))
    budget = int(factor * max(planned))
    return {"factor": factor, "predicted_first_bytes": max(planned), "budget_bytes": budget,
            "host_mem_limit": int(budget / FIT_BUDGET_SHARE)}


class Drill(object):
    def __init__(self, opts: DrillOptions) -> None:
        self.o = opts
        self.state: Dict[str, Any] = {}
        self.made_lab = False
        self.cluster: Any = None
        self.result: Dict[str, Any] = {"mode": "naive" if opts.naive else "controlled",
                                       "engine": opts.engine,
                                       "fail": opts.fail, "budget": opts.budget}
        self.naive_starts: Dict[int, int] = {}

    # ---------------------------------------------------------------- setup
    def lab(self) -> None:
        if build.holds_cluster(self.o.lab_dir):
            self.state = load_state(self.o.lab_dir)
        else:
            log.info("bringing a lab up", dir=self.o.lab_dir)
            self.state = build.up(self.o.lab_dir, build.LabOptions(module_dir=self.o.module_dir))
            self.made_lab = True
        launch.wait_all_up(self.state, 300)
        launch.wait_pgs_clean(self.state, 300)
        if self.o.tune:
            for key, value in LAB_TUNING:
                launch.ceph(self.state, "config", "set", "osd", key, value, json_out=False)
            self.result["lab_tuning"] = dict(LAB_TUNING)
        if self.o.tune and not self.state.get("netns"):
            # without network namespaces every lab host shares the loopback: probes between
            # "hosts" measure nothing about links, so their findings must not hold starts
            launch.ceph(self.state, "config", "set", "mgr", "mgr/recovery/network_holds_starts",
                        "false", json_out=False)
            self.result["network_holds_starts"] = False
        import rados
        self.cluster = rados.Rados(conffile=self.state["conf"],
                                   conf={"keyring": self.state["admin_keyring"]})
        self.cluster.connect(timeout=30)

    def run(self) -> Dict[str, Any]:
        if self.o.engine not in ("lab", "module"):
            raise ValueError("--engine must be lab or module, not %r" % self.o.engine)
        if self.o.engine == "module":
            from . import moduledrill
            why = moduledrill.check_options(self.o)
            if why:
                raise ValueError(why)
        try:
            self.lab()
            if self.o.engine == "module":
                from . import moduledrill
                return moduledrill.run(self)
            return self._drill()
        finally:
            if self.cluster is not None:
                self.cluster.shutdown()
            if self.made_lab and not self.o.keep:
                teardown.down(self.o.lab_dir)

    # ---------------------------------------------------------------- the drill
    def _drill(self) -> Dict[str, Any]:
        o, st = self.o, self.state
        hosts = failed_hosts(st, o.fail)
        failed_osds = sorted(x for h in hosts for x in st["hosts"][h]["osds"])
        ioctx = self.cluster.open_ioctx(st.get("pool", "lab"))
        objs = ObjectSet(ioctx, o.object_size)
        objs.write_aio("before", o.objects)
        sampler = Sampler(st, self.cluster, 0.5, with_module=not o.naive)
        for h in st["hosts"]:
            cgroup_limit.reset_peak(st, h)
        sampler.start()
        t_fail = time.time()
        killed = [p for h in hosts for p in launch.kill_host(st, h)]
        log.info("domain failed", hosts=hosts, pids=killed)
        t_w = time.time()
        objs.write_aio("during", o.objects)
        self.result["write_rate_obj_s"] = round(o.objects / max(1e-3, time.time() - t_w))
        if o.host_mem_limit:
            for h in hosts:
                cgroup_limit.set_limit(st, h, o.host_mem_limit)
        time.sleep(max(0.0, o.downtime - (time.time() - t_fail)))
        oom0 = {h: launch.cgroup_memory(st, h).get("oom_kill") or 0 for h in st["hosts"]}
        self.ensure_helpers()
        preview = self._dry_run(hosts)
        if o.fit_first:
            preview = self._fit_first(hosts, preview)
            o = self.o
        # what the module knew before this run: OSDs whose heap release it found unsupported
        self.result["heap_support_before"] = self._status().get("heap_support") or {}
        t_start = time.time()
        try:
            if o.naive:
                naive.start_all(self, failed_osds)
            else:
                self._controlled(t_start)
            self._wait_clean(t_start, failed_osds)
            time.sleep(4 * sampler.interval)   # the sampler's own view catches up with the end
        finally:
            samples = sampler.stop()
            if o.host_mem_limit:
                for h in hosts:
                    cgroup_limit.set_limit(st, h, None)
        ok, bad = objs.verify()
        ioctx.close()
        oom1 = {h: launch.cgroup_memory(st, h).get("oom_kill") or 0 for h in st["hosts"]}
        return self._report(samples, t_fail, t_start, hosts, failed_osds, preview,
                            {h: oom1[h] - oom0[h] for h in oom1}, len(objs.sums), ok, bad)

    def ensure_helpers(self) -> None:
        """Like systemd's Restart=always for the helper unit: a dead lab helper is started
        again (and recorded in the report's helpers_restarted)."""
        if not self.state.get("helpers", True):
            return
        for host in sorted(self.state["hosts"]):
            pid = self.state.get("pids", {}).get("helper.%s" % host)
            if pid and procs.alive(pid, ("ceph-recovery-helper", self.state["dir"])):
                continue
            if not pid:
                continue                  # this lab runs without helpers
            new = launch.start_helper(self.state, host)
            log.warning("helper was dead: started again", host=host, old_pid=pid, pid=new)
            self.result.setdefault("helpers_restarted", []).append(
                {"host": host, "time": round(time.time(), 1), "old_pid": pid, "pid": new})

    def _dry_run(self, hosts: List[str]) -> Dict[str, Any]:
        """Budgets per host (and the planned order) from the module, for both modes."""
        def dry_run() -> Dict[str, Any]:
            try:
                return mgr_json(self.cluster, {"prefix": "recovery start-controlled",
                                               "budget": self.o.budget, "dry_run": True})
            except RuntimeError as e:
                log.info("dry run not ready", error=str(e))
                raise

        def limits_seen(out: Dict[str, Any]) -> bool:
            return all(not self.o.host_mem_limit or
                       out["hosts"].get(h, {}).get("mem_total") == self.o.host_mem_limit
                       for h in hosts)
        out = wait_until(dry_run, 20, 1, done=limits_seen, ignore=(RuntimeError,))
        return out if out is not None else dry_run()   # still failing: raise its error

    def _fit_first(self, hosts: List[str], preview: Dict[str, Any]) -> Dict[str, Any]:
        """Budget and cgroup limits from fit_first_budget(); the dry run under the new budget."""
        fit = fit_first_budget(preview, hosts, self.o.fit_first or 1.0)
        self.o = replace(self.o, budget=str(fit["budget_bytes"]),
                         host_mem_limit=fit["host_mem_limit"])
        for h in hosts:
            cgroup_limit.set_limit(self.state, h, fit["host_mem_limit"])
        self.result.update(budget=self.o.budget, fit_first=fit)
        log.info("budget fitted to the first start", **fit)
        return self._dry_run(hosts)

    def _controlled(self, t_start: float) -> None:
        cmd: Dict[str, Any] = {"prefix": "recovery start-controlled", "budget": self.o.budget}
        if self.o.scope:
            cmd["scope"] = self.o.scope.split(",")
        if self.o.concurrency is not None:
            cmd["concurrency"] = str(self.o.concurrency)
        out = mgr_json(self.cluster, cmd)
        self.result["run_id"] = out.get("run_id")
        log.info("start-controlled accepted", run_id=out.get("run_id"))

    def _up(self) -> List[int]:
        from .sampler import mon_json
        dump = mon_json(self.cluster, {"prefix": "osd dump"})
        return [x["osd"] for x in dump["osds"] if x["up"]]

    def _wait_clean(self, t_start: float, failed: List[int]) -> None:
        deadline = t_start + self.o.timeout
        dead_since: Dict[int, float] = {}
        restarted_mgr = False
        while time.time() < deadline:
            if self.o.naive:
                naive.supervise(self, failed, dead_since)
                if naive.gave_up(self, failed, dead_since):
                    return
            else:
                self.ensure_helpers()
            if (not restarted_mgr and self.o.restart_mgr_after is not None
                    and time.time() - t_start >= self.o.restart_mgr_after):
                log.info("restarting ceph-mgr in the middle of the run")
                launch.restart_mgr(self.state)
                restarted_mgr = True
                self.result["mgr_restarted_at_s"] = round(time.time() - t_start, 1)
            try:
                st = pg_summary(launch.ceph(self.state, "pg", "stat", timeout=20))
                up = self._up()
            except Exception as e:     # mon busy / mgr restarting: keep waiting
                log.info("waiting", error=str(e)[:200])
                time.sleep(2)
                continue
            states = {s["name"]: s["num"] for s in st.get("num_pg_by_state", [])}
            phase_done = self.o.naive or self._module_done()
            if not self.o.naive and self._stalled():
                self._abort_run("stalled")
                return
            if (len(up) == len(self.state["osds"]) and states.get("active+clean", 0)
                    == st.get("num_pgs") and phase_done):
                return
            time.sleep(2)
        log.warning("recovery did not finish within the timeout", timeout=self.o.timeout)
        self.result["timed_out"] = True
        if not self.o.naive:
            self._abort_run("timed out")

    def _abort_run(self, why: str) -> None:
        """Leave the lab usable: abort the module's run (it restores the flags it set)."""
        try:
            mgr_json(self.cluster, {"prefix": "recovery abort"})
            self.result["aborted_run"] = why
        except RuntimeError as e:
            log.warning("abort failed", error=str(e))

    def _module_done(self) -> bool:
        try:
            st = mgr_json(self.cluster, {"prefix": "recovery status"})
        except RuntimeError:
            return False
        self._last_status = st
        return st.get("phase") in ("done", "aborted") or not st.get("active")

    def _stalled(self) -> bool:
        """True (and recorded) once the module reported a stall check for STALL_ABORT_S."""
        st = getattr(self, "_last_status", None) or {}
        stuck = sorted(set(st.get("health", [])) & set(STALL_CHECKS))
        if not stuck or st.get("phase") != "running":
            self._stall_since = None
            return False
        now = time.time()
        since = getattr(self, "_stall_since", None) or now
        self._stall_since = since
        if now - since < STALL_ABORT_S:
            return False
        detail = st.get("health_detail") or {}
        reasons = [line for c in stuck for line in detail.get(c, [])] or \
            (st.get("summary") or {}).get("reasons", [])
        self.result["stalled"] = {"checks": stuck, "for_s": round(now - since, 1),
                                  "reasons": reasons[:5]}
        log.warning("controlled run stalled", checks=stuck, reasons=reasons[:3])
        return True

    # ---------------------------------------------------------------- report
    def _report(self, samples, t_fail, t_start, hosts, failed, preview, ooms, written, ok,
                bad) -> Dict[str, Any]:
        st = self.state
        status = self._status()
        journal = [j for j in status.get("journal", []) if j.get("time", 0) >= t_fail]
        r = self.result
        if not self.o.naive:
            r["start_order"] = [e["osd"] for e in report.journal_events(journal, "grant_start")
                                if e["time"] >= t_start - 1.0]
        host_osds = {h: v["osds"] for h, v in st["hosts"].items()}
        budgets = {h: v.get("budget") for h, v in (preview.get("hosts") or {}).items()}
        r.update({
            "failed_hosts": hosts, "failed_osds": failed,
            "downtime_s": round(t_start - t_fail, 1),
            "host_mem_limit": self.o.host_mem_limit,
            "max_in_flight_per_host": report.max_in_flight(samples, t_start, host_osds),
            "module_max_in_flight_per_host": report.module_max_in_flight(samples),
            "peak_mem_bytes_by_host": report.peaks(samples, t_start),
            "kernel_peak_mem_bytes_by_host": {h: launch.cgroup_memory(st, h).get("max_usage")
                                              for h in st["hosts"]},
            "budget_bytes_by_host": budgets,
            "over_budget_by_host": report.over_budget(samples, t_start, budgets),
            "peak_rss_bytes_by_osd": report.peak_rss(samples, t_start),
            "oom_kills_by_host": ooms,
            "heap_releases": [e for e in report.journal_events(journal, "heap_release")
                              if e["time"] >= t_start - 1.0],
            "restarts": [e for e in report.journal_events(journal, "restart_osd")
                         if e["time"] >= t_start - 1.0],
            "process_starts_by_osd": process_starts(samples, t_start, failed),
            "naive_starts_by_osd": {str(k): v for k, v in self.naive_starts.items()},
            "objects_written": written, "objects_verified_ok": ok,
            "objects_bad": bad[:50], "planned_order": preview.get("order"),
            "final_health": self._health(), "journal": journal,
            "samples": len(samples)})
        r.update(report.recovery_times(samples, t_start))
        r["predictions"] = measures.predictions(samples, journal, t_start)
        r["heap_release_effects"] = measures.heap_release_effects(samples, journal)
        r["timeline_png"] = os.path.splitext(self.o.json_out)[0] + ".png"
        report.plot(r["timeline_png"], samples, t_start, budgets, "%s recovery after %s" % (
            r["mode"], self.o.fail))
        with open(self.o.json_out, "w") as f:
            json.dump(r, f, indent=1, sort_keys=True, default=str)
        return r

    def _status(self) -> Dict[str, Any]:
        for _ in range(15):
            try:
                return mgr_json(self.cluster, {"prefix": "recovery status"})
            except RuntimeError:
                time.sleep(2)
        return {}

    def _health(self) -> Dict[str, Any]:
        h = launch.health(self.state)
        return {"status": h.get("status"), "checks": sorted(h.get("checks", {}))}


def process_starts(samples: List[Dict[str, Any]], t_start: float,
                   osds: List[int]) -> Dict[str, int]:
    """How many new ceph-osd processes (new pids) each OSD got after the recovery started."""
    out = {str(o): 0 for o in osds}
    prev: Dict[str, Any] = {str(o): None for o in osds}
    for s in samples:
        for o in out:
            pid = s["procs"].get(o)
            if pid and pid != prev[o] and s["time"] >= t_start:
                out[o] += 1
            if pid:
                prev[o] = pid
    return out
