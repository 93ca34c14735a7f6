"""Rendering of the lab's ceph.conf (pure: values in, text out).

Daemon-only paths (admin socket, pid file, log file) live in the daemon sections: in [global]
every CLI call would fight the daemons over the same socket path. The mon listens on msgr2 only,
on a port picked free on this machine, so several labs run side by side.
"""
from __future__ import annotations

from typing import Dict, Mapping, Optional

# Settings that keep a small lab quiet and HEALTH_OK; every value is a lab convenience, none
# changes how recovery or peering behaves.
LAB_GLOBAL = {
    "auth_cluster_required": "cephx",
    "auth_service_required": "cephx",
    "auth_client_required": "cephx",
    "auth_allow_insecure_global_id_reclaim": "false",
    "mon_warn_on_insecure_global_id_reclaim": "false",
    "mon_warn_on_insecure_global_id_reclaim_allowed": "false",
    "mon_warn_on_pool_no_redundancy": "false",
    "mon_allow_pool_size_one": "true",
    "mon_allow_pool_delete": "true",
    "mon_data_avail_warn": "2",
    "mon_data_avail_crit": "1",
    "osd_pool_default_size": "3",
    "osd_pool_default_min_size": "2",
    "osd_pool_default_pg_autoscale_mode": "off",
    "osd_crush_chooseleaf_type": "1",
    "ms_bind_msgr1": "false",
    "ms_bind_msgr2": "true",
}


def _section(name: str, values: Mapping[str, object]) -> str:
    lines = [f"[{name}]"] + [f"    {k} = {v}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


def render_conf(lab_dir: str, fsid: str, mon_addr: str, objectstore: str,
                public_network: str, osds: Mapping[int, Mapping[str, object]],
                block_size: int = 10 << 30, extra_global: Optional[Dict[str, str]] = None) -> str:
    """ceph.conf text. `osds` maps id -> {"host", "rack", "addr" (None on loopback)}."""
    d = lab_dir
    glob = {"fsid": fsid, "mon_host": f"v2:{mon_addr}", "public_network": public_network,
            "cluster_network": public_network, "keyring": f"{d}/admin.keyring",
            "run_dir": f"{d}/run", "crash_dir": f"{d}/crash"}
    glob.update(LAB_GLOBAL)
    glob.update(extra_global or {})
    daemon = {"admin_socket": f"{d}/run/$name.asok", "pid_file": f"{d}/run/$name.pid",
              "log_file": f"{d}/log/$name.log"}
    mon = dict(daemon, mon_data=f"{d}/data/mon.$id", keyring="$mon_data/keyring")
    mgr = dict(daemon, mgr_data=f"{d}/data/mgr.$id", keyring="$mgr_data/keyring",
               mgr_module_path=f"{d}/mgr-modules")
    osd = dict(daemon, osd_data=f"{d}/data/osd.$id", keyring="$osd_data/keyring",
               osd_objectstore=objectstore, osd_crush_update_on_start="true")
    if objectstore == "bluestore":
        osd.update(bluestore_block_create="true",
                   bluestore_block_size=str(block_size), bluestore_fsck_on_mount="false",
                   bluestore_block_db_create="false", bluestore_block_wal_create="false")
    elif objectstore == "memstore":
        osd.update(memstore_device_bytes=str(1 << 30))
    else:
        raise ValueError(f"unknown objectstore {objectstore!r} (bluestore or memstore)")
    parts = [_section("global", glob), _section("mon", mon), _section("mgr", mgr),
             _section("osd", osd)]
    for osd_id in sorted(osds):
        info = osds[osd_id]
        sect = {"host": info["host"],
                "crush_location": f"root=default rack={info['rack']} host={info['host']}"}
        if info.get("addr"):
            sect["public_addr"] = info["addr"]
            sect["cluster_addr"] = info["addr"]
        parts.append(_section(f"osd.{osd_id}", sect))
    return "\n".join(parts)
