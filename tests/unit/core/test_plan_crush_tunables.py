"""RECOVERY_CRUSH_TUNABLES: out OSDs of one host come back one at a time (each marked in at
its boot), and with tunables that retry inside a host the first in takes the whole host's PG
share (ceph_recovery.tunables). On plancases' cluster: osd.3-5 of h1 down and held, a
controlled run of one start at a time; snapshots in, exact health and actions out."""
from __future__ import annotations

from dataclasses import replace

import pytest

from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.tunables import legacy
from plancases import G, HELD, NOW, POL, RUN, RUNF, RUNNING, snap  # conftest.py

# `ceph osd crush show-tunables` of the argonaut profile, and of a jewel (optimal) map
ARGONAUT = {"choose_local_tries": 2, "choose_local_fallback_tries": 5,
            "choose_total_tries": 19, "chooseleaf_descend_once": 0, "chooseleaf_vary_r": 0,
            "chooseleaf_stable": 0, "profile": "argonaut", "optimal_tunables": 0,
            "legacy_tunables": 1}
JEWEL = {"choose_local_tries": 0, "choose_local_fallback_tries": 0, "choose_total_tries": 50,
         "chooseleaf_descend_once": 1, "chooseleaf_vary_r": 1, "chooseleaf_stable": 1,
         "profile": "jewel", "optimal_tunables": 1, "legacy_tunables": 0}
OUT = [replace(o, in_=False) for o in HELD]


def health(tunables, osds):
    s = snap(*osds, cluster_flags=RUNF, crush_tunables=tunables)
    res = plan(s, RUN, RUNNING, POL, NOW)
    assert check_invariants(s, RUN, RUNNING, res, POL, NOW) == []
    return res, {h.code: h.detail for h in res.health}


def test_out_osds_of_one_host_under_argonaut_tunables_are_named_and_still_started():
    res, checks = health(ARGONAUT, OUT)
    assert list(checks["RECOVERY_CRUSH_TUNABLES"]) == [
        "h1: 3 out OSDs (osd.3, osd.4, osd.5) are marked in one at a time as they start, and "
        "CRUSH retries inside a host (choose_local_tries 2, choose_local_fallback_tries 5, "
        "chooseleaf_descend_once 0): the first in can take the whole host's PG share, past "
        "mon_max_pg_per_osd x osd_max_pg_per_osd_hard_ratio (its PGs stay activating); "
        "before the run: ceph osd crush tunables optimal (moves data), or ceph osd add-noin "
        "on them and one ceph osd in of them all once they are up"]
    # a warning: the start goes out as without it
    same, _ = health(JEWEL, OUT)
    assert [a.kind for a in res.actions] == [a.kind for a in same.actions]
    assert G % 3 in [a.kind + " host=%s osd=%d predicted_bytes=%d" % (
        a.host, a.osd, a.predicted_bytes) for a in res.actions if a.kind == "grant_start"]


@pytest.mark.parametrize("tunables,osds", [
    pytest.param(JEWEL, OUT, id="optimal_tunables"),
    pytest.param(None, OUT, id="tunables_not_read"),
    pytest.param({}, OUT, id="tunables_empty"),
    pytest.param(ARGONAUT, HELD, id="osds_in"),
    pytest.param(ARGONAUT, OUT[:1] + HELD[1:], id="one_out_osd_per_host"),
])
def test_no_warning_where_no_first_in_takes_a_host_share(tunables, osds):
    _res, checks = health(tunables, osds)
    assert "RECOVERY_CRUSH_TUNABLES" not in checks


@pytest.mark.parametrize("tunables,expected", [
    (ARGONAUT, "choose_local_tries 2, choose_local_fallback_tries 5, chooseleaf_descend_once 0"),
    (dict(JEWEL, chooseleaf_descend_once=0), "chooseleaf_descend_once 0"),
    (dict(JEWEL, choose_local_tries=1), "choose_local_tries 1"),
    (JEWEL, None), (None, None), ({"profile": "unknown"}, None),
])
def test_legacy_names_what_retries_inside_a_host(tunables, expected):
    assert legacy(tunables) == expected
