"""The boot gate fails safe and says why (defect 5): an error before its check (a broken
dependency after a Python upgrade, a usage error) must not exit 1, which systemd's
ExecCondition= takes as 'skip this start' and never retries."""
from __future__ import annotations

import subprocess
import sys

import pytest

from ceph_recovery_tools.helper import cli


def gate_in_subprocess(prelude: str, *args: str):
    code = ("import sys\n%s\nfrom ceph_recovery_tools.helper.cli import main\n"
            "sys.exit(main(%r))" % (prelude, ["gate"] + list(args)))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def test_broken_dependency_allows_and_says_why():
    """python3-rados missing for this Python: the gate answers 0 and names the error."""
    p = gate_in_subprocess("sys.modules['rados'] = None", "0", "--conf", "/nonexistent",
                           "--timeout", "1")
    assert p.returncode == 0, (p.returncode, p.stderr[-500:])
    assert "gate error before any decision" in p.stderr and "rados" in p.stderr
    assert "may start" in p.stderr


def test_broken_dependency_with_no_cache_hold_holds_and_says_why():
    p = gate_in_subprocess("sys.modules['rados'] = None", "0", "--no-cache", "hold")
    assert p.returncode == 1 and "held by the fail-safe policy --no-cache hold" in p.stderr


@pytest.mark.parametrize("argv", [["gate", "0", "--no-such-flag"], ["gate", "zero"], ["gate"]])
def test_usage_error_answers_instead_of_exiting_2(argv, capsys):
    assert cli.main(argv) == cli.EXIT_ALLOW
    assert "usage or setup error" in capsys.readouterr().err


def test_other_subcommands_still_fail_on_usage_errors():
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "--no-such-flag"])
    assert e.value.code == 2
