"""ceph-recovery-drill compare: the naive and controlled drill reports side by side, as the
demo prints and writes them (summary.json with one object per run, compare.png)."""
from __future__ import annotations

import json

from ceph_recovery_tools.drill import compare
from ceph_recovery_tools.drill.cli import main

MiB = 1 << 20


def _report(mode, ooms, active_s, written, ok, limit=600 * MiB):
    tl = [{"t": float(t), "mem_used": {"h2": (100 + 10 * t) * MiB}, "osds_up": 4 + (t > 5),
           "pgs_active": 20 + t, "pgs_clean": 10 + t} for t in range(10)]
    drill = {"id": "d1", "bucket": "h2", "outcome": "done" if mode == "controlled" else
             "aborted", "started_at": 1000.0, "exit_at": 1003.0, "timeline": tl,
             "hosts": {"h2": {"budget_bytes": int(0.9 * limit)}}}
    return {"mode": mode, "drill": drill, "outcome": drill["outcome"],
            "oom_kills_by_host": {"h1": 0, "h2": ooms}, "time_to_all_pgs_active_s": active_s,
            "time_to_all_up_s": active_s, "objects_written": written,
            "objects_verified_ok": ok, "process_starts_by_osd": {"2": 1 + ooms, "3": 1},
            "peak_mem_bytes_by_host": {"h1": 900 * MiB, "h2": 590 * MiB},
            "host_mem_limit": limit, "failed_hosts": ["h2"]}


def test_summary_has_one_object_per_run_with_the_four_measures(tmp_path):
    naive = _report("naive", 3, None, 40000, 40000)
    ctl = _report("controlled", 0, 41.5, 40000, 40000)
    n, c = str(tmp_path / "n.json"), str(tmp_path / "c.json")
    for path, r in ((n, naive), (c, ctl)):
        with open(path, "w") as f:
            json.dump(r, f)
    assert main(["compare", "--naive", n, "--controlled", c, "--out", str(tmp_path / "o")]) == 0
    with open(tmp_path / "o" / "summary.json") as f:
        s = json.load(f)
    assert set(s) == {"naive", "controlled"}
    for run in s.values():
        assert {"oom_kills", "time_to_all_pgs_active_s", "objects_written",
                "objects_verified_ok"} <= set(run)
    assert (s["naive"]["oom_kills"], s["controlled"]["oom_kills"]) == (3, 0)
    assert s["naive"]["process_starts"] == 5 and s["controlled"]["peak_mem_bytes"] == 590 * MiB
    assert (tmp_path / "o" / "compare.png").stat().st_size > 0
    rows = dict((r[0], r[1:]) for r in compare.table_rows(s))
    assert rows["time to all PGs active"] == ["never", "41.5 s"]
    assert rows["host memory limit"] == ["600 MiB", "600 MiB"]


def test_the_picture_has_both_runs_with_the_limit_and_the_controlled_runs_budget():
    """A naive run starts everything whatever its budget: only the controlled run's budget
    is drawn (a naive drill's default budget, 90 % of the host's RAM, would flatten the axis)."""
    fig = compare.figure(_report("naive", 2, None, 10, 10), _report("controlled", 0, 30, 10, 10))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["naive: every OSD at once: 2 OOM kill(s)",
                      "controlled: ceph recovery: 0 OOM kill(s)"]
    labels = [[t.get_text() for t in ax.get_legend().get_texts()] for ax in fig.axes[:2]]
    assert labels == [["h2 used", "cgroup limit (OOM killer)"],
                      ["h2 used", "h2 budget", "cgroup limit (OOM killer)"]]


def test_the_picture_draws_the_tools_own_samples_of_the_failed_hosts_only():
    """A naive run's starts and OOM kills come after its drill was aborted: the picture reads
    the tool's samples (tool_timeline), which go on after it, and draws the failed hosts."""
    r = _report("naive", 1, None, 10, 10)
    r["tool_timeline"] = {"t": [0.0, 30.0, 60.0], "budgets": {"h2": 540 * MiB},
                          "used": {"h1": [900 * MiB] * 3, "h2": [0, 610 * MiB, 300 * MiB]},
                          "up": [4, 6, 6], "pgs_active": [20, 25, 33], "pgs_clean": [0, 0, 33],
                          "t_return": 20.0}
    fig = compare.figure(r, _report("controlled", 0, 30, 10, 10))
    mem = fig.axes[0]
    assert [ln.get_label() for ln in mem.get_lines()] == ["h2 used", "cgroup limit (OOM killer)"]
    assert list(mem.get_lines()[0].get_xdata()) == [0.0, 30.0, 60.0]


def test_an_unreadable_report_is_a_clear_error(tmp_path, capsys):
    assert main(["compare", "--naive", str(tmp_path / "missing.json"), "--controlled",
                 str(tmp_path / "missing.json"), "--out", str(tmp_path / "o")]) == 2
    assert "No such file" in capsys.readouterr().out


def test_the_peak_is_the_kernels_watermark_where_the_samples_missed_it():
    """An OOM kill comes between two samples: the cgroup's watermark saw the limit reached."""
    r = _report("naive", 2, None, 10, 10, limit=800 * MiB)
    r["peak_mem_bytes_by_host"] = {"h2": 650 * MiB}
    r["kernel_peak_mem_bytes_by_host"] = {"h1": 900 * MiB, "h2": 800 * MiB}
    assert compare.run_summary(r)["peak_mem_bytes"] == 800 * MiB
