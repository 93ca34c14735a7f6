"""Topology and PG placement from Ceph's own tools: parsing fixtures and a real build."""
from __future__ import annotations

import errno
import json
import pathlib
import shutil

import pytest

from ceph_recovery_tools.sim import topology as T

FIX = pathlib.Path(__file__).parent / "fixtures"
needs_ceph = pytest.mark.skipif(shutil.which("osdmaptool") is None or
                                shutil.which("crushtool") is None,
                                reason="crushtool/osdmaptool not installed")


def test_parse_pgs_dump_fixture():
    rows = T.parse_pgs_dump((FIX / "pgs-dump-12osd.txt").read_text())
    assert len(rows) == 48                               # "pool 1 pg_num 48"
    assert rows[0] == ("1.0", (3, 1, 7))
    assert rows[1] == ("1.1", (2, 9, 4))
    assert rows[-1][0] == "1.2f"
    assert all(len(up) == 3 for _, up in rows)
    # summary lines (osd.N counts, "size 3 ...") are not PGs
    assert not any(name.startswith("osd") for name, _ in rows)


def test_parse_crush_fixture_hosts_racks_and_rule():
    dump = json.loads((FIX / "crush-12osd.json").read_text())
    host_of, rack_of, root = T.parse_crush(dump)
    assert root == "root"
    assert host_of[0] == host_of[2] == "host0" and host_of[3] == "host1"
    assert sorted(set(host_of.values())) == ["host0", "host1", "host2", "host3"]
    assert rack_of == {"host0": "rack0", "host1": "rack0", "host2": "rack1", "host3": "rack1"}


def test_fixture_placement_respects_host_failure_domain():
    dump = json.loads((FIX / "crush-12osd.json").read_text())
    host_of, _, _ = T.parse_crush(dump)
    for _, up in T.parse_pgs_dump((FIX / "pgs-dump-12osd.txt").read_text()):
        assert len({host_of[o] for o in up}) == 3, up


def test_parse_crush_refuses_non_host_rule():
    dump = json.loads((FIX / "crush-12osd.json").read_text())
    dump["rules"][0]["steps"][1]["type"] = "osd"
    with pytest.raises(T.TopologyError) as e:
        T.parse_crush(dump)
    assert e.value.errno == errno.EINVAL


@pytest.mark.parametrize("shape", [(60, 7, 1), (60, 6, 4), (0, 1, 1), (4, 2, 1)])
def test_bad_shapes_are_einval(shape):
    with pytest.raises(T.TopologyError) as e:
        T.check_shape(*shape)
    assert e.value.errno == errno.EINVAL


@needs_ceph
def test_build_real_maps_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(T.CACHE_ENV, str(tmp_path))
    topo = T.load(24, 6, 3, pg_bits=3)
    assert len(topo.pgs) == 24 << 3 and topo.size == 3 and topo.min_size == 2
    assert topo.hosts == ["host%d" % i for i in range(6)]
    assert topo.racks == ["rack0", "rack1", "rack2"]
    for up in topo.pgs:
        assert len({topo.host_of[o] for o in up}) == 3
    cached = list(tmp_path.glob("topo-24-6-3-b3-*.json"))
    assert len(cached) == 1
    again = T.load(24, 6, 3, pg_bits=3)
    assert again.pgs == topo.pgs and again.host_of == topo.host_of
