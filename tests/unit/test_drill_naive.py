"""--naive drills end when systemd would have given up (every failed OSD still down used its
restarts and stayed dead RESTART_SEC after the last), not at the drill's timeout."""
from __future__ import annotations

import time

from ceph_recovery_tools.drill import naive


class DrillState:
    """The fields of a Drill that naive.gave_up reads and writes."""

    def __init__(self, up, starts):
        self.up, self.naive_starts, self.result = list(up), dict(starts), {}

    def _up(self):
        return self.up


def test_gave_up_only_once_every_down_osd_used_its_restarts_and_stayed_dead():
    old = time.time() - naive.RESTART_SEC - 1
    burst = naive.START_LIMIT_BURST
    d = DrillState(up=[0, 1], starts={2: burst + 1, 3: burst + 1})
    assert naive.gave_up(d, [2, 3], {2: old, 3: old}) is True
    assert d.result["naive_gave_up"] == [2, 3]
    # one OSD still has a restart left: systemd would start it again
    d = DrillState(up=[], starts={2: burst + 1, 3: burst})
    assert naive.gave_up(d, [2, 3], {2: old, 3: old}) is False and d.result == {}
    # dead for less than RestartSec after its last start
    d = DrillState(up=[], starts={2: burst + 1})
    assert naive.gave_up(d, [2], {2: time.time()}) is False
    # one OSD is running (booting, not up yet): not the end
    d = DrillState(up=[], starts={2: burst + 1, 3: 1})
    assert naive.gave_up(d, [2, 3], {2: old}) is False
    # all up: nothing was given up on (the drill ends on all up + clean instead)
    d = DrillState(up=[2, 3], starts={2: 1, 3: 1})
    assert naive.gave_up(d, [2, 3], {}) is False
