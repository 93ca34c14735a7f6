"""The throttle-lever bench's arithmetic: medians per variant and the ratios against `none`,
and the page drawn from them (the lab rounds themselves run in ceph-recovery-bench)."""
from __future__ import annotations

from ceph_recovery_tools.bench.lever import MiB, page, summary, variants

EFF = {"osd_recovery_max_active": "1", "osd_max_backfills": "1",
       "osd_mclock_profile": "balanced"}


def row(variant, k, rate, growth, anon=2 * MiB):
    return {"variant": variant, "round": k, "pg_rate": rate, "pg_span_s": 2.0,
            "pg_recovered": 100, "rss_growth": growth, "buffer_anon_peak": anon,
            "host_peak": 200 * MiB, "effective": EFF}


def test_medians_and_ratios_against_none():
    rows = [row("none", 0, 10.0, 100 * MiB), row("recovery_min", 0, 4.0, 60 * MiB),
            row("none", 1, 12.0, 80 * MiB), row("recovery_min", 1, 6.0, 40 * MiB),
            row("none", 2, 11.0, 90 * MiB), row("recovery_min", 2, None, 50 * MiB)]
    s = summary(rows)
    assert s["none"]["pg_rate"] == 11.0 and s["none"]["rss_growth"] == 90 * MiB
    assert s["recovery_min"]["pg_rate"] == 5.0          # the round without a rate left out
    assert s["recovery_min"]["rate"] == 5.0             # the page's rate: the PG stamps'
    assert (s["recovery_min"]["rate_vs_none"], s["recovery_min"]["growth_vs_none"]) == (
        0.455, 0.556)
    doc = {"ceph": "tentacle", "objects_per_round": 120, "object_size": 16 * 1024,
           "summary": s, "verified_ok": 720, "verified_bad": [], "total_wall_s": 500.0}
    text = page(doc)
    assert "| recovery_min | 5.0 | 0.455 | 50 | 0.556 | 2 | 1 / 1 / balanced |" in text
    assert "120 objects of 16 KiB" in text and "medians of 3 rounds" in text and "720 ok, 0 bad" in text


def test_the_lever_variant_is_what_the_run_sets_on_an_mclock_osd():
    names = dict(variants())
    assert names["none"] == ()
    assert names["recovery_min"][0] == ("osd_mclock_override_recovery_settings", "true")
