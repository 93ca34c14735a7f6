"""The helper reads BlueStore's allocator rebuild from an OSD's log: Ceph's own lines (prefix and
text as a Tentacle 20.2.4 OSD wrote them on the lab after a SIGKILL:
  2026-11-29T10:00:56.015+0000 7ff4883ce880  0 bluestore(/tmp/lab-pytest-niovgidw/data/osd.2)
    _init_alloc::NCB::restore_allocator() failed! Run Full Recovery from ONodes (might take a
    while) ...
  2026-11-29T10:00:57.315+0000 7ff4883ce880  1 bluestore::NCB::read_allocation_from_drive_on_
    startup::::Allocation Recovery was completed in 1.303519 seconds, extent_count=278142
each on one line), only the running instance's, read in bounded pieces; and the report
carries it as the daemon state."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from ceph_recovery import protocol
from ceph_recovery.model import DAEMON_REBUILDING
from ceph_recovery_tools.helper import osdlog, report

T0 = 1795000000.0       # the process's start (epoch seconds)


def stamp(t):
    """Ceph's log timestamp of epoch seconds `t` (UTC, milliseconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03d+0000" % (
        int(round((t % 1) * 1000)) % 1000)


def start_line(t):
    return ("%s 7f0a6e2cb640  0 bluestore(/tmp/lab/data/osd.3) _init_alloc::NCB::"
            "restore_allocator() failed! Run Full Recovery from ONodes (might take a while) ..."
            "\n" % stamp(t))


def end_line(t, seconds=12.5):
    return ("%s 7f0a6e2cb640  1 bluestore::NCB::read_allocation_from_drive_on_startup::::"
            "Allocation Recovery was completed in %s seconds, extent_count=278142\n"
            % (stamp(t), seconds))


def other(t, text="osd.3 0 load_pgs opened 33 pgs"):
    return "%s 7f0a6e2cb640  0 %s\n" % (stamp(t), text)


def append(path, *lines):
    with open(path, "a") as f:
        f.write("".join(lines))


def test_a_log_line_time_is_read_from_cephs_prefix():
    assert osdlog.line_time(start_line(T0).encode()) == T0
    assert osdlog.line_time(b"2026-11-29T09:45:01.250-0130 7f0a 0 x") == \
        osdlog.line_time(b"2026-11-29T11:15:01.250+0000 7f0a 0 x")
    assert osdlog.line_time(b"no stamp here") is None


def test_the_phase_runs_from_the_start_line_to_the_end_line(tmp_path):
    log = str(tmp_path / "osd.3.log")
    append(log, other(T0 - 500), start_line(T0 - 400))        # an earlier instance, killed
    w = osdlog.StartPhases()
    assert w.phase(3, log, 100, T0) is None                   # not this instance's line
    append(log, other(T0 + 0.5, "set uid:gid to 64045:64045"), start_line(T0 + 1))
    assert w.phase(3, log, 100, T0) == DAEMON_REBUILDING
    assert w.phase(3, log, 100, T0) == DAEMON_REBUILDING      # nothing new: still
    append(log, end_line(T0 + 13.5))
    assert w.phase(3, log, 100, T0) is None
    assert w.last_seconds(3) == 12.5


def test_a_new_process_instance_starts_afresh(tmp_path):
    log = str(tmp_path / "osd.3.log")
    append(log, start_line(T0 + 1))
    w = osdlog.StartPhases()
    assert w.phase(3, log, 100, T0) == DAEMON_REBUILDING
    # killed while rebuilding, started again 60 s later: its own start line comes a bit later
    assert w.phase(3, log, 101, T0 + 60) is None
    append(log, start_line(T0 + 61))
    assert w.phase(3, log, 101, T0 + 60) == DAEMON_REBUILDING
    assert w.phase(3, None, 101, T0 + 60) is None             # no log known
    assert w.phase(3, log, None, None) is None                # stopped


def test_a_failed_rebuild_ends_the_phase(tmp_path):
    log = str(tmp_path / "osd.3.log")
    append(log, start_line(T0 + 1), "%s 7f0a6e2cb640 -1 bluestore(/tmp/lab/data/osd.3) "
           "_init_alloc::NCB::Failed Recovery\n" % stamp(T0 + 5))
    assert osdlog.StartPhases().phase(3, log, 100, T0) is None


def test_each_read_is_bounded_and_takes_whole_lines(tmp_path):
    log = str(tmp_path / "osd.3.log")
    w = osdlog.StartPhases(max_read=4096, backlog=4096)
    append(log, other(T0 + 0.1))
    assert w.phase(3, log, 100, T0) is None
    filler = "".join(other(T0 + 0.2, "filler %04d" % i) for i in range(300))   # ~17 KB
    append(log, filler, start_line(T0 + 1))
    seen, calls = None, 0
    while seen is None and calls < 20:
        before = w._tails[3].offset
        seen = w.phase(3, log, 100, T0)
        calls += 1
        assert 0 < w._tails[3].offset - before <= 4096
    assert seen == DAEMON_REBUILDING and calls >= 4       # no read took more than 4 KiB
    append(log, start_line(T0 + 2)[:40])                  # a line still being written
    assert w.phase(3, log, 100, T0) == DAEMON_REBUILDING
    assert w._tails[3].offset == os.path.getsize(log) - 40


def test_the_first_look_reads_only_the_backlog(tmp_path):
    log = str(tmp_path / "osd.3.log")
    append(log, start_line(T0 + 1), "".join(other(T0 + 2, "x" * 100) for _ in range(100)))
    assert osdlog.StartPhases(backlog=4096).phase(3, log, 100, T0) is None   # too far back
    assert osdlog.StartPhases(backlog=1 << 20).phase(3, log, 100, T0) == DAEMON_REBUILDING


def test_a_rotated_or_truncated_log_is_read_from_its_start(tmp_path):
    log = str(tmp_path / "osd.3.log")
    append(log, other(T0 + 0.5) * 50)
    w = osdlog.StartPhases()
    assert w.phase(3, log, 100, T0) is None
    os.rename(log, log + ".1")                            # logrotate: a new file
    append(log, start_line(T0 + 1))
    assert w.phase(3, log, 100, T0) == DAEMON_REBUILDING
    open(log, "w").close()                                # copytruncate: seen shorter
    assert w.phase(3, log, 100, T0) == DAEMON_REBUILDING
    append(log, end_line(T0 + 3))
    assert w.phase(3, log, 100, T0) is None


def test_a_missing_log_gives_no_phase_and_forgotten_osds_go(tmp_path):
    w = osdlog.StartPhases()
    assert w.phase(3, str(tmp_path / "none.log"), 100, T0) is None
    w.keep([4])
    assert 3 not in w._tails


def test_the_report_says_rebuilding_unless_the_socket_names_a_later_state(tmp_path,
                                                                         monkeypatch):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        log = str(tmp_path / "osd.7.log")
        started = report.osd_process(7, child.pid)["started_at"]
        append(log, start_line(started + 0.5))
        w = osdlog.StartPhases()
        got = report.osd_process(7, child.pid, str(tmp_path / "no.asok"), log, w)
        assert got["state"] == DAEMON_REBUILDING
        assert protocol.parse_osd_proc(got, 0).state == DAEMON_REBUILDING
        monkeypatch.setattr(report.asok, "osd_state", lambda path: "initializing")
        assert report.osd_process(7, child.pid, "x", log, w)["state"] == DAEMON_REBUILDING
        monkeypatch.setattr(report.asok, "osd_state", lambda path: "preboot")
        assert report.osd_process(7, child.pid, "x", log, w)["state"] == "preboot"
    finally:
        child.kill()
        child.wait()


class LogLauncher:
    """A launcher of one running OSD (osd.7, a real process) whose log is `log`."""
    name = "logs"

    def __init__(self, pid, log):
        self._pid, self.log = pid, log

    def pid(self, osd):
        return self._pid if osd == 7 else None

    def asok_path(self, osd):
        return None

    def log_path(self, osd):
        return self.log


def test_the_helpers_report_and_log_follow_the_phase(tmp_path):
    import structlog
    from ceph_recovery_tools.helper import daemon
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        log = str(tmp_path / "osd.7.log")
        started = report.osd_process(7, child.pid)["started_at"]
        opts = daemon.Options(host="h2", conf="/nonexistent.conf", name="client.x",
                              keyring=None, state_dir=str(tmp_path / "state"), probe_budget=0)
        mem = {"total": 8 << 30, "used": 1 << 30, "available": 7 << 30, "limit": None,
               "source": "host"}
        h = daemon.Helper(opts, LogLauncher(child.pid, log), read_memory=lambda: mem)
        append(log, start_line(started + 0.5))
        with structlog.testing.capture_logs() as logs:
            states = [{o["id"]: o.get("state") for o in h.build(T0, [7, 8])["osds"]}]
            append(log, end_line(started + 3.5, 3.0))
            states.append({o["id"]: o.get("state") for o in h.build(T0 + 2, [7, 8])["osds"]})
        assert states == [{7: DAEMON_REBUILDING, 8: None}, {7: None, 8: None}]
        assert [(e["event"], e["osd"]) for e in logs] == [
            ("osd_rebuilding_allocator", 7), ("osd_rebuild_over", 7)]
        assert logs[1]["logged_s"] == 3.0
        h.close()
    finally:
        child.kill()
        child.wait()
