"""`ceph-recovery-bench report` and the bench's table: docs/measurements.md is what its JSON
and text give, placeholders are checked, the table stays readable in 80 columns."""
from __future__ import annotations

import io
import json
import os
import pathlib
import re

import pytest
from rich.console import Console

from ceph_recovery_tools.bench import measurements as m
from ceph_recovery_tools.bench.cli import main as bench_main
from ceph_recovery_tools.bench.cli import sims_table

REPO = pathlib.Path(__file__).resolve().parents[3]
DATA = REPO / "docs" / "data"


def _run(osds, strategy, active, oom=0):
    return {"osds": osds, "strategy": strategy, "time_to_all_up_s": active,
            "time_to_all_pgs_active_s": active, "time_to_all_pgs_clean_s": None,
            "time_to_all_pgs_min_size_s": active, "peak_host_mem_over_budget": 0.9321,
            "oom_kills": oom, "restarts": 3, "heap_releases": 1, "units_failed": 0,
            "wall_s": 1.25, "horizon_s": 345600}


BENCH = {"runs": [_run(1200, "naive", None, oom=82), dict(_run(1200, "controlled", 1505.0),
                                                          inactive_pg_s=5400.0),
                  _run(60, "controlled", 174835.0)],
         "plan_tick": {"plan_median_ms": 5.13, "plan_p99_ms": 9.5, "baseline_median_ms": 25.69,
                       "ratio_plan_to_baseline": 0.2, "ticks": 50, "osds": 10000},
         "acceptance": [{"check": "c1", "ok": True, "detail": "d1"},
                        {"check": "c2", "ok": False, "detail": "d2"}],
         "total_wall_s": 11.2}
DRILL = {"mode": "naive", "failed_hosts": ["h2"], "budget_bytes_by_host": {"h2": 1 << 30},
         "host_mem_limit": 252693708, "peak_mem_bytes_by_host": {"h2": 251629568},
         "oom_kills_by_host": {"h2": 5}, "process_starts_by_osd": {"2": 4, "3": 2},
         "restarts": [], "heap_releases": [], "time_to_all_up_s": None,
         "time_to_all_pgs_clean_s": 99.0, "objects_verified_ok": 40000,
         "objects_written": 40000, "final_health": {"status": "HEALTH_WARN"}}


def _data_dir(tmp_path, text, drills=None):
    d = tmp_path / "data"
    d.mkdir()
    (d / "bench.json").write_text(json.dumps(BENCH))
    (d / "measurements.in.md").write_text(text)
    for name, doc in (drills or {}).items():
        (d / ("drill-%s.json" % name)).write_text(json.dumps(doc))
    return d


def test_values_come_from_the_json_with_their_format():
    data = {"bench": BENCH, "sweep": None, "drills": {"n": DRILL}, "timelines": {},
            "text": "{{run 1200 controlled time_to_all_pgs_active_s}} s, "
                    "{{run 1200 naive time_to_all_pgs_active_s}}, {{tick plan_median_ms}} ms, "
                    "{{drill n oom_kills_by_host.h2}} kills under {{drill n host_mem_limit bytes}}, "
                    "{{run 1200 controlled peak_host_mem_over_budget x}}x, "
                    "{{drill n restarts}} restarts"}
    assert m.render(data, {}) == ("1,505 s, never, 5.13 ms, 5 kills under 241.0 MiB, 0.93x, "
                                  "0 restarts")


@pytest.mark.parametrize("bad,named", [
    ("{{run 999 controlled oom_kills}}", "no run of 999 OSDs"),
    ("{{drill gone oom_kills_by_host.h2}}", "no drill-gone.json"),
    ("{{drill n oom_kills_by_host.h9}}", "has no oom_kills_by_host.h9"),
    ("{{frobnicate}}", "unknown placeholder {{frobnicate}}"),
    ("{{sweep total_wall_s}}", "sweep.json"),
])
def test_a_placeholder_the_data_lacks_is_an_error_naming_it(tmp_path, capsys, bad, named):
    d = _data_dir(tmp_path, "ok\n" + bad, {"n": DRILL})
    out = tmp_path / "docs" / "measurements.md"
    assert m.main(["--data", str(d), "--out", str(out)]) == 2
    assert named in capsys.readouterr().err and not out.exists()


def test_missing_bench_json_is_an_error(tmp_path, capsys):
    assert m.main(["--data", str(tmp_path), "--out", str(tmp_path / "x.md")]) == 2
    assert "no bench.json" in capsys.readouterr().err


def test_report_writes_tables_and_pictures(tmp_path):
    d = _data_dir(tmp_path, "{{sim.table}}\n{{drills.table}}\n{{bench.plot}}\n"
                            "{{sim.acceptance}}\n{{plan.table}}\n", {"naive-limited": DRILL})
    out = tmp_path / "docs" / "measurements.md"
    assert bench_main(["report", "--data", str(d), "--out", str(out)]) == 0
    text = out.read_text()
    assert "| 1,200 | controlled | 1,505 | 1,505 | never | 2 | 0.932 | 0 | 3 | 1 | 1.2 |" in text
    assert "| 60 | controlled | 174,835 | 174,835 | never | ? | 0.932 |" in text   # older JSON
    assert ("| naive-limited | naive | - | 241.0 MiB | 240.0 MiB | 5 | 6 | 0 | 0 | never | 99 |"
            " 40,000/40,000 | HEALTH_WARN |") in text
    assert "- PASS c1: d1\n- **FAIL** c2: d2" in text and "| plan() per tick, p99 | 9.5 ms |" in text
    assert "![simulator: time to all PGs active and peak/budget](img/bench.png)" in text
    assert os.path.getsize(tmp_path / "docs" / "img" / "bench.png") > 0


def test_docs_measurements_is_what_the_report_makes_of_docs_data(tmp_path):
    out = tmp_path / "measurements.md"
    assert m.main(["--data", str(DATA), "--out", str(out), "--img", str(tmp_path / "img")]) == 0
    assert out.read_text() == (REPO / "docs" / "measurements.md").read_text(), \
        "docs/measurements.md is stale: run `ceph-recovery-bench report`"


def _render(rows, width):
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(sims_table(rows))
    return buf.getvalue()


def test_the_bench_table_is_whole_in_80_columns_and_folds_when_narrower():
    rows = [dict(_run(n, s, t), units_failed=12) for n, s, t in
            [(6000, "controlled", 1925.0), (1200, "serial", 174835.0), (60, "naive", None)]]
    text = _render(rows, 80)
    assert max(len(line) for line in text.splitlines()) <= 80 and "…" not in text
    for cell in ("6000", "ctl", "174835", "serial", "never", "0.932", "1.2"):
        assert cell in text
    assert "─" * 20 in text.splitlines()[2]                 # the rule under the header
    narrow = _render(rows, 50)
    assert "…" not in narrow and max(len(line) for line in narrow.splitlines()) <= 50


def _slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'."""
    return "".join(c for c in heading.lower() if c.isalnum() or c in " -_").replace(" ", "-")


def test_the_readme_links_into_measurements_at_headings_that_exist():
    headings = [line.lstrip("#").strip() for line in
                (REPO / "docs" / "measurements.md").read_text().splitlines()
                if line.startswith("#")]
    anchors = {_slug(h) for h in headings}
    links = re.findall(r"\(docs/measurements\.md#([^)]+)\)", (REPO / "README.md").read_text())
    assert links and set(links) <= anchors, set(links) - anchors


def test_a_drills_end_is_its_outcome_and_stall_for_module_drills_and_the_abort_before():
    health = {"final_health": {"status": "HEALTH_WARN"}}
    assert m.drill_end(dict(health, outcome="done")) == "done, HEALTH_WARN"
    assert m.drill_end(dict(health, outcome="aborted", stalled={
        "checks": ["RECOVERY_BUDGET_TOO_SMALL"], "reasons": []})) == \
        "aborted (RECOVERY_BUDGET_TOO_SMALL), HEALTH_WARN"
    assert m.drill_end(dict(health, aborted_run="stalled")) == "stalled"
    assert m.drill_end(health) == "HEALTH_WARN"
