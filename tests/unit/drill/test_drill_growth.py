"""The largest rise of a host's memory within one tick, from a drill timeline."""
from __future__ import annotations

from ceph_recovery_tools.drill.growth import max_rise, rows


def test_the_largest_rise_within_the_tick_window_only():
    t = [0.0, 1.0, 2.0, 6.0, 7.0, 20.0]
    used = [100, 150, None, 400, 90, 1000]
    # 150 -> 400 spans 5 s (1 -> 6): counted; 100 -> 400 spans 6 s: not; 90 -> 1000 spans 13 s
    assert max_rise(t, used, 5.0) == (250, 1.0)
    assert max_rise(t, used, 20.0) == (910, 7.0)      # 90 -> 1000 beats 100 -> 1000
    assert max_rise([0.0, 5.0], [300, 200], 5.0) == (0, None)


def test_rows_per_host_with_the_peak():
    tl = {"t": [0.0, 2.5, 5.0], "used": {"h2": [10, 50, 30], "h1": [None, None, None]}}
    assert rows(tl, 5.0) == [{"host": "h1", "peak": 0, "rise": 0, "at": None},
                             {"host": "h2", "peak": 50, "rise": 40, "at": 0.0}]
