"""`ceph recovery maintenance enter|exit|ls` and `ceph recovery wait`: the Module's command
methods (a mixin, so that module.py stays the Ceph API shell) and the windows' `ceph -s`
progress events. The handlers themselves are in maint.py (no mgr_module import there).
No `from __future__ import annotations`: ceph-mgr reads the command arguments from the real
annotation objects.
"""
import time
from typing import Any, Dict, Optional

from mgr_module import HandleCommandResult

from .compat import read_command, write_command

try:
    from . import drillcli, maint
    from .choices import StopMode, value_of
except ImportError:  # pragma: no cover - the core is missing: module.py's _guard says so
    drillcli = maint = None  # type: ignore[assignment]
    StopMode = str  # type: ignore[misc,assignment]

    def value_of(choice: Any) -> Any:  # type: ignore[misc]
        return choice


def drill_observed(health: Any, pg_dump: Any) -> Any:
    """What a drill reads each tick besides the snapshot (None without the core)."""
    return drillcli.observed(health, pg_dump) if drillcli is not None else None


class MaintenanceCommands(object):
    _maint_ev: Dict[str, str] = {}

    def _maint_progress(self) -> None:
        """A `ceph -s` progress event per maintenance window (maint.progress_events)."""
        events = maint.progress_events(self.engine, time.time())
        for ev, (msg, frac) in events.items():
            self._remote_progress("update", ev, ev_msg=msg, ev_progress=frac,
                                  add_to_ceph_s=True)
        for ev in set(self._maint_ev) - set(events):
            self._remote_progress("complete", ev)
        self._maint_ev = {ev: msg for ev, (msg, _f) in events.items()}

    def _remote_progress(self, verb: str, *args: Any, **kw: Any) -> None:
        try:
            self.remote("progress", verb, *args, **kw)
        except Exception as e:  # progress module disabled: not fatal
            self.log.debug("recovery: progress %s failed: %s", verb, e)

    # ------------------------------------------------------------ maintenance, wait (maint.py)
    def _maint(self, fn, *args: Any) -> HandleCommandResult:
        t0 = time.monotonic()
        try:
            bad = self._guard()
            if bad:
                return bad
            return HandleCommandResult(*fn(self.engine, *args))
        finally:
            self.meter.call(fn.__name__.strip("_"), time.monotonic() - t0)

    @write_command("recovery maintenance enter")
    def cmd_maint_enter(self, bucket: str, reason: Optional[str] = None,
                        max_duration: Optional[str] = None,
                        format: str = "plain") -> HandleCommandResult:
        """Request maintenance of a CRUSH bucket: the next tick asks ok-to-stop and then
        sets its noout, holds its autostart and stops its OSDs, or refuses (EBUSY: see
        `wait`, `maintenance ls`)"""
        return self._maint(maint.enter, bucket, reason, max_duration, format, time.time())

    @write_command("recovery maintenance exit")
    def cmd_maint_exit(self, bucket: str, budget: Optional[str] = None,
                       concurrency: Optional[str] = None,
                       format: str = "plain") -> HandleCommandResult:
        """End a maintenance window: controlled start of the bucket, noout restored at the end"""
        return self._maint(maint.exit_, bucket, budget, concurrency, format, time.time())

    @read_command("recovery maintenance ls")
    def cmd_maint_ls(self, format: str = "plain") -> HandleCommandResult:
        """List the maintenance windows"""
        return self._maint(maint.ls, format, time.time())

    @read_command("recovery wait")
    def cmd_wait(self, timeout: Optional[float] = None,
                 format: str = "plain") -> HandleCommandResult:
        """Answer at once how the last run, window enter/exit or drill ended: 0 if it
        succeeded, else ECANCELED (aborted), EIO (failed), EBUSY (refused), ETIMEDOUT (still
        going: poll again)"""
        return self._maint(maint.wait, timeout, format)

    # ------------------------------------------------------------ drills (drillcli.py)
    @write_command("recovery drill start")
    def cmd_drill_start(self, fail: str, downtime: str, budget: Optional[str] = None,
                        concurrency: Optional[str] = None, write_load: Optional[int] = None,
                        stop: Optional[StopMode] = None, inactive_grace: Optional[str] = None,
                        format: str = "plain") -> HandleCommandResult:
        """Drill on a real cluster (requested; the next tick refuses it unless ok-to-stop
        clears the bucket, see `wait` and `drill report`): stop the
        bucket's OSDs (--stop clean, or kill: SIGKILL, a power loss) for the downtime (writing
        --write-load objects/s to a pool of its own), then a controlled start; aborts on PGs
        inactive longer than --inactive-grace (20s), HEALTH_ERR or `drill abort`"""
        return self._maint(drillcli.start, fail, downtime, budget, concurrency, format,
                           time.time(), write_load, value_of(stop), inactive_grace)

    @write_command("recovery drill abort")
    def cmd_drill_abort(self, format: str = "plain") -> HandleCommandResult:
        """Abort the drill: start every OSD of its bucket at once, noout restored after"""
        return self._maint(drillcli.abort, format, time.time())

    @write_command("recovery drill budget")
    def cmd_drill_budget(self, budget: str, format: str = "plain") -> HandleCommandResult:
        """Change the going drill's exit budget (80% or 24G per host) before its exit begins"""
        return self._maint(drillcli.budget, budget, format, time.time())

    @read_command("recovery drill report")
    def cmd_drill_report(self, drill_id: Optional[str] = None,
                         format: str = "plain") -> HandleCommandResult:
        """A drill's timeline and measured times (the latest drill without a drill_id)"""
        return self._maint(drillcli.report, drill_id, format)
