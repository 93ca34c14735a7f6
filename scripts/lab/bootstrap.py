"""Ceph-side steps of `up`: keys, monmap, mon, mgr (with our module), OSDs, pool, helper key.

Everything by hand from Debian's packages, everything under the lab directory, `-c D/ceph.conf`
on every call, nothing in /etc/ceph.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional

import structlog
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from .. import build_module
from ..common.wait import wait_until
from ..helper import caps
from ..install_module import installed_module_dir
from . import launch, procs, release
from .launch import CephError, ceph

log = structlog.get_logger("lab.bootstrap")

# cephx caps of every key: written once in ceph_recovery_tools.helper.caps
HELPER_CAPS = caps.helper_caps_any_host()   # the shared client.recovery-helper (D/helper.keyring)
HELPER_NAME = caps.HELPER_NAME
MGR_CAPS = caps.MGR_CAPS
STOCK_MGR_DIR = "/usr/share/ceph/mgr"
MODULE_NAME = "recovery"


def run(*argv: str, timeout: float = 120) -> str:
    """Run a Ceph tool; RuntimeError with its stderr on failure."""
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} -> rc {proc.returncode}: "
                           f"{(proc.stderr or proc.stdout).strip()[-800:]}")
    return proc.stdout


def _caps_args(caps: Dict[str, str]) -> List[str]:
    return [x for kind, cap in caps.items() for x in (kind, cap)]


def bootstrap_mon(state: Dict[str, Any], ident: str = "a") -> None:
    """Admin + mon keys, monmap, mkfs, start, wait for quorum."""
    d, conf = state["dir"], state["conf"]
    admin, monkey, monmap = state["admin_keyring"], f"{d}/mon-bootstrap.keyring", f"{d}/monmap"
    authtool = release.tool(state, "ceph-authtool")
    run(*authtool, "--create-keyring", admin, "--gen-key", "-n", "client.admin",
        "--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mgr", "allow *",
        "--cap", "mds", "allow *")
    run(*authtool, "--create-keyring", monkey, "--gen-key", "-n", "mon.",
        "--cap", "mon", "allow *")
    run(*authtool, monkey, "--import-keyring", admin)
    min_release = release.MIN_MON_RELEASE.get(state.get("ceph", "pacific"))
    run(*release.tool(state, "monmaptool"), "--create", "--fsid", state["fsid"], "--addv", ident,
        f"[v2:{state['mon_addr']}]", monmap,
        *(["--set-min-mon-release", min_release] if min_release else []))
    run(*release.tool(state, "ceph-mon"), "-c", conf, "--mkfs", "-i", ident, "--monmap", monmap, "--keyring", monkey)
    os.unlink(monkey)
    os.unlink(monmap)
    pid = launch.start_mon(state, ident)
    for attempt in Retrying(stop=stop_after_delay(60), wait=wait_fixed(0.5), reraise=True,
                            retry=retry_if_exception_type(CephError)):
        with attempt:
            _check_alive(state, pid, f"mon.{ident}")
            ceph(state, "mon", "stat", timeout=10)


def _check_alive(state: Dict[str, Any], pid: int, name: str) -> None:
    """RuntimeError with the end of the daemon's log if it died (bad port, bad conf...)."""
    if procs.alive(pid):
        return
    tail = ""
    for path in (f"{state['dir']}/log/{name}.log", f"{state['dir']}/log/{name}.stdio"):
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                tail += "".join(f.readlines()[-5:])
    raise RuntimeError(f"{name} (pid {pid}) died at start:\n{tail}")


def prepare_module_path(state: Dict[str, Any]) -> bool:
    """D/mgr-modules: symlinks to every stock module and mgr_*.py, plus ours if it exists,
    built as the self-contained folder an install copies (build_module: the module's files and
    the core it carries, else the installed one), so every lab proves that folder alone loads
    in ceph-mgr."""
    path = os.path.join(state["dir"], "mgr-modules")
    os.makedirs(path, exist_ok=True)
    # the links resolve where ceph-mgr runs: the chroot's own /usr/share/ceph/mgr there
    for entry in sorted(os.listdir(release.host_path(state, STOCK_MGR_DIR))):
        if entry == MODULE_NAME or entry == "__pycache__":
            continue
        os.symlink(os.path.join(STOCK_MGR_DIR, entry), os.path.join(path, entry))
    module_dir = state.get("module_dir")
    if module_dir and os.path.exists(os.path.join(module_dir, "module.py")):
        build_module.build(os.path.join(path, MODULE_NAME), module_dir)
        return True
    log.warning("recovery module not installed: no module.py yet", module_dir=module_dir)
    return False


def bootstrap_mgr(state: Dict[str, Any], ident: str = "x") -> None:
    data = os.path.join(state["dir"], "data", f"mgr.{ident}")
    os.makedirs(data, exist_ok=True)
    ceph(state, "auth", "get-or-create", f"mgr.{ident}", *_caps_args(MGR_CAPS),
         "-o", os.path.join(data, "keyring"), json_out=False)
    pid = launch.start_mgr(state, ident)
    time.sleep(0.5)
    _check_alive(state, pid, f"mgr.{ident}")


def _mkfs_osd(state: Dict[str, Any], osd_id: int, osd_uuid: str, secret: str) -> None:
    info = state["osds"][str(osd_id)]
    os.makedirs(info["data"], exist_ok=True)
    with open(os.path.join(info["data"], "keyring"), "w") as f:
        f.write(f"[osd.{osd_id}]\n\tkey = {secret}\n")
    run(*release.tool(state, "ceph-osd"), "-c", state["conf"], "-i", str(osd_id), "--mkfs", "--osd-uuid", osd_uuid,
        timeout=300)


def create_osds(state: Dict[str, Any]) -> None:
    """Register every OSD (`osd new` with its id), mkfs them in parallel, start them."""
    jobs = []
    for osd_id in sorted(int(o) for o in state["osds"]):
        osd_uuid = str(uuid.uuid4())
        secret = run(*release.tool(state, "ceph-authtool"), "--gen-print-key").strip()
        secret_file = os.path.join(state["dir"], "run", f"osd.{osd_id}.secret.json")
        with open(secret_file, "w") as f:
            json.dump({"cephx_secret": secret}, f)
        try:
            got = ceph(state, "osd", "new", osd_uuid, str(osd_id), "-i", secret_file,
                       json_out=False).strip()
        finally:
            os.unlink(secret_file)
        if got != str(osd_id):
            raise RuntimeError(f"osd new gave id {got!r}, expected {osd_id}")
        jobs.append((osd_id, osd_uuid, secret))
    with ThreadPoolExecutor(max_workers=3) as pool:
        for fut in [pool.submit(_mkfs_osd, state, *job) for job in jobs]:
            fut.result()
    for osd_id, _u, _s in jobs:
        launch.start_osd(state, osd_id)


def create_pool(state: Dict[str, Any], pg_num: int) -> None:
    pool = state["pool"]
    ceph(state, "osd", "pool", "create", pool, str(pg_num), str(pg_num), "replicated",
         json_out=False)
    size, min_size = state.get("pool_size", (3, 2))
    really = ["--yes-i-really-mean-it"] if size == 1 else []
    ceph(state, "osd", "pool", "set", pool, "size", str(size), *really, json_out=False)
    ceph(state, "osd", "pool", "set", pool, "min_size", str(min_size), json_out=False)
    ceph(state, "osd", "pool", "application", "enable", pool, "rbd", json_out=False)


def balancer_off(state: Dict[str, Any]) -> None:
    """Turn the balancer (on by default) off: once the cluster is clean it moves PGs with
    `osd pg-upmap-items`, and every move re-peers them, so whatever a test does right after a
    recovery (`ok-to-stop` among others, which refuses while a PG peers) would race it. The
    lab keeps CRUSH's own placement."""
    ceph(state, "balancer", "off", json_out=False)


def create_helper_key(state: Dict[str, Any]) -> None:
    ceph(state, "auth", "get-or-create", HELPER_NAME, *_caps_args(HELPER_CAPS),
         "-o", state["helper_keyring"], json_out=False)


def enable_module(state: Dict[str, Any], timeout: float = 120) -> None:
    """`ceph mgr module enable recovery` (first try may answer ENOENT: retry), wait for it."""
    for attempt in Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(2), reraise=True,
                            retry=retry_if_exception_type(CephError)):
        with attempt:
            ceph(state, "mgr", "module", "enable", MODULE_NAME, json_out=False, timeout=30)
    def available() -> bool:
        mods = ceph(state, "mgr", "module", "ls", timeout=30)
        dump = ceph(state, "mgr", "dump", timeout=30)
        return MODULE_NAME in mods.get("enabled_modules", []) and bool(dump.get("available"))
    wait_until(available, timeout, 1, what=f"mgr module {MODULE_NAME} not enabled+available")


def module_dir_from(explicit: Optional[str], cwd: str) -> Optional[str]:
    """--module-dir, else $CEPH_RECOVERY_MODULE_DIR, else mgr_module/recovery above cwd,
    else the copy installed with the package (ceph_recovery_mgr_module/recovery)."""
    if explicit:
        return os.path.abspath(explicit)
    env = os.environ.get("CEPH_RECOVERY_MODULE_DIR")
    if env:
        return os.path.abspath(env)
    here = os.path.abspath(cwd)
    while True:
        candidate = os.path.join(here, "mgr_module", MODULE_NAME)
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return installed_module_dir()
        here = parent
