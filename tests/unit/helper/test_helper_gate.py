"""Boot gate decision: pure function over `ceph osd dump -f json` / `ceph osd tree -f json`.

The fixture maps are gatecases.py's (the lab's shape).
"""
from __future__ import annotations


import pytest
from gatecases import DUMP, TREE, dump_with  # registered by conftest.py

from ceph_recovery_tools.helper import gate


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
