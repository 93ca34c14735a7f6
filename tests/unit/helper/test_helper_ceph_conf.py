"""The helper with CEPH_CONF in its environment (defect 8): it honours the variable like the
ceph CLI (--conf first, then the lab's, then $CEPH_CONF, then /etc/ceph/ceph.conf), and a conf
that does not exist is a clear error, not a traceback out of librados. The lab run of a helper
with CEPH_CONF exported is tests/integration/test_fault_matrix.py::test_helper_with_ceph_conf."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

from ceph_recovery_tools.helper import cli


def args(**kw):
    base = dict(conf=None, lab_dir=None, keyring=None, state_dir=None, cgroup=None,
                name="client.recovery-helper")
    base.update(kw)
    return argparse.Namespace(**base)


def test_ceph_conf_is_the_default_conf(monkeypatch, tmp_path):
    monkeypatch.setenv("CEPH_CONF", str(tmp_path / "c.conf"))
    assert cli._resolve(args(), "h1")["conf"] == str(tmp_path / "c.conf")
    assert cli._resolve(args(conf="/x.conf"), "h1")["conf"] == "/x.conf"
    monkeypatch.delenv("CEPH_CONF")
    assert cli._resolve(args(), "h1")["conf"] == cli.DEFAULT_CONF


def test_run_with_ceph_conf_naming_a_missing_file_says_so(tmp_path):
    env = dict(os.environ, CEPH_CONF=str(tmp_path / "missing.conf"))
    p = subprocess.run([sys.executable, "-c", "import sys\nfrom ceph_recovery_tools.helper.cli "
                        "import main\nsys.exit(main())", "run", "--once", "--host", "h1",
                        "--state-dir", str(tmp_path / "st")],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == cli.EXIT_ERROR, (p.returncode, p.stderr[-800:])
    assert "missing.conf not found (from $CEPH_CONF)" in p.stderr
    assert "Traceback" not in p.stderr
