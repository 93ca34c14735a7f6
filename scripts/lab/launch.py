"""Launch API of the lab: start/stop/kill OSDs, mon/mgr, run the ceph CLI, wait for health.

Every function takes the state dict of D/lab.json (see `state.load_state`). Used by `up`, by the
node helper's `process` launcher, by the drill and by the integration tests.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any, Dict, Iterable, List, Optional, Tuple

import psutil
import structlog

from ..common.wait import wait_until
from . import cgroups, procs, release
from .state import update_state

log = structlog.get_logger("lab.launch")
WAIT_POLL_S = 2.0             # between two `ceph recovery wait` (it answers at once)


class CephError(RuntimeError):
    """A ceph CLI call failed: rc, stdout, stderr, and the parsed JSON of stdout if any."""

    def __init__(self, args: Iterable[str], rc: int, stdout: str, stderr: str):
        self.rc, self.stdout, self.stderr = rc, stdout, stderr
        try:
            self.json = json.loads(stdout) if stdout.strip() else None
        except ValueError:
            self.json = None
        super().__init__(f"ceph {' '.join(args)} -> rc {rc}: {stderr.strip()[-500:]}")


def ceph(state: Dict[str, Any], *args: str, json_out: bool = True, timeout: float = 60,
         check: bool = True, name: Optional[str] = None, keyring: Optional[str] = None) -> Any:
    """Run `ceph -c D/ceph.conf <args>`; parsed JSON (json_out) or stdout text.

    A non-zero rc raises CephError (which still carries the JSON, e.g. `osd ok-to-stop` answers
    EBUSY with a JSON body) unless check=False.
    """
    cmd = release.tool(state, "ceph") + ["-c", state["conf"], "--connect-timeout", str(int(max(timeout, 1)))]
    if name:
        cmd += ["--name", name]
    if keyring:
        cmd += ["--keyring", keyring]
    cmd += list(args) + (["-f", "json"] if json_out else [])
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 5,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise CephError(args, -110, "", f"timed out after {timeout}s") from exc
    if proc.returncode != 0 and check:
        raise CephError(args, proc.returncode, proc.stdout, proc.stderr)
    if not json_out:
        return proc.stdout
    try:
        return json.loads(proc.stdout) if proc.stdout.strip() else None
    except ValueError as exc:
        raise CephError(args, proc.returncode, proc.stdout, "not JSON: " + str(exc)) from exc


def recovery_wait(state: Dict[str, Any], limit: float) -> Tuple[int, str]:
    """`ceph recovery wait` polled every WAIT_POLL_S while it answers ETIMEDOUT (it answers
    at once: the mgr runs a module's commands one at a time): (0, text) or (rc, its reason)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            return 0, ceph(state, "recovery", "wait", json_out=False, timeout=30).strip()
        except CephError as e:
            if e.rc != errno.ETIMEDOUT:
                return e.rc, e.stderr.strip()
        time.sleep(WAIT_POLL_S)
    raise TimeoutError("ceph recovery wait never ended within %ss" % limit)


def daemon_argv(state: Dict[str, Any], kind: str, ident: str) -> List[str]:
    """Foreground daemon command line (-f: no fork, so the spawned pid is the daemon's)."""
    return [f"ceph-{kind}", "-f", "-c", state["conf"], "-i", str(ident)]


def _run_path(state: Dict[str, Any], name: str, suffix: str) -> str:
    return os.path.join(state["dir"], "run", f"{name}.{suffix}")


def admin_socket(lab_dir: str, name: str) -> str:
    """A lab daemon's admin socket: conf.py's admin_socket = D/run/$name.asok (the same path
    inside a release chroot, where the lab directory is mounted at its own path)."""
    return _run_path({"dir": lab_dir}, name, "asok")


def osd_pid(state: Dict[str, Any], osd_id: int) -> Optional[int]:
    """pid of a running ceph-osd of THIS lab (pid file + alive + our conf in its argv)."""
    info = state["osds"][str(osd_id)]
    marks = ("ceph-osd", state["conf"])
    for path in (info["pid_file"], _run_path(state, f"osd.{osd_id}", "spawn.pid")):
        pid = procs.read_pid(path)
        if procs.alive(pid, marks) and _is_osd(pid, osd_id):
            return pid
    return None


def _is_osd(pid: int, osd_id: int) -> bool:
    try:
        cmd = psutil.Process(pid).cmdline()
    except psutil.Error:
        return False
    return any(cmd[i] == "-i" and cmd[i + 1] == str(osd_id) for i in range(len(cmd) - 1))


def start_osd(state: Dict[str, Any], osd_id: int) -> int:
    """Spawn ceph-osd inside its host's cgroup (and netns); pid once it exists (not up).

    RuntimeError if this lab's osd.N already runs (checked under a per-OSD lock, so a helper
    and a drill starting the same OSD at once cannot both spawn it).
    """
    info = state["osds"][str(osd_id)]
    host = state["hosts"][info["host"]]
    with open(_run_path(state, f"osd.{osd_id}", "start.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        running = osd_pid(state, osd_id)
        if running:
            raise RuntimeError(f"osd.{osd_id} already runs as pid {running}")
        return procs.spawn(release.prefix(state) + info["argv"], info["log_file"] + ".stdio",
                           _run_path(state, f"osd.{osd_id}", "spawn.pid"),
                           cgroup=host["cgroup"]["path"], netns=host.get("netns"))


def stop_osd(state: Dict[str, Any], osd_id: int, sig: int = signal.SIGTERM,
             timeout: float = 30) -> bool:
    """Send sig to the OSD and wait for it to exit; True when it is not running at the end."""
    pid = osd_pid(state, osd_id)
    if pid is None:
        return True
    procs.signal_pid(pid, sig)
    return not procs.wait_gone([pid], timeout)


def kill_host(state: Dict[str, Any], host: str) -> List[int]:
    """kill -9 every running OSD of a lab host; returns the pids killed."""
    pids = [p for p in (osd_pid(state, o) for o in state["hosts"][host]["osds"]) if p]
    for pid in pids:
        procs.signal_pid(pid, signal.SIGKILL)
    procs.wait_gone(pids, 10)
    return pids


def cgroup_memory(state: Dict[str, Any], host: str) -> Dict[str, Optional[int]]:
    """{"usage", "limit", "oom_kill", "max_usage"} of the host's memory cgroup."""
    cg = state["hosts"][host]["cgroup"]
    return cgroups.memory(cg["version"], cg["path"])


def mgr_env(state: Dict[str, Any]) -> Dict[str, str]:
    """ceph-mgr's environment: the module folder carries the core and needs nothing beyond the
    standard library and ceph-mgr's own modules, so neither the lab's core nor the tools'
    dependencies go on its path (they would hide a missing piece). Only what ceph-mgr itself
    needs does: release.mgr_pythonpath."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    path = release.mgr_pythonpath(state)
    if path:
        env["PYTHONPATH"] = path
    return env


def start_mon(state: Dict[str, Any], ident: str = "a") -> int:
    pid = procs.spawn(release.prefix(state) + daemon_argv(state, "mon", ident),
                      os.path.join(state["dir"], "log", f"mon.{ident}.stdio"),
                      _run_path(state, f"mon.{ident}", "spawn.pid"))
    _record_pid(state, f"mon.{ident}", pid)
    return pid


def start_mgr(state: Dict[str, Any], ident: str = "x") -> int:
    pid = procs.spawn(release.prefix(state) + daemon_argv(state, "mgr", ident),
                      os.path.join(state["dir"], "log", f"mgr.{ident}.stdio"),
                      _run_path(state, f"mgr.{ident}", "spawn.pid"), env=mgr_env(state))
    _record_pid(state, f"mgr.{ident}", pid)
    return pid


def restart_mgr(state: Dict[str, Any], ident: str = "x", timeout: float = 180,
                wait: bool = True) -> int:
    """Kill the lab's mgr and start it again with the same environment; the new pid.

    With wait, returns once a NEW mgr instance (another gid) is active and available.
    """
    old_gid = ceph(state, "mgr", "dump", timeout=30).get("active_gid")
    pid = mgr_pid(state, ident)
    if pid is not None:
        procs.terminate([pid], 20)
    new = start_mgr(state, ident)
    if wait:
        wait_mgr_available(state, timeout, not_gid=old_gid)
    return new


def mgr_pid(state: Dict[str, Any], ident: str = "x") -> Optional[int]:
    """pid of a running ceph-mgr.<ident> of THIS lab, like osd_pid: its spawn pid file (written
    by whoever started it last - a drill, the CLI - so a stale state dict does not matter),
    else the daemon's own pid file (conf.py's pid_file: a start that lost the pid file lock
    to a running mgr leaves its dead pid in the spawn pid file), else this state's record;
    alive with our conf in its argv."""
    marks = ("ceph-mgr", state["conf"])
    for pid in (procs.read_pid(_run_path(state, f"mgr.{ident}", "spawn.pid")),
                procs.read_pid(_run_path(state, f"mgr.{ident}", "pid")),
                state.get("pids", {}).get(f"mgr.{ident}")):
        if procs.alive(pid, marks):
            return pid
    return None


def wait_mgr_available(state: Dict[str, Any], timeout: float = 60,
                       not_gid: Optional[int] = None) -> Dict[str, Any]:
    """Poll `mgr dump` until an mgr is active and available (and not instance `not_gid`)."""
    def ready(dump: Dict[str, Any]) -> bool:
        return bool(dump.get("available")) and dump.get("active_gid") not in (0, not_gid)
    return wait_until(lambda: ceph(state, "mgr", "dump", timeout=30), timeout, 0.5, done=ready,
                      ignore=(CephError,), what="no available mgr", detail=_mgr_keys)


def keep_mgr(state: Dict[str, Any], watch: float, ident: str = "x",
             attempts: int = 3) -> int:
    """Watch mgr.<ident> for `watch` seconds; if it died, start it again (as systemd's
    Restart= would) and wait until an mgr is available, at most `attempts` times. Returns how
    many times it was started again; RuntimeError if it kept dying."""
    for started in range(attempts + 1):
        deadline = time.monotonic() + watch
        while not _mgr_gone(state, ident) and time.monotonic() < deadline:
            time.sleep(0.5)
        if not _mgr_gone(state, ident):
            return started
        if started == attempts:
            break
        log.warning("mgr_died_started_again", mgr=ident, attempt=started + 1,
                    stdio=os.path.join(state["dir"], "log", f"mgr.{ident}.stdio"))
        dead_gid = ceph(state, "mgr", "dump", timeout=30).get("active_gid")
        start_mgr(state, ident)
        wait_mgr_available(state, 120, not_gid=dead_gid)
    raise RuntimeError(f"mgr.{ident} died {attempts + 1} times (see log/mgr.{ident}.stdio)")


def _mgr_gone(state: Dict[str, Any], ident: str, polls: int = 3) -> bool:
    """No ceph-mgr.<ident> of this lab on `polls` polls 0.5 s apart: an mgr respawning itself
    (execv when its enabled modules change) can be missed by a single look, and starting a
    second one then fails on the pid file lock while the first keeps running."""
    for i in range(polls):
        if mgr_pid(state, ident) is not None:
            return False
        if i + 1 < polls:
            time.sleep(0.5)
    return True


def _mgr_keys(dump: Any) -> str:
    dump = dump if isinstance(dump, dict) else {}
    keys = ("active_gid", "active_name", "available", "standbys", "modules")
    return json.dumps({k: dump.get(k) for k in keys})


def _record_pid(state: Dict[str, Any], name: str, pid: int) -> None:
    state.setdefault("pids", {})[name] = pid
    if os.path.exists(os.path.join(state["dir"], "lab.json")):
        update_state(state["dir"], lambda s: s.setdefault("pids", {}).__setitem__(name, pid))


def health(state: Dict[str, Any], timeout: float = 30) -> Dict[str, Any]:
    return ceph(state, "health", "detail", timeout=timeout)


def wait_health_ok(state: Dict[str, Any], timeout: float = 300, ignore: Iterable[str] = (),
                   fail_on: Iterable[str] = ()) -> Dict[str, Any]:
    """Poll until HEALTH_OK (or only `ignore`d checks remain); TimeoutError with the last one.

    A check listed in `fail_on` seen on 5 polls in a row raises RuntimeError at once.
    """
    ignore, fail_on, streak = set(ignore), set(fail_on), [0]
    deadline = time.monotonic() + timeout

    def ok(last: Dict[str, Any]) -> bool:
        checks = set(last.get("checks", {}))
        return last.get("status") == "HEALTH_OK" or bool(checks and checks <= ignore)

    def probe() -> Dict[str, Any]:
        try:
            last = health(state, timeout=min(30, max(5, deadline - time.monotonic())))
        except CephError as exc:
            last = {"status": "UNREACHABLE", "error": str(exc)}
        if not ok(last):
            streak[0] = streak[0] + 1 if set(last.get("checks", {})) & fail_on else 0
            if streak[0] >= 5:
                raise RuntimeError(f"lab health: {json.dumps(last)[:2000]}")
        return last
    return wait_until(probe, timeout, 1, done=ok, what="lab not HEALTH_OK",
                      detail=lambda last: json.dumps(last)[:2000])


def wait_all_up(state: Dict[str, Any], timeout: float = 300,
                require_running: bool = False) -> Dict[str, Any]:
    """Poll until every lab OSD is up and in the OSD map; the last `osd dump`.

    require_running: raise RuntimeError at once when an OSD process is gone (crashed, or
    OOM-killed in its host cgroup) instead of waiting for the timeout.
    """
    want = {int(o) for o in state["osds"]}
    def probe() -> Optional[Dict[str, Any]]:
        try:
            dump = ceph(state, "osd", "dump", timeout=30)
            if want <= {o["osd"] for o in dump["osds"] if o["up"] and o["in"]}:
                return dump
        except CephError:
            pass
        if require_running:
            _raise_if_osd_gone(state, want)
        return None
    return wait_until(probe, timeout, 1, what="OSDs not all up",
                      detail=lambda _: f"want {sorted(want)}")


def _raise_if_osd_gone(state: Dict[str, Any], osds: Iterable[int]) -> None:
    gone = [o for o in sorted(osds) if osd_pid(state, o) is None]
    if not gone:
        return
    ooms = {h: cgroup_memory(state, h)["oom_kill"] for h in state["hosts"]}
    raise RuntimeError(f"OSD process(es) {gone} exited while starting (cgroup oom_kill by host: "
                       f"{ooms}); see {state['dir']}/log/osd.N.log")


def pgs_clean(stat: Dict[str, Any]) -> bool:
    """`pg stat -f json` (either shape: Pacific wraps it in pg_summary): every PG, and at
    least one, is active+clean."""
    summary = stat.get("pg_summary", stat)
    total = summary.get("num_pgs", 0)
    clean = sum(s["num"] for s in summary.get("num_pg_by_state", [])
                if s["name"] == "active+clean")
    return bool(total) and clean == total


def wait_pgs_clean(state: Dict[str, Any], timeout: float = 300) -> Dict[str, Any]:
    """Poll `pg stat` until every PG is active+clean (none unknown); the last answer."""
    return wait_until(lambda: ceph(state, "pg", "stat", timeout=30), timeout, 1, done=pgs_clean,
                      ignore=(CephError,), what="PGs not all active+clean",
                      detail=lambda stat: str(stat)[:1000])


def helper_executable() -> str:
    """ceph-recovery-helper installed next to the interpreter running the lab."""
    return os.path.join(os.path.dirname(sys.executable), "ceph-recovery-helper")


def start_helper(state: Dict[str, Any], host: str) -> int:
    """Spawn the node helper of a lab host (in its netns if any, NOT in its memory cgroup)."""
    argv = release.tool_argv(state, "ceph-recovery-helper") + [
        "run", "--lab-dir", state["dir"], "--host", host, "--launcher", "process"]
    pid = procs.spawn(argv, os.path.join(state["dir"], "log", f"helper.{host}.log"),
                      _run_path(state, f"helper.{host}", "spawn.pid"), env=release.tool_env(state),
                      netns=state["hosts"][host].get("netns"))
    _record_pid(state, f"helper.{host}", pid)
    return pid


def stop_helper(state: Dict[str, Any], host: str, timeout: float = 15) -> bool:
    """Stop the node helper of a lab host; True when it is not running at the end."""
    pid = state.get("pids", {}).get(f"helper.{host}")
    if not procs.alive(pid, ("ceph-recovery-helper", state["dir"])):
        return True
    return not procs.terminate([pid], timeout)
