"""Boot gate decision: pure function over `ceph osd dump -f json` / `ceph osd tree -f json`.

The fixture maps have the lab's shape (root default, racks r1/r2, hosts h1..h3, 2 OSDs each;
copied from a Ceph 16.2.15 lab, trimmed to the fields Ceph prints that the gate reads plus a
few it must ignore).
"""
from __future__ import annotations

import copy

import pytest

from ceph_recovery_tools.helper import gate

TREE = {
    "nodes": [
        {"id": -1, "name": "default", "type": "root", "type_id": 11, "children": [-3, -2]},
        {"id": -2, "name": "r1", "type": "rack", "type_id": 3, "pool_weights": {},
         "children": [-6, -4]},
        {"id": -4, "name": "h1", "type": "host", "type_id": 1, "pool_weights": {},
         "children": [1, 0]},
        {"id": 0, "device_class": "hdd", "name": "osd.0", "type": "osd", "type_id": 0,
         "crush_weight": 0.0098, "depth": 3, "pool_weights": {}, "exists": 1,
         "status": "up", "reweight": 1, "primary_affinity": 1},
        {"id": 1, "device_class": "hdd", "name": "osd.1", "type": "osd", "type_id": 0,
         "crush_weight": 0.0098, "depth": 3, "pool_weights": {}, "exists": 1,
         "status": "up", "reweight": 1, "primary_affinity": 1},
        {"id": -6, "name": "h3", "type": "host", "type_id": 1, "pool_weights": {},
         "children": [5, 4]},
        {"id": 4, "name": "osd.4", "type": "osd", "type_id": 0, "status": "up"},
        {"id": 5, "name": "osd.5", "type": "osd", "type_id": 0, "status": "up"},
        {"id": -3, "name": "r2", "type": "rack", "type_id": 3, "pool_weights": {},
         "children": [-5]},
        {"id": -5, "name": "h2", "type": "host", "type_id": 1, "pool_weights": {},
         "children": [3, 2]},
        {"id": 2, "name": "osd.2", "type": "osd", "type_id": 0, "status": "down"},
        {"id": 3, "name": "osd.3", "type": "osd", "type_id": 0, "status": "down"},
    ],
    "stray": [{"id": 6, "name": "osd.6", "type": "osd", "type_id": 0, "status": "down"}],
}


def _osd(i, state, up=1):
    return {"osd": i, "uuid": "00000000-0000-0000-0000-00000000000%d" % i, "up": up, "in": 1,
            "weight": 1, "primary_affinity": 1, "last_clean_begin": 0, "state": state,
            "public_addrs": {"addrvec": []}}


DUMP = {
    "epoch": 57, "flags": "sortbitwise,recovery_deletes,purged_snapdirs,pglog_hardlimit",
    "flags_set": ["pglog_hardlimit", "purged_snapdirs", "recovery_deletes", "sortbitwise"],
    "crush_node_flags": {}, "device_class_flags": {},
    "osds": [_osd(0, ["exists", "up"]), _osd(1, ["exists", "up"]),
             _osd(2, ["exists"], up=0), _osd(3, ["autoout", "exists"], up=0),
             _osd(4, ["exists", "up"]), _osd(5, ["exists", "up"]), _osd(6, ["exists"], 0)],
}


def dump_with(per_osd=None, buckets=None, flags=None):
    d = copy.deepcopy(DUMP)
    for o in d["osds"]:
        o["state"] = o["state"] + list((per_osd or {}).get(o["osd"], []))
    d["crush_node_flags"] = dict(buckets or {})
    if flags:
        d["flags"] += "," + flags
    return d


def test_no_flags_allows_with_epoch_in_reason():
    assert gate.gate_decision(2, DUMP, TREE, []) == (True, "osd.2 not held (epoch 57)")


def test_per_osd_noup_holds_only_that_osd():
    d = dump_with(per_osd={2: ["noup"]})
    assert gate.gate_decision(2, d, TREE, []) == (False, "osd.2 held (epoch 57): per-OSD noup flag")
    assert gate.gate_decision(3, d, TREE, [])[0] is True


def test_host_bucket_noup_holds_its_osds_not_others():
    d = dump_with(buckets={"h2": ["noup"]})
    assert gate.gate_decision(3, d, TREE, []) == (
        False, "osd.3 held (epoch 57): noup on CRUSH bucket h2")
    assert gate.gate_decision(2, d, TREE, [])[0] is False
    assert gate.gate_decision(0, d, TREE, [])[0] is True
    assert gate.gate_decision(4, d, TREE, [])[0] is True


def test_rack_noup_holds_every_host_below_it():
    d = dump_with(buckets={"r1": ["noup"]})
    held = [o for o in range(6) if not gate.gate_decision(o, d, TREE, [])[0]]
    assert held == [0, 1, 4, 5]
    assert gate.gate_decision(4, d, TREE, [])[1] == "osd.4 held (epoch 57): noup on CRUSH bucket r1"


def test_reasons_combine_per_osd_host_and_root():
    d = dump_with(per_osd={2: ["noup"]}, buckets={"h2": ["noup"], "default": ["noup", "noin"]})
    assert gate.gate_decision(2, d, TREE, []) == (
        False, "osd.2 held (epoch 57): per-OSD noup flag; noup on CRUSH bucket h2; "
               "noup on CRUSH bucket default")


def test_other_bucket_flags_do_not_hold():
    d = dump_with(buckets={"h2": ["noout", "noin"]}, per_osd={2: ["noout"]})
    assert gate.gate_decision(2, d, TREE, [])[0] is True


def test_cluster_wide_noup_is_not_a_domain_hold():
    d = dump_with(flags="noup")
    assert gate.gate_decision(2, d, TREE, [])[0] is True


@pytest.mark.parametrize("dump,osd3_allowed", [(dump_with(per_osd={2: ["noup"]}), True),
                                                (dump_with(buckets={"r2": ["noup"]}), False)])
def test_grant_overrides_hold_for_the_granted_osd_only(dump, osd3_allowed):
    assert gate.gate_decision(2, dump, TREE, [2]) == (
        True, "osd.2 granted by the recovery mgr module")
    assert gate.gate_decision(2, dump, TREE, [])[0] is False
    assert gate.gate_decision(3, dump, TREE, [2])[0] is osd3_allowed


def test_mgr_held_list_holds_without_map_flag():
    assert gate.gate_decision(2, DUMP, TREE, [], held=[2]) == (
        False, "osd.2 held (epoch 57): held by the recovery mgr module")
    assert gate.gate_decision(2, DUMP, TREE, [2], held=[2])[0] is True


def test_osd_not_in_tree_uses_per_osd_flag_only():
    assert gate.gate_decision(6, DUMP, TREE, []) == (
        True, "osd.6 not held (epoch 57) (not in the CRUSH tree)")
    d = dump_with(per_osd={6: ["noup"]}, buckets={"default": ["noup"]})
    assert gate.gate_decision(6, d, TREE, []) == (False, "osd.6 held (epoch 57): per-OSD noup flag")


def test_osd_not_in_map_is_allowed():
    assert gate.gate_decision(42, DUMP, TREE, []) == (
        True, "osd.42 is not in the OSD map (epoch 57): nothing to hold")


def test_ancestors_and_host_osds():
    assert gate.crush_ancestors(4, TREE) == ["h3", "r1", "default"]
    assert gate.crush_ancestors(6, TREE) == []
    assert gate.host_osds("h2", TREE) == [2, 3]
    assert gate.host_osds("nope", TREE) == []


@pytest.mark.parametrize("dump", [DUMP, dump_with(per_osd={3: ["noup"]}),
                                  dump_with(buckets={"h2": ["noup"]}),
                                  dump_with(buckets={"r2": ["noup"], "h1": ["noup"]}),
                                  dump_with(buckets={"default": ["noup"]})])
def test_trimmed_view_decides_like_the_full_map(dump):
    small_dump, small_tree = gate.trim_view([2, 3], dump, TREE)
    assert {o["osd"] for o in small_dump["osds"]} == {2, 3}
    assert {n["name"] for n in small_tree["nodes"]} == {"osd.2", "osd.3", "h2", "r2", "default"}
    for osd in (2, 3):
        assert gate.gate_decision(osd, small_dump, small_tree, []) == \
            gate.gate_decision(osd, dump, TREE, [])
