"""The two paths of a helper report into the Module (ReportPaths, a mixin, so that module.py
stays the Ceph API shell): the `helper-report` command and the report endpoint
(reportserver.py), both answered by the engine under its lock; and the endpoint's life: its
secret and the options that start, move or stop it.

No `from __future__ import annotations` and no mgr_module import: module.py mixes this in.
"""
import json
import secrets
import time
from typing import Any, Optional, Tuple

from .meter import timed

try:
    from ceph_recovery.protocol import instructions_to_dict
    from ceph_recovery.reportauth import MIN_SECRET_LEN, host_token
    from .inputs import InputError
except ImportError:  # pragma: no cover - the core is missing: module.py's _guard says so
    instructions_to_dict = host_token = InputError = None  # type: ignore
    MIN_SECRET_LEN = 32


class ReportPaths(object):
    _report_secret: Optional[str] = None

    def _report(self, report: Any, host: Optional[str],
                advertise: bool) -> Tuple[int, str, str]:
        """A helper report from the command or the endpoint: (rc, reply JSON, error). The
        command's reply also names the endpoint and the host's token (its caps pin it to
        the host: reportauth.py)."""
        bad = self._guard()
        if bad:
            return bad.retval, bad.stdout, bad.stderr
        with self._lock:
            try:
                reply = instructions_to_dict(self.engine.handle_report(report, host,
                                                                       time.time()))
            except InputError as e:
                return -e.errno, "", e.message
        url = self._reports.url if advertise else None
        token = self._token_of(reply["host"]) if url else None
        if token:
            reply["endpoint"] = {"url": url, "token": token}
        return 0, json.dumps(reply, sort_keys=True), ""

    def _endpoint_report(self, report: str, host: str) -> Tuple[int, str, str]:
        with timed(self.meter, "report-endpoint"):
            return self._report(report, host, advertise=False)

    def _token_of(self, host: str) -> Optional[str]:
        secret = self._report_secret
        return host_token(secret, host) if secret else None

    def _endpoint(self) -> None:
        """The report endpoint as the options say; its secret made once, kept in the
        module's store so that every mgr derives the same tokens."""
        if self._report_secret is None:
            try:
                secret = self.get_store("report_secret")
                if not secret or len(secret) < MIN_SECRET_LEN:
                    secret = secrets.token_hex(32)
                    self.set_store("report_secret", secret)
                self._report_secret = secret
            except Exception as e:   # the mon unreachable: the command path still works
                self.log.warning("recovery: report secret unavailable: %s", e)
                return
        try:
            self._reports.ensure(bool(self.get_module_option("report_endpoint")),
                                 int(self.get_module_option("report_port")), self.get_mgr_ip)
        except Exception as e:   # serve() goes on: helpers keep to the command
            self.log.exception("recovery: report endpoint: %s", e)
