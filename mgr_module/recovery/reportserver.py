"""The module's report endpoint: helper reports over HTTP, beside the `helper-report` command.

ceph-mgr hands a module's commands to it one at a time, so a thousand helpers reporting by
command queue behind each other and behind any slow command (a maintenance request, a
drill). The endpoint runs in its own threads: one per request, HTTP/1.0, so no idle helper
holds a thread. It takes a report only when signed with its host's token
(ceph_recovery.reportauth) and hands it to the same function as the command; the reply is
signed and bound to the request. Helpers learn the URL and their token from the command's
reply and fall back to the command whenever the endpoint fails (a failover moves it).

No `from __future__ import annotations` and no mgr_module import: module.py mixes nothing
from here, it owns one ReportServer.
"""
import errno
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional, Tuple

from ceph_recovery import reportauth

MAX_BODY = 1 << 20          # a report of hundreds of OSDs and probes is tens of KiB
READ_TIMEOUT_S = 5.0        # a client that stalls mid-request loses its thread, not ours
# requests handled at once; past it the endpoint answers 503 at once (the helper sends that
# report by command): a tick that holds the engine's lock for seconds must not pile up one
# waiting thread per report
MAX_IN_FLIGHT = 64

Handle = Callable[[str, str], Tuple[int, str, str]]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024      # 1,000 helpers may connect within one second
    allow_reuse_address = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class ReportServer(object):
    """Serves POST /v1/report while ensure() says so; handle(report_text, host) answers
    (rc, out, outs) as the command would; token_of(host) is that host's token."""

    def __init__(self, handle: Handle, token_of: Callable[[str], Optional[str]],
                 log: Any) -> None:
        self._handle, self._token_of, self.log = handle, token_of, log
        self._server: Optional[_Server] = None
        self._thread: Optional[threading.Thread] = None
        self._want: Optional[Tuple[bool, int]] = None
        self._slots = threading.BoundedSemaphore(MAX_IN_FLIGHT)
        self.url: Optional[str] = None
        self.error: Optional[str] = None

    def ensure(self, enabled: bool, port: int, address: Callable[[], str]) -> Optional[str]:
        """Start, restart (its port option changed) or stop the endpoint; its URL or None.
        A bind that fails is logged once per setting and retried when the setting changes."""
        want = (enabled, port)
        if want == self._want:
            return self.url
        self.stop()
        self._want = want
        if not enabled:
            return None
        try:
            addr = address()
            cls = _Server6 if ":" in addr else _Server
            server = cls((addr, port), self._handler_class())
        except (OSError, ValueError) as e:
            self.error = "report endpoint: cannot listen on port %d: %s" % (port, e)
            self.log.error("recovery: %s (helpers use the command)", self.error)
            return None
        self._server, self.error = server, None
        self.url = reportauth.endpoint_url(addr, server.server_address[1])
        self._thread = threading.Thread(target=server.serve_forever, name="recovery-reports",
                                        kwargs={"poll_interval": 0.5}, daemon=True)
        self._thread.start()
        self.log.info("recovery: report endpoint %s", self.url)
        return self.url

    def stop(self) -> None:
        server, self._server, self.url, self._want = self._server, None, None, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def _handler_class(self) -> type:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"
            timeout = READ_TIMEOUT_S

            def do_POST(self) -> None:       # noqa: N802 - http.server's name
                owner.serve(self)

            def log_message(self, fmt: str, *args: Any) -> None:
                pass          # a line per report would flood the mgr's log

        return Handler

    def serve(self, req: BaseHTTPRequestHandler) -> None:
        if not self._slots.acquire(blocking=False):
            code, body, signature = 503, _error("busy: %d reports in flight" % MAX_IN_FLIGHT), ""
        else:
            try:
                code, body, signature = self.answer(req)
            finally:
                self._slots.release()
        req.send_response(code)
        req.send_header("Content-Type", "application/json")
        req.send_header("Content-Length", str(len(body)))
        if signature:
            req.send_header(reportauth.SIGNATURE_HEADER, signature)
        req.end_headers()
        req.wfile.write(body)

    def answer(self, req: BaseHTTPRequestHandler) -> Tuple[int, bytes, str]:
        """(HTTP status, body, reply signature): 404/411/413/403 unsigned, else 200 with the
        command's (rc, out, outs) signed for this request."""
        if req.path != reportauth.ENDPOINT_PATH:
            return 404, _error("no such path: %s" % req.path), ""
        try:
            length = int(req.headers.get("Content-Length") or -1)
        except ValueError:
            length = -1
        if length < 0:
            return 411, _error("Content-Length required"), ""
        if length > MAX_BODY:
            return 413, _error("report larger than %d bytes" % MAX_BODY), ""
        body = req.rfile.read(length)
        host = req.headers.get(reportauth.HOST_HEADER) or ""
        signature = req.headers.get(reportauth.SIGNATURE_HEADER) or ""
        token = self._token_of(host) if host else None
        if token is None or not reportauth.verify(token, body, signature):
            return 403, _error("report not signed with host %r's token" % host), ""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            rc, out, outs = -errno.EINVAL, "", "malformed helper report: not UTF-8"
        else:
            rc, out, outs = self._handle(text, host)
        doc = json.dumps({"rc": rc, "out": out, "outs": outs}).encode()
        return 200, doc, reportauth.sign(token, doc, signature)


def _error(msg: str) -> bytes:
    return json.dumps({"error": msg}).encode()
