"""The Debian packages installed as an operator installs them, and a lab brought up from them
alone. The four .debs are built from the tree (scripts/build-debs.sh) and installed with
`apt-get install ./*.deb` (their Debian dependencies from the archive); the lab is then
Debian's /usr/bin/python3 running /usr/bin/ceph-recovery-lab with nothing of the checkout:
the mgr module from /usr/share/ceph/mgr/recovery, the helpers from /usr/bin, the host's Ceph
(Debian's Pacific 16.2 packages), an environment without PYTHONPATH or the test virtualenv.
Smoke: the module answers `ceph recovery version` with the packages' version and each
host's helper's, and a controlled start brings back a host whose OSDs were SIGKILLed, ending
done with every flag restored and HEALTH_OK. The lab is taken down and the four packages purged
after, whatever happened (the dependencies apt pulled in stay)."""
from __future__ import annotations

import json
import os
import shutil
import signal
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
def pkglab(installed):
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


def test_a_lab_from_the_installed_packages_runs_a_controlled_start(pkglab):
    lab = pkglab
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
    # a failed host (both OSDs of h2 SIGKILLed) comes back through a controlled start
    osds = sorted(int(o) for o in lab["hosts"]["h2"]["osds"])
    for osd in osds:
        launch.stop_osd(lab, osd, signal.SIGKILL, 10)
    fr.wait_for(lambda: not [x for x in fr.osd_dump(lab)["osds"]
                             if x["osd"] in osds and x["up"]], 90, "h2's OSDs down")
    launch.ceph(lab, "recovery", "start-controlled", json_out=False, timeout=60)
    s = fr.wait_for(lambda: (lambda x: x if x["phase"] in ("done", "aborted") and
                             not x["active"] else None)(fr.status(lab)), 240, "the run's end",
                    every=2.0)
    assert s["phase"] == "done", s["phase"]
    assert sorted(j["action"]["osd"] for j in fr.kinds(s["journal"], "grant_start")) == osds
    launch.wait_all_up(lab, 120)
    m = fr.osd_dump(lab)
    assert not {"noout", "norebalance"} & set(m["flags"].split(",")), m["flags"]
    assert launch.wait_health_ok(lab, 240)["status"] == "HEALTH_OK"
