"""Shared fixtures of the simulator tests."""
from __future__ import annotations

import pytest

from ceph_recovery_tools.sim import topology as T


@pytest.fixture(scope="module")
def topo(tmp_path_factory):
    """A 60-OSD / 5-host / 5-rack placement built by Ceph's tools into a private cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv(T.CACHE_ENV, str(tmp_path_factory.mktemp("topo")))
    yield T.load(60, 5, 5)
    mp.undo()
