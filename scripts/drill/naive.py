"""--naive: the drill's `drill abort` starts every OSD of the bucket at once, and the lab stands
in for systemd's ceph-osd@.service, which on a real cluster restarts an OSD the kernel killed
(the lab has no systemd; its helpers start OSDs only when the module says so). `d` is the
runner's Drill."""
from __future__ import annotations

import time
from typing import Any, Dict, List

import structlog

from ceph_recovery_tools.lab import launch

log = structlog.get_logger("drill")

# systemd's defaults for ceph-osd@.service (Restart=on-failure, RestartSec=10,
# StartLimitBurst=3)
RESTART_SEC = 10.0
START_LIMIT_BURST = 3
SETTLE_POLL_S = 2.0


class Systemd(object):
    """Restart=on-failure for the bucket's OSDs once the drill's abort started them: an OSD
    with no process and down for RESTART_SEC is started again, at most START_LIMIT_BURST
    times (d.naive_starts counts every start, the abort's first)."""

    def __init__(self, d: Any, osds: List[int]) -> None:
        self.d, self.osds = d, list(osds)
        self.dead_since: Dict[int, float] = {}
        for osd in self.osds:
            d.naive_starts[osd] = 1          # the abort's start instruction

    def tick(self) -> None:
        d, now = self.d, time.time()
        up = set(d._up())
        for osd in self.osds:
            if osd in up or launch.osd_pid(d.state, osd) is not None:
                self.dead_since.pop(osd, None)
                continue
            self.dead_since.setdefault(osd, now)
            if now - self.dead_since[osd] >= RESTART_SEC and \
                    d.naive_starts.get(osd, 0) <= START_LIMIT_BURST:
                log.info("naive: restarting dead OSD (systemd Restart=on-failure)", osd=osd)
                launch.start_osd(d.state, osd)
                d.naive_starts[osd] = d.naive_starts.get(osd, 0) + 1
                self.dead_since.pop(osd, None)

    def gave_up(self) -> bool:
        """systemd's end state: every OSD still down has used its START_LIMIT_BURST restarts
        and is dead RESTART_SEC after the last (its unit stays failed: nothing will start it
        again, so waiting on measures nothing more)."""
        d, now = self.d, time.time()
        left = [o for o in self.osds if o in self.dead_since]
        if not left or len(left) + len(set(d._up()) & set(self.osds)) < len(self.osds):
            return False
        if any(d.naive_starts.get(o, 0) <= START_LIMIT_BURST or
               now - self.dead_since[o] < RESTART_SEC for o in left):
            return False
        d.result["naive_gave_up"] = sorted(left)
        log.warning("naive: systemd gave up on these OSDs (start limit hit)", osds=sorted(left))
        return True

    def settle(self, deadline: float) -> None:
        """After the drill ended (its abort ends once every OSD is up): keep restarting until
        every OSD is up and every PG active+clean, systemd gave up, or the deadline."""
        while time.time() < deadline:
            self.d.ensure_helpers()
            self.tick()
            if self.gave_up() or self._clean():
                return
            time.sleep(SETTLE_POLL_S)
        log.warning("naive: not settled by the deadline")
        self.d.result["timed_out"] = True

    def _clean(self) -> bool:
        try:
            stat = launch.ceph(self.d.state, "pg", "stat", timeout=20)
            up = set(self.d._up())
        except Exception as e:     # noqa: BLE001 - mon busy: keep waiting
            log.info("waiting", error=str(e)[:200])
            return False
        return set(self.osds) <= up and launch.pgs_clean(stat)
