"""ceph.conf rendering: daemon paths only in daemon sections, CRUSH location per OSD."""
import configparser

import pytest

from ceph_recovery_tools.lab.conf import render_conf

OSDS = {0: {"host": "h1", "rack": "r1", "addr": None}, 1: {"host": "h2", "rack": "r2",
                                                          "addr": "10.0.0.12"}}


def _parse(text):
    cp = configparser.ConfigParser(interpolation=None)
    cp.read_string(text)
    return cp


def test_global_has_no_daemon_paths_and_mon_is_msgr2():
    cp = _parse(render_conf("/tmp/L", "fsid-1", "127.0.0.1:12345", "bluestore",
                            "127.0.0.0/8", OSDS))
    for key in ("admin_socket", "pid_file", "log_file"):
        assert key not in cp["global"]
        for daemon in ("mon", "mgr", "osd"):
            assert "$name" in cp[daemon][key] and cp[daemon][key].startswith("/tmp/L/")
    assert cp["global"]["mon_host"] == "v2:127.0.0.1:12345"
    assert cp["global"]["fsid"] == "fsid-1"
    assert cp["global"]["keyring"] == "/tmp/L/admin.keyring"
    assert cp["mgr"]["mgr_module_path"] == "/tmp/L/mgr-modules"
    assert cp["global"]["auth_allow_insecure_global_id_reclaim"] == "false"


def test_osd_sections_place_osds_under_rack_and_host():
    cp = _parse(render_conf("/tmp/L", "f", "10.0.0.1:1", "bluestore", "10.0.0.0/24", OSDS))
    assert cp["osd.0"]["crush_location"] == "root=default rack=r1 host=h1"
    assert cp["osd.1"]["crush_location"] == "root=default rack=r2 host=h2"
    assert "public_addr" not in cp["osd.0"]
    assert cp["osd.1"]["public_addr"] == cp["osd.1"]["cluster_addr"] == "10.0.0.12"
    assert cp["osd"]["bluestore_block_create"] == "true"


def test_memstore_and_unknown_objectstore():
    cp = _parse(render_conf("/tmp/L", "f", "127.0.0.1:1", "memstore", "127.0.0.0/8", OSDS))
    assert cp["osd"]["osd_objectstore"] == "memstore"
    assert "bluestore_block_create" not in cp["osd"]
    with pytest.raises(ValueError):
        render_conf("/tmp/L", "f", "127.0.0.1:1", "filestorez", "127.0.0.0/8", OSDS)
