"""Spawning and watching lab daemons by pid (never by name: other labs run the same binaries).

A daemon is spawned detached (its own session, stdio to its log file), optionally started inside
a memory cgroup (its pid is written to cgroup.procs before exec, so its whole memory is charged
there) and inside a network namespace (`nsenter --net` execs in place, the pid is kept).
PID 1 on these machines reaps orphans only now and then: a dead daemon may linger as a zombie,
so "alive" means "exists and is not a zombie" -- unless some of its threads still run (a daemon
whose main thread already returned during shutdown).
"""
from __future__ import annotations

import os
import signal
import subprocess
from typing import Dict, Iterable, List, Optional, Sequence

import psutil

from ..common.wait import wait_until

# $1: file to write our pid to; $2: cgroup.procs to join ('' = none); then the command.
_SPAWN_SH = ('echo $$ > "$1.tmp" && mv "$1.tmp" "$1" || exit 97; '
             'if [ -n "$2" ]; then echo $$ > "$2" || exit 98; fi; shift 2; exec "$@"')


def spawn(argv: Sequence[str], log_file: str, spawn_pid_file: str,
          env: Optional[Dict[str, str]] = None, cgroup: Optional[str] = None,
          netns: Optional[str] = None, timeout: float = 10.0) -> int:
    """Start argv detached (setsid -f) and return its pid once it exists."""
    if os.path.exists(spawn_pid_file):
        os.unlink(spawn_pid_file)
    procs_file = os.path.join(cgroup, "cgroup.procs") if cgroup else ""
    prefix = netns_prefix(netns)
    cmd = ["setsid", "-f", "sh", "-c", _SPAWN_SH, "sh", spawn_pid_file, procs_file,
           *prefix, *argv]
    os.makedirs(os.path.dirname(log_file), exist_ok=True)
    with open(log_file, "ab") as log:
        rc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            env=env, close_fds=True, timeout=timeout).returncode
    if rc != 0:
        raise RuntimeError(f"could not spawn {argv[0]} (setsid rc {rc}); see {log_file}")
    pid = wait_until(lambda: read_pid(spawn_pid_file), timeout, 0.02)
    if not pid:
        raise RuntimeError(f"{argv[0]} did not start within {timeout}s; see {log_file}")
    return pid


def netns_prefix(netns: Optional[str]) -> List[str]:
    """Command prefix entering only the network namespace (`ip netns exec` would also remount
    /sys, hiding /sys/fs/cgroup from the process: helpers need the cgroups)."""
    return ["nsenter", f"--net=/run/netns/{netns}"] if netns else []


def read_pid(path: str) -> Optional[int]:
    try:
        with open(path) as f:
            text = f.read().strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


def alive(pid: Optional[int], must_contain: Iterable[str] = ()) -> bool:
    """pid exists, is not a zombie, and its command line contains every string given."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            # its argv is gone; still running threads mean it still holds its locks
            return _live_threads(pid)
        cmdline = proc.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return _live_threads(pid)
    return all(any(part in arg for arg in cmdline) for part in must_contain)


def _live_threads(pid: int) -> bool:
    """A process whose main thread exited shows as a zombie while its other threads still run
    (ceph daemons shutting down do this, still holding their pid file and store locks)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            return True
    return False


def wait_gone(pids: Iterable[int], timeout: float) -> List[int]:
    """Wait until every pid is dead or a zombie; return those still alive at the timeout."""
    pids = list(pids)
    return wait_until(lambda: [p for p in pids if alive(p)], timeout, 0.1,
                      done=lambda left: not left)


def signal_pid(pid: int, sig: int) -> bool:
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def terminate(pids: Iterable[int], timeout: float = 15.0) -> List[int]:
    """SIGTERM, wait, then SIGKILL what is left; returns pids that survived even that."""
    pids = [p for p in pids if alive(p)]
    for pid in pids:
        signal_pid(pid, signal.SIGTERM)
    left = wait_gone(pids, timeout)
    for pid in left:
        signal_pid(pid, signal.SIGKILL)
    return wait_gone(left, 5.0)

