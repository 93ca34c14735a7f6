"""Argument parsing of ceph-recovery-lab and the refusal to build over an existing lab."""
import os

import pytest

from ceph_recovery_tools.lab import bootstrap, cli


def _parse(*argv):
    return cli.parser().parse_args(list(argv))


def test_up_defaults():
    args = _parse("up", "--dir", "/tmp/x")
    assert (args.hosts, args.racks, args.osds_per_host) == (3, 2, 2)
    assert (args.objectstore, args.host_mem_limit, args.netns, args.helpers) == (
        "bluestore", None, False, True)


def test_up_options_and_bytes():
    args = _parse("up", "--dir", "/tmp/x", "--hosts", "4", "--racks", "3", "--osds-per-host",
                  "1", "--objectstore", "memstore", "--host-mem-limit", "600M", "--netns",
                  "--no-helpers")
    assert (args.hosts, args.racks, args.osds_per_host, args.objectstore) == (4, 3, 1, "memstore")
    assert (args.host_mem_limit, args.netns, args.helpers) == (600 << 20, True, False)


@pytest.mark.parametrize("argv", [
    ["up"], ["up", "--dir", "d", "--host-mem-limit", "lots"], ["up", "--dir", "d", "--hosts", "0"],
    ["up", "--dir", "d", "--objectstore", "filestore"], ["status"], ["frobnicate"],
])
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        _parse(*argv)
    assert exc.value.code == 2


def test_more_racks_than_hosts_is_a_usage_error(tmp_path, capsys):
    args = _parse("up", "--dir", str(tmp_path), "--hosts", "2", "--racks", "3",
                  "--module-dir", str(tmp_path))
    assert cli.cmd_up(args) == 2
    assert "--racks 3 > --hosts 2" in capsys.readouterr().err


def test_up_refuses_a_dir_holding_a_cluster_and_changes_nothing(tmp_path, capsys):
    (tmp_path / "lab.json").write_text('{"version": 1}')
    before = sorted(os.listdir(tmp_path))
    args = _parse("up", "--dir", str(tmp_path), "--module-dir", str(tmp_path))
    assert cli.cmd_up(args) == 2
    assert "already holds a lab cluster" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == before


def test_module_dir_discovery(tmp_path, monkeypatch):
    (tmp_path / "repo" / "mgr_module" / "recovery").mkdir(parents=True)
    (tmp_path / "repo" / "sub" / "deeper").mkdir(parents=True)
    monkeypatch.delenv("CEPH_RECOVERY_MODULE_DIR", raising=False)
    found = bootstrap.module_dir_from(None, str(tmp_path / "repo" / "sub" / "deeper"))
    assert found == str(tmp_path / "repo" / "mgr_module" / "recovery")
    # outside a checkout: the copy installed with the package (ceph_recovery_mgr_module)
    installed = bootstrap.module_dir_from(None, "/")
    assert installed.endswith(os.path.join("ceph_recovery_mgr_module", "recovery"))
    assert os.path.isfile(os.path.join(installed, "module.py"))
    assert bootstrap.module_dir_from("rel", "/") == os.path.abspath("rel")
    monkeypatch.setenv("CEPH_RECOVERY_MODULE_DIR", "/opt/m")
    assert bootstrap.module_dir_from(None, str(tmp_path)) == "/opt/m"


def test_too_long_a_dir_is_refused_before_anything_is_made(tmp_path, capsys):
    d = tmp_path / ("x" * 90)
    args = _parse("up", "--dir", str(d), "--module-dir", str(tmp_path))
    assert cli.cmd_up(args) == 2
    assert "too long for unix sockets" in capsys.readouterr().err
    assert not d.exists()


@pytest.mark.parametrize("opts", [{"hosts": 2, "racks": 3}, {"osds_per_host": 0},
                                  {"objectstore": "filestore"}])
def test_build_api_refuses_bad_options_before_making_anything(tmp_path, opts):
    from ceph_recovery_tools.lab import build
    d = tmp_path / "lab"
    with pytest.raises(build.LabUsageError):
        build.up(str(d), build.LabOptions(module_dir=str(tmp_path), **opts))
    assert not d.exists()


def test_the_lab_ceph_command_runs_the_lab_releases_cli_on_the_lab():
    state = {"root": "/nonexistent-root", "conf": "/t/lab/ceph.conf"}
    args = _parse("ceph", "--dir", "/t/lab", "--", "-s", "-f", "json")
    assert args.args == ["--", "-s", "-f", "json"]
    # no chroot at that root: the release's tools are run as they are (the prefix is empty)
    assert cli.lab_ceph_argv(state, args.args) == ["ceph", "-c", "/t/lab/ceph.conf", "-s",
                                                   "-f", "json"]
