"""A short, bounded TCP throughput probe between two hosts: a sink and a sender.

The sink (one per host, started by the helper or a test inside the host's namespace) serves
each sender on its own thread (at most MAX_SENDERS at once), because every helper probes on its
own cycle: queued behind another peer's probe, a sender would time the queue, not the link. It
reads and discards at most `max_bytes` per sender, then answers the byte count
(8 bytes, network order) and closes. The sender writes for at most `max_s` seconds or
`max_bytes` bytes, half-closes, and waits for the sink's count: bits per second are computed
from what the sink received, so socket buffers do not inflate the number.

    python -m ceph_recovery_tools.helper.netprobe_tput serve [--bind ADDR] [--port 7301]
    python -m ceph_recovery_tools.helper.netprobe_tput send ADDR [--port 7301] [--seconds 2]
"""
from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import threading
import time
from typing import Dict, Optional

DEFAULT_PORT = 7301
MAX_BYTES = 64 << 20
MAX_SECONDS = 2.0
CHUNK = 256 << 10
MAX_SENDERS = 8   # concurrent senders per sink; more wait in the listen backlog


class Sink:
    """Discarding receiver; `close()` stops it. Serves up to MAX_SENDERS senders at once."""

    def __init__(self, bind: str = "0.0.0.0", port: int = DEFAULT_PORT,
                 max_bytes: int = MAX_BYTES, idle_s: float = 5.0) -> None:
        fam = socket.AF_INET6 if ":" in bind else socket.AF_INET
        self.sock = socket.socket(fam, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((bind, port))
        self.sock.listen(4)
        self.sock.settimeout(0.5)
        self.max_bytes, self.idle_s = max_bytes, idle_s
        self._slots = threading.BoundedSemaphore(MAX_SENDERS)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="netprobe-sink", daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _peer = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self._slots.acquire()
            threading.Thread(target=self._serve, args=(conn,), name="netprobe-sink-conn",
                             daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn:
                self._count(conn)
        finally:
            self._slots.release()

    def _count(self, conn: socket.socket) -> None:
        conn.settimeout(self.idle_s)
        total = 0
        try:
            while total <= self.max_bytes:
                data = conn.recv(CHUNK)
                if not data:
                    break
                total += len(data)
            conn.sendall(struct.pack("!Q", total))
        except OSError:
            pass

    def close(self) -> None:
        self._stop.set()
        self.sock.close()
        self.thread.join(timeout=2.0)


def send(addr: str, port: int = DEFAULT_PORT, max_s: float = MAX_SECONDS,
         max_bytes: int = MAX_BYTES, connect_timeout: float = 1.0) -> Dict[str, object]:
    """Send to a Sink for <= max_s seconds / <= max_bytes; {bps, bytes, seconds} or {error}."""
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    buf = b"\0" * CHUNK
    t0 = time.monotonic()
    try:
        s.settimeout(connect_timeout)
        s.connect((addr, port))
        s.settimeout(max(0.1, max_s))
        sent = 0
        end = t0 + max_s
        while sent < max_bytes and time.monotonic() < end:
            sent += s.send(buf[:min(CHUNK, max_bytes - sent)])
        s.shutdown(socket.SHUT_WR)
        s.settimeout(max(1.0, max_s))
        reply = _recv_exact(s, 8)
        secs = time.monotonic() - t0
        got = struct.unpack("!Q", reply)[0]
        return {"bps": got * 8.0 / secs if secs > 0 else 0.0, "bytes": got, "seconds": secs}
    except (OSError, ValueError) as exc:
        return {"error": "%s: %s" % (type(exc).__name__, exc), "seconds": time.monotonic() - t0}
    finally:
        s.close()


def _recv_exact(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        part = s.recv(n - len(data))
        if not part:
            raise ValueError("sink closed before answering its byte count")
        data += part
    return data


_SINK: Optional[Sink] = None


def ensure_sink(bind: str = "0.0.0.0", port: int = DEFAULT_PORT) -> Optional[Sink]:
    """Start this process's sink once (idempotent); None if the port is taken (e.g. a sink
    already runs in another process of this namespace)."""
    global _SINK
    if _SINK is None:
        try:
            _SINK = Sink(bind, port)
        except OSError:
            return None
    return _SINK


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="netprobe_tput", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sv = sub.add_parser("serve")
    sv.add_argument("--bind", default="0.0.0.0")
    sv.add_argument("--port", type=int, default=DEFAULT_PORT)
    sv.add_argument("--seconds", type=float, default=0, help="exit after this long (0: never)")
    sd = sub.add_parser("send")
    sd.add_argument("addr")
    sd.add_argument("--port", type=int, default=DEFAULT_PORT)
    sd.add_argument("--seconds", type=float, default=MAX_SECONDS)
    sd.add_argument("--bytes", type=int, default=MAX_BYTES)
    a = ap.parse_args(argv)
    if a.cmd == "serve":
        sink = Sink(a.bind, a.port)
        print(json.dumps({"listening": [a.bind, sink.port]}), flush=True)
        try:
            if a.seconds > 0:
                time.sleep(a.seconds)
            else:
                while True:
                    time.sleep(3600)
        except KeyboardInterrupt:
            pass
        sink.close()
        return 0
    res = send(a.addr, a.port, min(a.seconds, MAX_SECONDS), min(a.bytes, MAX_BYTES))
    print(json.dumps(res))
    return 1 if "error" in res else 0


if __name__ == "__main__":
    sys.exit(main())
