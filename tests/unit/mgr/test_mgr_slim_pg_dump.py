"""The shell keeps only what it reads of the PG stats and of the OSD map: every view it builds
from the slimmed dump or map equals the one from the mgr's full one (recorded on the lab: all
PGs clean, and h3 down)."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from mgrcases import load  # see conftest.py
from recovery import cluster, drillcli, executor, pgcolumns, pgtrack


@pytest.mark.parametrize("case", ["ok", "h3down"])
def test_every_view_of_the_slim_dump_is_the_full_dumps(case):
    full = load("pgdump_%s.json" % case)
    osd_map, tree = load("osdmap_%s.json" % case), load("tree_%s.json" % case)
    slim = pgtrack.slim_pg_dump(full)
    assert len(json.dumps(slim)) * 4 < len(json.dumps(full))
    crush = cluster.CrushIndex(tree)
    assert cluster.pg_view(crush, osd_map, slim) == cluster.pg_view(crush, osd_map, full)
    assert pgtrack.pg_versions(slim) == pgtrack.pg_versions(full)
    down = {o: {pg["pgid"]: 1 for pg in full["pg_map"]["pg_stats"]} for o in (4, 5)}
    assert pgtrack.missed_entries(slim, down) == pgtrack.missed_entries(full, down)
    health = {"json": json.dumps({"status": "HEALTH_WARN"})}
    assert drillcli.observed(health, slim) == drillcli.observed(health, full)
    # in columns (what the module keeps of a large dump): the same PGs, the same views
    cols = dict(slim, pg_stats=pgcolumns.PgRows(slim["pg_stats"]))
    cols["pg_stats"].own_strings()
    assert list(cols["pg_stats"]) == slim["pg_stats"] and not cols["pg_stats"]._odd
    assert cluster.pg_view(crush, osd_map, cols) == cluster.pg_view(crush, osd_map, full)
    assert pgtrack.pg_versions(cols) == pgtrack.pg_versions(full)
    assert pgtrack.missed_entries(cols, down) == pgtrack.missed_entries(full, down)


@pytest.mark.parametrize("case", ["ok", "h3down"])
def test_every_view_of_the_slim_osd_map_is_the_full_maps(case):
    full, tree = load("osdmap_%s.json" % case), load("tree_%s.json" % case)
    pgs = load("pgdump_%s.json" % case)
    # what the recordings do not show: a per-OSD flag, a down stamp, and a release read
    # again only for an OSD whose up_from moved
    full["osds"][5]["state"] = ["exists", "noup"]
    full["osd_xinfo"][5]["down_stamp"] = "2026-12-01T10:00:00.000000+0000"
    slim = cluster.slim_osd_map(full)
    assert len(json.dumps(slim)) * 3 < len(json.dumps(full))
    crush = cluster.CrushIndex(tree)
    assert cluster.pg_view(crush, slim, pgs) == cluster.pg_view(crush, full, pgs)
    assert cluster.even_share(slim) == cluster.even_share(full)
    assert cluster.build_snapshot(slim, tree, pgs, {}, 1000.0, 30.0, down_seen={5: 990.0}) \
        == cluster.build_snapshot(full, tree, pgs, {}, 1000.0, 30.0, down_seen={5: 990.0})
    reads = []
    meta = lambda kind, ident: reads.append(ident) or {
        "ceph_version": "ceph version 20.2.0 (x) tentacle (stable)"}
    versions = executor.OsdVersions(meta)
    assert versions(full) == versions(slim) and len(reads) == len(full["osds"])
    assert versions(cluster.slim_osd_map(full)) and len(reads) == len(full["osds"])
    assert cluster.slim_osd_map(None) == {} and cluster.slim_osd_map({"epoch": 3}) == {"epoch": 3}
    # the CRUSH tree, kept as its nodes' ids, names, types and children: the same index
    thin = cluster.CrushIndex(cluster.slim_tree(tree))
    assert cluster.build_snapshot(slim, cluster.slim_tree(tree), pgs, {}, 1000.0, 30.0) \
        == cluster.build_snapshot(full, tree, pgs, {}, 1000.0, 30.0)
    assert (thin.osd_ids, thin.buckets(), thin.hosts) == (crush.osd_ids, crush.buckets(),
                                                          crush.hosts)
    assert [thin.osds_under(b) for b in crush.buckets()] == \
        [crush.osds_under(b) for b in crush.buckets()]


def test_a_wrapped_or_missing_dump_slims_to_the_same_shape():
    full = load("pgdump_h3down.json")
    assert "pg_map" in full     # the shape of `ceph pg dump`; mgr's get() answers the inside
    assert pgtrack.slim_pg_dump(full["pg_map"]) == pgtrack.slim_pg_dump(full)
    assert pgtrack.slim_pg_dump(None) == {"pg_stats": [], "osd_stats": []}


OSD_IDS = st.integers(-(1 << 33), 1 << 33) | st.sampled_from([0, 5, 2147483647]) | st.booleans()
VERSION = st.from_regex(r"\A[0-9]{1,4}'[0-9]{1,6}\Z") | st.text(max_size=6) | st.integers()
PG = st.fixed_dictionaries(
    {"pgid": st.from_regex(r"\A[0-9]{1,2}\.[0-9a-f]{1,3}\Z") | st.text(max_size=4)},
    optional={"state": st.sampled_from(["active+clean", "peering", ""]) | st.integers(),
              "up": st.lists(OSD_IDS, max_size=4), "acting": st.lists(OSD_IDS, max_size=4),
              "blocked_by": st.lists(OSD_IDS, min_size=1, max_size=3),
              "version": VERSION, "last_update": VERSION,
              "log_size": st.integers(-(1 << 70), 1 << 70) | st.none(),
              "other": st.integers()})


def typed(value):
    """A value with the type of every part in it: 1 and True, or "1" and 1, differ."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


@given(st.lists(PG, max_size=30))
@settings(max_examples=300, deadline=None)
def test_any_pg_reads_back_from_the_columns_exactly_as_it_went_in(pgs):
    rows = pgcolumns.PgRows(pgs)
    rows.own_strings()
    assert len(rows) == len(pgs)
    assert [typed(r) for r in rows] == [typed(p) for p in pgs]
    assert [typed(rows[k]) for k in range(-len(pgs), 0)] == [typed(p) for p in pgs]
    assert [typed(r) for r in rows[1::2]] == [typed(p) for p in pgs[1::2]]
    with pytest.raises(IndexError):
        rows[len(pgs)]
