"""The boot gate's OSD map fixtures (registered by conftest.py as `gatecases`): the lab's shape
(root default, racks r1/r2, hosts h1..h3, 2 OSDs each; copied from a Ceph 16.2.15 lab, trimmed
to the fields Ceph prints that the gate reads plus a few it must ignore)."""
from __future__ import annotations

import copy

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
