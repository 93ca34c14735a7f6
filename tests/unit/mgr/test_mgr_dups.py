"""The shell's side of the PG log dups pre-flight: each down OSD's release read once from its
metadata, the helper's warning count carried into the snapshot, and what `start-controlled
--dry-run` shows (recorded lab dumps: h3's osd.4 and osd.5 down; the real plan())."""
from __future__ import annotations

import errno
import json

import pytest
from mgrcases import RUNNING, STOPPED, make_engine, report
from mgrcases import world  # noqa: F401  (the fixture)
from recovery import core, reportcheck  # see conftest.py
from recovery.executor import OsdVersions, osd_versions
from recovery.inputs import InputError

PACIFIC_10 = "ceph version 16.2.10 (45fa1a083152e41a408d15505f594ec5f1b4fe17) pacific (stable)"
PACIFIC_15 = "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)"
MAP = {"osds": [{"osd": 0, "up": 1}, {"osd": 4, "up": 0}, {"osd": 5, "up": 0}]}


def test_an_osds_release_is_read_once_until_it_boots_again():
    asked = []

    def read(kind, osd):
        asked.append(int(osd))
        return {"ceph_version": PACIFIC_10, "hostname": "h3"} if osd == "4" else None

    versions = OsdVersions(read)
    assert versions(MAP) == {4: PACIFIC_10}
    assert versions(MAP) == {4: PACIFIC_10}
    assert asked == [0, 4, 5]                   # osd.5 has no metadata: no release, no guess
    up = {"osds": [{"osd": 0, "up": 1}, {"osd": 4, "up": 1, "up_from": 12},
                   {"osd": 5, "up": 0}]}
    assert versions(up) == {4: PACIFIC_10} and asked == [0, 4, 5, 4]   # booted: read again


def test_a_metadata_read_that_fails_gives_no_release():
    def read(kind, osd):
        raise RuntimeError("no such daemon")

    assert OsdVersions(read)(MAP) == {}
    assert osd_versions({"4": {"ceph_version": 16}, "x": {}, "5": "junk"}) == {}


def test_releases_and_warnings_reach_the_snapshot(world):
    eng, _ceph = make_engine(world["map"])
    eng.helper_report(report("h3", [dict(STOPPED(4), pglog_dups=3), STOPPED(5)]), 1000.0)
    snap = eng.observe(world["map"], world["tree"], world["pgs"], 1000.0,
                       versions={5: PACIFIC_10})
    by = {o.id: o for o in snap.osds}
    assert (by[4].pglog_dups, by[4].ceph_version) == (3, None)
    assert (by[5].pglog_dups, by[5].ceph_version) == (0, PACIFIC_10)


def dry_run(world, versions, osds):
    eng, ceph = make_engine(world["map"])
    eng.helper_report(report("h1", [RUNNING(0, 70 << 20), RUNNING(1, 70 << 20)]), 1000.0)
    eng.helper_report(report("h2", [RUNNING(2, 70 << 20), RUNNING(3, 70 << 20)]), 1000.0)
    eng.helper_report(report("h3", osds), 1000.0)
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0, versions=versions)
    out = eng.dry_run(eng.prepare("80%", [], None, 1000.0), 1000.0)
    assert ceph.calls == [] and eng.run.progress.run_id == ""      # a dry run changes nothing
    return out


def test_the_dry_run_names_each_suspect_and_raises_the_check(world):
    out = dry_run(world, {5: PACIFIC_10}, [dict(STOPPED(4), pglog_dups=1), STOPPED(5)])
    assert [(x["osd"], x["host"], x["warnings"], x["release"]) for x in out["pglog_dups"]] == [
        (4, "h3", 1, None), (5, "h3", 0, PACIFIC_10)]
    assert "RECOVERY_PGLOG_DUPS" in out["health"]
    # one start on h3 (alone), not both at once
    assert [a["osd"] for a in out["first_actions"] if a["kind"] == "grant_start"] == [4]
    text = core.dry_run_text(out)
    assert text.startswith("dry run: start order osd.4, osd.5; may load inflated PG log dups")
    assert "osd.5 (release 16.2.10 does not trim dups after a PG split or merge)" in text


def test_the_dry_run_on_a_fixed_release_finds_nothing(world):
    out = dry_run(world, {4: PACIFIC_15, 5: PACIFIC_15}, [STOPPED(4), STOPPED(5)])
    assert out["pglog_dups"] == [] and "RECOVERY_PGLOG_DUPS" not in out["health"]
    assert [(x["osd"], x["release"], x["pglog_dups"]) for x in out["order"]] == [
        (4, PACIFIC_15, 0), (5, PACIFIC_15, 0)]
    assert sorted(a["osd"] for a in out["first_actions"] if a["kind"] == "grant_start") == [4, 5]
    assert core.dry_run_text(out) == "dry run: start order osd.4, osd.5"


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2"])
def test_a_report_with_a_malformed_pglog_dups_is_refused(bad):
    rep = {"version": 1, "host": "h3", "time": 1000.0, "seq": 1,
           "memory": {"total": 8 << 30, "used": 50 << 20, "available": 6 << 30,
                      "limit": None, "source": "host"},
           "osds": [{"id": 4, "process": "stopped", "pglog_dups": bad}], "done": []}
    with pytest.raises(InputError) as e:
        reportcheck.check_report(json.dumps(rep), "h3")
    assert e.value.errno == errno.EINVAL and "pglog_dups" in e.value.message
