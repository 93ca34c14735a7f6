"""The mgr side of docs/cephadm.md's recipe, in a container: the module folder built by
`ceph-recovery-install-mgr-module --dest DIR` and mounted read-only at
/usr/share/ceph/mgr/recovery of a mgr container, as the mgr service spec's
`extra_container_args` mount it. The image stands in for Ceph's: a `podman import` of the lab
release's own chroot (Tentacle under tox), cached by the chroot's package list; podman runs it
with runc and cgroupfs (its default crun refuses this machine's hybrid cgroups). The lab's
mgr is stopped and the same mgr (its data, keyring and conf: the lab directory mounted where
it lives, as cephadm mounts /var/lib/ceph/<fsid>/mgr.<id>) runs in the container with the
image's module path, /usr/share/ceph/mgr: the stock modules from the image, ours from the
mount. Asserted: the containerized mgr is the active one, the module is enabled and answers
`ceph recovery version` with the project's version and every host's helper, and a dry run of
a controlled start answers.

The helper side of the recipe, on the same lab: h2's helper runs in a container of that image,
with the recipe's namespaces (the host's PID, network, UTS and cgroup namespaces, privileged),
its package mounted read-only where the recipe mounts it, and the recipe's entrypoint and
helper path. Conf, keyring and admin sockets live in the lab directory, mounted where it
lives; the cgroup tree is mounted read-write, since the lab's process launcher places the
OSDs it spawns in their host's cgroup. These machines have no systemd, so that launcher
stands in for cephadm's `systemctl`. Asserted: a
controlled start of h2, whose OSDs were SIGKILLed, ends done with its flags restored, and the
OSDs that came back were started from inside the container (their mount namespace is the
containerized helper's)."""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

import ceph_recovery
from ceph_recovery_tools.lab import launch, procs, release
import fault_row as fr  # see conftest.py

pytestmark = pytest.mark.integration

PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs"]
MOUNT = "/usr/share/ceph/mgr/recovery"
HELPER_MOUNT = "/opt/ceph-recovery/helper"       # docs/cephadm.md's helper package
# what a Ceph image does not need and the import would copy for nothing, and where labs bind
# their directories into the chroot (their sparse OSD files) and daemons write meanwhile
EXCLUDE = ("./proc", "./sys", "./dev", "./run", "./tmp", "./var/tmp", "./var/log",
           "./var/cache/apt", "./usr/share/doc", "./usr/share/man")


def sh(*argv, timeout=600, check=True):
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    if check:
        assert p.returncode == 0, (argv, p.stdout[-2000:], p.stderr[-3000:])
    return p


def image_of(root: str) -> str:
    """The chroot `root` as a podman image, imported once per package list."""
    with open(os.path.join(root, "var/lib/dpkg/status"), "rb") as f:
        tag = hashlib.sha256(f.read()).hexdigest()[:12]
    name = "localhost/ceph-recovery-lab-%s:%s" % (os.path.basename(root), tag)
    if sh(*PODMAN, "image", "exists", name, check=False).returncode != 0:
        tar = subprocess.Popen(["tar", "-C", root, "--one-file-system"] +
                               ["--exclude=%s" % e for e in EXCLUDE] + ["-cf", "-", "."],
                               stdout=subprocess.PIPE)
        imp = subprocess.run(PODMAN + ["import", "-", name], stdin=tar.stdout,
                             capture_output=True, text=True, timeout=900)
        tar.stdout.close()
        assert tar.wait() == 0 and imp.returncode == 0, imp.stderr[-2000:]
    return name


@pytest.fixture(scope="module")
def podman():
    if os.geteuid() != 0:
        pytest.skip("podman and the lab need root")
    if shutil.which("podman") is None or shutil.which("runc") is None:
        apt = ["apt-get", "-o", "DPkg::Lock::Timeout=600"]
        if sh(*apt, "install", "-y", "-q", "podman", "runc", timeout=900,
              check=False).returncode != 0:
            sh(*apt, "update", "-q", timeout=900)
            sh(*apt, "install", "-y", "-q", "podman", "runc", timeout=900)


@pytest.fixture(scope="module")
def clab(podman, lab_factory):
    lab = lab_factory()
    yield lab
    lab_factory.down()


def test_the_recipes_mgr_container_loads_the_mounted_module_and_it_answers(clab, tmp_path):
    lab = clab
    root = lab.get("root")
    assert root, "the lab's release runs from a chroot: %s" % lab.get("ceph")
    image = image_of(root)
    # the recipe's first step: the built folder on the host
    dest = str(tmp_path / "ceph-recovery")
    os.makedirs(dest)
    sh(os.path.join(os.path.dirname(sys.executable), "ceph-recovery-install-mgr-module"),
       "--dest", dest)
    folder = os.path.join(dest, "recovery")
    assert os.path.isfile(os.path.join(folder, "module.py"))
    old = launch.ceph(lab, "mgr", "dump", timeout=30).get("active_gid")
    procs.terminate([launch.mgr_pid(lab, "x")], 20)
    name = "ceph-recovery-mgr-%s" % os.path.basename(lab["dir"])
    try:
        sh(*PODMAN, "run", "-d", "--name", name, "--network", "host",
           "--tmpfs", "/tmp", "--tmpfs", "/run", "--tmpfs", "/var/log",
           "-v", "%s:%s" % (lab["dir"], lab["dir"]),
           "-v", "%s:%s:ro" % (folder, MOUNT),            # exactly the recipe's mount
           image, "ceph-mgr", "-f", "-c", lab["conf"], "-i", "x",
           "--mgr_module_path", "/usr/share/ceph/mgr")
        launch.wait_mgr_available(lab, 120, not_gid=old)
        pid = int(sh(*PODMAN, "inspect", "--format", "{{.State.Pid}}", name).stdout)
        with open("/proc/%d/cmdline" % pid) as f:
            assert f.read().split("\0")[0] == "ceph-mgr"
        assert launch.mgr_pid(lab, "x") in (None, pid)     # no other mgr.x of this lab
        said = fr.wait_for(lambda: (lambda s: s if all(
            "%s %s" % (h, ceph_recovery.__version__) in s for h in lab["hosts"]) else None)(
            launch.ceph(lab, "recovery", "version", json_out=False)), 90,
            "the module answering with every helper")
        assert said.startswith("recovery %s" % ceph_recovery.__version__), said
        mods = launch.ceph(lab, "mgr", "module", "ls")
        assert "recovery" in (mods.get("enabled_modules") or []), mods.get("enabled_modules")
        plan = launch.ceph(lab, "recovery", "start-controlled", "--dry-run", timeout=60)
        assert plan["dry_run"] is True and set(plan["hosts"]) >= set(lab["hosts"])
        # the module was loaded from the mount, not from the image or the lab's own path
        where = sh(*PODMAN, "exec", name, "python3", "-c",
                   "import os; print(os.path.realpath('%s/module.py'))" % MOUNT).stdout.strip()
        assert where == MOUNT + "/module.py", where
    finally:
        sh(*PODMAN, "rm", "-f", name, check=False)
        launch.start_mgr(lab, "x")


def mnt_ns(pid: int) -> str:
    return os.readlink("/proc/%d/ns/mnt" % pid)


def test_the_recipes_helper_container_reports_and_starts_the_osds_it_is_granted(clab):
    lab, host = clab, "h2"
    image = image_of(lab["root"])
    osds = sorted(lab["hosts"][host]["osds"])
    assert launch.stop_helper(lab, host)
    name = "ceph-recovery-helper-%s-%s" % (host, os.path.basename(lab["dir"]))
    t0 = time.time()
    try:
        sh(*PODMAN, "run", "-d", "--name", name, "--privileged",
           "--pid", "host", "--network", "host", "--uts", "host", "--cgroupns", "host",
           "-v", "/sys/fs/cgroup:/sys/fs/cgroup",
           "-v", "%s:%s" % (lab["dir"], lab["dir"]),
           # the package where the recipe mounts it, read-only; its dependencies are the
           # image's own (the lab's chroot holds them in DEPS_DIR)
           "-v", "%s:%s:ro" % (os.path.join(lab["dir"], "pylib"), HELPER_MOUNT),
           "-e", "PYTHONPATH=%s:%s" % (HELPER_MOUNT, release.DEPS_DIR),
           "--entrypoint", "/usr/bin/python3", image,
           HELPER_MOUNT + "/bin/ceph-recovery-helper",
           "run", "--lab-dir", lab["dir"], "--host", host, "--launcher", "process")
        helper = int(sh(*PODMAN, "inspect", "--format", "{{.State.Pid}}", name).stdout)
        assert mnt_ns(helper) != mnt_ns(os.getpid())
        # its reports reach the module (h2's own helper was stopped before t0)
        fr.wait_for(lambda: time.time() - ((fr.status(lab)["hosts"].get(host) or {}).get(
            "helper_seen_s_ago") or 1e9) > t0 + 1, 90, "a report from the containerized helper")
        for o in osds:
            launch.stop_osd(lab, o, signal.SIGKILL, 10)
        fr.wait_for(lambda: all(not x["up"] for x in fr.osd_dump(lab)["osds"]
                                if x["osd"] in osds), 90, "h2's OSDs down")
        launch.ceph(lab, "recovery", "start-controlled", json_out=False, timeout=60)
        launch.wait_all_up(lab, 240)
        s = fr.wait_for(lambda: (lambda x: x if x["phase"] in ("done", "aborted")
                                 and not x["active"] else None)(fr.status(lab)), 240,
                        "the run to end", every=2.0)
        assert s["phase"] == "done", s["phase"]
        assert not {"noout", "norebalance"} & set(fr.osd_dump(lab)["flags"].split(","))
        inside = mnt_ns(helper)
        assert all(mnt_ns(launch.osd_pid(lab, o)) == inside for o in osds), \
            "h2's OSDs were not started by the containerized helper"
    finally:
        out = sh(*PODMAN, "logs", "--tail", "40", name, check=False)
        logs = out.stdout + out.stderr
        sh(*PODMAN, "rm", "-f", name, check=False)
        launch.start_helper(lab, host)
    assert "Traceback" not in logs, logs
