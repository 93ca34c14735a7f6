"""Background sampling every 0.5 s: host cgroup memory, OSD processes, OSDs up, PG states,
and (controlled runs) the recovery module's status."""
from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Dict, List, Optional

import psutil

from ceph_recovery_tools.lab import launch


# the module's health checks of a run that cannot go on (nothing fits, or an OSD never boots)
STALL_CAUSES = ("RECOVERY_BUDGET_TOO_SMALL", "RECOVERY_BOOT_TIMEOUT")
STALL_CHECKS = STALL_CAUSES + ("RECOVERY_INCOMPLETE",)


def mon_json(cluster: Any, cmd: Dict[str, Any], timeout: int = 10) -> Any:
    rc, out, err = cluster.mon_command(json.dumps(dict(cmd, format="json")), b"", timeout=timeout)
    if rc != 0:
        raise RuntimeError("%s -> rc %d %s" % (cmd["prefix"], rc, err))
    return json.loads(out) if out else None


def mgr_json(cluster: Any, cmd: Dict[str, Any], timeout: int = 10) -> Any:
    rc, out, err = cluster.mgr_command(json.dumps(dict(cmd, format="json")), b"", timeout=timeout)
    if rc != 0:
        raise RuntimeError("%s -> rc %d %s" % (cmd["prefix"], rc, err))
    return json.loads(out) if out else None


def cluster_sample(cluster: Any) -> Dict[str, Any]:
    dump = mon_json(cluster, {"prefix": "osd dump"})
    stat = pg_summary(mon_json(cluster, {"prefix": "pg stat"}))
    by_state = {s["name"]: s["num"] for s in stat.get("num_pg_by_state", [])}
    active = sum(n for name, n in by_state.items() if "active" in name.split("+"))
    clean = sum(n for name, n in by_state.items()
                if "active" in name.split("+") and "clean" in name.split("+"))
    return {"epoch": dump["epoch"], "up": sorted(o["osd"] for o in dump["osds"] if o["up"]),
            "osds": len(dump["osds"]), "pgs": stat.get("num_pgs", 0), "pgs_active": active,
            "pgs_clean": clean}


def pg_summary(stat: Dict[str, Any]) -> Dict[str, Any]:
    """`pg stat -f json` wraps its numbers in pg_summary (Pacific); accept both shapes."""
    return stat.get("pg_summary", stat) if isinstance(stat, dict) else {}


class Sampler(threading.Thread):
    def __init__(self, state: Dict[str, Any], cluster: Any, interval: float = 0.5,
                 with_module: bool = False) -> None:
        super().__init__(name="drill-sampler", daemon=True)
        self.state, self.cluster, self.interval = state, cluster, interval
        self.with_module = with_module
        self.samples: List[Dict[str, Any]] = []
        self.t0 = time.time()
        self._stop_ev = threading.Event()
        self._lock = threading.Lock()
        self.errors = 0

    def run(self) -> None:
        last_cluster: Optional[Dict[str, Any]] = None
        last_module: Optional[Dict[str, Any]] = None
        n = 0
        while not self._stop_ev.is_set():
            t = time.time()
            s: Dict[str, Any] = {"t": t - self.t0, "time": t, "mem": {}, "procs": {}}
            for host in sorted(self.state["hosts"]):
                s["mem"][host] = launch.cgroup_memory(self.state, host)
            s["rss"] = {}
            for osd in sorted(self.state["osds"], key=int):
                pid = launch.osd_pid(self.state, int(osd))
                s["procs"][osd] = pid
                s["rss"][osd] = _rss(pid)
            last_cluster = self._try(lambda: cluster_sample(self.cluster), last_cluster)
            s["cluster"] = last_cluster
            if self.with_module and n % 2 == 0:
                last_module = self._try(lambda: _module_view(self.cluster), last_module)
            s["module"] = last_module
            with self._lock:
                self.samples.append(s)
            n += 1
            self._stop_ev.wait(max(0.0, self.interval - (time.time() - t)))

    def _try(self, fn: Callable[[], Dict[str, Any]], last: Any) -> Any:
        try:
            return fn()
        except Exception:   # a slow mon/mgr answer: keep the last view, count it
            self.errors += 1
            return last

    def stop(self) -> List[Dict[str, Any]]:
        self._stop_ev.set()
        self.join(10)
        with self._lock:
            return list(self.samples)

    def latest(self) -> Optional[Dict[str, Any]]:
        with self._lock:
            return self.samples[-1] if self.samples else None


def _rss(pid: Optional[int]) -> int:
    if not pid:
        return 0
    try:
        return int(psutil.Process(pid).memory_info().rss)
    except psutil.Error:
        return 0


def _module_view(cluster: Any) -> Dict[str, Any]:
    st = mgr_json(cluster, {"prefix": "recovery status"})
    stuck = sorted(set(st.get("health") or []) & set(STALL_CHECKS))
    detail = st.get("health_detail") or {}
    return {"phase": st.get("phase"), "run_id": st.get("run_id"),
            "in_flight": {h: v.get("in_flight", []) for h, v in st.get("hosts", {}).items()},
            "budget": {h: v.get("budget") for h, v in st.get("hosts", {}).items()},
            "stall": {"checks": stuck, "reasons": [line for c in stuck
                                                   for line in detail.get(c, [])][:5]}
            if stuck else None}


def stalled(samples: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The module's last stall the samples saw, None if none: its checks, their detail
    lines, how long it was seen without a break. A stall that names its cause (nothing fits,
    an OSD never boots) wins over a later RECOVERY_INCOMPLETE, the run's end that follows
    it, and the cause alone over the tick or two in which both show."""
    episodes: List[Dict[str, Any]] = []
    going = False
    for s in samples:
        stall = (s.get("module") or {}).get("stall")
        if stall and going and episodes[-1]["checks"] == stall["checks"]:
            episodes[-1].update(reasons=stall["reasons"], until=s["time"])
        elif stall:
            episodes.append(dict(stall, since=s["time"], until=s["time"]))
        going = bool(stall)
    if not episodes:
        return None
    pure = [e for e in episodes if set(e["checks"]) <= set(STALL_CAUSES)]
    causes = [e for e in episodes if set(e["checks"]) & set(STALL_CAUSES)]
    e = (pure or causes or episodes)[-1]
    return {"checks": e["checks"], "reasons": e["reasons"],
            "for_s": round(e["until"] - e["since"], 1)}
