"""The Module's run state I/O (a mixin, so that module.py stays the Ceph API shell): load it
at serve() start, persist it from the tick thread, in chunks below the mon's entry limit
(statestore.py).

No `from __future__ import annotations` and no mgr_module import: module.py mixes this in.
"""
import time
from typing import Optional

try:
    from . import leftovers
    from .state import RunState
    from .statestore import StateCorrupt, StateTooLarge
except ImportError:  # pragma: no cover - the core is missing: module.py's _guard says so
    leftovers = RunState = None  # type: ignore[assignment]
    StateCorrupt = StateTooLarge = Exception  # type: ignore[assignment,misc]


class StateIO(object):
    _saved = ""

    def _load(self) -> None:
        try:
            text = self._store.read(self.get_store)
            if not text:
                return
            self.engine.run = RunState.loads(text, int(self.get_module_option("journal_length")))
            now = time.time()
            self.engine.run.reseed(now)
            # a structured mark: what the run did after a failover is told apart by time
            self.engine.run.record(now, 0, {"kind": "state_resumed", "reason": "run state "
                                            "loaded by a (re)started mgr"}, "noted")
            leftovers.note_load(self.engine)
            self._slog("state_loaded", run_id=self.engine.run.progress.run_id,
                       phase=self.engine.run.progress.phase)
        except (StateCorrupt, ValueError, TypeError, KeyError) as e:
            self.log.error("recovery: ignoring unreadable run state: %s", e)
            self.engine.state_unreadable(str(e), time.time(), self._store.found_marks)

    def _persist(self) -> None:
        """Write the run state in chunks below the mon's entry limit; a state too large to
        write raises RECOVERY_STATE_NOT_SAVED instead of being lost silently. Called by the
        tick thread only: set_store waits for the mon, so never under the engine's lock."""
        with self._persist_lock:
            with self._lock:
                text = self.engine.run.dumps()
            if text == self._saved:
                return
            try:
                writes = self._store.writes(text, self._mon_entry_limit())
            except StateTooLarge as e:
                with self._lock:
                    self.engine.shell_checks["RECOVERY_STATE_NOT_SAVED"] = (
                        "recovery run state not saved: a mgr failover would lose it", [str(e)])
                self.log.error("recovery: %s", e)
                return
            t0 = time.monotonic()
            for key, value in writes:
                self.set_store(key, value)
            self.meter.phase("persist", time.monotonic() - t0)
            self._store.done(writes)
            self.meter.state_write(len(writes), sum(len(v or "") for _k, v in writes),
                                   len(text))
            self._saved = text
            with self._lock:
                self.engine.shell_checks.pop("RECOVERY_STATE_NOT_SAVED", None)

    def _mon_entry_limit(self) -> Optional[int]:
        """The mon's current mon_config_key_max_entry_size (None when unknown): set_store
        does not fail on a larger entry, the mon drops it and ceph-mgr only logs that."""
        try:
            return int(self.get_foreign_ceph_option("mon", "mon_config_key_max_entry_size"))
        except Exception:  # an unknown option or entity on this release: the default limit
            return None
