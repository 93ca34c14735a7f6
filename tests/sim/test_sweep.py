"""ceph-recovery-bench --sweep: the acceptance evaluator's rules, the feasibility bound, and a
one-cell sweep whose outputs fit 80 columns."""
from __future__ import annotations

import json
import os

import pytest

from ceph_recovery_tools.bench import report
from ceph_recovery_tools.bench.cli import main as bench_main
from ceph_recovery_tools.bench.sweep import feasibility
from ceph_recovery_tools.sim import topology as T
from ceph_recovery_tools.sim.params import GiB, Params

RAM = 64 * GiB


def row(variant, active, oom=0, peak=0.5, done=True, inactive=0, **kw):
    r = {"table": "sweep", "hosts_n": 30, "ram_gib": 64, "variant": variant,
         "time_to_all_pgs_active_s": active, "oom_kills": oom, "host_ram_bytes": RAM,
         "peak_host_mem_bytes": int(peak * RAM), "plan_done": done, "converged": done,
         "pgs_inactive_at_end": inactive, "plan_last_health": []}
    r.update(kw)
    return r


def results(lines):
    return {ln["check"].split(",")[0].split(" (")[0]: ln["result"] for ln in lines}


def test_naive_without_oom_allows_1_3x():
    v = {"controlled": row("controlled", 260), "naive": row("naive", 200),
         "unlimited": row("unlimited", 200, peak=0.8), "oracle": row("oracle", 210)}
    got = results(report.acceptance_cell(v))
    assert got["0 OOM kills and ended"] == "PASS"
    assert got["all active where naive is"] == "PASS"           # 260 <= 1.3 x 200
    assert got["<= 1.3 x unlimited"] == "PASS"
    v["controlled"] = row("controlled", 261)
    got = results(report.acceptance_cell(v))
    assert got["all active where naive is"] == "FAIL"
    assert got["<= 1.3 x unlimited"] == "FAIL"


def test_naive_with_oom_must_not_be_beaten_and_oracle_bounds_when_unlimited_is_big():
    v = {"controlled": row("controlled", 900), "naive": row("naive", 890, oom=22),
         "unlimited": row("unlimited", 180, peak=1.1), "oracle": row("oracle", 800)}
    got = results(report.acceptance_cell(v))
    assert got["all active where naive is"] == "FAIL"           # 900 > 890, naive had OOMs
    assert got["<= 1.2 x oracle"] == "PASS"                     # 900 <= 960
    assert "<= 1.2 x oracle at the same budget" not in got       # not run: no line
    v["oracle-0.9"] = row("oracle-0.9", 740)
    got = results(report.acceptance_cell(v))
    assert got["<= 1.2 x oracle at the same budget"] == "FAIL"   # 900 > 888
    assert "at the oracle's budget" not in got                   # ctl-0.95 not run: no line
    v["ctl-0.95"] = row("ctl-0.95", 950)
    assert results(report.acceptance_cell(v))["at the oracle's budget"] == "PASS"  # <= 960
    v["ctl-0.95"] = row("ctl-0.95", 950, oom=1)
    assert results(report.acceptance_cell(v))["at the oracle's budget"] == "FAIL"
    v["ctl-0.95"] = row("ctl-0.95", 961)
    assert results(report.acceptance_cell(v))["at the oracle's budget"] == "FAIL"
    v["controlled"] = row("controlled", None, done=False, inactive=5)
    got = results(report.acceptance_cell(v))
    assert got["0 OOM kills and ended"] == "FAIL"
    assert got["no PG inactive at end"] == "FAIL"


def test_unavailable_variant_is_not_a_failure():
    v = {"ctl-auto": {"error": "ValueError: concurrency must be an integer >= 1, got 0"}}
    (line,) = report.acceptance_cell(v, "ctl-auto")
    assert line["result"] == "n/a" and "concurrency" in line["detail"]


def test_feasibility_bound():
    p = Params()
    f40, f48 = feasibility(40, p), feasibility(48, p)
    settled = 12 * p.steady_rss + p.host_system_bytes          # 44 GiB
    assert f40["settled_default_gib"] == round(settled / GiB, 2)
    assert (f40["fits_default"], f48["fits_default"]) == (False, True)
    assert f40["settled_min_target_gib"] == round(
        (12 * p.load_bytes(96) + p.host_system_bytes) / GiB, 2)  # 896 MiB target < PG-log load
    assert f40["fits_min_target"]


def test_one_cell_sweep_writes_outputs_within_80_columns(tmp_path, monkeypatch):
    monkeypatch.setenv(T.CACHE_ENV, str(tmp_path / "topo"))
    out = tmp_path / "out"
    from ceph_recovery_tools.bench import sweep
    monkeypatch.setattr(sweep, "run_sweep", _small(sweep.run_sweep))
    assert bench_main(["--sweep", "--out", str(out), "--no-big", "--horizon", "7200"]) == 0
    doc = json.loads((out / "sweep.json").read_text())
    assert sorted(r["variant"] for r in doc["rows"]) == sorted(v[0] for v in sweep.VARIANTS)
    assert os.path.getsize(out / "sweep_heatmap.png") > 0
    text = (out / "sweep.txt").read_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    by = {r["variant"]: r for r in doc["rows"]}
    assert by["oracle"]["budget_frac"] == 0.95 and by["controlled"]["budget_frac"] == 0.9
    assert by["oracle-0.9"]["budget_frac"] == 0.9 and by["oracle-0.9"]["strategy"] == "oracle"
    assert by["naive"]["host_ram_bytes"] == RAM and by["naive"]["osds"] == 360
    assert len(doc["acceptance"]) >= 3


def _small(run):
    def wrapped(**kw):
        kw.update(hosts=(30,), rams=(64,))
        return run(**kw)
    return wrapped



def test_service_lost_compares_pg_hours_per_cell_and_skips_rows_without_them():
    rows = [row("controlled", 300, inactive_pg_s=3600.0), row("naive", 200, inactive_pg_s=7200.0),
            row("unlimited", 180, inactive_pg_s=1800.0),
            row("controlled", 400, hosts_n=100, inactive_pg_s=7200.0),
            row("naive", 400, hosts_n=100, inactive_pg_s=72000.0),
            row("unlimited", 180, hosts_n=100),                   # an older JSON: not counted
            row("controlled", 500, hosts_n=500)]
    assert report.service_text(rows).splitlines() == [
        "PG-hours without I/O, naive / ctl: 2 of 2 cells >= 1 (2.0-10.0 x)",
        "PG-hours without I/O, unlimited / ctl: 0 of 1 cells >= 1 (0.5-0.5 x)"]


def test_sweep_sim_args_go_to_every_run_and_bad_ones_are_refused_before_any(tmp_path, capsys):
    from ceph_recovery_tools.bench import sweep
    todo = sweep.jobs(hosts=(30,), rams=(64,), big=True,
                      sim_args=("--param", "peer_entries_per_s=60000"))
    assert len(todo) == len(sweep.VARIANTS) + len(sweep.BIG_RAM_GIB) * len(sweep.BIG_VARIANTS)
    assert all(argv[-2:] == ["--param", "peer_entries_per_s=60000"] for _m, argv in todo)
    sweep.check_sim_args(["--param=peer_entries_per_s=60000"])
    for bad, named in ((["--param=peering_speed=2"], "peering_speed"),
                       (["--colour"], "not a ceph-recovery-sim argument")):
        with pytest.raises(ValueError, match=named):
            sweep.check_sim_args(bad)
    out = tmp_path / "sw"
    assert bench_main(["--sweep", "--out", str(out), "--sim-arg=--param=nope=1"]) == 22
    assert "unknown model parameter 'nope'" in capsys.readouterr().err
    assert not out.exists()


def test_host_out_cells_are_hosts_down_past_the_out_interval_naive_controlled_and_together():
    from ceph_recovery_tools.bench import sweep
    todo = sweep.host_out_jobs(seed=3)
    assert len(todo) == len(sweep.HOST_OUT_CELLS) * len(sweep.HOST_OUT_RAM_GIB) * 3
    downs = {int(argv[argv.index("--downtime") + 1]) for _m, argv in todo}
    assert downs == {3600, 14400} and min(downs) > Params().down_out_interval_s
    assert {argv[argv.index("--fail") + 1] for _m, argv in todo} == {"host:1", "host:1,host:2"}
    assert {m["variant"] for m, _a in todo} == {"naive", "controlled", "ctl-together"}
    together = [a for m, a in todo if m["variant"] == "ctl-together"]
    assert all(a[a.index("--strategy") + 1] == "controlled" and
               a[a.index("--param") + 1] == "out_return=together" for a in together)
    assert all(m["table"] == "host-out" for m, _a in todo)


def test_host_out_acceptance_wants_0_oom_kills_and_never_later_than_naive():
    from ceph_recovery_tools.bench import hostout
    cell = {"table": "host-out", "fail": "host:1,host:2", "downtime_s": 14400}
    rows = [row("controlled", 30.0, osds_marked_out=24, **cell), row("naive", 10.0, **cell),
            row("controlled", 20.0, ram_gib=48, **cell), row("naive", None, ram_gib=48,
                                                             oom=5, **cell)]
    lines = hostout.acceptance(rows)
    assert [(ln["ram_gib"], ln["variant"], ln["check"], ln["result"]) for ln in lines] == [
        (48, "ctl h1+2 4h", "0 OOM kills", "PASS"),
        (48, "ctl h1+2 4h", "never worse than naive", "PASS"),
        (64, "ctl h1+2 4h", "0 OOM kills", "PASS"),
        (64, "ctl h1+2 4h", "never worse than naive", "FAIL")]
    assert report.acceptance(rows) == lines          # the sweep's acceptance carries them
    assert "acceptance: 3 pass, 1 fail, 0 n/a" in report.acceptance_text(lines)
