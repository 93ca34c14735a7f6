"""--naive mode of the drill: every failed OSD started at once, dead ones restarted the way
systemd's ceph-osd@.service would (`d` is the Drill)."""
from __future__ import annotations

import time
from typing import Dict, List

import structlog

from ceph_recovery_tools.lab import launch

log = structlog.get_logger("drill")

# systemd's defaults for ceph-osd@.service (Restart=on-failure, RestartSec=10,
# StartLimitBurst=3), emulated in --naive mode
RESTART_SEC = 10.0
START_LIMIT_BURST = 3


def start_all(d, osds: List[int]) -> None:
    """Power comes back: every failed OSD starts at once."""
    for osd in osds:
        launch.start_osd(d.state, osd)
        d.naive_starts[osd] = 1
    d.result["start_order"] = list(osds)


def supervise(d, osds: List[int], dead_since: Dict[int, float]) -> None:
    """Restart an OSD dead for RESTART_SEC, at most START_LIMIT_BURST times (dead_since: osd ->
    since when it has no process and is down)."""
    up = set(d._up())
    now = time.time()
    for osd in osds:
        if osd in up or launch.osd_pid(d.state, osd) is not None:
            dead_since.pop(osd, None)
            continue
        dead_since.setdefault(osd, now)
        if now - dead_since[osd] >= RESTART_SEC and \
                d.naive_starts.get(osd, 0) <= START_LIMIT_BURST:
            log.info("naive: restarting dead OSD (systemd Restart=on-failure)", osd=osd)
            launch.start_osd(d.state, osd)
            d.naive_starts[osd] = d.naive_starts.get(osd, 0) + 1
            dead_since.pop(osd, None)


def gave_up(d, osds: List[int], dead_since: Dict[int, float]) -> bool:
    """systemd's end state: every failed OSD still down has used its START_LIMIT_BURST
    restarts and is dead RESTART_SEC after the last (its unit stays failed: nothing will
    start it again, so waiting for the timeout measures nothing more)."""
    now = time.time()
    left = [o for o in osds if o in dead_since]
    if not left or len(left) + len(set(d._up()) & set(osds)) < len(osds):
        return False
    if any(d.naive_starts.get(o, 0) <= START_LIMIT_BURST or
           now - dead_since[o] < RESTART_SEC for o in left):
        return False
    d.result["naive_gave_up"] = sorted(left)
    log.warning("naive: systemd gave up on these OSDs (start limit hit)", osds=sorted(left))
    return True
