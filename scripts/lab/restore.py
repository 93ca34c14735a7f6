"""Bring a lab back to its healthy baseline after a test or drill broke it."""
from __future__ import annotations

from typing import Any, Dict

from . import launch

RESTORE_FLAGS = ("noup", "nodown", "noout", "noin", "norecover", "nobackfill", "norebalance",
                 "pause")


def clear_flags(state: Dict[str, Any]) -> None:
    """Unset global flags, per-OSD noup/noout/nodown/noin, and CRUSH bucket (group) flags."""
    for flag in RESTORE_FLAGS:
        launch.ceph(state, "osd", "unset", flag, json_out=False)
    dump = launch.ceph(state, "osd", "dump")
    for osd in dump["osds"]:
        for flag in ("noup", "nodown", "noout", "noin"):
            if flag in osd.get("state", []):
                launch.ceph(state, "osd", f"rm-{flag}", str(osd["osd"]), json_out=False)
    for bucket, flags in (dump.get("crush_node_flags") or {}).items():
        if flags:
            launch.ceph(state, "osd", "unset-group", ",".join(flags), bucket, json_out=False)


def reset_module(state: Dict[str, Any]) -> None:
    """Abort an active controlled run of our mgr module, bring back the buckets its windows
    keep in maintenance (a drill whose exit found too little memory leaves its bucket there)
    and release its holds (if enabled)."""
    try:
        status = launch.ceph(state, "recovery", "status", timeout=30)
    except launch.CephError:
        return  # module not enabled / not answering: nothing of its to reset
    if not isinstance(status, dict):
        return
    if status.get("active"):
        launch.ceph(state, "recovery", "abort", json_out=False, check=False, timeout=30)
    exit_windows(state)
    for bucket in status.get("holds") or []:
        if isinstance(bucket, str):
            launch.ceph(state, "recovery", "release", bucket, json_out=False, check=False,
                        timeout=30)


def exit_windows(state: Dict[str, Any], timeout: float = 300) -> None:
    """`maintenance exit` (the default budget: the lab's hosts are no longer limited) of every
    window not already exiting, then `recovery wait` for them."""
    try:
        windows = launch.ceph(state, "recovery", "maintenance", "ls", timeout=30)["windows"]
    except (launch.CephError, KeyError, TypeError):
        return   # a module without windows
    for w in windows:
        if w.get("phase") != "exiting":
            launch.ceph(state, "recovery", "maintenance", "exit", w["bucket"], json_out=False,
                        check=False, timeout=30)
    if windows:
        launch.recovery_wait(state, timeout)


def restore(state: Dict[str, Any], timeout: float = 300) -> None:
    """Abort our module's run, start every stopped OSD, clear flags, wait until all up,
    PGs clean and HEALTH_OK."""
    reset_module(state)
    for osd_id in sorted(int(o) for o in state["osds"]):
        if launch.osd_pid(state, osd_id) is None:
            launch.start_osd(state, osd_id)
    clear_flags(state)
    launch.wait_all_up(state, timeout)
    launch.wait_pgs_clean(state, timeout)
    launch.wait_health_ok(state, timeout)
