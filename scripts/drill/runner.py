"""The lab drill's setup and lab-only parts: the lab (brought up if missing, tuned), the rados
handle, the helpers kept alive as systemd would. The drill itself is the module's (`ceph
recovery drill`): moduledrill.py is its thin client, which this module calls and which never
imports it back (what both need, the failed hosts and the fitted budget, is outage.py)."""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import structlog

from ceph_recovery.drill import STOP_CLEAN
from ceph_recovery_tools.lab import build, launch, procs, teardown
from ceph_recovery_tools.lab.state import load_state

from . import moduledrill
from .sampler import mgr_json, mon_json

log = structlog.get_logger("drill")

# Lab tuning applied before the outage (DrillOptions.tune): recovery at full speed (the hdd
# defaults sleep 0.1 s per recovery op and take ~30 min for 20k objects), and RocksDB without
# the page cache so a host cgroup's usage is the OSDs' own memory (bluefs_buffered_io=true
# puts RocksDB's files in the page cache, which the cgroup counts as usage).
LAB_TUNING = (("osd_recovery_sleep_hdd", "0"), ("osd_max_backfills", "4"),
              ("osd_recovery_max_active_hdd", "8"), ("bluefs_buffered_io", "false"))

@dataclass
class DrillOptions:
    lab_dir: str
    fail: str                       # host:h2 | rack:r1
    budget: str = "90%"
    host_mem_limit: Optional[int] = None
    naive: bool = False
    objects: int = 2000
    objects_before: Optional[int] = None  # written before the outage (None: `objects`)
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
