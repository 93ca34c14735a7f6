"""The lab's Ceph release selection (scripts/lab/release.py), without building a chroot."""
from __future__ import annotations

import os
import sys

import pytest

from ceph_recovery_tools.lab import cli, release


def fake_root(tmp_path):
    root = tmp_path / "root"
    (root / "usr" / "bin").mkdir(parents=True)
    return str(root)


def test_pacific_runs_host_tools_unprefixed():
    state = {"dir": "/tmp/L", "root": None}
    assert release.ensure_root("pacific") is None
    assert release.tool(state, "ceph") == ["ceph"]
    assert release.host_path(state, "/usr/share/ceph/mgr") == "/usr/share/ceph/mgr"
    assert release.tool_argv(state, "ceph-recovery-helper") == [
        os.path.join(os.path.dirname(sys.executable), "ceph-recovery-helper")]
    assert release.tool_env(state) == dict(os.environ)
    # a lab brought up by the installed packages' Python runs the installed commands
    assert release.tool_argv(dict(state, bin="/usr/bin"), "ceph-recovery-drill") == [
        "/usr/bin/ceph-recovery-drill"]


def test_unknown_release_is_refused():
    with pytest.raises(ValueError, match="unknown Ceph release 'quincy'"):
        release.ensure_root("quincy")


def test_chroot_release_prefixes_tools_and_maps_paths(tmp_path):
    root = fake_root(tmp_path)
    state = {"dir": "/tmp/L", "root": root, "pythonpath": "/tmp/L/pylib:" + release.DEPS_DIR}
    assert release.tool(state, "ceph-osd") == ["chroot", root, "ceph-osd"]
    assert release.host_path(state, "/usr/share/ceph/mgr") == root + "/usr/share/ceph/mgr"
    assert release.tool_argv(state, "ceph-recovery-drill") == [
        "chroot", root, "python3", "/tmp/L/pylib/bin/ceph-recovery-drill"]
    assert release.tool_env(state)["PYTHONPATH"] == state["pythonpath"]


def test_inside_the_chroot_no_prefix(tmp_path):
    # a helper running inside the chroot does not see ROOT: tools run directly there
    state = {"dir": "/tmp/L", "root": str(tmp_path / "not-visible-from-here")}
    assert release.prefix(state) == []
    assert release.tool(state, "ceph") == ["ceph"]


def test_install_core_copies_packages_and_writes_tool_wrappers(tmp_path):
    state = {"dir": str(tmp_path), "root": fake_root(tmp_path)}
    path = release.install_core(state)
    assert path == f"{tmp_path}/pylib:{release.DEPS_DIR}"
    for pkg in ("ceph_recovery", "ceph_recovery_tools"):
        assert (tmp_path / "pylib" / pkg / "__init__.py").exists()
    wrapper = (tmp_path / "pylib" / "bin" / "ceph-recovery-helper").read_text()
    assert "from ceph_recovery_tools.helper.cli import main" in wrapper


def test_unmount_lab_removes_only_the_empty_dirs_it_made(tmp_path, monkeypatch):
    base = tmp_path / "chroots"
    root = base / "tentacle"
    (root / "tmp" / "labs" / "L").mkdir(parents=True)
    (root / "tmp" / "other").mkdir()
    monkeypatch.setenv("CEPH_RECOVERY_CHROOTS", str(base))
    assert release.unmount_lab("/tmp/labs/L") == []
    assert not (root / "tmp" / "labs").exists()      # L and its now-empty parent
    assert (root / "tmp" / "other").is_dir()          # never anything else
    assert (root / "tmp").is_dir()                    # never the chroot's top level


def test_cli_ceph_option():
    args = cli.parser().parse_args(["up", "--dir", "/tmp/x", "--ceph", "pacific"])
    assert args.ceph == "pacific"
    assert cli.parser().parse_args(["up", "--dir", "/tmp/x"]).ceph == "tentacle"
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["up", "--dir", "/tmp/x", "--ceph", "quincy"])


def test_ceph_mgr_gets_neither_the_core_nor_the_tools_dependencies_on_its_path(
        tmp_path, monkeypatch):
    from ceph_recovery_tools.lab import launch
    monkeypatch.setenv("PYTHONPATH", "/somewhere/site-packages")
    host = {"dir": "/tmp/L", "root": None, "pythonpath": "/venv/site-packages"}
    assert "PYTHONPATH" not in launch.mgr_env(host)
    root = fake_root(tmp_path)
    chroot = {"dir": "/tmp/L", "root": root, "pythonpath": "/tmp/L/pylib:" + release.DEPS_DIR}
    assert "PYTHONPATH" not in launch.mgr_env(chroot)        # Tentacle: nothing ceph-mgr needs
    os.makedirs(root + release.DEPS_DIR + "/bcrypt")          # Reef: Ceph's own bcrypt fix
    assert launch.mgr_env(chroot)["PYTHONPATH"] == release.DEPS_DIR
