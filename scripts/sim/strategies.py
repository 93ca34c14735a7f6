"""Start strategies: naive, unlimited (the floor), serial (ceph-ansible-like), controlled.

`controlled` drives the real decision core, `ceph_recovery.plan.plan()`, see controlled.py;
`oracle` is controlled with every OSD's true peak as its footprint, see oracle.py. This module
is the table of all of them (make()): it imports them, none imports it (their base class is
basestrategy.py).
"""
from __future__ import annotations

from .basestrategy import Strategy
from .cluster import ACTIVE, BOOTING, FAILED, LOADING, PEERING, RECOVERING, STOPPED
from .controlled import Controlled
from .oracle import Oracle

BUSY = (LOADING, BOOTING, PEERING, RECOVERING)


class Naive(Strategy):
    """Power comes back: systemd starts every OSD at once and restarts them after an OOM."""

    name = "naive"

    def __init__(self, cfg):
        super().__init__(cfg)
        self.started = False

    def tick(self, sim) -> None:
        if not self.started:
            self.started = True
            for o in sim.failed:
                sim.lc.start(o, sim.now)

    def systemd_restarts(self, sim, osd) -> bool:
        return True

    def finished(self, sim) -> bool:
        return True

    def stuck(self, sim) -> bool:
        return self.started


class Unlimited(Naive):
    """Naive with unlimited RAM: no OOM killer. The floor any strategy can reach."""

    name = "unlimited"
    oom = False


class Serial(Naive):
    """One OSD at a time; the next starts only when nothing peers or recovers any more
    (ceph-ansible's "wait for all PGs active+clean", which with a whole rack down can only
    mean: the cluster settled with this OSD in). systemd restarts after an OOM."""

    name = "serial"

    def __init__(self, cfg):
        super().__init__(cfg)
        self.queue = None
        self.current = None

    def tick(self, sim) -> None:
        if self.queue is None:
            self.queue = sorted(sim.failed, key=lambda o: o.id)
            self.started = True
        c = self.current
        if c is not None and (c.phase in BUSY or (c.restart_at is not None
                                                  and c.phase != FAILED)):
            return
        while self.queue:
            o = self.queue.pop(0)
            if o.phase == STOPPED:
                sim.lc.start(o, sim.now)
                self.current = o
                return

    def stuck(self, sim) -> bool:
        return not self.queue and all(o.phase in (ACTIVE, FAILED, STOPPED) for o in sim.failed)


def make(cfg):
    table = {"naive": Naive, "unlimited": Unlimited, "serial": Serial,
             "controlled": Controlled, "oracle": Oracle}
    if cfg.strategy not in table:
        raise ValueError("unknown strategy %r (known: %s)" % (cfg.strategy,
                                                              ", ".join(sorted(table))))
    return table[cfg.strategy](cfg)


STRATEGIES = ("naive", "serial", "controlled", "unlimited", "oracle")
