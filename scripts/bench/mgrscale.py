"""`ceph-recovery-bench --mgr-scale --out DIR`: the mgr module's own cost on a scale lab (real
mon and mgr, thousands of map-only OSDs, many PGs, a thousand synthetic helpers), one row per
size in DIR/mgr-scale.json.

Per size, in one lab:
1. idle: the mgr's CPU (utime+stime of its process) and RSS over IDLE_S with the module
   disabled, then with it enabled (no run, no helper): the difference is the module's. Each
   variant runs in a mgr process restarted for it, so neither carries the other's heap, and
   is measured once that mgr's PG map is full (and, with the module, its first tick ended).
2. a run: every helper reports every 5 s (the helper interval); the failed rack's hosts (rack0,
   >= 200 OSDs) start with their OSDs stopped. After WARM_S, `start-controlled --scope rack0`
   and, at the same time, `maintenance enter` of a host of another rack. The OSDs exist only in
   the map, so none ever boots: the run is measured through its decisions (holds, grants,
   boots allowed, boot timeouts after BOOT_TIMEOUT_S, stops, grants again), which the synthetic
   helpers carry out. Tick costs come from `ceph recovery perf`.
3. report rate: the same helpers, right after the run, shorten their interval step by step
   (RATES); the rate at which the reports' p99 round trip passes 1 s. Then, where asked
   (--mgr-scale-command, at the largest size), for comparison, helpers sending every report
   as an mgr command (COMMAND_RATES).
Each phase's wall time is in the raw row (`phases_s`).
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

import psutil

from ..common.wait import wait_until
from ..lab import bootstrap, launch, release, scale, teardown

SIZES = ((1000, 200, 5, 20000), (2000, 400, 10, 40000), (5000, 1000, 25, 100000))
IDLE_S = 20.0
IDLE_SETTLE_S = 10.0
WARM_S = 15.0
RUN_S = 60.0
BOOT_TIMEOUT_S = 30
RATES = (200.0, 400.0, 800.0, 1600.0)
# the command transport, for comparison, at the largest size (where it matters)
COMMAND_RATES = (200.0, 400.0)
# the helpers pause between the run and the rate steps: the run's counters are read and the
# run aborted without 1,000 helpers reporting beside it
QUIET_S = 20.0
RATE_STEP_S = 10.0
HELPERS_PER_WORKER = 250
# a worker enrols its 250 helpers one session each; at 1,000 helpers on this machine that
# took minutes while the mgr and mon were busy
ENROLL_TIMEOUT_S = 600.0


def mgr_usage(state: Dict[str, Any], seconds: float) -> Dict[str, float]:
    """CPU fraction of one core and mean RSS of the lab's mgr over `seconds`."""
    proc = psutil.Process(launch.mgr_pid(state))
    c0, t0, rss = proc.cpu_times(), time.monotonic(), []
    end = t0 + seconds
    while time.monotonic() < end:
        rss.append(proc.memory_info().rss)
        time.sleep(1.0)
    c1 = proc.cpu_times()
    cpu = (c1.user + c1.system) - (c0.user + c0.system)
    return {"cpu_frac": cpu / (time.monotonic() - t0), "rss": sum(rss) / max(1, len(rss))}


def pct(values: List[float], q: float) -> Optional[float]:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


class Load(object):
    """The synthetic helpers (scaleload.py in the chroot), split over worker processes."""

    def __init__(self, state: Dict[str, Any], steps: List[List[float]], tag: str,
                 transport: str = "endpoint") -> None:
        hosts = state["scale_hosts"]
        names = sorted(hosts, key=lambda h: int(h[4:]))
        down = [h for h in names if hosts[h]["rack"] == "rack0"]
        self.outs, self.procs, self.ready, self.go = [], [], [], []
        for k in range(0, len(names), HELPERS_PER_WORKER):
            part = names[k:k + HELPERS_PER_WORKER]
            spec = os.path.join(state["dir"], "run", "load-%s-%d.json" % (tag, k))
            ready, go = spec.replace(".json", ".ready"), spec.replace(".json", ".go")
            for stale in (ready, go):
                if os.path.exists(stale):
                    os.unlink(stale)
            self.ready.append(ready)
            self.go.append(go)
            with open(spec, "w") as f:
                json.dump({"hosts": {h: hosts[h]["osds"] for h in part}, "down": down,
                           "steps": steps, "ready": ready, "go": go,
                           "transport": transport}, f)
            out = spec.replace(".json", ".out.json")
            argv = release.prefix(state) + [
                "python3", "-m", "ceph_recovery_tools.lab.scaleload", "--conf", state["conf"],
                "--keyring", state["helper_keyring"], "--spec", spec, "--out", out]
            log = open(os.path.join(state["dir"], "log", "load-%s-%d.log" % (tag, k)), "w")
            self.procs.append(subprocess.Popen(argv, env=release.tool_env(state), stdout=log,
                                               stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL))
            self.outs.append(out)

    def begin(self, timeout: float = ENROLL_TIMEOUT_S) -> float:
        """Wait until every worker has enrolled its helpers (each connected on its own key
        and, for the endpoint, sent its first report by command), at most `timeout`; then
        give them all one start time, a second from now, and return it. The steps, and the
        run measured beside them, begin only once no helper is still enrolling."""
        t_asked = time.monotonic()
        self.workers_ready = wait_until(lambda: sum(os.path.exists(r) for r in self.ready),
                                        timeout, 0.5, done=lambda n: n == len(self.ready))
        self.enrol_s = round(time.monotonic() - t_asked, 1)
        self._t0 = time.time() + 1.0
        for go in self.go:
            with open(go + ".tmp", "w") as f:
                f.write("%.3f" % self._t0)
            os.rename(go + ".tmp", go)
        return self._t0

    def wait(self, timeout: float) -> Dict[str, Any]:
        for p in self.procs:
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        steps: List[Dict[str, Any]] = []
        ops: Dict[str, Any] = {}
        for out in self.outs:
            if not os.path.exists(out):      # a worker that never finished: its reports lost
                continue
            with open(out) as f:
                doc = json.load(f)
            ops.update(doc["ops"])
            for i, st in enumerate(doc["steps"]):
                if i == len(steps):
                    steps.append({"interval": st["interval"], "sent": 0, "failed": 0,
                                  "rtt_ms": [], "errors": {}, "seconds": st.get("seconds")})
                s = steps[i]
                s["sent"] += st["sent"]
                s["failed"] += st["failed"]
                s["rtt_ms"] += st["rtt_ms"]
                for k, v in st["errors"].items():
                    s["errors"][k] = s["errors"].get(k, 0) + v
        return {"steps": steps, "ops": ops}


def first_tick(state: Dict[str, Any], timeout: float = 300.0) -> Optional[float]:
    """Wait until the enabled module's first tick (its first reads of the map and the PG
    stats) has ended, then IDLE_SETTLE_S more: idle is what comes after it. Its length."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            ticks = perf(state).get("ticks") or []
        except launch.CephError:
            ticks = []
        if ticks:
            time.sleep(IDLE_SETTLE_S)
            return ticks[0]["tick_s"]
        time.sleep(2.0)
    return None


def perf(state: Dict[str, Any], timeout: float = 60) -> Dict[str, Any]:
    return launch.ceph(state, "recovery", "perf", timeout=timeout)


def run_phase(state: Dict[str, Any], log: Callable[..., None]) -> Tuple[Dict[str, Any],
                                                                       Dict[str, Any]]:
    """Helpers every 5 s; a controlled run of rack0 and a maintenance request together; the
    run aborted after RUN_S. The same helpers then go on with the report-rate steps (RATES,
    rate_steps): one enrolment of every helper serves both. (run, endpoint rate)."""
    launch.ceph(state, "config", "set", "mgr", "mgr/recovery/boot_timeout",
                str(BOOT_TIMEOUT_S), json_out=False)
    hosts = len(state["scale_hosts"])
    load = Load(state, [[WARM_S + RUN_S, 5.0], [QUIET_S, 0.0]] + rate_steps(hosts, RATES),
                "run")
    t_start = load.begin() + WARM_S
    time.sleep(max(0.0, t_start - time.time()))
    other = sorted(h for h, v in state["scale_hosts"].items() if v["rack"] == "rack1")[0]
    started, mark = time.time(), mon_log_mark(state)
    launch.ceph(state, "recovery", "start-controlled", "--scope", "rack0", json_out=False,
                timeout=60)
    cmd_s = time.time() - started
    launch.ceph(state, "recovery", "maintenance", "enter", other, json_out=False, timeout=60,
                check=False)
    log("run started (start-controlled answered in %.2f s); maintenance enter %s" %
        (cmd_s, other))
    time.sleep(max(0.0, t_start + RUN_S - time.time()))
    doc = perf(state, 120)
    asked = metadata_requests(state, mark)
    launch.ceph(state, "recovery", "abort", json_out=False, check=False, timeout=30)
    both = load.wait(timeout=QUIET_S + len(RATES) * RATE_STEP_S + 300)
    run = {"steps": both["steps"][:1], "ops": both["ops"], "perf": doc, "run_started": started,
           "start_cmd_s": cmd_s, "osd_metadata_requests": asked, "enrol_s": load.enrol_s,
           "workers_ready": load.workers_ready, "workers": len(load.ready)}
    return run, {"steps": both["steps"][2:]}


METADATA_ASK = b'handle_command mon_command({"prefix": "osd metadata"'


def mon_log_mark(state: Dict[str, Any]) -> int:
    """Where the mon's log ends now (metadata_requests counts from there)."""
    try:
        return os.path.getsize(os.path.join(state["dir"], "log", "mon.a.log"))
    except OSError:
        return 0


def metadata_requests(state: Dict[str, Any], mark: int) -> int:
    """The `osd metadata` commands the mon handled since `mark`. A lab's map-only OSDs never
    booted, so the mon holds no metadata for them, and ceph-mgr asks again for each of them
    at every new OSD map epoch (Mgr::handle_osd_map); a real cluster's OSDs have booted. The
    count is the part of the mon's load that is the lab's own."""
    n = 0
    with open(os.path.join(state["dir"], "log", "mon.a.log"), "rb") as f:
        f.seek(mark)
        for block in iter(lambda: f.read(1 << 24), b""):
            n += block.count(METADATA_ASK)
    return n


def rate_steps(hosts: int, rates: Tuple[float, ...]) -> List[List[float]]:
    """One RATE_STEP_S step per total report rate: each helper's interval for it."""
    return [[RATE_STEP_S, max(0.05, hosts / r)] for r in rates]


def rate_phase(state: Dict[str, Any], transport: str, rates: Tuple[float, ...]
               ) -> Dict[str, Any]:
    steps = rate_steps(len(state["scale_hosts"]), rates)
    load = Load(state, steps, "rate-" + transport, transport)
    load.begin()
    return load.wait(timeout=len(rates) * RATE_STEP_S + 300)


def pg_map_loaded(state: Dict[str, Any], pgs: int, timeout: float = 300.0) -> None:
    """Wait until the running mgr's PG map holds the lab's `pgs` PGs (`pg stat`), then
    IDLE_SETTLE_S: a new mgr's own memory grows as its PG map fills, so its idle baseline is
    taken once it is full (the variant with the module waits for the module's first tick,
    which reads that map)."""
    def count(d: Any) -> int:
        d = d if isinstance(d, dict) else {}
        return int(d.get("num_pgs", (d.get("pg_summary") or {}).get("num_pgs", 0)) or 0)
    wait_until(lambda: launch.ceph(state, "pg", "stat", timeout=60), timeout, 2.0,
               done=lambda d: count(d) >= pgs, ignore=(launch.CephError,),
               what="the mgr's PG map holding %d PGs" % pgs)
    time.sleep(IDLE_SETTLE_S)


def idle_phase(state: Dict[str, Any], pgs: int, log: Callable[..., None]) -> Dict[str, Any]:
    """The mgr's idle cost without the module and with it, each in a mgr started for it and
    measured once its PG map is full: a mgr restarted with the module disabled, then, the
    module enabled, one restarted so that it loads the module from its start, measured once
    the module's first tick has ended."""
    launch.restart_mgr(state)
    pg_map_loaded(state, pgs)
    off = mgr_usage(state, IDLE_S)
    bootstrap.enable_module(state)
    launch.restart_mgr(state)
    first = first_tick(state)
    on = mgr_usage(state, IDLE_S)
    log("idle: mgr cpu %.4f -> %.4f, rss %.0f -> %.0f MiB" % (
        off["cpu_frac"], on["cpu_frac"], off["rss"] / 2**20, on["rss"] / 2**20))
    return {"idle_off": off, "idle_on": on, "idle_perf": perf(state), "idle_first_tick_s": first}


def measure_size(lab_dir: str, osds: int, hosts: int, racks: int, pgs: int,
                 module_dir: str, log: Callable[..., None],
                 command: bool = False) -> Dict[str, Any]:
    """One size's raw row; `command`: with the command transport's rate steps."""
    t0 = time.monotonic()
    teardown.down(lab_dir)
    state = scale.up_scale(lab_dir, scale.ScaleOptions(
        osds=osds, hosts=hosts, racks=racks, pgs=pgs, module_dir=module_dir,
        enable_module=False))
    phases: Dict[str, float] = {"lab_up": round(time.monotonic() - t0, 1)}

    def timed(name: str, fn: Callable[[], Any]) -> Any:
        t = time.monotonic()
        try:
            return fn()
        finally:
            phases[name] = round(time.monotonic() - t, 1)
    try:
        log("lab up: %d OSDs, %d hosts, %d PGs (%s)" % (osds, hosts, pgs, state["timings"]))
        idle = timed("idle", lambda: idle_phase(state, pgs, log))
        run, rate = timed("run_and_rate", lambda: run_phase(state, log))
        run["load_avg_1m"] = round(os.getloadavg()[0], 2)
        rate_command = timed("rate_command", lambda: rate_phase(
            state, "command", COMMAND_RATES)) if command else None
        pg_dump_len = len(launch.ceph(state, "pg", "dump", "pgs_brief", timeout=120)
                          .get("pg_stats", []))
    finally:
        timed("teardown", lambda: teardown.down(lab_dir))
    log("phases (s): %s" % json.dumps(phases))
    return {"osds": osds, "pgs": pgs, "hosts": hosts, "racks": racks,
            "pg_dump_entries": pg_dump_len, **idle, "run": run, "rate": rate,
            "rate_command": rate_command, "phases_s": phases,
            "timings": state["timings"],
            "wall_s": round(time.monotonic() - t0, 1)}
