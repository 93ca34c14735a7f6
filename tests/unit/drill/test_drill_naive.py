"""--naive drills (after the drill's abort started every OSD) stop waiting when systemd would
have given up (every failed OSD still down used its restarts and stayed dead RESTART_SEC after
the last), not at the drill's timeout."""
from __future__ import annotations

import time

from ceph_recovery_tools.drill import naive


class DrillState:
    """The fields of a Drill that naive.Systemd.gave_up reads and writes."""

    def __init__(self, up, starts):
        self.up, self.naive_starts, self.result = list(up), dict(starts), {}

    def _up(self):
        return self.up


def systemd(up, starts, dead_since):
    d = DrillState(up, {})
    unit = naive.Systemd(d, sorted(starts))
    assert d.naive_starts == {o: 1 for o in starts}      # the abort's start counts
    d.naive_starts.update(starts)
    unit.dead_since.update(dead_since)
    return d, unit


def test_gave_up_only_once_every_down_osd_used_its_restarts_and_stayed_dead():
    old = time.time() - naive.RESTART_SEC - 1
    burst = naive.START_LIMIT_BURST
    d, unit = systemd([0, 1], {2: burst + 1, 3: burst + 1}, {2: old, 3: old})
    assert unit.gave_up() is True
    assert d.result["naive_gave_up"] == [2, 3]
    # one OSD still has a restart left: systemd would start it again
    d, unit = systemd([], {2: burst + 1, 3: burst}, {2: old, 3: old})
    assert unit.gave_up() is False and d.result == {}
    # dead for less than RestartSec after its last start
    d, unit = systemd([], {2: burst + 1}, {2: time.time()})
    assert unit.gave_up() is False
    # one OSD is running (booting, not up yet): not the end
    d, unit = systemd([], {2: burst + 1, 3: 1}, {2: old})
    assert unit.gave_up() is False
    # all up: nothing was given up on (the drill ends on all up + clean instead)
    d, unit = systemd([2, 3], {2: 1, 3: 1}, {})
    assert unit.gave_up() is False
