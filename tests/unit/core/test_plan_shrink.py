"""plan() and a returning OSD that settled while its PGs still recover (ceph_recovery.shrink):
recovery trims it, so its host waits for it to shrink, and RECOVERY_BUDGET_TOO_SMALL says so
with an ETA at its measured shrink instead of "nothing can be released or restarted"; a
shrink that stopped is reported as that again.
Snapshots in, exact actions out (plancases.py: h1 budget 6553 MiB, footprint 500 MiB)."""
from __future__ import annotations

import pytest

from ceph_recovery.persist import progress_from_json, progress_to_json
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.shrink import SHRINK_GRACE_S
from plancases import HELD, NOW, POL, RUN, RUNF, RUNNING, GiB, MiB, osd, sig, snap

# h1: osd.3 is back, 5 PGs still degraded, 2 GiB; no heap release (no tcmalloc) and ok-to-stop
# refuses it: nothing on h1 can be released or restarted. osd.4 (500 MiB) does not fit at
# 6400 MiB used (6400 + 500 > 6553).
BACK3 = osd(3, up=True, rss_bytes=2 * GiB, pgs_inactive=0, pgs_degraded=5, heap_release=False)
TIGHT = {"h1": 6400 * MiB}


def run(progress, o3=BACK3, used=TIGHT):
    s = snap(o3, *HELD[1:], used=used, cluster_flags=RUNF, ok_to_stop={3: False})
    res = plan(s, RUN, progress, POL, NOW)
    assert check_invariants(s, RUN, progress, res, POL, NOW) == []
    return res


def recovering(ref_rss, ref_age):
    return RUNNING.evolve(finished=frozenset({3})).with_columns(shrink_at={3: NOW - ref_age},
                                                                shrink_rss={3: ref_rss})


def test_an_osd_that_settles_quietly_with_pgs_degraded_starts_its_shrink_measurement():
    """osd.3 has not grown by 1 % for 250 s (>= SETTLE_QUIET_S): it has settled, its PGs still
    degraded. Its rss and the time become the reference its shrink is measured from (and they
    survive a failover: they are in the stored progress)."""
    p = RUNNING.evolve(finished=frozenset({3})).with_columns(settling={3: NOW - 300},
                                                             peaks={3: 5 * GiB // 2},
                                                             grew_at={3: NOW - 250})
    res = run(p)
    assert res.progress.osd_map("settling") == {}
    assert res.progress.osd_map("shrink_at") == {3: NOW}
    assert res.progress.osd_map("shrink_rss") == {3: 2 * GiB}
    back = progress_from_json(progress_to_json(res.progress))
    assert (back.osd_map("shrink_at"), back.osd_map("shrink_rss")) == ({3: NOW}, {3: 2 * GiB})


def test_a_host_waits_for_its_recovering_osd_to_shrink_with_an_eta():
    """osd.3 shed 200 MiB in the 100 s since its reference (2 MiB/s): h1 needs 346 MiB more
    (6400 + 500 - 6553.6), ETA ~173 s, in the health detail and the status summary."""
    res = run(recovering(2 * GiB + 200 * MiB, 100.0))
    assert [sig(a) for a in res.actions] == ["wait"]
    assert [(c.code, c.detail) for c in res.health] == [("RECOVERY_BUDGET_TOO_SMALL", (
        "h1: osd.4 needs 500 MiB (predicted 500 MiB), used 6400 MiB + reserved 0 MiB, budget "
        "6554 MiB; waiting for recovering osd.3 to shrink as their PGs recover: ETA ~173 s at "
        "the measured 2 MiB/s",))]
    h1 = res.summary["hosts"]["h1"]
    assert (h1["waiting_on"], h1["waiting_for"]) == ("memory", "recovering osd.3")
    assert h1["eta_s"] == pytest.approx((6400 + 500 - 0.8 * 8192) / 2.0)
    assert [r for r in res.summary["reasons"] if r.startswith("h1 waits")] == [
        "h1 waits for recovering osd.3 to fit osd.4 (needs 346 MiB more): ETA ~173 s at the "
        "measured shrink of 2 MiB/s"]


def test_a_recovering_osd_not_shrinking_past_the_grace_is_a_stall_again():
    """Within SHRINK_GRACE_S of its reference nothing is measured yet: h1 waits for it. Past
    it, an osd.3 that has not shed anything (recovery paused, say) is no reason to wait: the
    warning says nothing can make room, as without a recovering OSD."""
    young = run(recovering(2 * GiB, SHRINK_GRACE_S - 10))
    assert young.health[0].detail[0].endswith(
        "waiting for recovering osd.3 to shrink as their PGs recover: no shrink measured yet")
    old = run(recovering(2 * GiB, SHRINK_GRACE_S + 10))
    assert [c.code for c in old.health] == ["RECOVERY_BUDGET_TOO_SMALL"]
    assert "nothing can be released or restarted" in old.health[0].detail[0]
    assert old.progress.osd_map("shrink_at") == {3: NOW - SHRINK_GRACE_S - 10}


@pytest.mark.parametrize("o3", [
    osd(3, up=True, rss_bytes=GiB, pgs_inactive=0, pgs_degraded=0),       # recovered
    osd(3, up=False, rss_bytes=0, pgs_degraded=0),                         # down
    osd(3, up=True, rss_bytes=0, pgs_inactive=0, pgs_degraded=5, process="stopped"),
    # restarted between two ticks, up again: only its process start says so
    osd(3, up=True, rss_bytes=GiB, pgs_inactive=0, pgs_degraded=5, heap_release=False,
        process_started_at=NOW - 20),
])
def test_an_osd_no_longer_recovering_is_forgotten(o3):
    res = run(recovering(2 * GiB + 200 * MiB, 100.0), o3=o3)
    assert (res.progress.osd_map("shrink_at"), res.progress.osd_map("shrink_rss")) == ({}, {})
