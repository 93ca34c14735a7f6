"""Drive the helper's network probe inside every host namespace of a --netns lab and feed
`ceph_recovery.network.evaluate` as the mgr would: the path tests and drills use when the full
helper -> mgr path is not wanted (or not available).

    w = NetWatch(lab_dir, interval_s=2.0)      # one probe loop per host, in its namespace
    w.start()
    found, t = w.wait_for(lambda fs: any(f.kind == "jumbo_loss" for f in fs), timeout=30)
    w.stop()

Each probe loop is `python -m ceph_recovery_tools.helper.netprobe HOST --lab-dir D --cycles N`
run with `ip netns exec`; its JSON lines are the `report["network"]` objects.
"""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ceph_recovery import network
from ceph_recovery.model import Finding

from ..common.wait import wait_until
from .faults import LabNet


def probe_cmd(lab: LabNet, lab_dir: str, host: str, cycles: int, interval_s: float,
              budget_s: float, extra: Sequence[str] = ()) -> List[str]:
    return ["ip", "netns", "exec", lab.host(host)["netns"], sys.executable, "-m",
            "ceph_recovery_tools.helper.netprobe", host, "--lab-dir", lab_dir,
            "--cycles", str(cycles), "--interval", str(interval_s), "--budget", str(budget_s),
            *extra]


def probe_once(lab_dir: str, hosts: Optional[Sequence[str]] = None, budget_s: float = 1.0,
               extra: Optional[Mapping[str, Sequence[str]]] = None,
               timeout: float = 30.0) -> Dict[str, Dict[str, Any]]:
    """One probe cycle in each host's namespace, all at once: {host: network object}."""
    lab = LabNet.from_lab(lab_dir)
    procs = {h: subprocess.Popen(probe_cmd(lab, lab_dir, h, 1, 0, budget_s,
                                           (extra or {}).get(h, ())),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for h in (hosts or sorted(lab.hosts))}
    out = {}
    for h, p in procs.items():
        so, se = p.communicate(timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError("probe on %s failed (rc %d): %s" % (h, p.returncode, se[-500:]))
        out[h] = json.loads(so.strip().splitlines()[-1])
    return out


class NetWatch:
    def __init__(self, lab_dir: str, interval_s: float = 2.0, budget_s: float = 1.0,
                 thresholds: network.Thresholds = network.Thresholds(),
                 extra: Sequence[str] = (), cycles: int = 100000) -> None:
        self.lab_dir, self.lab = lab_dir, LabNet.from_lab(lab_dir)
        self.interval_s, self.budget_s, self.thresholds = interval_s, budget_s, thresholds
        self.extra, self.cycles = list(extra), cycles
        self.procs: Dict[str, subprocess.Popen] = {}
        self.latest: Dict[str, Dict[str, Any]] = {}
        self.findings: Tuple[Finding, ...] = ()
        self.evaluations = 0
        self.history: List[Tuple[float, Tuple[Finding, ...]]] = []   # every non-empty result
        self.costs: List[Dict[str, Any]] = []
        self._q: "queue.Queue[Tuple[str, Optional[Dict[str, Any]]]]" = queue.Queue()

    def start(self) -> "NetWatch":
        for h in sorted(self.lab.hosts):
            p = subprocess.Popen(probe_cmd(self.lab, self.lab_dir, h, self.cycles,
                                           self.interval_s, self.budget_s, self.extra),
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self.procs[h] = p
            threading.Thread(target=self._read, args=(h, p), daemon=True).start()
        return self

    def _read(self, host: str, p: subprocess.Popen) -> None:
        for line in p.stdout:
            try:
                self._q.put((host, json.loads(line)))
            except ValueError:
                continue
        self._q.put((host, None))

    def pump(self, until: float) -> bool:
        """Take probe results until `until` (monotonic); evaluate after each. False if no
        result came."""
        got = False
        while True:
            left = until - time.monotonic()
            if left <= 0:
                return got
            try:
                host, res = self._q.get(timeout=left)
            except queue.Empty:
                return got
            if res is None:
                continue
            got = True
            self.latest[host] = res
            self.costs.append(res.get("cost", {}))
            self.findings = network.evaluate(self.latest, self.findings, time.time(),
                                             self.thresholds)
            self.evaluations += 1
            if self.findings:
                self.history.append((time.time(), self.findings))

    def wait_for(self, pred: Callable[[Tuple[Finding, ...]], bool],
                 timeout: float) -> Tuple[bool, float]:
        """Pump until pred(findings) holds; (held, seconds waited)."""
        t0 = time.monotonic()

        def pumped() -> bool:
            self.pump(min(t0 + timeout, time.monotonic() + 0.5))
            return pred(self.findings)
        held = bool(wait_until(pumped, timeout, 0))
        return held, time.monotonic() - t0

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = {}

    def __enter__(self) -> "NetWatch":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
