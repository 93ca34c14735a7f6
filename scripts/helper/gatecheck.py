"""The boot gate's I/O side: fresh OSD map from the mon, else the helper's cached view.

Order of evidence:
1. mon reachable within the timeout: decide from `osd dump` + `osd tree` (and refresh the cache);
2. mon unreachable: decide from the last view the helper cached in its state dir;
   A cached view saved before this host last booted (an unplanned power loss) is not
   evidence of "not held": it shows the view before the failure, so the OSD is held
   (source "stale-cache") and the reason says so; the helper starts it once the mgr grants it.
3. no cache at all: `no_cache` decides ("allow" by default). Rationale: with no cache this host
   never ran a helper (or lost its state dir), so no hold can be known here; holding would keep
   the OSD down with nobody aware of it, and systemd would never retry: "never block forever".
   Sites that prefer to fail closed pass `--no-cache hold`.
The mgr's `held` list counts only in the cache fallback. Grants come from the cached mgr
instructions (its `grants` plus the OSDs of its start/restart
instructions) and expire after `grant_ttl` seconds, so an old grant cannot release a new hold.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, Optional, Set, Tuple

from . import client, gate
from .defaults import DEFAULT_GRANT_TTL
from .state import StateDir



@dataclass(frozen=True)
class GateResult:
    allowed: bool
    reason: str
    source: str          # "osd-map" | "cache" | "no-cache"


def cached_grants(state: StateDir, now: float,
                  grant_ttl: float = DEFAULT_GRANT_TTL) -> Tuple[Set[int], Set[int]]:
    """(grants, held) from the last mgr instructions if they are younger than grant_ttl."""
    cached = state.load_instructions()
    if not cached or now - float(cached.get("received_at", 0)) > grant_ttl:
        return set(), set()
    reply = cached.get("reply") or {}
    grants = {int(g) for g in reply.get("grants", []) if isinstance(g, int)}
    grants |= {int(i["osd"]) for i in reply.get("instructions", [])
               if i.get("op") in ("start", "restart") and isinstance(i.get("osd"), int)}
    held = {int(h) for h in reply.get("held", []) if isinstance(h, int)}
    return grants, held - grants


def _reply_epoch(state: StateDir) -> int:
    """OSD map epoch the cached mgr instructions were decided on (0 if unknown)."""
    reply = (state.load_instructions() or {}).get("reply") or {}
    epoch = reply.get("epoch")
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else 0


def _refresh_cache(state: StateDir, osd_id: int, dump: Dict[str, Any],
                   tree: Dict[str, Any], now: float) -> None:
    view = state.load_view() or {}
    osds = sorted(set(view.get("osds", [])) | {osd_id})
    small_dump, small_tree = gate.trim_view(osds, dump, tree)
    state.save_view(small_dump, small_tree, view.get("host", ""), osds, now)


def _boot_time() -> float:
    import psutil
    return float(psutil.boot_time())


def check(osd_id: int, conf: str, name: str, keyring: Optional[str], state: StateDir,
          timeout: float = 5.0, no_cache: str = "allow",
          grant_ttl: float = DEFAULT_GRANT_TTL, now: Optional[float] = None,
          boot_time: Optional[float] = None) -> GateResult:
    now = time.time() if now is None else now
    booted = _boot_time() if boot_time is None else boot_time
    grants, held = cached_grants(state, now, grant_ttl)
    try:
        cluster = client.connect(conf, name, keyring, timeout)
        try:
            dump, tree = client.osd_map_view(cluster, timeout, attempts=1)
        finally:
            cluster.shutdown()
    except (client.ClusterUnreachable, client.CommandFailed, OSError, ValueError) as exc:
        return _from_cache(osd_id, state, grants, held, no_cache, str(exc), booted)
    except Exception as exc:   # noqa: BLE001 - rados errors of any kind: fall back, never hang
        return _from_cache(osd_id, state, grants, held, no_cache, repr(exc), booted)
    # the fresh map is the truth: the mgr's cached `held` list (derived from an older map) is
    # only evidence when the mon is unreachable
    allowed, reason = gate.gate_decision(osd_id, dump, tree, grants)
    try:
        state.ensure()
        _refresh_cache(state, osd_id, dump, tree, now)
    except OSError:
        pass     # a read-only state dir must not change the decision
    return GateResult(allowed, reason, "osd-map")


def _from_cache(osd_id: int, state: StateDir, grants: Set[int], held: Set[int],
                no_cache: str, error: str, booted: float = 0.0) -> GateResult:
    view = state.load_view()
    if view and view.get("osd_dump") is not None and osd_id in view.get("osds", []):
        saved = float(view.get("saved_at") or 0)
        if saved < booted:
            return GateResult(False, "osd.%d held: mon unreachable (%s) and the cached view "
                              "(saved at %.0f) is from before this boot (%.0f), so it cannot "
                              "show whether osd.%d is held; the helper starts it once the mgr "
                              "grants it" % (osd_id, error, saved, booted, osd_id),
                              "stale-cache")
        if _reply_epoch(state) < int(view["osd_dump"].get("epoch", 0) or 0):
            held = set()   # the mgr's list was derived from an older map than the cached one
        allowed, reason = gate.gate_decision(osd_id, view["osd_dump"], view["osd_tree"],
                                             grants, held)
        return GateResult(allowed, "%s [mon unreachable: %s; cached view saved at %s]"
                          % (reason, error, view.get("saved_at")), "cache")
    allowed = no_cache != "hold"
    return GateResult(allowed, "mon unreachable (%s) and no cached view of osd.%d in %s: %s "
                      "by policy --no-cache %s" % (error, osd_id, state.path,
                                                   "allowed" if allowed else "held", no_cache),
                      "no-cache")
