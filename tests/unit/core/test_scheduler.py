"""Which scheduler an OSD runs: the core's rule (scheduler_of) and the shell's inputs to it
(`config dump` and each OSD's metadata, read again only when it boots)."""
from __future__ import annotations

import pytest

from ceph_recovery.scheduler import release_major, scheduler_of
from recovery.executor import OsdVersions, op_queues

PACIFIC = "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)"
REEF = "ceph version 18.2.7 (6b0e988052ec84cf2d4a54ff9bbbc5e720b621ad) reef (stable)"
TENTACLE = "ceph version 20.2.0 (69f84cc2651aa259a15bc192ddaabd3baba07489) tentacle (stable)"


@pytest.mark.parametrize("version,major", [
    (PACIFIC, 16), (TENTACLE, 20), ("17.2.3", 17), ("ceph version v15.2.17 (x)", 15),
    ("", None), (None, None), ("ceph version Development (no_version)", None)])
def test_release_major(version, major):
    assert release_major(version) == major


@pytest.mark.parametrize("own,inherited,version,expected", [
    (None, None, PACIFIC, "wpq"),
    (None, None, REEF, "mclock_scheduler"),
    (None, None, "ceph version 17.2.0 (x) quincy (stable)", "mclock_scheduler"),
    (None, "wpq", TENTACLE, "wpq"),                  # set cluster-wide: wins over the release
    ("mclock_scheduler", "wpq", TENTACLE, "mclock_scheduler"),   # its own wins
    ("debug_random", None, TENTACLE, None),          # neither: not known
    (None, None, None, None),
])
def test_scheduler_of(own, inherited, version, expected):
    assert scheduler_of(own, inherited, version) == expected


def test_op_queues_from_config_dump_sections_most_specific_first():
    dump = [{"section": "global", "name": "osd_op_queue", "value": "mclock_scheduler"},
            {"section": "osd", "name": "osd_op_queue", "value": "wpq"},
            {"section": "osd.2", "name": "osd_op_queue", "value": "mclock_scheduler"},
            {"section": "osd", "name": "osd_op_queue", "value": "debug_random",
             "mask": "host:h9"},                      # masked: not resolved
            {"section": "osd.1", "name": "osd_max_backfills", "value": "2"}]
    got = op_queues(dump, [0, 1, 2, 3], {0: TENTACLE, 1: PACIFIC, 2: PACIFIC})
    assert got == {0: "wpq", 1: "wpq", 2: "mclock_scheduler", 3: "wpq"}
    assert op_queues([], [0, 1, 3], {0: TENTACLE, 1: PACIFIC}) == {
        0: "mclock_scheduler", 1: "wpq", 3: None}
    assert op_queues("not a list", [0], {0: REEF}) == {0: "mclock_scheduler"}


def test_osd_versions_are_read_again_only_when_the_osd_booted():
    reads = []
    meta = {"0": {"ceph_version": PACIFIC}, "1": {"ceph_version": TENTACLE}}

    def get_metadata(kind, ident):
        reads.append((kind, ident))
        if ident == "3":
            raise RuntimeError("no such daemon")
        return meta.get(ident)

    versions = OsdVersions(get_metadata)
    m1 = {"osds": [{"osd": 0, "up_from": 5}, {"osd": 1, "up_from": 7}, {"osd": 2, "up_from": 0},
                   {"osd": 3, "up_from": 0}]}
    assert versions(m1) == {0: PACIFIC, 1: TENTACLE}      # no metadata, or none readable: none
    assert versions(m1) == {0: PACIFIC, 1: TENTACLE}
    assert len(reads) == 4                                 # the second tick read nothing
    meta["0"] = {"ceph_version": TENTACLE}                  # osd.0 upgraded and booted
    m2 = {"osds": [{"osd": 0, "up_from": 9}, {"osd": 1, "up_from": 7}]}
    assert versions(m2) == {0: TENTACLE, 1: TENTACLE}
    assert reads[4:] == [("osd", "0")] and set(versions.cache) == {0, 1}   # 2, 3 removed
