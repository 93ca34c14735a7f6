"""compat.py against the REAL mgr_module.py of each Ceph release that can be had here.

Each case runs test_compat_probe.py as a script in a fresh interpreter of that release:
the host's python3 with /usr/share/ceph/mgr (Pacific 16), and `chroot ROOT python3` with the
chroot's /usr/share/ceph/mgr for the chroots scripts/chroot.sh built (Reef 18, Tentacle 20;
Python 3.13/3.14). Each release's mgr_module.py is also loaded by Python 3.9, the Python of
Ceph's EL9 container images (cephadm's ceph-mgr), in the bullseye chroot: that release's mgr
files and its pure-Python `ceph` package and `ceph_argparse` are copied in. The module is the
self-contained folder an install copies (build_module.build: the core inside it), and nothing
of the project is on the interpreter's path. The probe imports the module as ceph-mgr does
(package `recovery` over that folder, the release's mgr dir first on sys.path), lets MgrModule
register its commands, and prints what ceph-mgr would advertise. ceph-mgr's C extension
`ceph_module` (and cephfs, where missing) only exist inside ceph-mgr; the probe stands in empty
base classes.
A release whose chroot is not built is skipped with the command that builds it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile

import pytest

from ceph_recovery_tools import build_module

HERE = os.path.abspath(__file__)
PROBE = os.path.join(os.path.dirname(HERE), "test_compat_probe.py")
MODULE_DIR = os.path.abspath(os.path.join(os.path.dirname(HERE), "..", "..", "..",
                                          "mgr_module", "recovery"))
CHROOTS = os.environ.get("CEPH_RECOVERY_CHROOTS", "/var/cache/ceph-recovery/chroots")
MGR_DIR = "/usr/share/ceph/mgr"
COMMANDS = {"recovery status": "r", "recovery start-controlled": "w", "recovery pause": "w",
            "recovery maintenance enter": "w", "recovery maintenance exit": "w",
            "recovery maintenance ls": "r", "recovery wait": "r",
            "recovery resume": "w", "recovery abort": "w", "recovery hold": "w",
            "recovery release": "w", "recovery helper-report": "w",
            "recovery network probe": "w", "recovery network": "r",
            "recovery drill start": "w", "recovery drill abort": "w",
            "recovery drill budget": "w",
            "recovery drill report": "r", "recovery version": "r", "recovery perf": "r"}


def _release_root(release: str) -> str:
    root = os.path.join(CHROOTS, release)
    if not os.path.exists(os.path.join(root, ".ready")):
        pytest.skip(f"no {release} chroot: build it with `scripts/chroot.sh {release}` (root)")
    return root


def _run_probe(release: str, tmp_path) -> dict:
    if release == "pacific":
        if not os.path.exists(os.path.join(MGR_DIR, "mgr_module.py")):
            pytest.skip("no host Ceph mgr (apt-get install ceph-mgr)")
        built = build_module.build(str(tmp_path / "recovery"), MODULE_DIR)
        argv = ["/usr/bin/python3", PROBE, MGR_DIR, built]
    else:
        root = _release_root(release)
        if os.geteuid() != 0:
            pytest.skip("chroot needs root")
        inside = tempfile.mkdtemp(prefix="compat-", dir=os.path.join(root, "tmp"))
        try:
            shutil.copy(PROBE, inside)
            build_module.build(os.path.join(inside, "recovery"), MODULE_DIR)
            rel = inside[len(root):]
            argv = ["chroot", root, "python3", f"{rel}/{os.path.basename(PROBE)}", MGR_DIR,
                    f"{rel}/recovery"]
            return _parse(subprocess.run(argv, capture_output=True, text=True, timeout=120))
        finally:
            shutil.rmtree(inside, ignore_errors=True)
    return _parse(subprocess.run(argv, capture_output=True, text=True, timeout=120))


def _release_files(release: str) -> str:
    """The root holding a release's /usr/share/ceph/mgr and python3 dist-packages."""
    if release == "pacific":
        if not os.path.exists(os.path.join(MGR_DIR, "mgr_module.py")):
            pytest.skip("no host Ceph mgr (apt-get install ceph-mgr)")
        return "/"
    return _release_root(release)


def _run_probe_py39(release: str) -> dict:
    """The probe under the bullseye chroot's Python 3.9, against `release`'s mgr files."""
    src, root = _release_files(release), _release_root("bullseye")
    if os.geteuid() != 0:
        pytest.skip("chroot needs root")
    inside = tempfile.mkdtemp(prefix="compat39-", dir=os.path.join(root, "tmp"))
    try:
        mgr, lib = os.path.join(inside, "mgr"), os.path.join(inside, "lib")
        os.makedirs(mgr)
        for name in os.listdir(src + MGR_DIR):
            if name.endswith(".py"):
                shutil.copy(os.path.join(src + MGR_DIR, name), mgr)
        dist = os.path.join(src, "usr/lib/python3/dist-packages")
        shutil.copytree(os.path.join(dist, "ceph"), os.path.join(lib, "ceph"),
                        ignore=shutil.ignore_patterns("__pycache__", "tests"))
        shutil.copy(os.path.join(dist, "ceph_argparse.py"), lib)
        shutil.copy(PROBE, inside)
        build_module.build(os.path.join(inside, "recovery"), MODULE_DIR)
        rel = inside[len(root):]
        argv = ["chroot", root, "env", "PYTHONPATH=%s/lib" % rel, "python3",
                f"{rel}/{os.path.basename(PROBE)}", f"{rel}/mgr", f"{rel}/recovery"]
        return _parse(subprocess.run(argv, capture_output=True, text=True, timeout=120))
    finally:
        shutil.rmtree(inside, ignore_errors=True)


def _parse(proc: subprocess.CompletedProcess) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


RELEASES = [("pacific", False, False), ("reef", False, True), ("tentacle", True, True)]


@pytest.mark.parametrize("release,registry,flag_bools", RELEASES)
def test_commands_register_on_each_release(release, registry, flag_bools, tmp_path):
    _check_registered(_run_probe(release, tmp_path), registry, flag_bools)


@pytest.mark.parametrize("release,registry,flag_bools", RELEASES)
def test_commands_register_under_python_3_9_on_each_release(release, registry, flag_bools):
    got = _run_probe_py39(release)
    assert got["python"] == "3.9"
    _check_registered(got, registry, flag_bools)


def _check_registered(got: dict, registry: bool, flag_bools: bool) -> None:
    # the folder alone: the core loaded from inside it, and no library from outside
    assert got["import_error"] is None
    assert "/recovery/_core/ceph_recovery/" in got["core"], got["core"]
    assert not {"structlog", "tenacity", "ceph_recovery_tools"} & set(got["loaded"])
    assert got["registry"] is registry
    assert got["has_cli_read_command"] is not registry
    assert got["perm"] == COMMANDS
    # arguments come from the real annotations on every release
    drill = got["args"]["recovery drill start"]
    for arg in ("fail", "downtime"):        # required: no req=false
        assert "type=CephString" in drill[arg] and "req=false" not in drill[arg]
    start = got["args"]["recovery start-controlled"]
    assert start["budget"] == ["req=false", "type=CephString"]
    assert start["scope"] == ["n=N", "req=false", "type=CephString"]
    # Reef and later mark bool arguments positional=false: a flag (--dry-run), never a word
    assert {"req=false", "type=CephBool"} <= set(start["dry_run"])
    assert ("positional=false" in start["dry_run"]) is flag_bools
    # Reef and later also mark `format` positional=false (the CLI's -f)
    def named(cmd):
        return {k: sorted(set(v) - {"positional=false"}) for k, v in got["args"][cmd].items()}
    assert named("recovery hold") == {"bucket": ["type=CephString"],
                                      "format": ["req=false", "type=CephString"]}
    assert named("recovery maintenance enter") == {
        "bucket": ["type=CephString"], "format": ["req=false", "type=CephString"],
        "max_duration": ["req=false", "type=CephString"],
        "reason": ["req=false", "type=CephString"]}
    assert got["args"]["recovery wait"]["timeout"] == ["req=false", "type=CephFloat"]
    assert "tick_interval" in got["options"] and "auto_hold" in got["options"]


def test_tentacle_runs_python_3_14_or_later(tmp_path):
    got = _run_probe("tentacle", tmp_path)
    assert tuple(int(x) for x in got["python"].split(".")) >= (3, 14)
