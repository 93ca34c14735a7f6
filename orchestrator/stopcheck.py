"""Whether the run may stop (restart, brake) an up OSD now: ok-to-stop, PG membership and the
restarts in flight, read from one plan() call's values.

A StopCheck is built once per plan() call (plan.stop_check) from the snapshot's PG membership
and ok-to-stop answers, the OSDs up, the restarts of earlier ticks still in flight
(view.restarting) and this tick's restarts (`new_restarts`: the call's own set, which only
grows within a tick; the answers of stop_breaks are kept per OSD and its size).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Dict, List, Mapping, Optional, Set, Tuple

from .membership import stop_breaks
from .model import PgMap


@dataclass(frozen=True, eq=False)
class StopCheck:
    """One plan() call's answers to "may this OSD stop now?" (see the module docstring)."""
    pg_map: Optional[PgMap]
    up: AbstractSet[int]
    restarting: AbstractSet[int]
    ok_to_stop: Mapping[int, bool]
    new_restarts: AbstractSet[int]
    _breaks: Dict[Tuple[int, int], List[int]] = field(default_factory=dict, repr=False)

    def stopping(self) -> Set[int]:
        """OSDs counted as stopped by every later stop decision, on every host: this tick's
        restarts and the restarts of earlier ticks still in flight (view.restarting: the
        instruction may not have run yet, or the OSD is back but still peering). An
        ok-to-stop answer asked before one of them cleared each OSD alone."""
        return set(self.new_restarts) | self.restarting

    def stop_breaks(self, osd_id: int) -> List[int]:
        """PG indexes a stop of `osd_id` now would take below min_size (with the restarts in
        flight counted as stopped too); empty when the snapshot has no PG membership."""
        pm = self.pg_map
        if pm is None:
            return []
        key = (osd_id, len(self.new_restarts))     # new_restarts only grows within a tick
        if key not in self._breaks:
            self._breaks[key] = stop_breaks(pm, self.up, osd_id, self.stopping() - {osd_id})
        return self._breaks[key]

    def _blind_overlap(self, osd_id: int) -> bool:
        """Without PG membership nothing says whether two stops share a PG: one in flight at
        a time, cluster-wide (a second one in this tick waits: room.py)."""
        return self.pg_map is None and bool(self.restarting - {osd_id})

    def may_stop(self, osd_id: int) -> bool:
        """ok-to-stop True in this snapshot AND no PG with min_size up drops below it, the
        restarts in flight counted as stopped (Ceph's ok-to-stop clears a returning OSD still
        recovering even where it does: the core never makes an active PG inactive)."""
        return self.ok_to_stop.get(osd_id) is True and \
            not self.stop_breaks(osd_id) and not self._blind_overlap(osd_id)

    def stop_refusal(self, osd_id: int) -> str:
        """Why the membership refuses stopping `osd_id` ("" if it does not)."""
        if self._blind_overlap(osd_id):
            return "osd.%s restarting: without PG membership one stop at a time" % ",".join(
                str(x) for x in sorted(self.restarting - {osd_id}))
        bad = self.stop_breaks(osd_id)
        if not bad:
            return ""
        pm = self.pg_map
        return "its stop would take %d PG(s) below min_size (%s)" % (
            len(bad), ", ".join(pm.name(x) for x in bad[:3]) + (", ..." if len(bad) > 3 else ""))
