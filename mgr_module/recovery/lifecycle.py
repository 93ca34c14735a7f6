"""The Module's life around its serve() loop (a mixin, so that module.py stays the Ceph API
shell): the run's `ceph -s` progress event, and shutdown().

No `from __future__ import annotations` and no mgr_module import: module.py mixes this in.
"""
try:
    from . import leftovers
except ImportError:  # pragma: no cover - the core is missing: module.py's _guard says so
    leftovers = None  # type: ignore[assignment]


class Lifecycle(object):
    _progress_ev = ""

    def _report_progress(self) -> None:
        eng = self.engine
        p = eng.run.progress
        if eng.active and p.run_id:
            ev = "recovery-%s" % p.run_id
            snap = eng.snapshot
            todo = [o for o in snap.osds if not o.up and (not eng.run.intent.scope or
                    set(o.crush_path) & set(eng.run.intent.scope))] if snap else []
            frac = len(p.finished) / float(max(1, len(p.finished) + len(todo)))
            try:
                self.remote("progress", "update", ev, ev_msg="Controlled recovery %s (%s)"
                            % (p.run_id, p.phase), ev_progress=min(1.0, frac),
                            add_to_ceph_s=True)
                self._progress_ev = ev
            except Exception as e:  # progress module disabled: not fatal
                self.log.debug("recovery: progress update failed: %s", e)
        elif self._progress_ev:
            try:
                self.remote("progress", "complete", self._progress_ev)
            except Exception as e:
                self.log.debug("recovery: progress complete failed: %s", e)
            self._progress_ev = ""

    def shutdown(self) -> None:
        """Stop serve(); first log every leftover the state says the module set, each with
        the command that clears it.

        It restores nothing itself, for three reasons. (1) Ceph does not call it when the
        module is disabled, the mgr fails over or gets SIGTERM (the mgr re-executes itself
        or calls _exit: docs/recovery-module.md), so a restore here would protect only the
        rare stop that calls it. (2) A mgr going away may not get a mon command answered;
        a restore that half happens leaves a state the log cannot describe. (3) What is set
        is set on purpose while the run goes on: unsetting noout with OSDs down starts a
        re-replication the operator did not ask for, and removing noup lets every held OSD
        load its PGs at once, the OOM chain the module exists to prevent. The state keeps
        everything: the run resumes on the next load, restores it at its end, and
        RECOVERY_LEFTOVERS names each item with its command until then."""
        self._stopping = True
        self._wake.set()
        try:
            self._log_leftovers()
        finally:
            self._sender.stop()
            self._reports.stop()

    def _log_leftovers(self) -> None:
        if self.engine is None or leftovers is None:
            return
        with self._lock:
            what = leftovers.going(self.engine)
            lines = leftovers.left_on_cluster(self.engine)
        if not lines:
            return
        self.log.warning("recovery: stopping during %s; left on the cluster (restored when "
                         "the module runs again and the run ends, or clear by hand):",
                         what or "no run (maintenance windows or holds)")
        for line in lines:
            self.log.warning("recovery: leftover %s", line)
