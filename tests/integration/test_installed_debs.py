"""The Debian packages installed as an operator installs them, and the smoke tier run on a lab
brought up from them alone. The four .debs are built from the tree (scripts/build-debs.sh) and
installed with `apt-get install ./*.deb` (their Debian dependencies from the archive); the lab
is then Debian's /usr/bin/python3 running /usr/bin/ceph-recovery-lab with nothing of the
checkout: the mgr module from /usr/share/ceph/mgr/recovery, the helpers and the drill from
/usr/bin, the host's Ceph (Debian's Pacific 16.2 packages), an environment without PYTHONPATH
or the test virtualenv. The packages' own promises (each tool's and the module's version,
every helper running from /usr/bin), and every test of the smoke tier
(test_release_smoke.py) on that lab. The lab is taken down and the four packages purged after,
whatever happened (the dependencies apt pulled in stay)."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import tempfile

import pytest

import ceph_recovery
from ceph_recovery_tools.lab import launch
import fault_row as fr  # see conftest.py

pytestmark = pytest.mark.integration

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("python3-ceph-recovery", "ceph-recovery-mgr", "ceph-recovery-helper",
            "ceph-recovery-tools")
# another test (or tier) may hold the dpkg lock meanwhile: wait for it
APT = ("-o", "DPkg::Lock::Timeout=600")
# every test of the smoke tier, collected here again: each takes this file's `release_lab`
_SPEC = importlib.util.spec_from_file_location(
    "release_smoke_on_debs", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          "test_release_smoke.py"))
_SMOKE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_SMOKE)
globals().update({n: f for n, f in vars(_SMOKE).items() if n.startswith("test_")})
ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
       "DEBIAN_FRONTEND": "noninteractive", "LC_ALL": "C.UTF-8"}


def sh(*argv, timeout=600):
    p = subprocess.run(list(argv), env=ENV, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, (argv, p.stdout[-2000:], p.stderr[-3000:])
    return p.stdout


@pytest.fixture(scope="module")
def installed():
    if os.geteuid() != 0:
        pytest.skip("installing packages needs root")
    out = tempfile.mkdtemp(prefix="debs-", dir="/tmp")
    sh(os.path.join(REPO, "scripts", "build-debs.sh"), out, timeout=900)
    debs = sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".deb"))
    assert sorted(os.path.basename(d).split("_")[0] for d in debs) == sorted(PACKAGES)
    try:
        sh("apt-get", *APT, "install", "-y", "-q", *debs, timeout=900)
        yield debs
    finally:
        subprocess.run(["apt-get", *APT, "purge", "-y", "-q", *PACKAGES], env=ENV,
                       capture_output=True, timeout=300)
        shutil.rmtree(out, ignore_errors=True)


@pytest.fixture(scope="module")
def release_lab(installed):
    d = tempfile.mkdtemp(prefix="lab-pytest-debs-", dir="/tmp")
    os.rmdir(d)
    try:
        sh("/usr/bin/ceph-recovery-lab", "up", "--dir", d, "--ceph", "pacific",
           "--module-dir", "/usr/share/ceph/mgr/recovery")
        with open(os.path.join(d, "lab.json")) as f:
            yield json.load(f)
    finally:
        subprocess.run(["/usr/bin/ceph-recovery-lab", "down", "--dir", d], env=ENV,
                       capture_output=True, timeout=300)
        shutil.rmtree(d, ignore_errors=True)


def test_the_packages_answer_with_their_version_and_run_every_helper(release_lab):
    lab = release_lab
    assert lab["bin"] == "/usr/bin" and lab["module_dir"] == "/usr/share/ceph/mgr/recovery", lab
    version = ceph_recovery.__version__
    for tool in ("ceph-recovery-lab", "ceph-recovery-helper", "ceph-recovery-drill"):
        assert sh("/usr/bin/" + tool, "--version").startswith("%s %s" % (tool, version))
    # the mgr loaded the packaged folder, and every host's packaged helper reports
    said = fr.wait_for(lambda: (lambda s: s if all("%s %s" % (h, version) in s
                                                    for h in lab["hosts"]) else None)(
        launch.ceph(lab, "recovery", "version", json_out=False)), 60,
        "the module and every helper answering")
    assert said.startswith("recovery %s, helper protocol 1" % version), said
    helpers = [ln for ln in sh("ps", "-eo", "args").splitlines()
               if "ceph-recovery-helper run" in ln and lab["dir"] in ln]
    assert len(helpers) == len(lab["hosts"]) and all(
        ln.startswith("/usr/bin/python3 /usr/bin/ceph-recovery-helper") for ln in helpers), helpers
