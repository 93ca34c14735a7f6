"""Running the project's clients as the lab release's client (scripts/lab/inrelease.py), without
a lab: the drill's argv, call() and scratch() on the host's release and on a chroot release."""
from __future__ import annotations

import os

import pytest

from ceph_recovery_tools.drill import cli as drill_cli
from ceph_recovery_tools.lab import inrelease


def add(a, b):
    return {"sum": a + b, "pair": (a, b)}


def test_drill_argv_names_every_given_option_and_the_cli_parses_it():
    argv = inrelease.drill_argv("/L/log/d.json", lab_dir="/L", fail="host:h2", objects=300,
                                downtime=15.0, naive=False, fit_first=None, concurrency="1",
                                restart_mgr_after=6.0, host_mem_limit=512 << 20, keep=True,
                                recovery_sleep=0.05)
    assert argv[:2] == ["--json", "/L/log/d.json"]
    assert "--naive" not in argv and "--fit-first" not in argv
    args = drill_cli.parser().parse_args(argv)
    assert (args.dir, args.fail, args.objects, args.downtime, args.concurrency) == (
        "/L", "host:h2", 300, 15.0, "1")
    assert (args.restart_mgr_after, args.host_mem_limit, args.keep) == (6.0, 512 << 20, True)
    assert args.recovery_sleep == 0.05


def test_drill_argv_refuses_an_option_the_cli_lacks():
    with pytest.raises(ValueError, match="'tune' has no ceph-recovery-drill flag"):
        inrelease.drill_argv("/x.json", tune=False)
    with pytest.raises(ValueError, match="'colour'"):
        inrelease.drill_argv("/x.json", colour="red")


def test_host_release_calls_in_process_and_scratch_is_the_fallback(tmp_path):
    state = {"dir": str(tmp_path), "root": None}
    assert not inrelease.in_chroot(state)
    assert inrelease.call(state, add, 2, 3) == {"sum": 5, "pair": [2, 3]}   # JSON round trip
    assert inrelease.scratch(state, "/somewhere") == "/somewhere"


def fake_chroot(tmp_path, monkeypatch):
    """A tentacle lab state whose chroot is faked by a `chroot` on PATH that drops its root
    argument and runs the rest."""
    root = tmp_path / "root"
    (root / "usr" / "bin").mkdir(parents=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "chroot").write_text('#!/bin/sh\nshift\nexec "$@"\n')
    (bindir / "chroot").chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    return {"dir": str(tmp_path), "root": str(root), "pythonpath": "", "ceph": "tentacle"}


def test_chroot_release_runs_the_function_source_under_its_python(tmp_path, monkeypatch):
    """The function's source travels as `python3 -c`, its JSON result comes back."""
    state = fake_chroot(tmp_path, monkeypatch)
    assert inrelease.in_chroot(state)
    assert inrelease.call(state, add, 2, 3) == {"sum": 5, "pair": [2, 3]}
    with pytest.raises(inrelease.ReleaseCallError, match="add under the tentacle chroot"):
        inrelease.call(state, add, 2, "x")                  # TypeError inside: rc 1
    where = inrelease.scratch(state, "/unused")
    assert os.path.dirname(where) == os.path.join(str(tmp_path), "scratch")
    assert os.path.isdir(where)


def count(sums):
    return len(sums)


def test_chroot_release_takes_arguments_larger_than_one_argv_string(tmp_path, monkeypatch):
    """The checksums of a fault matrix's objects (thousands of entries) exceed the kernel's
    128 KiB limit on one argv string: they must reach the release's python3 all the same."""
    state = fake_chroot(tmp_path, monkeypatch)
    sums = {"row-%05d" % i: "%064x" % i for i in range(4000)}      # about 360 KB of JSON
    assert inrelease.call(state, count, sums) == 4000
