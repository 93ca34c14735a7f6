"""OSDs that come back out: how their return costs memory.

A host down longer than mon_osd_down_out_interval is marked out, and its PGs are re-replicated
to the OSDs that stay in. Once they are clean there (none of the OSD's PGs is degraded without
it), its return is a backfill, not a log recovery: at boot the monitor marks it in again
(mon_osd_auto_mark_auto_out_in), its PGs are remapped to it and the objects that changed are
pushed to it while the PGs stay active on their temporary acting sets. No missing set is built
from the PG log and no history is merged into it, so the writes it missed cost it no memory:
its peak is its load (its own PGs from disk), like an OSD that missed nothing. An OSD that
stays out at boot (`noin`, or marked out by the operator) holds no PG of an acting set at all.

An out OSD whose PGs are still degraded (its data was not re-replicated yet) is marked in
before that ends and recovers from the log like an OSD that was never out: the missed history
counts as for any other OSD.
"""
from __future__ import annotations

from dataclasses import replace

from .model import OsdState


def returns_by_backfill(o: OsdState) -> bool:
    """`o` is down and out, and none of its PGs is degraded without it."""
    return not o.up and not o.in_ and o.pgs_degraded == 0


def as_returning(o: OsdState) -> OsdState:
    """`o` as its start will cost: a backfilling return missed no history it must hold."""
    if o.missed_entries and returns_by_backfill(o):
        return replace(o, missed_entries=0)
    return o


__all__ = ["returns_by_backfill", "as_returning"]
