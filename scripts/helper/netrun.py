"""Runs the network engineer's probe (`ceph_recovery_tools.helper.netprobe.probe_cycle`), if
that module is installed, inside a time budget so a slow probe never stretches the cycle.

The probe runs in one worker thread; if it overruns the budget the cycle reports
{"error": "probe over budget"} and no new probe starts until the slow one has returned.
"""
from __future__ import annotations

import importlib
from concurrent.futures import Future, ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import Any, Callable, Dict, Optional

import structlog

log = structlog.get_logger("ceph-recovery-helper")


def load_probe() -> Optional[Callable[[Dict[str, Any]], Dict[str, Any]]]:
    try:
        mod = importlib.import_module("ceph_recovery_tools.helper.netprobe")
    except ImportError:
        return None
    return getattr(mod, "probe_cycle", None)


class ProbeRunner:
    def __init__(self, budget_s: float,
                 probe: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]] = None) -> None:
        self.budget_s = budget_s
        self.probe = probe if probe is not None else load_probe()
        self._pool: Optional[ThreadPoolExecutor] = None
        self._pending: Optional[Future] = None

    def run(self, context: Dict[str, Any]) -> Dict[str, Any]:
        if self.probe is None or self.budget_s <= 0:
            return {}
        if self._pending is not None and not self._pending.done():
            return {"error": "previous probe still running (over its %.1fs budget)"
                    % self.budget_s}
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="netprobe")
        self._pending = self._pool.submit(self.probe, context)
        try:
            result = self._pending.result(timeout=self.budget_s)
        except FutureTimeout:
            log.warning("probe_over_budget", budget_s=self.budget_s)
            return {"error": "probe over budget (%.1fs)" % self.budget_s}
        except Exception as exc:   # noqa: BLE001 - a broken probe must not break reports
            log.warning("probe_failed", error=str(exc))
            return {"error": "probe failed: %s" % exc}
        return dict(result) if isinstance(result, dict) else {}

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
