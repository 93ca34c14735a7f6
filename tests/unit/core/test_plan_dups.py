"""The PG log dups pre-flight (ceph_recovery.dups): an OSD that may load inflated PG log dups
(an affected release, or the dups warning in its log) starts alone on its host, charged the
host's whole room, and RECOVERY_PGLOG_DUPS names it with the offline command.

Cluster of plancases.py: h1's osd.3-5 down an hour, 8 GiB hosts using 1 GiB, budget 80 %,
footprint 500 MiB; `auto` concurrency, so without a suspect all three are granted at once."""
from __future__ import annotations

from dataclasses import replace

import pytest

from ceph_recovery import dups
from ceph_recovery.plan import check_invariants, plan

from plancases import FLAGS, G, GiB, HOLDS, HELD, NOW, NOUP, POL, RUN, RUNF, RUNNING, osd, sig, snap

AUTO = replace(RUN, concurrency=0)
PACIFIC_10 = "ceph version 16.2.10 (45fa1a083152e41a408d15505f594ec5f1b4fe17) pacific (stable)"
PACIFIC_15 = "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)"
# the host's whole room: budget (80 % of 8 GiB) - used 1 GiB - nothing reserved
WHOLE = int(8 * GiB * 0.8) - 1 * GiB


def run(s, progress, intent=AUTO):
    res = plan(s, intent, progress, POL, NOW)
    assert check_invariants(s, intent, progress, res, POL, NOW) == []
    return res


def dups_lines(res):
    return [line for h in res.health if h.code == dups.CHECK for line in h.detail]


@pytest.mark.parametrize("text,affected", [
    (PACIFIC_10, True),
    ("ceph version 16.2.11 (3cf40e2dca667f68c6ce3ff5cd94f01e711af894) pacific (stable)", False),
    (PACIFIC_15, False),
    ("ceph version 16.2.0 (0c2054e95bcd9b30fdd908a79ac1d8bbc3394442) pacific (stable)", True),
    ("ceph version 17.2.3 (dff484dfc9e19a9819f375586300b3b79d80034d) quincy (stable)", True),
    ("ceph version 17.2.4 (1353ed37dec8d74973edc3d5d5908c20ad5a7332) quincy (stable)", False),
    ("ceph version 15.2.17 (8a82819d84cf884bd39c17e3236e0632ac146dc4) octopus (stable)", True),
    ("ceph version 14.2.22 (ca74598065096e6fcbd8433c8779a2be0c889351) nautilus (stable)", False),
    ("ceph version 18.2.7 (6b0e988052ec84cf2d4a54ff9bbbc5e720b621ad) reef (stable)", False),
    ("ceph version 20.2.4 (7f793731f1b39eb4f465e960113d2363c311b964) tentacle (stable - "
     "RelWithDebInfo)", False),
    ("ceph version 16.2.10-94.el8cp (48ce8ed67474ea50f10c019b9445be7f49749d23) pacific "
     "(stable)", True),
    ("17.2.3", True),
])
def test_release_range(text, affected):
    assert dups.release_affected(text) is affected


@pytest.mark.parametrize("text", [None, "", "ceph version Development (no_version)", "16.2",
                                  "ceph version 16.2.x", 16, "x" * 300 + " 16.2.10"])
def test_an_unreadable_release_is_unknown_not_a_guess(text):
    assert dups.parse_release(text) is None and dups.release_affected(text) is None


def test_without_a_suspect_all_three_start_together():
    res = run(snap(cluster_flags=frozenset()), RUNNING.evolve(phase="idle", run_id="",
                                                              held_osds=frozenset()))
    assert [sig(a) for a in res.actions] == FLAGS + HOLDS + [G % 3, G % 4, G % 5]
    assert dups_lines(res) == []


def test_a_fixed_release_is_no_suspect():
    fixed = [osd(i, ceph_version=PACIFIC_15) for i in (3, 4, 5)]
    res = run(snap(*fixed, cluster_flags=frozenset()), RUNNING.evolve(
        phase="idle", run_id="", held_osds=frozenset()))
    assert [sig(a) for a in res.actions] == FLAGS + HOLDS + [G % 3, G % 4, G % 5]
    assert dups_lines(res) == []


def test_an_affected_release_starts_alone_charged_the_whole_room():
    s = snap(osd(3, ceph_version=PACIFIC_10), cluster_flags=frozenset())
    res = run(s, RUNNING.evolve(phase="idle", run_id="", held_osds=frozenset()))
    assert [sig(a) for a in res.actions] == FLAGS + HOLDS + [
        "grant_start host=h1 osd=3 predicted_bytes=%d" % WHOLE]
    assert "alone on its host (PG log dups: release 16.2.10" in res.actions[-1].reason
    assert res.summary["hosts"]["h1"]["gate"] == "osd.3 starts alone (PG log dups)"
    assert dups_lines(res) == [
        "osd.3 on h1: release 16.2.10 does not trim dups after a PG split or merge: it "
        "starts alone on its host; count them offline, the OSD stopped: ceph-objectstore-tool "
        "--data-path /var/lib/ceph/osd/ceph-3 --op log --pgid <pgid> (pg_log_t.dups); trim "
        "with ceph-objectstore-tool --data-path /var/lib/ceph/osd/ceph-3 --op "
        "trim-pg-log-dups --pgid <pgid>"]


def test_a_suspect_waits_until_nothing_else_is_in_flight_on_its_host():
    # osd.3 (clean) goes first; osd.4 (warned) may not start beside it, and osd.5 behind it
    # waits in the host's strict order
    s = snap(osd(4, pglog_dups=2), cluster_flags=frozenset())
    res = run(s, RUNNING.evolve(phase="idle", run_id="", held_osds=frozenset()))
    assert [sig(a) for a in res.actions] == FLAGS + HOLDS + [G % 3]
    assert any("osd.4 starts alone (PG log dups: its log showed 2 'num of dups exceeded' "
               "warning(s) since its last start)" in r for r in res.summary["reasons"])
    assert dups_lines(res) == [
        "osd.4 on h1: its log showed 2 'num of dups exceeded' warning(s) since its last start:"
        " it starts alone on its host; trim them offline, the OSD stopped: "
        "ceph-objectstore-tool --data-path /var/lib/ceph/osd/ceph-4 --op trim-pg-log-dups "
        "--pgid <pgid>, for each PG of --op list-pgs"]


def test_nothing_starts_beside_a_suspect_in_flight():
    s = snap(osd(3, flags=NOUP, process="running", rss_bytes=200 * 1048576,
                 process_started_at=NOW - 5, ceph_version=PACIFIC_10), *HELD[1:],
             cluster_flags=RUNF)
    p = RUNNING.with_columns(granted={3: NOW - 5}, downtime={3: 3595.0})
    res = run(s, p)
    assert [sig(a) for a in res.actions] == ["wait"]
    assert res.summary["hosts"]["h1"]["waiting_on"] == "osd.3 starts alone (PG log dups)"


def test_a_warned_osd_whose_start_failed_once_is_held_others_keep_their_three_tries():
    s = snap(osd(3, flags=NOUP, pglog_dups=1), osd(4, flags=NOUP, ceph_version=PACIFIC_10),
             HELD[2], cluster_flags=RUNF)
    res = run(s, RUNNING.with_columns(failures={3: 1, 4: 1}))
    assert [sig(a) for a in res.actions] == [
        "grant_start host=h1 osd=4 predicted_bytes=%d" % WHOLE]
    assert [line.split(": ")[0] + ": " + line.split(": ")[2].split(";")[0]
            for line in dups_lines(res)] == [
        "osd.3 on h1: held after a failed start", "osd.4 on h1: it starts alone on its host"]
    assert [line for h in res.health if h.code == "RECOVERY_START_FAILED"
            for line in h.detail] == [
        "osd.3: gave up after 1 failed starts in this run (see its log; start it by hand or "
        "raise the budget)",
        "osd.4: 1 failed start(s) in this run; started again when it fits (at most 3)"]


def test_a_suspect_whose_plain_prediction_does_not_fit_waits_like_any_other():
    s = snap(osd(3, ceph_version=PACIFIC_10), cluster_flags=frozenset(), used={"h1": 6 * GiB})
    res = run(s, RUNNING.evolve(phase="idle", run_id="", held_osds=frozenset()))
    assert [sig(a) for a in res.actions] == FLAGS + HOLDS
    assert [h.code for h in res.health] == ["RECOVERY_BUDGET_TOO_SMALL", dups.CHECK]


def test_a_warned_osd_that_dies_at_start_is_given_up_after_one_failure():
    from ceph_recovery.inflight import GRANT_RETRY_S
    s = snap(osd(3, flags=NOUP, pglog_dups=1), *HELD[1:], cluster_flags=RUNF)
    p = RUNNING.with_columns(granted={3: NOW - GRANT_RETRY_S - 1}, downtime={3: 3500.0})
    res = run(s, p)
    assert res.progress.osd_map("failures") == {3: 1} and 3 not in res.progress.osd_map("granted")
    assert [line for h in res.health if h.code == "RECOVERY_START_FAILED"
            for line in h.detail][0].endswith("failure 1 of 1")
    # the host is free again: osd.4 (no sign of dups) is granted, osd.3 is not
    assert [a.osd for a in res.actions if a.kind == "grant_start"] == [4, 5]
