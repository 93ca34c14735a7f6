"""A listener with a tiny backlog and a connection flood against it (test and drill fault).

The listener accepts slowly (one connection every `accept_interval_s`) and keeps what it
accepted open for `hold_s`, so its accept queue (size = backlog) stays full; the flood opens
`count` non-blocking connections at once. With a backlog of 1 the kernel's SYN queue overflows
(SYN cookies, SyncookiesSent) and so does the accept queue (ListenOverflows / ListenDrops).
Traffic stays between two namespaces the test created.
"""
from __future__ import annotations

import errno
import selectors
import socket
import time
from typing import Dict, List


def listen(bind: str, port: int, backlog: int = 1, accept_interval_s: float = 0.2,
           hold_s: float = 30.0, duration_s: float = 60.0) -> Dict[str, int]:
    """Serve for `duration_s`: accept one connection per interval, hold each `hold_s`."""
    srv = socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((bind, port))
    srv.listen(backlog)
    srv.settimeout(accept_interval_s)
    held: List[tuple] = []
    accepted = 0
    end = time.monotonic() + duration_s
    try:
        while time.monotonic() < end:
            try:
                conn, _peer = srv.accept()
                accepted += 1
                held.append((time.monotonic() + hold_s, conn))
            except socket.timeout:
                pass
            now = time.monotonic()
            for due, c in [h for h in held if h[0] <= now]:
                c.close()
            held = [h for h in held if h[0] > now]
            time.sleep(accept_interval_s)
    finally:
        for _due, c in held:
            c.close()
        srv.close()
    return {"accepted": accepted}


def flood(addr: str, port: int, count: int = 300, wait_s: float = 3.0) -> Dict[str, int]:
    """Open `count` non-blocking connections at once, wait `wait_s`, close them all."""
    if count > 5000:
        raise ValueError("flood count is capped at 5000")
    sel = selectors.DefaultSelector()
    socks = []
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    for _ in range(count):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex((addr, port))
        if rc not in (0, errno.EINPROGRESS):
            s.close()
            continue
        socks.append(s)
        sel.register(s, selectors.EVENT_WRITE)
    connected = 0
    end = time.monotonic() + wait_s
    while time.monotonic() < end and sel.get_map():
        for key, _ev in sel.select(timeout=max(0.0, end - time.monotonic())):
            sel.unregister(key.fileobj)
            if key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                connected += 1
    time.sleep(max(0.0, end - time.monotonic()))
    for s in socks:
        s.close()
    sel.close()
    return {"opened": len(socks), "connected": connected}
