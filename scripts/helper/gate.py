"""The boot gate's decision: a pure function over the OSD map (dump + CRUSH tree) and grants.

`gate_decision(osd_id, osd_dump, osd_tree, grants)` answers whether ceph-osd.N may start:
held when the OSD carries the per-OSD `noup` flag (its `state` list in `ceph osd dump -f json`)
or when any CRUSH ancestor bucket carries `noup` in `crush_node_flags` (set with
`ceph osd set-group noup <bucket>`), unless the mgr granted this OSD. The cluster-wide `noup`
flag is deliberately not a hold: it would block every OSD of the cluster, not a domain.

`trim_view` cuts a dump/tree pair down to what the gate needs for a set of OSDs, so the helper
can cache it cheaply in its state dir for the mon-unreachable case. No I/O in this module.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

HOLD_FLAG = "noup"


def _osd_entry(osd_dump: Mapping[str, Any], osd_id: int) -> Optional[Mapping[str, Any]]:
    for o in osd_dump.get("osds", []) or []:
        if o.get("osd") == osd_id:
            return o
    return None


def _parents(osd_tree: Mapping[str, Any]) -> Dict[int, int]:
    """child id -> parent bucket id, from `ceph osd tree -f json` nodes."""
    parent: Dict[int, int] = {}
    for node in osd_tree.get("nodes", []) or []:
        for child in node.get("children", []) or []:
            parent[int(child)] = int(node["id"])
    return parent


def crush_ancestors(osd_id: int, osd_tree: Mapping[str, Any]) -> List[str]:
    """Names of the CRUSH buckets above the OSD, nearest first ([] if not in the tree)."""
    names = {int(n["id"]): n.get("name", str(n["id"])) for n in osd_tree.get("nodes", []) or []}
    parent = _parents(osd_tree)
    out: List[str] = []
    seen = set()
    node = osd_id
    while node in parent and node not in seen:
        seen.add(node)
        node = parent[node]
        out.append(names.get(node, str(node)))
    return out


def gate_decision(osd_id: int, osd_dump: Mapping[str, Any], osd_tree: Mapping[str, Any],
                  grants: Iterable[int], held: Iterable[int] = ()) -> Tuple[bool, str]:
    """(allowed, reason) for starting ceph-osd.<osd_id>.

    `grants`: OSDs the mgr allowed to start (its latest instructions); a grant overrides any
    noup hold, since the controlled start starts the process under noup on purpose.
    `held`: OSDs the mgr lists as held; a hold even when the map shows no flag (yet).
    """
    grants = set(int(g) for g in grants)
    if osd_id in grants:
        return True, "osd.%d granted by the recovery mgr module" % osd_id
    if _osd_entry(osd_dump, osd_id) is None:
        return True, "osd.%d is not in the OSD map (epoch %s): nothing to hold" % (
            osd_id, osd_dump.get("epoch"))
    reasons = []
    if HOLD_FLAG in (_osd_entry(osd_dump, osd_id) or {}).get("state", []):
        reasons.append("per-OSD noup flag")
    bucket_flags = osd_dump.get("crush_node_flags", {}) or {}
    ancestors = crush_ancestors(osd_id, osd_tree)
    for name in ancestors:
        if HOLD_FLAG in (bucket_flags.get(name) or []):
            reasons.append("noup on CRUSH bucket %s" % name)
    if osd_id in set(int(h) for h in held):
        reasons.append("held by the recovery mgr module")
    if reasons:
        return False, "osd.%d held (epoch %s): %s" % (osd_id, osd_dump.get("epoch"),
                                                      "; ".join(reasons))
    where = " (not in the CRUSH tree)" if not ancestors else ""
    return True, "osd.%d not held (epoch %s)%s" % (osd_id, osd_dump.get("epoch"), where)


def host_osds(host: str, osd_tree: Mapping[str, Any]) -> List[int]:
    """OSD ids directly under the CRUSH host bucket named `host`, sorted."""
    for node in osd_tree.get("nodes", []) or []:
        if node.get("type") == "host" and node.get("name") == host:
            return sorted(int(c) for c in node.get("children", []) or [] if int(c) >= 0)
    return []


def trim_view(osd_ids: Sequence[int], osd_dump: Mapping[str, Any],
              osd_tree: Mapping[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The part of (dump, tree) that gate_decision needs for `osd_ids`: same shapes, smaller."""
    wanted = set(int(i) for i in osd_ids)
    parent = _parents(osd_tree)
    keep = set(wanted)
    for osd in wanted:
        node = osd
        while node in parent and parent[node] not in keep:
            node = parent[node]
            keep.add(node)
        if node in parent:
            keep.add(parent[node])
    nodes = []
    for n in osd_tree.get("nodes", []) or []:
        if int(n["id"]) in keep:
            nodes.append({"id": int(n["id"]), "name": n.get("name"), "type": n.get("type"),
                          "children": [c for c in n.get("children", []) or [] if int(c) in keep]})
    dump = {"epoch": osd_dump.get("epoch"),
            "crush_node_flags": dict(osd_dump.get("crush_node_flags", {}) or {}),
            "osds": [{"osd": o.get("osd"), "state": list(o.get("state", []))}
                     for o in osd_dump.get("osds", []) or [] if o.get("osd") in wanted]}
    return dump, {"nodes": nodes}
