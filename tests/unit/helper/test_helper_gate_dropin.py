"""The boot gate's systemd drop-ins never skip a start silently when the gate cannot answer
(defect 5, the missing-binary case): the ExecCondition= command is run here as systemd would
(specifiers and `$$` expanded, an exec failure is status 203) and its answer read as systemd
reads it: 0 start, 1..254 skip without failing the unit, a signal or 255 fail the unit."""
from __future__ import annotations

import os
import shlex
import stat
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DROPINS = {"ceph-osd": os.path.join(REPO, "scripts", "systemd", "ceph-osd@.service.d",
                                    "ceph-recovery-gate.conf"),
           "cephadm": os.path.join(REPO, "scripts", "systemd", "cephadm",
                                   "ceph-recovery-gate.conf")}
INSTANCE = {"ceph-osd": "3", "cephadm": "osd.3"}
HELPER = "/usr/bin/ceph-recovery-helper"


def exec_condition(which: str, helper: str, extra: str = "") -> list:
    with open(DROPINS[which]) as f:
        line = next(ln for ln in f if ln.startswith("ExecCondition="))
    cmd = line[len("ExecCondition="):].strip() + extra
    cmd = cmd.replace("%i", INSTANCE[which]).replace("${CLUSTER}", "ceph").replace("$$", "$")
    assert HELPER in cmd
    return shlex.split(cmd.replace(HELPER, helper))


def systemd_answer(argv: list):
    """(verdict, stderr): what systemd makes of this ExecCondition= command."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (FileNotFoundError, PermissionError):
        return "skip", "status=203/EXEC"            # systemd: exit 203, within 1..254
    if p.returncode == 0:
        return "start", p.stderr
    if 1 <= p.returncode <= 254:
        return "skip", p.stderr
    return "failed", p.stderr


def fake_helper(tmp_path, body: str) -> str:
    path = tmp_path / "helper"
    path.write_text("#!/bin/sh\necho \"$@\" > %s\n%s\n" % (tmp_path / "called", body))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.parametrize("which", sorted(DROPINS))
def test_missing_helper_binary_starts_the_osd_and_says_why(which, tmp_path):
    verdict, err = systemd_answer(exec_condition(which, str(tmp_path / "nonexistent")))
    assert verdict == "start", (verdict, err)
    assert "missing or not executable" in err and "osd.3" in err


@pytest.mark.parametrize("which", sorted(DROPINS))
def test_helper_killed_by_a_signal_before_deciding_starts_the_osd(which, tmp_path):
    helper = fake_helper(tmp_path, "kill -ABRT $$")
    verdict, err = systemd_answer(exec_condition(which, helper))
    assert verdict == "start", (verdict, err)
    assert "failed with status 134 before deciding" in err


@pytest.mark.parametrize("which", sorted(DROPINS))
@pytest.mark.parametrize("rc,verdict", [(0, "start"), (1, "skip")])
def test_the_gates_own_answer_passes_through(which, rc, verdict, tmp_path):
    helper = fake_helper(tmp_path, "exit %d" % rc)
    got, err = systemd_answer(exec_condition(which, helper))
    assert got == verdict, err
    called = (tmp_path / "called").read_text().split()
    assert called[:2] == ["gate", "3"] and "--state-dir" in called


def test_no_cache_hold_sites_hold_a_start_the_gate_cannot_answer(tmp_path):
    argv = exec_condition("ceph-osd", str(tmp_path / "nonexistent"), " --no-cache hold")
    verdict, err = systemd_answer(argv)
    assert verdict == "skip" and "answers 1" in err
