"""The shell keeps only what it reads of the PG stats: every view it builds from the slimmed
dump equals the one from the mgr's full dump (recorded on the lab: all PGs clean, and h3 down)."""
from __future__ import annotations

import json

import pytest

from mgrcases import load  # see conftest.py
from recovery import cluster, drillcli, pgtrack


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


def test_a_wrapped_or_missing_dump_slims_to_the_same_shape():
    full = load("pgdump_h3down.json")
    assert "pg_map" in full     # the shape of `ceph pg dump`; mgr's get() answers the inside
    assert pgtrack.slim_pg_dump(full["pg_map"]) == pgtrack.slim_pg_dump(full)
    assert pgtrack.slim_pg_dump(None) == {"pg_stats": [], "osd_stats": []}
