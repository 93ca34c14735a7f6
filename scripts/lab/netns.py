"""Network namespaces for lab hosts: a bridge in the root namespace, one veth pair per host.

The mon and mgr stay in the root namespace on the bridge's address; each lab host's OSDs and
helper run inside that host's namespace with their own address. MTU 9000 everywhere by default,
so a network fault can later drop only jumbo frames or make an MTU mismatch.
"""
from __future__ import annotations

import ipaddress
import json
import subprocess
from typing import Dict, Iterable, List

import structlog

log = structlog.get_logger("lab.netns")
NFT_FAMILIES = ("inet", "ip", "ip6", "bridge", "netdev", "arp")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {proc.stderr.strip()}")
    return proc


def used_networks() -> List[ipaddress.IPv4Network]:
    """Every IPv4 network addressed or routed on this machine (root namespace)."""
    nets = []
    for entry in json.loads(_ip("-j", "-4", "addr").stdout or "[]"):
        for a in entry.get("addr_info", []):
            nets.append(ipaddress.IPv4Network(f"{a['local']}/{a['prefixlen']}", strict=False))
    for route in json.loads(_ip("-j", "-4", "route").stdout or "[]"):
        dst = route.get("dst")
        if dst and dst != "default":
            nets.append(ipaddress.IPv4Network(dst if "/" in dst else dst + "/32", strict=False))
    return nets


def create(names: Dict[str, object], subnet: ipaddress.IPv4Network, bridge_addr: str,
           addrs: Dict[str, str], mtu: int = 9000) -> None:
    """Bridge + per-host namespace and veth pair, all up, addressed."""
    bridge, prefix = str(names["bridge"]), subnet.prefixlen
    _ip("link", "add", bridge, "type", "bridge")
    _ip("link", "set", bridge, "mtu", str(mtu))
    _ip("addr", "add", f"{bridge_addr}/{prefix}", "dev", bridge)
    _ip("link", "set", bridge, "up")
    for host, addr in addrs.items():
        ns = names["netns"][host]
        vroot, vhost = names["veth_root"][host], names["veth_host"][host]
        _ip("netns", "add", ns)
        _ip("link", "add", vroot, "mtu", str(mtu), "type", "veth", "peer", "name", vhost,
            "mtu", str(mtu), "netns", ns)
        _ip("link", "set", vroot, "master", bridge, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "addr", "add", f"{addr}/{prefix}", "dev", vhost)
        _ip("-n", ns, "link", "set", vhost, "up")
    _ip("link", "set", bridge, "mtu", str(mtu))


def existing_netns() -> List[str]:
    out = _ip("-j", "netns", "list", check=False).stdout.strip()
    return [e["name"] for e in json.loads(out or "[]")]


def link_exists(name: str) -> bool:
    return _ip("link", "show", name, check=False).returncode == 0


def remove(names: Dict[str, object], hosts: Iterable[str]) -> List[str]:
    """Delete namespaces, veths, the bridge and the lab's nft tables; return what remained."""
    present = set(existing_netns())
    for host in hosts:
        ns = names["netns"][host]
        if ns in present:
            _ip("netns", "del", ns, check=False)
        if link_exists(names["veth_root"][host]):
            _ip("link", "del", names["veth_root"][host], check=False)
    if link_exists(str(names["bridge"])):
        _ip("link", "del", str(names["bridge"]), check=False)
    remove_nft_tables(str(names["nft_table"]))
    left = [ns for ns in (names["netns"][h] for h in hosts) if ns in set(existing_netns())]
    left += [n for n in [str(names["bridge"])] if link_exists(n)]
    return left


def remove_nft_tables(table: str) -> None:
    """Drop any root-namespace nft table of this name (fault injection tables of this lab)."""
    for family in NFT_FAMILIES:
        subprocess.run(["nft", "delete", "table", family, table], capture_output=True, timeout=30)
