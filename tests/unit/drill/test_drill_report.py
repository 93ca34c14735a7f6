"""The drill's measurements from samples: exact values on hand-made sample series."""
from __future__ import annotations

import json
import os

import pytest

from ceph_recovery_tools.drill import report
from ceph_recovery_tools.drill.outage import failed_hosts, fitted_budget
from ceph_recovery_tools.drill.sampler import pg_summary

MiB = 1 << 20


def sample(t, up, pgs_active, pgs_clean, usage, procs, osds=6, pgs=33):
    return {"t": t, "time": 100.0 + t, "mem": {h: {"usage": u} for h, u in usage.items()},
            "procs": procs, "rss": {}, "module": None,
            "cluster": {"up": up, "osds": osds, "pgs": pgs, "pgs_active": pgs_active,
                        "pgs_clean": pgs_clean}}


SERIES = [
    sample(0.0, [0, 1, 2, 3], 33, 0, {"h1": 300 * MiB, "h2": 0}, {"4": None, "5": None}),
    sample(1.0, [0, 1, 2, 3], 33, 0, {"h1": 310 * MiB, "h2": 90 * MiB}, {"4": 11, "5": 12}),
    sample(2.0, [0, 1, 2, 3, 4], 30, 0, {"h1": 320 * MiB, "h2": 400 * MiB}, {"4": 11, "5": 12}),
    sample(3.0, [0, 1, 2, 3, 4, 5], 31, 2, {"h1": 330 * MiB, "h2": 450 * MiB},
           {"4": None, "5": 12}),
    sample(4.0, [0, 1, 2, 3, 4, 5], 33, 20, {"h1": 330 * MiB, "h2": 420 * MiB},
           {"4": 13, "5": 12}),
    sample(5.0, [0, 1, 2, 3, 4, 5], 33, 33, {"h1": 330 * MiB, "h2": 410 * MiB},
           {"4": 13, "5": 12}),
]


def test_times_from_recovery_start():
    assert report.recovery_times(SERIES, 100.5) == {
        "time_to_all_up_s": 2.5, "time_to_all_pgs_active_s": 3.5, "time_to_all_pgs_clean_s": 4.5}
    assert report.recovery_times(SERIES[:3], 100.5)["time_to_all_up_s"] is None
    # all active at t=4, then a peering dip at t=5: not settled yet at the end
    dip = SERIES[:5] + [sample(5.0, [0, 1, 2, 3, 4, 5], 20, 20, {"h1": 0, "h2": 0}, {})]
    assert report.recovery_times(dip, 100.5)["time_to_all_pgs_active_s"] is None
    dip.append(sample(6.0, [0, 1, 2, 3, 4, 5], 33, 33, {"h1": 0, "h2": 0}, {}))
    assert report.recovery_times(dip, 100.5) == {
        "time_to_all_up_s": 2.5, "time_to_all_pgs_active_s": 5.5, "time_to_all_pgs_clean_s": 5.5}


def test_peaks_and_budget_excess_only_after_start():
    assert report.peaks(SERIES, 101.0) == {"h1": 330 * MiB, "h2": 450 * MiB}
    assert report.over_budget(SERIES, 101.0, {"h2": 420 * MiB, "h1": None}) == {
        "h2": {"max_excess_bytes": 30 * MiB, "samples_above": 1, "samples": 5}}


def test_in_flight_counts_started_processes_not_yet_up():
    # osd 4 and 5 run at t=1 while neither is up: two in flight on h2
    assert report.max_in_flight(SERIES, 100.0, {"h2": [4, 5]}) == {"h2": 2}
    # at t=2 osd.4 is up, osd.5 still starting: one
    assert report.max_in_flight(SERIES, 102.0, {"h2": [4, 5]}) == {"h2": 1}
    assert report.max_in_flight(SERIES, 103.0, {"h2": [4, 5]}) == {"h2": 0}


def test_process_starts_count_new_pids():
    # osd.4: pid 11 from t=1, gone at t=3, pid 13 at t=4 -> 2 starts; osd.5 once
    assert report.process_starts(SERIES, 100.5, [4, 5]) == {"4": 2, "5": 1}


def test_journal_filter_and_module_in_flight():
    journal = [{"time": 1.0, "epoch": 5, "action": {"kind": "grant_start", "osd": 4,
                                                    "host": "h3", "reason": "fits"},
                "result": "queued"},
               {"time": 2.0, "epoch": 6, "action": {"kind": "allow_boot", "osd": 4,
                                                    "reason": "rss"}, "result": "ok"}]
    assert report.journal_events(journal, "grant_start") == [
        {"time": 1.0, "osd": 4, "host": "h3", "reason": "fits", "result": "queued"}]
    series = [{"module": {"in_flight": {"h3": [4]}}}, {"module": {"in_flight": {"h3": []}}},
              {"module": None}]
    assert report.module_max_in_flight(series) == {"h3": 1}


def test_failed_hosts():
    state = {"hosts": {"h1": {"rack": "r1"}, "h2": {"rack": "r2"}, "h3": {"rack": "r1"}}}
    assert failed_hosts(state, "host:h2") == ["h2"]
    assert failed_hosts(state, "rack:r1") == ["h1", "h3"]
    for bad in ("host:h9", "rack:r9", "h2", "zone:z1"):
        with pytest.raises(ValueError):
            failed_hosts(state, bad)


def test_pg_stat_shapes():
    inner = {"num_pgs": 33, "num_pg_by_state": [{"name": "active+clean", "num": 33}]}
    assert pg_summary({"pg_ready": True, "pg_summary": inner}) == inner
    assert pg_summary(inner) == inner


def test_fitted_budget_from_the_first_planned_start_of_the_failed_hosts():
    preview = {"order": [{"host": "h1", "osd": 0, "predicted_bytes": 500 * MiB},
                         {"host": "h2", "osd": 2, "predicted_bytes": 300 * MiB},
                         {"host": "h2", "osd": 3, "predicted_bytes": 400 * MiB}]}
    fit = fitted_budget(preview, ["h2"], 1.05)
    assert fit == {"factor": 1.05, "predicted_first_bytes": 300 * MiB,
                   "budget_bytes": int(1.05 * 300 * MiB),
                   "host_mem_limit": int(int(1.05 * 300 * MiB) / 0.9)}
    assert fitted_budget(preview, ["h1", "h2"], 1.0)["predicted_first_bytes"] == 500 * MiB


def test_fitted_budget_refuses_a_plan_without_a_start_on_the_failed_hosts():
    with pytest.raises(RuntimeError, match="plans no start on h3"):
        fitted_budget({"order": [{"host": "h2", "osd": 2, "predicted_bytes": 1}]}, ["h3"], 1.0)


def test_fit_restart_budget_is_the_second_start_plus_a_share_of_the_first():
    preview = {"order": [{"host": "h1", "osd": 0, "predicted_bytes": 500 * MiB},
                         {"host": "h2", "osd": 2, "predicted_bytes": 300 * MiB},
                         {"host": "h2", "osd": 3, "predicted_bytes": 400 * MiB}]}
    fit = fitted_budget(preview, ["h2"], 0.6, restart=True)
    budget = int(400 * MiB + 0.6 * 300 * MiB)
    assert fit == {"factor": 0.6, "predicted_first_bytes": 300 * MiB,
                   "predicted_second_bytes": 400 * MiB, "budget_bytes": budget,
                   "host_mem_limit": int(budget / 0.9)}
    # h1 plans one start only: a host without a second start cannot be squeezed
    with pytest.raises(RuntimeError, match="plans no second start on h1"):
        fitted_budget(preview, ["h1"], 0.6, restart=True)


@pytest.mark.parametrize("extra", [["--naive"], ["--fit-first", "1.05"],
                                   ["--host-mem-limit", "1G"]])
@pytest.mark.parametrize("factor", ["0.6", "1.0", "0"])
def test_fit_restart_needs_a_controlled_run_a_share_and_no_other_limit(capsys, extra, factor):
    from ceph_recovery_tools.drill.cli import main
    argv = ["--dir", "/nonexistent", "--fail", "host:h2", "--fit-restart", factor,
            "--json", "/nonexistent/r.json"]
    if factor == "0.6":
        argv += extra
    assert main(argv) == 2
    assert "--fit-restart needs a controlled run, 0 < F < 1" in capsys.readouterr().err


@pytest.mark.parametrize("extra", [["--fit-first", "0.9"],
                                   ["--fit-first", "1.05", "--host-mem-limit", "1G"]])
def test_fit_first_needs_a_factor_of_one_or_more_and_no_other_limit(capsys, extra):
    from ceph_recovery_tools.drill.cli import main
    assert main(["--dir", "/nonexistent", "--fail", "host:h2", "--naive", *extra,
                 "--json", "/nonexistent/r.json"]) == 2
    assert "--fit-first needs F >= 1 and no --host-mem-limit" in capsys.readouterr().err


def _samples(budget_host="h2"):
    out = []
    for i in range(12):
        out.append({"time": 100.0 + 5 * i,
                    "mem": {"h1": {"usage": 200 * MiB}, "h2": {"usage": (50 + 20 * i) * MiB}},
                    "cluster": {"up": list(range(4 + min(i, 2))), "osds": 6, "pgs": 33,
                                "pgs_active": 20 + i, "pgs_clean": 10 + 2 * i},
                    "procs": {}})
    return out


def test_a_budget_far_above_the_usage_stays_on_the_chart_on_a_log_axis():
    axis = report.memory_axis([300 * MiB, 10 * MiB], [int(19.3 * (1 << 30))])
    assert axis["scale"] == "log" and axis["top"] >= 19.3 * 1024 > axis["bottom"] > 0
    axis = report.memory_axis([300 * MiB], [400 * MiB])
    assert axis == {"scale": "linear", "bottom": 0, "top": 1.15 * 400}


def test_timeline_shows_every_budget_line_and_integer_osd_ticks(tmp_path):
    budget = int(19.3 * (1 << 30))
    png = str(tmp_path / "drill.png")
    report.plot(png, _samples(), 105.0, {"h2": budget, "h1": None}, "controlled")
    with open(report.timeline_file(png)) as f:
        tl = json.load(f)
    assert tl["budgets"] == {"h2": budget} and tl["t"][0] == -5.0
    fig = report.figure(tl)
    mem, osds = fig.axes[0], fig.axes[1]
    low, high = mem.get_ylim()
    assert low < budget / MiB < high and low < 50 < high
    assert "h2 budget 19.3 GiB" in [t.get_text() for t in mem.get_legend().get_texts()]
    ticks = [t for t in osds.get_yticks() if osds.get_ylim()[0] <= t <= osds.get_ylim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)
    assert os.path.getsize(png) > 0
