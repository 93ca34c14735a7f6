"""An OSD's own state, read from its admin socket (`ceph daemon osd.N status`).

Rules:
- The OSD answers `status` with {"state": "initializing"|"preboot"|"booting"|"active"|...}
  (Ceph's OSDState). It enters "preboot" only once init() has loaded every PG (load_pgs):
  from then on its load-time footprint is what it holds until it is allowed to boot. The
  core uses it to allow the boot at once instead of waiting for two flat rss samples.
- A down or preboot OSD answers on its admin socket, not to `ceph tell` (the mon does not
  route to it), so the helper asks the socket directly.
- One bounded round trip per OSD and cycle (SOCKET_TIMEOUT_S): a socket that is missing,
  refuses, hangs or answers garbage gives None (unknown) and the core falls back to the flat
  rss rule. `ceph_daemon.admin_socket` would do the same call but has no timeout and first
  fetches the command descriptions (two round trips).

Wire format (Ceph's AdminSocket, src/common/admin_socket.cc): the request is a JSON command
followed by a NUL byte; the reply is a 4-byte big-endian length and that many bytes.
"""
from __future__ import annotations

import json
import os
import socket
import struct
from typing import Optional

SOCKET_TIMEOUT_S = 0.5
MAX_REPLY_BYTES = 1 << 20
STATUS_REQUEST = b'{"prefix": "status", "format": "json"}\0'


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("admin socket closed after %d of %d bytes" % (len(buf), n))
        buf += chunk
    return buf


def request(path: str, payload: bytes, timeout: float = SOCKET_TIMEOUT_S) -> bytes:
    """One admin-socket round trip; OSError/ConnectionError/ValueError on any failure."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(payload)
        (length,) = struct.unpack(">I", _recv_exact(sock, 4))
        if length > MAX_REPLY_BYTES:
            raise ValueError("admin socket reply of %d bytes" % length)
        return _recv_exact(sock, length)


def osd_state(path: Optional[str], timeout: float = SOCKET_TIMEOUT_S) -> Optional[str]:
    """The daemon's state from `status`, or None when it cannot be read."""
    if not path or not os.path.exists(path):
        return None
    try:
        reply = json.loads(request(path, STATUS_REQUEST, timeout).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    state = reply.get("state") if isinstance(reply, dict) else None
    return state if isinstance(state, str) and state else None
