"""cephadm deployments: unit names of the `cephadm` launcher, and the template-level gate
drop-in (scripts/systemd/cephadm/ceph-recovery-gate.conf) checked with `systemd-analyze verify`
against a cephadm-style `ceph-<fsid>@.service`, and its shell run for real with a stand-in
helper (no container engine or systemd PID 1 here)."""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess

import pytest

from ceph_recovery_tools.helper import launchers

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
DROPIN = os.path.join(REPO, "scripts", "systemd", "cephadm", "ceph-recovery-gate.conf")
FSID = "5e1a4c3e-2b7d-4f6a-9c0e-1d2f3a4b5c6d"
ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze not installed")

# The unit cephadm writes per cluster (cephadm's unit template, data_dir /var/lib/ceph).
CEPHADM_UNIT = """[Unit]
Description=Ceph %i for {fsid}
PartOf=ceph-{fsid}.target
After=network-online.target local-fs.target time-sync.target
Wants=network-online.target local-fs.target time-sync.target
Before=ceph-{fsid}.target

[Service]
LimitNOFILE=1048576
LimitNPROC=1048576
EnvironmentFile=-/etc/environment
ExecStart=/bin/bash /var/lib/ceph/{fsid}/%i/unit.run
ExecStop=-/bin/bash -c 'bash /var/lib/ceph/{fsid}/%i/unit.stop'
ExecStopPost=-/bin/bash /var/lib/ceph/{fsid}/%i/unit.poststop
Restart=on-failure
RestartSec=10s
TimeoutStartSec=200
TimeoutStopSec=120
StartLimitInterval=30min
StartLimitBurst=5

[Install]
WantedBy=ceph-{fsid}.target
"""


def _units(tmp_path, dropin_text=None):
    d = tmp_path / "units"
    (d / f"ceph-{FSID}@.service.d").mkdir(parents=True)
    (d / f"ceph-{FSID}@.service").write_text(CEPHADM_UNIT.format(fsid=FSID))
    (d / f"ceph-{FSID}.target").write_text("[Unit]\nDescription=cluster\n")
    with open(DROPIN) as f:
        text = f.read() if dropin_text is None else dropin_text
    (d / f"ceph-{FSID}@.service.d" / "ceph-recovery-gate.conf").write_text(text)
    return d


def _verify(d, *units):
    env = dict(os.environ, SYSTEMD_UNIT_PATH="%s:" % d)
    return subprocess.run([ANALYZE, "verify", *units], capture_output=True, text=True, env=env,
                          timeout=60, cwd=str(d))


@needs_analyze
def test_template_dropin_verifies_for_osd_and_other_daemons(tmp_path):
    d = _units(tmp_path)
    res = _verify(d, f"ceph-{FSID}@osd.0.service", f"ceph-{FSID}@mon.a.service")
    ours = [ln for ln in res.stderr.splitlines()
            if "ceph-recovery" in ln or "ExecCondition" in ln or "Unknown" in ln]
    assert res.returncode == 0 and ours == [], res.stderr


@needs_analyze
def test_template_dropin_is_applied_to_instances(tmp_path):
    """Negative control: the drop-in's shell made missing; verify of an osd instance must
    name exactly that command, so the template-level drop-in is really read."""
    with open(DROPIN) as f:
        bad = f.read().replace("ExecCondition=/bin/sh ", "ExecCondition=/nonexistent/sh ")
    res = _verify(_units(tmp_path, bad), f"ceph-{FSID}@osd.7.service")
    assert "Command /nonexistent/sh is not executable" in res.stderr
    assert res.returncode != 0


def _exec_condition(instance: str, helper: str) -> list:
    """The ExecCondition= argv as systemd would run it for `instance` (%i, $$ unescaped)."""
    with open(DROPIN) as f:
        line = next(ln for ln in f if ln.startswith("ExecCondition="))
    cmd = line[len("ExecCondition="):].strip()
    cmd = cmd.replace("%i", instance).replace("$$", "$")
    cmd = cmd.replace("/usr/bin/ceph-recovery-helper", helper)
    m = re.match(r"^(\S+) -c '(.*)' (\S+) (\S+)$", cmd)
    assert m, cmd
    return [m.group(1), "-c", m.group(2), m.group(3), m.group(4)]


def _fake_helper(tmp_path, rc: int) -> str:
    path = tmp_path / "helper"
    path.write_text('#!/bin/sh\necho "$@" > "%s"\nexit %d\n' % (tmp_path / "called", rc))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.parametrize("rc", [0, 1])
def test_osd_instances_ask_the_gate_with_their_id(tmp_path, rc):
    helper = _fake_helper(tmp_path, rc)
    res = subprocess.run(_exec_condition("osd.12", helper), capture_output=True, text=True)
    assert res.returncode == rc
    called = (tmp_path / "called").read_text().split()
    assert called[:2] == ["gate", "12"]
    assert "--keyring" in called and "/etc/ceph/ceph.client.recovery-helper.keyring" in called


@pytest.mark.parametrize("instance", ["mon.a", "mgr.host1.abcdef", "crash.host1"])
def test_other_daemons_start_without_asking(tmp_path, instance):
    helper = _fake_helper(tmp_path, 1)
    res = subprocess.run(_exec_condition(instance, helper), capture_output=True, text=True)
    assert res.returncode == 0
    assert not (tmp_path / "called").exists()


def test_cephadm_launcher_unit_names():
    launcher = launchers.unit_launcher("cephadm", FSID)
    assert launcher.name == "cephadm"
    assert launcher.unit(3) == f"ceph-{FSID}@osd.3.service"
    assert launchers.systemctl_start(3, launcher.unit) == [
        "systemctl", "start", f"ceph-{FSID}@osd.3.service"]
    assert launchers.systemctl_main_pid(3, launcher.unit)[-1] == f"ceph-{FSID}@osd.3.service"
    assert launchers.unit_launcher("systemd").unit(3) == "ceph-osd@3.service"


@pytest.mark.parametrize("fsid", [None, "", "not-a-fsid", FSID.upper(), FSID + "0"])
def test_cephadm_launcher_refuses_a_bad_fsid(fsid):
    with pytest.raises(ValueError):
        launchers.unit_launcher("cephadm", fsid)


def test_unknown_launcher_is_refused():
    with pytest.raises(ValueError, match="unknown launcher"):
        launchers.unit_launcher("docker")
