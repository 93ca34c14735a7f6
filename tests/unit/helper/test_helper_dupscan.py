"""The helper's count of PG log dups warnings in an OSD's log (dupscan.py), and how it travels
in the report (the optional per-OSD field `pglog_dups`)."""
from __future__ import annotations

import os

import pytest

from ceph_recovery import protocol
from ceph_recovery_tools.helper import dupscan, report
from ceph_recovery_tools.helper.launchers import CephadmLauncher, SystemdLauncher

# Ceph's own lines. The warning: src/osd/PGLog.h read_log_and_missing (16.2.11+, 17.2.4+;
# the same strings are in Debian's 16.2.15 /usr/bin/ceph-osd), with the log prefix of a
# level-0 line of the OSD's main thread; the start: global_init's first line.
WARN = ("2022-07-19T06:17:18.974+0000 7faeabe3b200  0 read_log_and_missing WARN num of dups "
        "exceeded 6000. You can be hit by THE DUPS BUG https://tracker.ceph.com/issues/53729. "
        "Consider ceph-objectstore-tool --op trim-pg-log-dups")
START = ("2026-11-29T05:25:51.487+0000 7f46aa7e4880  0 ceph version 16.2.15 "
         "(618f440892089921c3e944a991122ddc44e60516) pacific (stable), process ceph-osd, "
         "pid 7363")
LOAD = "2026-11-29T05:25:53.947+0000 7f58e96bd880  0 osd.0 0 load_pgs"
OTHER = "2026-11-29T05:25:53.947+0000 7f58e96bd880  1 osd.0 0 load_pgs opened 12 pgs"


def log(*lines):
    return "".join(line + "\n" for line in lines)


def test_warnings_count_from_the_last_start_on():
    assert dupscan.count_text(log(START, LOAD, WARN, WARN, OTHER)) == 2
    # a new start (after an offline trim: no warning at its load) counts from 0 again
    assert dupscan.count_text(log(START, LOAD, WARN, WARN, OTHER, START, LOAD, OTHER)) == 0
    assert dupscan.count_text(log(START, WARN, START, LOAD, WARN)) == 1


def test_a_log_without_the_warning_counts_zero():
    assert dupscan.count_text(log(START, LOAD, OTHER)) == 0
    # the tool's own advice in another line is no warning from a load
    assert dupscan.count_text(log(START, "0 ceph-objectstore-tool --op trim-pg-log-dups")) == 0


def test_a_threshold_other_than_6000_still_counts():
    # the threshold is 2 x osd_pg_log_dups_tracked
    assert dupscan.count_text(log(START, WARN.replace("exceeded 6000", "exceeded 20000"))) == 1


def test_the_scanner_reads_what_was_appended(tmp_path):
    path = str(tmp_path / "ceph-osd.3.log")
    with open(path, "w") as f:
        f.write(log(START, LOAD, WARN))
    s = dupscan.DupsScanner()
    assert s.count(path) == 1
    with open(path, "a") as f:
        f.write(log(WARN, OTHER) + WARN[:40])      # the last line not whole yet
    assert s.count(path) == 2
    with open(path, "a") as f:
        f.write(WARN[40:] + "\n")
    assert s.count(path) == 3
    with open(path, "a") as f:
        f.write(log(START, LOAD))
    assert s.count(path) == 0


def test_a_rotated_or_truncated_log_is_read_from_its_start(tmp_path):
    path = str(tmp_path / "ceph-osd.3.log")
    with open(path, "w") as f:
        f.write(log(START, WARN, WARN, OTHER, OTHER))
    s = dupscan.DupsScanner()
    assert s.count(path) == 2
    os.rename(path, path + ".1")                   # logrotate: a new file
    with open(path, "w") as f:
        f.write(log(WARN))
    assert s.count(path) == 3                      # the same start, one more warning
    with open(path, "w") as f:                     # truncated in place (copytruncate)
        f.write(log(START))
    assert s.count(path) == 0


def test_a_missing_log_counts_zero(tmp_path):
    s = dupscan.DupsScanner()
    assert s.count(str(tmp_path / "none.log")) == 0
    assert s.count(None) == 0


def test_a_log_first_seen_is_read_from_its_tail(tmp_path, monkeypatch):
    monkeypatch.setattr(dupscan, "FIRST_TAIL_BYTES", len(log(START, WARN)) + 10)
    path = str(tmp_path / "ceph-osd.3.log")
    with open(path, "w") as f:     # an old start with warnings, then a start without any
        f.write(log(START, WARN, WARN, WARN, OTHER, START, WARN))
    # the tail holds the last start and its one warning; the cut line before it is skipped
    assert dupscan.DupsScanner().count(path) == 1


def test_a_stopped_osd_reports_its_warnings(tmp_path):
    out = report.osd_process(3, None, None, pglog_dups=2)
    assert out == {"id": 3, "process": "stopped", "pid": None, "rss": 0, "started_at": None,
                   "pglog_dups": 2}
    assert "pglog_dups" not in report.osd_process(3, None, None, pglog_dups=0)


def test_the_report_carries_pglog_dups_and_an_older_report_reads_as_zero():
    mem = {"total": 8 << 30, "used": 1 << 30, "available": 7 << 30, "limit": None,
           "swap_total": 0, "source": "host"}
    rep = report.build_report("h1", 1, 1000.0, mem, [report.osd_process(3, None, None, pglog_dups=2),
                                                      report.osd_process(4, None, None)])
    parsed = protocol.parse_report(rep)
    assert [(o.id, o.pglog_dups) for o in parsed.osds] == [(3, 2), (4, 0)]
    assert protocol.report_to_dict(parsed)["osds"][0]["pglog_dups"] == 2
    assert "pglog_dups" not in protocol.report_to_dict(parsed)["osds"][1]


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2", protocol.MAX_PGLOG_DUPS + 1])
def test_a_malformed_pglog_dups_is_refused(bad):
    d = {"version": 1, "host": "h1", "time": 1.0, "seq": 1,
         "memory": {"total": 8, "used": 1, "available": 7, "source": "host"},
         "osds": [{"id": 3, "process": "stopped", "pglog_dups": bad}]}
    with pytest.raises(protocol.ProtocolError, match="pglog_dups"):
        protocol.parse_report(d)


FSID = "3a1c9b0e-5d2f-4c8e-9f61-0b7d2e4a6c15"


def test_the_launchers_name_ceph_default_log_files():
    assert SystemdLauncher().log_path(3) == "/var/log/ceph/ceph-osd.3.log"
    assert CephadmLauncher(FSID).log_path(3) == "/var/log/ceph/%s/ceph-osd.3.log" % FSID


class LogLauncher:
    """Stands in for the OS side: no OSD runs; each OSD's log is a file under `logs`."""

    name = "logs"

    def __init__(self, logs):
        self.logs = logs

    def pid(self, osd):
        return None

    def asok_path(self, osd):
        return None

    def log_path(self, osd):
        return os.path.join(self.logs, "osd.%d.log" % osd)


def test_the_helper_reports_each_osds_warnings_from_its_log(tmp_path):
    from ceph_recovery_tools.helper import daemon
    logs = tmp_path / "log"
    logs.mkdir()
    (logs / "osd.2.log").write_text(log(START, LOAD, WARN, WARN))
    (logs / "osd.3.log").write_text(log(START, LOAD, OTHER))
    opts = daemon.Options(host="h2", conf="/nonexistent.conf", name="client.recovery-helper",
                          keyring=None, state_dir=str(tmp_path / "state"), probe_budget=0)
    mem = {"total": 8 << 30, "used": 1 << 30, "available": 7 << 30, "limit": None,
           "swap_total": 0, "source": "host"}
    h = daemon.Helper(opts, LogLauncher(str(logs)), read_memory=lambda: mem,
                      ok_to_stop=lambda osd: (True, ""))
    rep = h.build(1000.0, [2, 3, 4])          # osd.4 has no log: 0
    assert [(o["id"], o.get("pglog_dups", 0)) for o in rep["osds"]] == [(2, 2), (3, 0), (4, 0)]
