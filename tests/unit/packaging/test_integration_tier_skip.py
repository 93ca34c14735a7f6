"""The test command fails when the integration tier is skipped (defect 11): run one
integration file as an unprivileged user (the lab needs root, so every test skips) and
expect exit 1, unless skips are allowed explicitly."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TARGET = os.path.join(ROOT, "tests", "integration", "test_module_commands.py")


def _readable_by_everyone(path):
    """The unprivileged run uses this interpreter's environment: tox makes .tox/ 0700, so open
    the directories above sys.prefix (up to /) for reading and traversal."""
    path = os.path.abspath(path)
    while path != os.path.dirname(path):
        mode = os.stat(path).st_mode
        if mode & 0o005 != 0o005:
            os.chmod(path, mode | 0o005)
        path = os.path.dirname(path)


def run_unprivileged(extra_env):
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", ROOT,
            "-c", os.path.join(ROOT, "tox.ini"), TARGET]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("needs setpriv to drop root")
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + argv
        _readable_by_everyone(sys.prefix)
    env = dict(os.environ, HOME="/tmp", **extra_env)
    env.pop("CEPH_RECOVERY_ALLOW_SKIP", None) if not extra_env else None
    return subprocess.run(argv, capture_output=True, text=True, cwd="/tmp", env=env,
                          timeout=300)


def test_skipped_integration_tier_fails_the_run():
    p = run_unprivileged({})
    assert p.returncode == 1, p.stdout[-800:]
    assert "integration test(s) skipped (the tier must run" in p.stdout


def test_skips_allowed_explicitly_pass():
    p = run_unprivileged({"CEPH_RECOVERY_ALLOW_SKIP": "1"})
    assert p.returncode == 0, p.stdout[-800:]
