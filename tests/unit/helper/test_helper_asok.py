"""The helper reads an OSD's own state from its admin socket: a real unix socket served by a
thread speaking Ceph's AdminSocket wire format (command JSON + NUL in, 4-byte big-endian
length + payload out); missing, silent or broken sockets give None within the timeout."""
from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from ceph_recovery import protocol
from ceph_recovery_tools.helper import asok, report


class AsokServer:
    """Answers every request with `reply(request_bytes)`; records the requests."""

    def __init__(self, path, reply):
        self.requests = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(path))
        self.sock.listen(4)
        self.reply = reply
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                buf = b""
                while not buf.endswith(b"\0"):
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    buf += chunk
                self.requests.append(buf)
                out = self.reply(buf)
                if out is None:
                    time.sleep(1.0)          # holds the connection open and says nothing
                else:
                    conn.sendall(out)
                    time.sleep(0.05)

    def close(self):
        self.sock.close()


def framed(obj):
    data = json.dumps(obj).encode()
    return struct.pack(">I", len(data)) + data


@pytest.fixture
def served(tmp_path):
    servers = []

    def make(reply):
        s = AsokServer(tmp_path / ("osd.%d.asok" % len(servers)), reply)
        servers.append(s)
        return str(tmp_path / ("osd.%d.asok" % (len(servers) - 1))), s
    yield make
    for s in servers:
        s.close()


def test_the_state_comes_from_the_status_command(served):
    path, srv = served(lambda req: framed({"cluster_fsid": "x", "whoami": 2,
                                           "state": "preboot", "num_pgs": 32}))
    assert asok.osd_state(path) == "preboot"
    assert srv.requests == [b'{"prefix": "status", "format": "json"}\0']


@pytest.mark.parametrize("reply", [
    lambda req: None,                                   # holds on, silent: the timeout
    lambda req: b"\x00\x00",                            # a cut length
    lambda req: struct.pack(">I", 10) + b"{}",          # a cut payload
    lambda req: framed(["not", "an", "object"]),
    lambda req: framed({"whoami": 2}),                  # no state
    lambda req: struct.pack(">I", 3) + b"\xff\xfe\xfd",  # not UTF-8
    lambda req: struct.pack(">I", asok.MAX_REPLY_BYTES + 1),
], ids=["silent", "cut-length", "cut-payload", "list", "no-state", "bytes", "huge"])
def test_a_socket_that_does_not_answer_properly_gives_none_in_bounded_time(served, reply):
    path, _ = served(reply)
    began = time.monotonic()
    assert asok.osd_state(path, timeout=0.3) is None
    assert time.monotonic() - began < 2.0


def test_no_socket_gives_none(tmp_path):
    assert asok.osd_state(str(tmp_path / "osd.9.asok")) is None
    assert asok.osd_state(None) is None
    (tmp_path / "plain").write_text("not a socket")
    assert asok.osd_state(str(tmp_path / "plain")) is None


def test_a_running_osd_is_reported_with_its_state_and_parses(served):
    path, _ = served(lambda req: framed({"state": "initializing"}))
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        got = report.osd_process(7, child.pid, path)
        assert got["state"] == "initializing" and got["process"] == "running"
        parsed = protocol.parse_osd_proc(got, 0)
        assert parsed.state == "initializing"
        silent = report.osd_process(7, child.pid, path + ".missing")
        assert "state" not in silent and silent["process"] == "running"
    finally:
        child.kill()
        child.wait()
    assert "state" not in report.osd_process(7, child.pid, path)   # stopped: no state


def test_the_report_carries_state_only_when_read_and_rejects_a_bad_one():
    base = {"id": 2, "process": "running", "pid": 10, "rss": 5, "started_at": 1.0}
    assert protocol.parse_osd_proc(base, 0).state is None
    rep = {"version": 1, "host": "h2", "time": 1.0, "seq": 1,
           "memory": {"total": 10, "used": 5, "available": 5, "source": "host"},
           "osds": [dict(base, state="preboot"), dict(base, id=3)], "done": [], "network": {}}
    parsed = protocol.parse_report(rep)
    assert [o.state for o in parsed.osds] == ["preboot", None]
    out = protocol.report_to_dict(parsed)
    assert out["osds"][0]["state"] == "preboot" and "state" not in out["osds"][1]
    for bad in ("", 7, "x" * (protocol.MAX_STATE_LEN + 1)):
        with pytest.raises(protocol.ProtocolError, match=r"report.osds\[0\]: state"):
            protocol.parse_osd_proc(dict(base, state=bad), 0)
