"""Report building: memory from cgroup v1/v2 directories (temp dirs), the host, processes."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from ceph_recovery import protocol
from ceph_recovery_tools.common import cgroup
from ceph_recovery_tools.helper import memory, report

GiB = 1 << 30
MiB = 1 << 20


def write(d, **files):
    os.makedirs(d, exist_ok=True)
    for name, text in files.items():
        with open(os.path.join(d, name.replace("_", ".", 1)), "w") as f:
            f.write(text)
    return str(d)


def v1(d, usage, limit):
    return write(d, **{"memory_usage_in_bytes": "%d\n" % usage,
                       "memory_limit_in_bytes": "%d\n" % limit})


def test_cgroup_v1_with_limit(tmp_path):
    path = v1(tmp_path / "h1", 300 * MiB, 512 * MiB)
    assert cgroup.version(path) == 1
    assert memory.read_cgroup_memory(path, host_total=24 * GiB) == {
        "total": 512 * MiB, "used": 300 * MiB, "available": 212 * MiB, "limit": 512 * MiB,
        "swap_total": 0, "source": "cgroup"}


def test_cgroup_v1_unlimited_uses_host_total(tmp_path):
    path = v1(tmp_path / "h1", 100 * MiB, 9223372036854771712)
    got = memory.read_cgroup_memory(path, host_total=24 * GiB)
    assert (got["total"], got["limit"], got["available"]) == (24 * GiB, None, 24 * GiB - 100 * MiB)


def test_cgroup_v2_with_and_without_limit(tmp_path):
    path = write(tmp_path / "a", **{"memory_current": "1073741824\n", "memory_max": "2147483648\n"})
    assert cgroup.version(path) == 2
    assert memory.read_cgroup_memory(path, host_total=24 * GiB)["available"] == GiB
    path = write(tmp_path / "b", **{"memory_current": "4096\n", "memory_max": "max\n"})
    got = memory.read_cgroup_memory(path, host_total=8 * GiB)
    assert (got["total"], got["used"], got["limit"]) == (8 * GiB, 4096, None)


def test_usage_above_limit_reports_zero_available(tmp_path):
    path = v1(tmp_path / "h1", 600 * MiB, 512 * MiB)
    assert memory.read_cgroup_memory(path, host_total=GiB)["available"] == 0


def test_not_a_memory_cgroup_is_a_clear_error(tmp_path):
    with pytest.raises(cgroup.NotAMemoryCgroup, match="not a memory cgroup"):
        memory.read_cgroup_memory(str(tmp_path))


def test_host_memory_is_consistent_with_psutil():
    got = memory.read_host_memory()
    assert got["source"] == "host" and got["limit"] is None
    assert got["used"] == got["total"] - got["available"]
    assert abs(got["total"] - psutil.virtual_memory().total) == 0


def test_real_v1_cgroup_of_this_process_if_present():
    root = "/sys/fs/cgroup/memory"
    if not os.path.exists(os.path.join(root, "memory.usage_in_bytes")):
        pytest.skip("no cgroup v1 memory controller at %s" % root)
    got = memory.read_cgroup_memory(root)
    assert got["used"] > 0 and got["source"] == "cgroup"


def test_osd_process_running_and_stopped():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        got = report.osd_process(7, child.pid)
        assert got["process"] == "running" and got["pid"] == child.pid and got["rss"] > 0
        assert abs(got["started_at"] - time.time()) < 60
    finally:
        child.kill()
        child.wait()
    assert report.osd_process(7, child.pid) == {"id": 7, "process": "stopped", "pid": None,
                                                "rss": 0, "started_at": None}
    assert report.osd_process(8, None)["process"] == "stopped"


def test_build_report_validates_and_sorts(tmp_path):
    mem = memory.read_cgroup_memory(v1(tmp_path / "h2", 300 * MiB, 512 * MiB))
    osds = [report.osd_process(3, None), report.osd_process(2, None)]
    rep = report.build_report("h2", 5, 1700000000.0, mem, osds, ["run1:1"], {"rtt": 1})
    parsed = protocol.parse_report(rep)
    assert [o.id for o in parsed.osds] == [2, 3]
    assert parsed.memory.limit == 512 * MiB and parsed.memory.source == "cgroup"
    assert parsed.done == ("run1:1",) and parsed.network == {"rtt": 1}
    assert protocol.report_to_dict(parsed) == rep


def test_build_report_rejects_bad_memory():
    with pytest.raises(protocol.ProtocolError, match="source"):
        report.build_report("h2", 1, 1.0, {"total": 1, "used": 1, "available": 0,
                                           "source": "guess"}, [])


def test_the_helper_numbers_its_reports_and_names_its_process():
    mem = {"total": 8 * GiB, "used": GiB, "available": 7 * GiB, "limit": None,
           "source": "host"}
    rep = report.build_report("h1", 3, 1000.0, mem, [], instance="123-abc")
    assert (rep["seq"], rep["instance"], rep["host"]) == (3, "123-abc", "h1")
