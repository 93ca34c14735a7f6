"""The mgr-scale page splits the run's ticks by phase: the core's plan() beside the shell's
view, acting and persisting (meter.py's `phases`)."""
from __future__ import annotations

from ceph_recovery_tools.bench import mgrscale_report as rep


def test_each_phase_gets_its_own_quantile_and_the_table_one_row_per_measured_size():
    ticks = [{"tick_s": 1.0 + i, "phases": {"view": 0.1 * i, "plan": 0.5, "act": 0.2,
                                            "persist": 0.01 * i}} for i in range(10)]
    ticks.append({"tick_s": 0.1})                       # an idle tick: no phase timed
    p99 = rep._phases(ticks, 0.99)
    assert p99 == {"act": 0.2, "persist": 0.09, "plan": 0.5, "view": 0.9}
    rows = [{"osds": 1000, "tick_s_p99": 10.0, "phase_s_p99": p99, "shell_s_p99": 9.5,
             "state_entries_per_tick_max": 2},
            {"osds": 5000, "code": "before", "tick_s_p99": 30.0}]   # measured before phases
    table = rep._phase_table(rows)
    assert table[-1] == "| after | 1000 | 10.0 | 0.5 | 0.9 | 0.2 | 0.09 | 9.5 | 2 |"
    assert len([x for x in table if x.startswith("| ") and "OSDs" not in x]) == 1
    assert rep._phase_table(rows[1:]) == []
