"""The Debian packages build from the committed tree (scripts/build-debs.sh: dpkg-buildpackage,
then lintian, which must report no error), each holds what it promises, and their files run on
the system's Python: the helper with Debian's own python3-structlog and python3-tenacity, the
mgr module's folder with nothing but itself.
Needs dpkg-buildpackage, debhelper, dh-python and lintian, which the script installs as root;
skipped otherwise. The build takes about 10 s."""
from __future__ import annotations

import configparser
import os
import pathlib
import shutil
import subprocess

import pytest

import ceph_recovery

REPO = pathlib.Path(__file__).resolve().parents[3]
VERSION = ceph_recovery.__version__
PACKAGES = ("python3-ceph-recovery", "ceph-recovery-mgr", "ceph-recovery-helper",
            "ceph-recovery-tools")
TOOLS_BINS = {"ceph-recovery-lab", "ceph-recovery-sim", "ceph-recovery-bench",
              "ceph-recovery-drill", "ceph-recovery-netfault",
              "ceph-recovery-install-mgr-module"}


def _can_build() -> bool:
    have = all(shutil.which(t) for t in ("dpkg-buildpackage", "lintian", "dh"))
    return have or (os.geteuid() == 0 and shutil.which("apt-get") is not None)


@pytest.fixture(scope="module")
def debs(tmp_path_factory):
    if not _can_build():
        pytest.skip("no Debian build tools, and not root to install them")
    out = tmp_path_factory.mktemp("debs")
    proc = subprocess.run([str(REPO / "scripts" / "build-debs.sh"), str(out)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert not [ln for ln in proc.stderr.splitlines() if ln.startswith("E: ")], proc.stderr
    found = {p.name.split("_")[0]: p for p in out.glob("*.deb")}
    assert set(found) == set(PACKAGES), sorted(found)
    return found


def _files(deb) -> set:
    out = subprocess.run(["dpkg-deb", "-c", str(deb)], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[5].lstrip(".") for line in out.splitlines()
            if not line.split()[5].endswith("/")}


def _field(deb, name) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), name], capture_output=True, text=True,
                          check=True).stdout.strip()


def _depends(deb) -> set:
    return {d.split()[0].split(":")[0] for d in _field(deb, "Depends").split(", ") if d}


def test_every_package_has_the_projects_version_and_no_file_is_in_two(debs):
    seen = {}
    for name, deb in debs.items():
        assert _field(deb, "Version") == VERSION
        for f in _files(deb):
            if not f.startswith("/usr/share/doc/"):
                assert f not in seen, (f, name, seen.get(f))
                seen[f] = name


def test_the_mgr_package_holds_the_module_under_ceph_mgrs_module_dir(debs):
    files = _files(debs["ceph-recovery-mgr"])
    module = {p.name for p in (REPO / "mgr_module" / "recovery").glob("*.py")}
    top = "/usr/share/ceph/mgr/recovery/"
    assert {f[len(top):] for f in files if f.startswith(top) and "/" not in f[len(top):]} \
        == module
    # self-contained: the core rides inside the folder, so the package needs only ceph-mgr
    assert {top + "_core/ceph_recovery/plan.py",
            top + "_core/ceph_recovery/policies/__init__.py"} <= files
    assert not {f for f in files if "__pycache__" in f}
    depends = _depends(debs["ceph-recovery-mgr"])
    assert "ceph-mgr" in depends
    assert not depends & {"python3-ceph-recovery", "python3-structlog", "python3-tenacity"}
    core = _files(debs["python3-ceph-recovery"])
    assert "/usr/lib/python3/dist-packages/ceph_recovery/__init__.py" in core
    assert "/usr/lib/python3/dist-packages/ceph_recovery/policies/__init__.py" in core


def test_the_helper_package_holds_helper_unit_drop_ins_and_its_documentation(debs):
    deb = debs["ceph-recovery-helper"]
    files = _files(deb)
    unit = (REPO / "scripts" / "systemd" / "ceph-recovery-helper.service").read_text()
    (doc,) = [ln.split("=", 1)[1] for ln in unit.splitlines() if ln.startswith("Documentation=")]
    assert {"/usr/bin/ceph-recovery-helper", "/lib/systemd/system/ceph-recovery-helper.service",
            "/lib/systemd/system/ceph-osd@.service.d/ceph-recovery-gate.conf",
            "/usr/share/ceph-recovery-helper/cephadm/ceph-recovery-gate.conf",
            doc[len("file://"):]} <= files
    # procps: the unit's ExecReload= runs /bin/kill, which a minimal Debian does not have
    assert {"python3-rados", "python3-psutil", "python3-structlog", "python3-tenacity",
            "python3-ceph-recovery", "procps"} <= _depends(deb)
    assert not _depends(deb) & {"python3-matplotlib", "python3-rich"}
    assert {f for f in files if f.startswith("/usr/bin/")} == {"/usr/bin/ceph-recovery-helper"}


def test_the_tools_package_holds_every_other_console_script(debs):
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    scripts = {ln.split("=")[0].strip()
               for ln in cfg["options.entry_points"]["console_scripts"].splitlines() if ln}
    assert scripts == TOOLS_BINS | {"ceph-recovery-helper"}
    files = _files(debs["ceph-recovery-tools"])
    assert {f[len("/usr/bin/"):] for f in files if f.startswith("/usr/bin/")} == TOOLS_BINS
    assert "ceph-recovery-helper" in _depends(debs["ceph-recovery-tools"])


def _installed(debs, tmp_path) -> pathlib.Path:
    root = tmp_path / "root"
    for deb in debs.values():
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root


def test_the_packaged_helper_and_module_run_on_debians_python_and_libraries(debs, tmp_path):
    for pkg in ("structlog", "tenacity"):
        if subprocess.run(["/usr/bin/python3", "-c", "import " + pkg]).returncode:
            pytest.skip("python3-%s is not installed" % pkg)
    root = _installed(debs, tmp_path)
    env = dict(os.environ, PYTHONPATH=str(root / "usr/lib/python3/dist-packages"))
    proc = subprocess.run(["/usr/bin/python3", str(root / "usr/bin/ceph-recovery-helper"),
                           "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "ceph-recovery-helper %s (helper protocol 1)" % VERSION, \
        proc.stderr
    load = ("import importlib, os, sys, types\n"
            "sys.path.insert(0, os.path.join(sys.argv[1], '_core'))\n"
            "pkg = types.ModuleType('recovery'); pkg.__path__ = [sys.argv[1]]\n"
            "sys.modules['recovery'] = pkg\n"
            "for n in ('engine', 'versions', 'text', 'logs'):\n"
            "    importlib.import_module('recovery.' + n)\n"
            "print(sys.modules['ceph_recovery'].__file__)\n")
    # the module's folder alone: no PYTHONPATH, no site-packages (-E -S)
    folder = root / "usr/share/ceph/mgr/recovery"
    proc = subprocess.run(["/usr/bin/python3", "-E", "-S", "-c", load, str(folder)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith(str(folder / "_core" / "ceph_recovery"))
