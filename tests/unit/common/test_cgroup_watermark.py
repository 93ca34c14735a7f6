"""A drill's host peak counts from when its limit was set: cgroup.Watermark resets the
kernel's peak (v1: memory.max_usage_in_bytes; v2: memory.peak for one open file, kernel
6.12+) and reads the peak since. The last row runs a real child in a real cgroup of the
host's kind."""
from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest

from ceph_recovery_tools.common import cgroup

MiB = 1 << 20
ROOT = "/sys/fs/cgroup"
# the child, once told (it is in the group by then): holds 96 MiB, frees it, says so; then
# on each line read holds that many MiB more
CHILD = r"""
import sys
sys.stdin.readline()
block = bytearray(96 << 20)
for i in range(0, len(block), 4096):
    block[i] = 1
del block
print("freed", flush=True)
held = []
for line in sys.stdin:
    b = bytearray(int(line) << 20)
    for i in range(0, len(b), 4096):
        b[i] = 1
    held.append(b)
    print("held", flush=True)
"""


def test_v1_resets_the_usage_watermark_and_reads_it_back(tmp_path):
    (tmp_path / "memory.max_usage_in_bytes").write_text("900000\n")
    w = cgroup.Watermark(str(tmp_path), 1)
    assert (tmp_path / "memory.max_usage_in_bytes").read_text() == "0"
    (tmp_path / "memory.max_usage_in_bytes").write_text("4096\n")    # the kernel's, since
    assert w.known and w.read() == 4096


def test_a_group_without_a_resettable_peak_knows_none(tmp_path):
    w = cgroup.Watermark(str(tmp_path / "gone"), 2)
    assert not w.known and w.read() is None


def _real_group():
    """A new memory cgroup (v2 where the host's memory controller is there, else v1), and
    its version; skipped where none can be made."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    v2 = os.path.exists(os.path.join(ROOT, "cgroup.controllers"))
    parent = ROOT if v2 else os.path.join(ROOT, "memory")
    peak = "memory.peak" if v2 else "memory.max_usage_in_bytes"
    path = os.path.join(parent, "crtest-%s" % uuid.uuid4().hex[:8])
    try:
        os.mkdir(path)
    except OSError as e:
        pytest.skip("cannot make a memory cgroup here: %s" % e)
    if not os.path.exists(os.path.join(path, peak)):
        os.rmdir(path)
        pytest.skip("no memory controller under %s" % parent)
    return path, 2 if v2 else 1


def test_a_real_group_counts_from_the_reset_not_from_its_creation():
    path, version = _real_group()
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        with open(os.path.join(path, "cgroup.procs"), "w") as f:
            f.write(str(child.pid))
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "freed"
        time.sleep(0.2)
        lifetime = cgroup.read(path, version)["max_usage"]
        w = cgroup.Watermark(path, version)
        if not w.known:
            pytest.skip("this kernel's memory.peak cannot be reset (before 6.12)")
        since = w.read()
        child.stdin.write("32\n")
        child.stdin.flush()
        while child.stdout.readline().strip() != "held":
            pass
        after = w.read()
        w.close()
    finally:
        child.kill()
        child.wait()
        for _ in range(50):
            try:
                os.rmdir(path)
                break
            except OSError:
                time.sleep(0.1)
    assert since is not None and after is not None
    assert after >= 32 * MiB, (since, after)       # the block held after the reset
    # the 96 MiB the group held before the reset are not in the peak since
    assert lifetime - since >= 64 * MiB, (lifetime, since)
