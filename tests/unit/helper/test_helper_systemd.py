"""systemd units of the helper (checked with `systemd-analyze verify`) and the systemd launcher's
command lines (PID 1 is not systemd here: the units cannot be run, only verified)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from ceph_recovery_tools.helper import launchers

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
UNITS = os.path.join(REPO, "scripts", "systemd")
HELPER_UNIT = "ceph-recovery-helper.service"
DROPIN = os.path.join("ceph-osd@.service.d", "ceph-recovery-gate.conf")
OSD_UNIT = "/lib/systemd/system/ceph-osd@.service"
ANALYZE = shutil.which("systemd-analyze")

needs_analyze = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze not installed "
                                   "(Debian package systemd); unit files not verified")


def _helper_bin() -> str:
    path = os.path.join(os.path.dirname(sys.executable), "ceph-recovery-helper")
    if not os.access(path, os.X_OK):
        pytest.skip("ceph-recovery-helper entry point not installed beside %s" % sys.executable)
    return path


def _unit_dir(tmp_path, helper_bin: str):
    """Copies of our units (and Debian's ceph-osd@.service) with the helper's real path."""
    d = tmp_path / "units"
    (d / "ceph-osd@.service.d").mkdir(parents=True)
    for rel in (HELPER_UNIT, DROPIN):
        with open(os.path.join(UNITS, rel)) as f:
            text = f.read()
        assert "/usr/bin/ceph-recovery-helper " in text
        (d / rel).write_text(text.replace("/usr/bin/ceph-recovery-helper", helper_bin))
    if os.path.exists(OSD_UNIT):
        shutil.copy(OSD_UNIT, d / "ceph-osd@.service")
    else:
        pytest.skip("%s missing (Debian package ceph-osd)" % OSD_UNIT)
    return d


def _verify(unit_dir, *units):
    env = dict(os.environ, SYSTEMD_UNIT_PATH="%s:" % unit_dir)
    return subprocess.run([ANALYZE, "verify"] + list(units), capture_output=True, text=True,
                          env=env, timeout=60, cwd=str(unit_dir))


@needs_analyze
def test_units_verify_clean(tmp_path):
    d = _unit_dir(tmp_path, _helper_bin())
    res = _verify(d, str(d / HELPER_UNIT), "ceph-osd@0.service")
    ours = [line for line in res.stderr.splitlines()
            if "ceph-recovery" in line or "ExecCondition" in line or "Unknown" in line]
    assert res.returncode == 0 and ours == [], res.stderr


@needs_analyze
def test_dropin_is_applied_to_ceph_osd_instances(tmp_path):
    """Negative control: point the drop-in's ExecCondition at a missing shell; verify of
    ceph-osd@3 must complain about exactly that command, proving the drop-in is parsed."""
    d = _unit_dir(tmp_path, _helper_bin())
    bad = (d / DROPIN).read_text().replace("ExecCondition=/bin/sh ", "ExecCondition=/nonexistent/sh ")
    (d / DROPIN).write_text(bad)
    res = _verify(d, "ceph-osd@3.service")
    assert "Command /nonexistent/sh is not executable" in res.stderr
    assert res.returncode != 0


@needs_analyze
def test_verify_catches_a_misspelt_directive(tmp_path):
    d = _unit_dir(tmp_path, _helper_bin())
    bad = (d / DROPIN).read_text().replace("ExecCondition=", "ExecConditon=")
    (d / DROPIN).write_text(bad)
    res = _verify(d, "ceph-osd@0.service")
    assert "Unknown key 'ExecConditon'" in res.stderr


def test_dropin_and_helper_unit_contents():
    with open(os.path.join(UNITS, DROPIN)) as f:
        dropin = f.read()
    assert "[Service]\nExecCondition=/bin/sh -c " in dropin
    assert "' /usr/bin/ceph-recovery-helper %i --conf " in dropin
    with open(os.path.join(UNITS, HELPER_UNIT)) as f:
        unit = f.read()
    assert "\nRestart=always\n" in unit and "--name client.recovery-helper" in unit
    assert "ExecStart=/usr/bin/ceph-recovery-helper run --launcher systemd" in unit


def test_systemd_launcher_command_lines():
    assert launchers.systemctl_start(12) == ["systemctl", "start", "ceph-osd@12.service"]
    assert launchers.systemctl_stop(0) == ["systemctl", "stop", "ceph-osd@0.service"]
    assert launchers.systemctl_main_pid(5) == [
        "systemctl", "show", "--property=MainPID", "--value", "ceph-osd@5.service"]


@pytest.mark.parametrize("out,pid", [("4242\n", 4242), ("0\n", None), ("", None),
                                     ("garbage", None)])
def test_parse_main_pid(out, pid):
    assert launchers.parse_main_pid(out) == pid
