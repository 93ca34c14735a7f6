"""Shared fixtures of the simulator tests."""
from __future__ import annotations

import pytest

from ceph_recovery_tools.sim import topology as T


def _placement(tmp_path_factory, osds, hosts, racks):
    """Built into a private cache, which stays the cache while the module's tests run."""
    mp = pytest.MonkeyPatch()
    mp.setenv(T.CACHE_ENV, str(tmp_path_factory.mktemp("topo")))
    yield T.load(osds, hosts, racks)
    mp.undo()


@pytest.fixture(scope="module")
def topo(tmp_path_factory):
    """A 60-OSD / 5-host / 5-rack placement built by Ceph's tools into a private cache."""
    yield from _placement(tmp_path_factory, 60, 5, 5)


@pytest.fixture(scope="module")
def topo360(tmp_path_factory):
    """360 OSDs / 30 hosts of 12 / 3 racks: one rack is 10 hosts (tests/sim/test_throttle.py)."""
    yield from _placement(tmp_path_factory, 360, 30, 3)
