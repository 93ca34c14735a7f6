"""Drill measurements from samples and the journal (ceph_recovery_tools.drill.measures)."""
from __future__ import annotations

import json

from ceph_recovery_tools.drill import measures, tables

MiB = 1 << 20


def sample(t, **rss):
    return {"time": t, "rss": {k.lstrip("o"): v * MiB for k, v in rss.items()}}


def grant(t, osd, pred, reason="used 0 + reserved 0 + predicted x <= budget y"):
    return {"time": t, "action": {"kind": "grant_start", "osd": osd,
                                  "predicted_bytes": pred * MiB, "reason": reason}}


SAMPLES = [sample(100, o2=0, o3=0), sample(101, o2=60, o3=0), sample(104, o2=150, o3=0),
           sample(108, o2=90, o3=50), sample(110, o2=95, o3=170), sample(112, o2=40, o3=120),
           sample(115, o2=70, o3=130)]
JOURNAL = [grant(100.5, 2, 200), {"time": 101, "action": {"kind": "allow_boot", "osd": 2}},
           grant(107.5, 3, 160), grant(109, 3, 160, reason="re-grant: process not running"),
           {"time": 109.5, "action": {"kind": "allow_boot", "osd": 3}},
           {"time": 111.0, "action": {"kind": "heap_release", "osd": 2},
            "answer": {"heap_supported": True}, "observed": {"rss_bytes": 95 * MiB}},
           {"time": 113.5, "action": {"kind": "restart_osd", "osd": 2}},
           grant(114, 2, 120), {"time": 114.5, "action": {"kind": "allow_boot", "osd": 2}}]


def test_each_start_against_the_peak_until_its_next_start_restart_or_stop():
    got = measures.predictions(SAMPLES, JOURNAL, t_start=100.0)
    assert [(p["osd"], p["predicted_bytes"] // MiB, p["observed_peak_bytes"] // MiB, p["error"])
            for p in got] == [(2, 200, 150, round(200 / 150 - 1, 4)),
                              (3, 160, 170, round(160 / 170 - 1, 4)),
                              (2, 120, 70, round(120 / 70 - 1, 4))]


def test_a_start_that_never_ran_or_never_booted_has_no_error():
    got = measures.predictions([sample(100, o2=0)], [grant(100.5, 2, 200)], t_start=100.0)
    assert got[0]["observed_peak_bytes"] is None and got[0]["error"] is None
    kept = measures.predictions([sample(101, o2=60)], [grant(100.5, 2, 200, reason="probe: x")],
                                t_start=100.0)
    assert kept[0]["observed_peak_bytes"] == 60 * MiB and kept[0]["probe"]
    assert kept[0]["booted"] is False and kept[0]["error"] is None


def test_a_drill_aborts_start_everything_carries_no_prediction_and_is_no_start():
    abort = {"time": 100.5, "action": {"kind": "grant_start", "osd": 2, "host": "h2",
                                       "reason": "drill d1 aborted (operator): start every "
                                                 "OSD of h2"}}
    assert measures.predictions(SAMPLES, [abort] + JOURNAL[2:5], t_start=100.0) == \
        measures.predictions(SAMPLES, JOURNAL[2:5], t_start=100.0)


def test_heap_release_rss_before_and_lowest_after():
    got = measures.heap_release_effects(SAMPLES, JOURNAL)
    assert got == [{"osd": 2, "time": 111.0, "supported": True, "rss_before_bytes": 95 * MiB,
                    "rss_after_bytes": 40 * MiB}]


def test_summary_counts_the_goal_from_the_second_start_on():
    r1 = {"predictions": measures.predictions(SAMPLES, JOURNAL, 100.0)}
    s = measures.summarize([r1])
    errs = sorted([200 / 150 - 1, abs(160 / 170 - 1), 120 / 70 - 1])
    assert s["starts"] == 3 and s["first"]["osd"] == 2
    assert s["median_abs_error"] == round(errs[1], 4)
    assert s["worst_abs_error_from_second"] == round(120 / 70 - 1, 4)
    assert s["median_abs_error_from_second"] == round((abs(160 / 170 - 1) + 120 / 70 - 1) / 2, 4)


def test_tables_print_every_start_and_release(tmp_path, capsys):
    r = {"mode": "controlled", "failed_hosts": ["h2"], "failed_osds": [2, 3],
         "predictions": measures.predictions(SAMPLES, JOURNAL, 100.0),
         "heap_release_effects": measures.heap_release_effects(SAMPLES, JOURNAL)}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(r))
    assert tables.main(["--release", "tentacle", "fit=%s" % path]) == 0
    out = capsys.readouterr().out
    assert "| fit | osd.3 | 160 | - | - | 170 | -6 % | - |" in out
    assert "| fit | osd.2 | True | 95 | 40 |" in out
    assert tables.main([str(tmp_path / "missing.json")]) == 2


def test_returning_table_reads_the_load_the_module_booted_on(tmp_path, capsys):
    r = {"failed_osds": [2, 3], "peak_rss_bytes_by_osd": {"2": 150 * MiB, "3": 170 * MiB},
         "journal": [{"action": {"kind": "grant_start", "osd": 2},
                      "observed": {"missed_entries": 9216}},
                     {"action": {"kind": "allow_boot", "osd": 2}, "load_rss_bytes": 60 * MiB}],
         "time_to_all_up_s": 12.0, "time_to_all_pgs_active_s": 14.0,
         "time_to_all_pgs_clean_s": 30.0}
    path = tmp_path / "low.json"
    path.write_text(json.dumps(r))
    assert tables.main(["--returning", str(path)]) == 0
    out = capsys.readouterr().out
    # 60 x 1.2 + 9,216 x 12 KiB = 180 MiB against a 150 MiB peak; 2 x 60 = 120 MiB
    assert "| low | osd.2 | 9216 | 60 | 150 | 180 | +20 % | -20 % | 12 | 14 | 30 |" in out
    assert "| low | osd.3 | - | - | 170 | - | - | - | 12 | 14 | 30 |" in out


def test_an_older_report_gets_booted_from_its_journal():
    r = {"predictions": [{"osd": 2, "time": 100.5, "error": 0.5},
                         {"osd": 3, "time": 107.5, "error": 0.1}],
         "journal": [{"time": 101, "action": {"kind": "allow_boot", "osd": 2}},
                     {"time": 108, "action": {"kind": "restart_osd", "osd": 3}},
                     {"time": 109, "action": {"kind": "allow_boot", "osd": 3}}]}
    got = measures.mark_booted(r)["predictions"]
    assert [(p["booted"], p["error"]) for p in got] == [(True, 0.5), (False, None)]


def booted(t, osd, load, pred=None):
    return {"time": t, "action": {"kind": "allow_boot", "osd": osd, "predicted_bytes":
                                  None if pred is None else pred * MiB},
            "load_rss_bytes": load * MiB}


def test_the_peak_an_osd_was_let_boot_on_against_its_observed_peak():
    journal = [grant(100.5, 2, 200), booted(101, 2, 60, 140), grant(107.5, 3, 160),
               booted(109.5, 3, 50)]
    got = measures.predictions(SAMPLES, journal, t_start=100.0)
    assert [(p["load_bytes"] // MiB, p["boot_predicted_bytes"], p["boot_error"])
            for p in got] == [(60, 140 * MiB, round(140 / 150 - 1, 4)), (50, None, None)]
    s = measures.summarize([{"predictions": got}])
    assert (s["boot_starts"], s["boot_median_abs_error_from_second"]) == (0, None)  # 1st only
    kept = measures.predictions([sample(101, o2=60)], [grant(100.5, 2, 200)], t_start=100.0)
    assert measures.summarize([{"predictions": kept}])["kept_in_preboot"] == kept


def test_replay_applies_the_cores_rule_with_the_growths_of_earlier_reports(tmp_path, capsys):
    """Run 1: osd.2 loaded 60 MiB, peaked 150 (nothing learned: 2 x 60 = 120 MiB). Run 2:
    osd.3 loaded 50 MiB: 50 + (150 - 60) x GROWTH_MARGIN."""
    from ceph_recovery.growth import GROWTH_MARGIN
    one = {"predictions": measures.predictions(
        SAMPLES[:4], [grant(100.5, 2, 200), booted(101, 2, 60)], t_start=100.0)}
    two = {"predictions": measures.predictions(
        SAMPLES, [grant(107.5, 3, 160), booted(109.5, 3, 50)], t_start=107.0)}
    reports = [("one", one), ("two", two)]
    tables.replay(reports)
    assert one["predictions"][0]["replay_bytes"] == 120 * MiB
    want = int(50 * MiB + 90 * MiB * GROWTH_MARGIN)
    assert two["predictions"][0]["replay_bytes"] == want
    assert two["predictions"][0]["replay_error"] == round(want / (170 * MiB) - 1, 4)
    for name, r in reports:
        (tmp_path / ("%s.json" % name)).write_text(json.dumps(r))
    assert tables.main(["--replay", str(tmp_path / "one.json"), str(tmp_path / "two.json")]) == 0
    out = capsys.readouterr().out
    assert "| two | osd.3 | 160 | 50 | - | %.0f | 170 | -6 %% | - | %+.0f %% |" % (
        want / MiB, 100 * (want / (170 * MiB) - 1)) in out
    assert "replayed rule, from the second start on: 1 starts" in out


def test_replay_takes_the_missed_entries_a_report_carries():
    """With missed entries: by_missed() while nothing is learned, then the earlier report's
    growth moved by the missed-entry difference (16 KiB per entry up: no rate fitted on one
    sample)."""
    from ceph_recovery.growth import GROWTH_MARGIN, by_missed
    one = {"predictions": [{"osd": 2, "booted": True, "load_bytes": 60 * MiB,
                            "observed_peak_bytes": 150 * MiB, "missed_entries": 1000}]}
    two = {"predictions": [{"osd": 3, "booted": True, "load_bytes": 50 * MiB,
                            "observed_peak_bytes": 170 * MiB, "missed_entries": 3000}]}
    tables.replay([("one", one), ("two", two)])
    assert one["predictions"][0]["replay_bytes"] == by_missed(60 * MiB, 1000)
    assert two["predictions"][0]["replay_bytes"] == int(
        50 * MiB + (90 * MiB + 2000 * 16 * 1024) * GROWTH_MARGIN)


def test_an_older_report_gets_its_load_and_boot_prediction_from_its_journal():
    r = {"predictions": [{"osd": 2, "time": 100.5, "error": 0.5, "booted": True,
                          "observed_peak_bytes": 150 * MiB}],
         "journal": [booted(101, 2, 60, 180)]}
    [p] = measures.mark_booted(r)["predictions"]
    assert (p["load_bytes"], p["boot_predicted_bytes"], p["boot_error"]) == (
        60 * MiB, 180 * MiB, 0.2)


def test_a_start_carries_the_pgs_and_missed_entries_its_grant_observed():
    g = grant(100.5, 2, 200)
    g["observed"] = {"up": False, "process": "stopped", "rss_bytes": 0, "pgs": 20,
                     "missed_entries": 24210}
    got = measures.predictions(SAMPLES, [g, JOURNAL[1]], t_start=100.0)
    assert (got[0]["pgs"], got[0]["missed_entries"]) == (20, 24210)
    old = measures.predictions(SAMPLES, JOURNAL[:2], t_start=100.0)
    assert (old[0]["pgs"], old[0]["missed_entries"]) == (None, None)
