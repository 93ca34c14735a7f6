"""Pure helpers of the lab: hash-derived names, subnets, topology."""
import ipaddress

import pytest

from ceph_recovery_tools.lab import names


def test_hash_depends_on_normalised_absolute_dir():
    assert names.lab_hash("/tmp/a") == names.lab_hash("/tmp/a/")
    assert names.lab_hash("/tmp/a") == names.lab_hash("/tmp/x/../a")
    assert names.lab_hash("/tmp/a") != names.lab_hash("/tmp/b")
    assert len(names.lab_hash("/tmp/a")) == 6


def test_kernel_names_fit_interface_limits_and_differ_between_labs():
    a = names.kernel_names("/tmp/lab-a", ["h1", "h10"])
    b = names.kernel_names("/tmp/lab-b", ["h1", "h10"])
    ifnames = [a["bridge"], *a["veth_root"].values(), *a["veth_host"].values()]
    assert all(len(n) <= 15 for n in ifnames)
    assert len(set(ifnames)) == len(ifnames)
    for key in ("cgroup", "bridge", "nft_table"):
        assert a[key] != b[key]
    assert a["netns"]["h1"] != b["netns"]["h1"]
    assert a["netns"]["h1"].startswith("crlab-" + a["hash"] + "-")


def test_pick_subnet_skips_used_networks():
    first = names.subnet_candidates("/tmp/lab-a")[0]
    assert names.pick_subnet("/tmp/lab-a", []) == first
    used = [ipaddress.IPv4Network("10.0.0.0/9"), ipaddress.IPv4Network("10.128.0.0/10")]
    chosen = names.pick_subnet("/tmp/lab-a", used + [first])
    assert chosen != first and not any(chosen.overlaps(u) for u in used)


def test_pick_subnet_fails_when_everything_is_used():
    with pytest.raises(RuntimeError):
        names.pick_subnet("/tmp/lab-a", [ipaddress.IPv4Network("10.0.0.0/8")])


def test_host_addrs():
    bridge, addrs = names.host_addrs(ipaddress.IPv4Network("10.1.2.0/24"), ["h1", "h2"])
    assert bridge == "10.1.2.1"
    assert addrs == {"h1": "10.1.2.11", "h2": "10.1.2.12"}


def test_topology_round_robin_racks_and_osds_host_by_host():
    topo = names.topology(3, 2, 2)
    assert topo == {"h1": {"rack": "r1", "osds": [0, 1]},
                    "h2": {"rack": "r2", "osds": [2, 3]},
                    "h3": {"rack": "r1", "osds": [4, 5]}}


@pytest.mark.parametrize("args", [(0, 1, 1), (2, 3, 1), (2, 1, 0)])
def test_topology_rejects(args):
    with pytest.raises(ValueError):
        names.topology(*args)


def test_pool_size_follows_hosts():
    from ceph_recovery_tools.lab.build import pool_size
    assert [pool_size(h) for h in (1, 2, 3, 8)] == [(1, 1), (2, 1), (3, 2), (3, 2)]
