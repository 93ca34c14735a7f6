"""Which Ceph a lab runs: the host's packages (Pacific 16) or a release chroot (Reef, Tentacle).

A chroot release (built and cached by chroot.sh under CHROOTS/<release>) runs every Ceph tool and
daemon as `chroot ROOT <tool>`: chroot execs the tool in place, so the spawned pid, its cgroup
and its netns are the tool's own. The lab directory is bind-mounted at the same path inside ROOT,
so ceph.conf, keyrings, sockets and data paths are the same strings inside and out. ceph-mgr
runs the chroot's Python. The module folder it loads carries the core (build_module); the
helpers and the drill run the chroot's Python too, with their dependencies installed there
(DEPS_DIR, by chroot.sh) and the core and tools copied into the lab (D/pylib) from the
installed package, so each lab runs the code of the checkout that started it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any, Dict, List, Optional

RELEASES = ("pacific", "reef", "tentacle")
CHROOT_RELEASES = ("reef", "tentacle")
DEFAULT_CHROOTS = "/var/cache/ceph-recovery/chroots"
DEPS_DIR = "/opt/ceph-recovery/deps"   # inside the chroot: structlog, tenacity (chroot.sh)
# A package of DEPS_DIR that ceph-mgr itself needs: Reef's mgr_util imports bcrypt, and only the
# cffi bcrypt 3 there loads in ceph-mgr's subinterpreters (chroot.sh)
MGR_OWN_DEPS = ("bcrypt",)
# the monmap must name at least the release the mons run (Tentacle refuses a Pacific one)
MIN_MON_RELEASE = {"reef": "reef", "tentacle": "tentacle"}
# Stock modules on by default that cannot load in the release's chroot, turned off so the lab can
# reach HEALTH_OK: Reef's `restful` imports trixie's cryptography, a PyO3 extension that loads
# in one ceph-mgr subinterpreter only (MGR_MODULE_DEPENDENCY). The lab never uses it.
DISABLED_MGR_MODULES = {"reef": ("restful",)}
# How long `up` watches the mgr after its last respawn (module enable/disable), per release.
# Reef 18.2.7's mgr can abort seconds after a respawn: "FAILED ceph_assert(ckh)" in
# cephx_verify_authorizer (src/auth/Crypto.h) when a daemon connects before the new instance
# has its rotating keys (seen in two CI runs of 2026-11-27, both in the smoke lab's `up`). On a
# real host systemd's Restart= starts it again; the lab does the same (launch.keep_mgr).
MGR_WATCH_S = {"reef": 15.0}


class ChrootError(RuntimeError):
    """The release's chroot could not be built or used (the reason is in the message)."""


def chroots_dir() -> str:
    return os.environ.get("CEPH_RECOVERY_CHROOTS", DEFAULT_CHROOTS)


def chroot_script() -> str:
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "chroot.sh")


def ensure_root(release: str) -> Optional[str]:
    """The chroot of `release` (built on first use), or None for the host's Pacific."""
    if release not in RELEASES:
        raise ValueError(f"unknown Ceph release {release!r}: one of {', '.join(RELEASES)}")
    if release not in CHROOT_RELEASES:
        return None
    proc = subprocess.run(["bash", chroot_script(), release], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=1800)
    if proc.returncode != 0:
        raise ChrootError(f"cannot build the {release} chroot (scripts/chroot.sh {release}, "
                          f"rc {proc.returncode}): {proc.stderr.strip()[-1500:]}")
    return proc.stdout.strip().splitlines()[-1]


def prefix(state: Dict[str, Any]) -> List[str]:
    """Command prefix that runs a Ceph tool of the lab's release: `chroot ROOT` from the host,
    nothing from inside the chroot (a helper or drill running there), where ROOT is not seen."""
    root = state.get("root")
    return ["chroot", root] if root and os.path.isdir(root + "/usr/bin") else []


def tool_argv(state: Dict[str, Any], name: str) -> List[str]:
    """argv of one of this project's commands (ceph-recovery-helper, ...) for the lab's release:
    on a host release, the one the lab was brought up with; on a chroot release, the wrapper
    install_core wrote, run by the chroot's Python."""
    if not state.get("root"):
        return [os.path.join(state.get("bin") or os.path.dirname(sys.executable), name)]
    return prefix(state) + ["python3", os.path.join(state["dir"], "pylib", "bin", name)]


def tool_env(state: Dict[str, Any]) -> Dict[str, str]:
    env = dict(os.environ)
    if state.get("root"):
        env["PYTHONPATH"] = state["pythonpath"]
    return env


def tool(state: Dict[str, Any], name: str) -> List[str]:
    return prefix(state) + [name]


def host_path(state: Dict[str, Any], path: str) -> str:
    """Where a path of the release's filesystem is seen from the host."""
    root = state.get("root")
    return root + path if root else path


def mount_lab(state: Dict[str, Any]) -> None:
    """Bind-mount the lab directory at the same path inside the chroot (no-op on the host)."""
    root, d = state.get("root"), state["dir"]
    if not root:
        return
    inside = root + d
    os.makedirs(inside, exist_ok=True)
    if not _mounted(inside):
        subprocess.run(["mount", "--bind", d, inside], check=True, capture_output=True)


def unmount_lab(d: str) -> List[str]:
    """Undo mount_lab for lab dir d in every cached chroot; the mount points left behind."""
    left = []
    base = chroots_dir()
    roots = [os.path.join(base, r) for r in CHROOT_RELEASES]
    for root in roots:
        inside = root + d
        if _mounted(inside):
            if subprocess.run(["umount", "-l", inside], capture_output=True).returncode != 0:
                left.append(inside)
                continue
        _remove_empty_dirs(root, inside)
    return left


def _mounted(path: str) -> bool:
    with open("/proc/mounts") as f:
        return any(line.split()[1] == path for line in f)


def _remove_empty_dirs(root: str, inside: str) -> None:
    """rmdir the mount point and its now-empty parents up to (not including) the chroot's /tmp
    and the like: only directories mount_lab made, and only while empty."""
    path = inside
    while len(path) > len(root) and os.path.dirname(path) != root:
        try:
            os.rmdir(path)
        except OSError:
            return
        path = os.path.dirname(path)


TOOLS = {"ceph-recovery-helper": "ceph_recovery_tools.helper.cli",
         "ceph-recovery-drill": "ceph_recovery_tools.drill.cli"}


def mgr_pythonpath(state: Dict[str, Any]) -> str:
    """ceph-mgr's PYTHONPATH: DEPS_DIR when it holds a package ceph-mgr itself needs (a chroot
    release's fix for Ceph, not for the module), else nothing."""
    if state.get("root") and any(os.path.isdir(host_path(state, os.path.join(DEPS_DIR, p)))
                                 for p in MGR_OWN_DEPS):
        return DEPS_DIR
    return ""


def install_core(state: Dict[str, Any]) -> str:
    """Copy the installed packages into D/pylib (with a wrapper per tool in D/pylib/bin); the
    PYTHONPATH of the mgr, helpers and drill inside the chroot."""
    import ceph_recovery
    import ceph_recovery_tools
    pylib = os.path.join(state["dir"], "pylib")
    for pkg in (ceph_recovery, ceph_recovery_tools):
        src = os.path.dirname(os.path.abspath(pkg.__file__))
        shutil.copytree(src, os.path.join(pylib, pkg.__name__),
                        ignore=shutil.ignore_patterns("__pycache__"))
    os.makedirs(os.path.join(pylib, "bin"), exist_ok=True)
    for name, module in TOOLS.items():
        with open(os.path.join(pylib, "bin", name), "w") as f:
            f.write(f"import sys\nfrom {module} import main\nsys.exit(main())\n")
    return f"{pylib}:{DEPS_DIR}"
