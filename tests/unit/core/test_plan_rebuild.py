"""An OSD that rebuilds its allocator after an unclean stop (the helper reports the daemon state
"rebuilding"): no timeout of the run stops it, the boot clock restarts at the rebuild's end,
its memory counts on its host, and the run still ends in bounded time. plancases.py snapshots
in, exact ordered action lists out."""
from __future__ import annotations

from dataclasses import replace

from ceph_recovery.bootclock import REBUILD_MAX_S
from ceph_recovery.model import DAEMON_REBUILDING, Intent
from ceph_recovery.persist import progress_from_json, progress_to_json
from ceph_recovery.plan import plan
from plancases import HELD, NOUP, NOW, POL, RUN, RUNF, RUNNING, MiB, osd, sig, snap

# osd.3 granted 700 s ago and allowed to boot 650 s ago (past boot_timeout, 600 s), its
# process rebuilding its allocator
REB = osd(3, flags=NOUP, process="running", rss_bytes=150 * MiB, process_started_at=NOW - 690,
          daemon_state=DAEMON_REBUILDING)
LATE = RUNNING.with_columns(granted={3: NOW - 700}, booting={3: NOW - 650})
STOP_AND_NEXT = ["stop_osd host=h1 osd=3", "wait host=h1",
                 "grant_start host=h1 osd=4 predicted_bytes=%d" % (500 * MiB)]


def at(o, now, epoch=10, **kw):
    """The cases' cluster with osd.3 as `o`, both helpers reporting a second before `now`."""
    return snap(o, *HELD[1:], cluster_flags=RUNF, epoch=epoch,
                helpers_seen={"h0": now - 1, "h1": now - 1}, **kw)


def test_a_rebuilding_osd_past_boot_timeout_is_not_stopped():
    res = plan(at(REB, NOW), RUN, LATE, POL, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert not res.health
    assert 3 in res.progress.osd_map("granted")
    assert res.progress.osd_map("booting") == {3: NOW - 650}
    assert res.progress.osd_map("rebuild_from") == res.progress.osd_map("rebuild_seen") == {3: NOW}
    assert any("osd.3 rebuilds its allocator" in r for r in res.summary["reasons"])
    # the same OSD without the phase (an older helper): the boot timeout stops it
    old = plan(at(replace(REB, daemon_state=None), NOW), RUN, LATE, POL, NOW)
    assert [sig(a) for a in old.actions] == STOP_AND_NEXT


def test_once_the_rebuild_ends_the_normal_clock_applies_from_its_end():
    rebuilt = plan(at(REB, NOW), RUN, LATE, POL, NOW).progress
    loading = replace(REB, daemon_state="initializing", rss_bytes=200 * MiB)
    before = plan(at(loading, NOW + 599, 11), RUN, rebuilt, POL, NOW + 599)
    assert [sig(a) for a in before.actions] == ["allow_boot osd=3"]     # noup still set, again
    assert before.summary["ends_by"] == NOW + 600 + RUN.stall_limit_s
    late = plan(at(loading, NOW + 600, 12), RUN, before.progress, POL, NOW + 600)
    assert [sig(a) for a in late.actions] == STOP_AND_NEXT
    assert [h.code for h in late.health] == ["RECOVERY_BOOT_TIMEOUT", "RECOVERY_START_FAILED"]


def test_a_rebuilding_osd_is_not_let_boot_and_boots_at_once_in_preboot_after():
    """Its rss says nothing of its PG logs while it rebuilds (none is loaded yet): no
    AllowBoot however long it runs; in preboot after the rebuild it boots at once."""
    granted = RUNNING.with_columns(granted={3: NOW - 700})
    res = plan(at(REB, NOW), RUN, granted, POL, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
    pre = replace(REB, daemon_state="preboot", rss_bytes=240 * MiB)
    boot = plan(at(pre, NOW + 5, 11), RUN, res.progress, POL, NOW + 5)
    assert [sig(a) for a in boot.actions] == [
        "allow_boot osd=3 predicted_bytes=%d" % (500 * MiB)]


def test_the_rebuild_markers_survive_a_failover():
    res = plan(at(REB, NOW), RUN, LATE, POL, NOW)
    back = progress_from_json(progress_to_json(res.progress))
    assert (back.osd_map("rebuild_from"), back.osd_map("rebuild_seen")) == ({3: NOW}, {3: NOW})
    # the rebuild ended during the failover: the clock counts from its last sighting
    loading = replace(REB, daemon_state="initializing")
    assert [sig(a) for a in plan(at(loading, NOW + 599, 11), RUN, back, POL,
                                 NOW + 599).actions] == ["allow_boot osd=3"]


def test_the_run_states_a_finite_end_while_a_rebuild_lasts():
    res = plan(at(REB, NOW), RUN, LATE, POL, NOW)
    assert res.summary["ends_by"] == NOW + REBUILD_MAX_S + RUN.boot_timeout_s + \
        RUN.stall_limit_s


def test_past_its_maximum_a_rebuild_is_named_never_stopped_and_the_run_ends():
    long = RUNNING.with_columns(granted={3: NOW - 9000},
                                rebuild_from={3: NOW - REBUILD_MAX_S - 601},
                                rebuild_seen={3: NOW - 5})
    res = plan(at(REB, NOW), RUN, long, POL, NOW)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert [h.code for h in res.health] == ["RECOVERY_BOOT_TIMEOUT"]
    assert "still rebuilding its allocator" in res.health[0].detail[0]
    assert res.progress.stalled_since == NOW        # no longer progress
    end = plan(at(REB, NOW + RUN.stall_limit_s), RUN, res.progress, POL,
               NOW + RUN.stall_limit_s)
    assert [sig(a) for a in end.actions] == [
        "unset_flag flag=noout", "unset_flag flag=norebalance", "done"]    # no stop_osd
    incomplete = [h for h in end.health if h.code == "RECOVERY_INCOMPLETE"][0]
    assert "osd.3 still rebuilding its allocator (left running)" in incomplete.detail[0]
    assert not end.progress.osd_map("granted") and not end.progress.osd_map("rebuild_seen")


def test_an_abort_stops_a_rebuilding_osd():
    """The operator's abort is no timeout: it leaves nothing loaded, a rebuild included."""
    res = plan(at(REB, NOW), Intent(mode="abort", run_id="r1"), LATE.with_columns(booting={}),
               POL, NOW)
    assert "stop_osd host=h1 osd=3" in [sig(a) for a in res.actions]


def test_a_rebuilding_osd_counts_its_rss_on_its_host():
    """The rebuild's memory is in its host's `used` (the helper's measure of the host) while it
    lasts, and its grant reserves the growth still predicted beyond its rss, like any start in
    flight (auto concurrency: 500 MiB x the warm-up margin 1.7, less its rss). An rss above
    that counts as a load (Predictor.peak_from_load): conservative, no PG is loaded yet."""
    auto = Intent(mode="controlled", run_id="r1", budget=RUN.budget)
    granted = RUNNING.with_columns(granted={3: NOW - 700})
    # budget 6,554 MiB: 5,600 used + 700 reserved (850 - 150) leave no room for osd.4's load
    full = plan(at(REB, NOW, used={"h1": 5600 * MiB}), auto, granted, POL, NOW)
    assert full.summary["hosts"]["h1"]["used"] == 5600 * MiB
    assert full.summary["hosts"]["h1"]["in_flight_osds"] == [3]
    assert [sig(a) for a in full.actions] == ["wait"]
    assert any("used 5600 MiB + reserved 700 MiB" in r for r in full.summary["reasons"])
    # at 450 MiB its rss is taken as a load of that size: peak 2 x 450 x 1.7, less the 450
    fat = plan(at(replace(REB, rss_bytes=450 * MiB), NOW, used={"h1": 5600 * MiB}), auto,
               granted, POL, NOW)
    assert any("used 5600 MiB + reserved 1080 MiB" in r for r in fat.summary["reasons"])
    roomy = plan(at(REB, NOW, used={"h1": 1024 * MiB}), auto, granted, POL, NOW)
    assert [sig(a) for a in roomy.actions] == [
        "grant_start host=h1 osd=4 predicted_bytes=%d" % (500 * MiB),
        "grant_start host=h1 osd=5 predicted_bytes=%d" % (500 * MiB)]
