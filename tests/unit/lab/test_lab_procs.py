"""procs.alive on real processes: plain zombies are dead, a zombie leader with running threads
(a daemon whose main thread returned during shutdown) is still alive."""
import subprocess
import sys
import time

import psutil

from ceph_recovery_tools.lab import procs

LEADER_EXITS = ("import ctypes, threading, time\n"
                "threading.Thread(target=time.sleep, args=(60,)).start()\n"
                "ctypes.CDLL(None).pthread_exit(None)\n")


def _wait_zombie(pid, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


def test_plain_zombie_is_dead():
    child = subprocess.Popen(["true"])
    try:
        assert _wait_zombie(child.pid)
        assert not procs.alive(child.pid)
    finally:
        child.wait()
    assert not procs.alive(child.pid)


def test_zombie_leader_with_running_threads_is_alive():
    child = subprocess.Popen([sys.executable, "-c", LEADER_EXITS])
    try:
        assert _wait_zombie(child.pid)
        assert procs.alive(child.pid)
        assert procs.wait_gone([child.pid], 0.5) == [child.pid]
    finally:
        child.kill()
        child.wait()
    assert not procs.alive(child.pid)


def test_alive_checks_the_command_line():
    child = subprocess.Popen(["sleep", "30"])
    try:
        # until the child has exec'd, its command line is still this interpreter's
        deadline = time.monotonic() + 10
        while psutil.Process(child.pid).cmdline() != ["sleep", "30"]:
            assert time.monotonic() < deadline, "sleep never exec'd"
            time.sleep(0.01)
        assert procs.alive(child.pid, ("sleep", "30"))
        assert not procs.alive(child.pid, ("ceph-osd",))
        assert not procs.alive(None)
    finally:
        child.kill()
        child.wait()


def test_an_mgr_that_kept_its_own_pid_file_is_found_after_a_start_that_lost_the_lock(tmp_path):
    """A second ceph-mgr started while the first respawned exits on the pid file lock and
    leaves its dead pid in the spawn pid file; the running one is found by the daemon's own
    pid file, and the watch does not call it gone."""
    from ceph_recovery_tools.lab import launch
    conf = str(tmp_path / "ceph.conf")
    (tmp_path / "run").mkdir()
    mgr = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "ceph-mgr",
                            "-c", conf])
    lost = subprocess.Popen(["true"])
    lost.wait()
    try:
        (tmp_path / "run" / "mgr.x.spawn.pid").write_text("%d\n" % lost.pid)
        state = {"dir": str(tmp_path), "conf": conf, "pids": {"mgr.x": lost.pid}}
        assert launch.mgr_pid(state) is None
        (tmp_path / "run" / "mgr.x.pid").write_text("%d\n" % mgr.pid)
        assert launch.mgr_pid(state) == mgr.pid
        assert not launch._mgr_gone(state, "x")
        mgr.kill()
        mgr.wait()
        assert launch._mgr_gone(state, "x", polls=2)
    finally:
        if mgr.poll() is None:
            mgr.kill()
            mgr.wait()
