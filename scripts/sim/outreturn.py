"""How out OSDs come back into their PGs (Params.out_return), whatever the start strategy.

- "boot" (Ceph's default, and the controlled start's choice): the monitor marks each out OSD
  in at its boot (mon_osd_auto_mark_auto_out_in); it backfills what changed while it was out.
- "together": `noin` on each out OSD of the failure while they start, then one `osd in` of
  them all once every one is up: one remap instead of one per boot. An OSD up and out holds
  only strays, which are purged once their PGs are clean without it, so each one backfills
  every object of its PGs once marked in (Lifecycle.mark_in).
"""
from __future__ import annotations

from typing import List

from .cluster import C_DOWN, Osd

BOOT, TOGETHER = "boot", "together"
CHOICES = (BOOT, TOGETHER)


class OutReturn:
    """The "together" return of one run (nothing for "boot")."""

    def __init__(self, choice: str):
        if choice not in CHOICES:
            raise ValueError("out_return wants one of %s, got %r" % (", ".join(CHOICES), choice))
        self.choice = choice
        self.kept: List[Osd] = []          # the OSDs noin holds out, until marked in
        self.done = False                  # they were marked in

    def tick(self, sim) -> None:
        """After the monitor's tick: hold out every out OSD of the failure with noin; once
        every one of them is up, mark them all in."""
        if self.choice != TOGETHER or self.done:
            return
        for o in sim.failed:
            if o.out and o.cls == C_DOWN and not o.up_out and o not in self.kept:
                o.noin = True
                self.kept.append(o)
        if self.kept and all(o.up_out for o in self.kept):
            for o in self.kept:
                sim.lc.mark_in(o, sim.now)
            self.done = True


__all__ = ["OutReturn", "BOOT", "TOGETHER", "CHOICES"]
