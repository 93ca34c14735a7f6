"""Pure helpers of the lab: names derived from the lab directory, topology.

Several labs (one per engineer, per test session) run on the same machine at once, so every
kernel object a lab makes (cgroup, network namespace, bridge, veth, nft table, subnet) carries a
short hash of the lab's absolute directory: two labs never fight over a name, and `down` can find
exactly what `up` made even when `lab.json` was never written.
"""
from __future__ import annotations

import hashlib
import ipaddress
import os
from typing import Dict, Iterable, List, Tuple


def lab_hash(lab_dir: str) -> str:
    """Six hex digits derived from the lab directory's absolute, normalised path."""
    path = os.path.normpath(os.path.abspath(lab_dir))
    return hashlib.sha256(path.encode()).hexdigest()[:6]


def kernel_names(lab_dir: str, hosts: Iterable[str]) -> Dict[str, object]:
    """Names of every kernel object a lab may make (interface names stay within 15 chars)."""
    h = lab_hash(lab_dir)
    hosts = list(hosts)
    return {
        "hash": h,
        "cgroup": f"ceph-recovery-lab-{h}",
        "bridge": f"crb{h}",
        "nft_table": f"crlab_{h}",
        "netns": {host: f"crlab-{h}-{host}" for host in hosts},
        "veth_root": {host: f"crv{h}{host}" for host in hosts},
        "veth_host": {host: f"crp{h}{host}" for host in hosts},
    }


def subnet_candidates(lab_dir: str, count: int = 64) -> List[ipaddress.IPv4Network]:
    """/24 subnets inside 10.0.0.0/8 to try in order, starting at one derived from the hash."""
    start = int(lab_hash(lab_dir), 16) % (1 << 16)
    nets = []
    for i in range(count):
        n = (start + i * 7919) % (1 << 16)
        nets.append(ipaddress.IPv4Network(f"10.{n >> 8}.{n & 0xFF}.0/24"))
    return nets


def pick_subnet(lab_dir: str, used: Iterable[ipaddress.IPv4Network]) -> ipaddress.IPv4Network:
    """First candidate subnet that overlaps nothing already routed/addressed on the machine."""
    used = list(used)
    for net in subnet_candidates(lab_dir):
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError("no free 10.x.y.0/24 subnet found for the lab network")


def host_addrs(subnet: ipaddress.IPv4Network, hosts: Iterable[str]) -> Tuple[str, Dict[str, str]]:
    """Bridge address (.1) and one address per host (.11, .12, ...)."""
    base = subnet.network_address
    return str(base + 1), {host: str(base + 10 + i) for i, host in enumerate(hosts, start=1)}


def topology(hosts: int, racks: int, osds_per_host: int) -> Dict[str, Dict[str, object]]:
    """h1..hN round robin over r1..rR; OSD ids numbered host by host from 0."""
    if hosts < 1 or racks < 1 or osds_per_host < 1:
        raise ValueError("hosts, racks and osds-per-host must be >= 1")
    if racks > hosts:
        raise ValueError(f"{racks} racks for {hosts} hosts would leave empty racks")
    topo: Dict[str, Dict[str, object]] = {}
    for i in range(hosts):
        first = i * osds_per_host
        topo[f"h{i + 1}"] = {"rack": f"r{i % racks + 1}",
                            "osds": list(range(first, first + osds_per_host))}
    return topo
