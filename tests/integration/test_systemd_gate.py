"""The boot gate under a real systemd as PID 1 (scripts/lab/systemd_gate.sh): a Debian bookworm
container booted by systemd-nspawn, with the helper installed from this checkout's wheel, the
repo's gate drop-in and helper unit, and a stand-in ceph-osd@.service. The script prints one
PASS/FAIL line per check; each check below must pass, in this order, and none may fail."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import pytest

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "lab", "systemd_gate.sh")
# a prefix of each PASS line the script must print, in its order
CHECKS = (
    "systemd is PID 1 in the container",
    "systemd-analyze verify ceph-osd@0.service (with the gate drop-in)",
    "held osd.0: start skipped by ExecCondition",
    "granted osd.0 starts (active)",
    "container rebooted (new PID 1",
    "after reboot the held osd.1 stays down: the boot's start skipped by ExecCondition",
    "after reboot the granted osd.0 started at boot",
    "a cache from before this boot holds osd.1 (stale-cache)",
    "all checks",
)


def test_the_gate_holds_and_grants_under_a_real_systemd_across_a_reboot():
    if os.geteuid() != 0:
        pytest.skip("systemd-nspawn and debootstrap need root")
    work = tempfile.mkdtemp(prefix="sdgate-", dir="/tmp")
    try:
        p = subprocess.run(["bash", SCRIPT], env=dict(os.environ, WORK=work),
                           capture_output=True, text=True, timeout=900)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith(("PASS: ", "FAIL: "))]
        print("\n" + "\n".join(lines))
        assert p.returncode == 0, (p.stdout[-4000:], p.stderr[-2000:])
        assert not [ln for ln in lines if ln.startswith("FAIL: ")], lines
        passed = [ln[len("PASS: "):] for ln in lines]
        assert len(passed) == len(CHECKS), passed
        for got, want in zip(passed, CHECKS):
            assert got.startswith(want), (got, want)
    finally:
        shutil.rmtree(work, ignore_errors=True)
