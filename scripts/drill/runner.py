"""The lab drill's setup and lab-only parts: the lab (brought up if missing, tuned), the rados
handle, the failed hosts, the helpers kept alive as systemd would. The drill itself is the
module's (`ceph recovery drill`): moduledrill.py is its thin client."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import structlog

from ceph_recovery.drill import STOP_CLEAN
from ceph_recovery_tools.lab import build, launch, procs, teardown
from ceph_recovery_tools.lab.state import load_state

from .sampler import mgr_json, mon_json

log = structlog.get_logger("drill")

# Lab tuning applied before the outage (DrillOptions.tune): recovery at full speed (the hdd
# defaults sleep 0.1 s per recovery op and take ~30 min for 20k objects), and RocksDB without
# the page cache so a host cgroup's usage is the OSDs' own memory (bluefs_buffered_io=true
# puts RocksDB's files in the page cache, which the cgroup counts as usage).
LAB_TUNING = (("osd_recovery_sleep_hdd", "0"), ("osd_max_backfills", "4"),
              ("osd_recovery_max_active_hdd", "8"), ("bluefs_buffered_io", "false"))

# --fit-first: the failed hosts' cgroup limit is the budget / this share (the rest is room for
# the growth the module can only answer a report and a tick later; see the memory drill test)
FIT_BUDGET_SHARE = 0.9


@dataclass
class DrillOptions:
    lab_dir: str
    fail: str                       # host:h2 | rack:r1
    budget: str = "90%"
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
    fit_first: Optional[float] = None   # budget = this x the module's prediction (fitted_budget)
    fit_restart: Optional[float] = None  # budget = second's prediction + this x the first's
    concurrency: Optional[str] = None   # start-controlled --concurrency (None: the module's default)
    write_load: Optional[int] = None    # the drill's --write-load (objects/s)
    stop: str = STOP_CLEAN          # the drill's --stop (STOP_MODES)
    stall_limit: Optional[float] = None  # the module's stall_limit (s) during the drill
    inactive_grace: Optional[float] = None  # the drill's --inactive-grace (s; None: its default)
    recovery_sleep: float = 0.0     # the lab tuning's osd_recovery_sleep_hdd (s per op)


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


def fitted_budget(preview: Dict[str, Any], hosts: List[str], factor: float,
                  restart: bool = False) -> Dict[str, Any]:
    """The tightest budget the module accepts for one OSD at a time: factor x the peak the
    module itself predicts (its dry run, with what it has learned) for the first OSD it would
    start on the failed hosts; their cgroups limited to that budget / FIT_BUDGET_SHARE.
    With `restart` (--fit-restart): the prediction for the second OSD of that host + factor x
    the first's, the largest over the failed hosts. With a factor between what a restarted
    OSD comes back at and what it settles at (as fractions of its predicted peak) the second
    start fits only once the first was restarted: the over-budget path runs on purpose."""
    planned: Dict[str, List[int]] = {}
    for e in preview.get("order") or []:
        if e["host"] in hosts:
            planned.setdefault(e["host"], []).append(int(e["predicted_bytes"]))
    fit: Dict[str, Any] = {}
    if restart:
        pairs = [(p[0], p[1]) for p in planned.values() if len(p) > 1]
        if not pairs:
            raise RuntimeError("--fit-restart: the dry run plans no second start on %s"
                               % ", ".join(hosts))
        budget, first, second = max((int(s + factor * f), f, s) for f, s in pairs)
        fit["predicted_second_bytes"] = second
    else:
        if not planned:
            raise RuntimeError("--fit-first: the dry run plans no start on %s"
                               % ", ".join(hosts))
        first = max(p[0] for p in planned.values())
        budget = int(factor * first)
    fit.update(factor=factor, predicted_first_bytes=first, budget_bytes=budget,
               host_mem_limit=int(budget / FIT_BUDGET_SHARE))
    return fit


class Drill(object):
    def __init__(self, opts: DrillOptions) -> None:
        self.o = opts
        self.state: Dict[str, Any] = {}
        self.made_lab = False
        self.cluster: Any = None
        self.result: Dict[str, Any] = {"mode": "naive" if opts.naive else "controlled",
                                       "engine": "module",
                                       "fail": opts.fail, "budget": opts.budget}
        self.naive_starts: Dict[int, int] = {}    # --naive: starts per OSD (systemd's count)

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
            tuning = dict(LAB_TUNING, osd_recovery_sleep_hdd="%g" % self.o.recovery_sleep)
            for key, value in tuning.items():
                launch.ceph(self.state, "config", "set", "osd", key, value, json_out=False)
            self.result["lab_tuning"] = tuning
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
        from . import moduledrill
        why = moduledrill.check_options(self.o)
        if why:
            raise ValueError(why)
        try:
            self.lab()
            return moduledrill.run(self)
        finally:
            if self.cluster is not None:
                self.cluster.shutdown()
            if self.made_lab and not self.o.keep:
                teardown.down(self.o.lab_dir)

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

    def _up(self) -> List[int]:
        dump = mon_json(self.cluster, {"prefix": "osd dump"})
        return [x["osd"] for x in dump["osds"] if x["up"]]

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
