"""The helper's side of the module's report endpoint (ceph_recovery.reportauth): POST a report
signed with this host's token, take only the reply signed for that request.

Anything but a signed answer raises EndpointError, and the helper sends the report by the
`helper-report` command instead (whose reply names the endpoint again: a failover moves it).
"""
from __future__ import annotations

import http.client
import json
import urllib.parse
from typing import Any, Tuple

from ceph_recovery import reportauth


class EndpointError(Exception):
    """The endpoint did not answer this report with a signed reply."""


def post_report(url: str, token: str, host: str, report_text: str,
                timeout: float) -> Tuple[int, Any, str]:
    """(rc, reply JSON value or None, error text), as the command answers."""
    body = report_text.encode("utf-8")
    signature = reportauth.sign(token, body)
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("POST", u.path, body=body, headers={
            "Content-Type": "application/json", reportauth.HOST_HEADER: host,
            reportauth.SIGNATURE_HEADER: signature})
        resp = conn.getresponse()
        data = resp.read()
        reply_sig = resp.getheader(reportauth.SIGNATURE_HEADER)
    except (OSError, http.client.HTTPException) as e:
        raise EndpointError("report endpoint %s: %s" % (url, e)) from e
    finally:
        conn.close()
    if resp.status != 200:
        raise EndpointError("report endpoint %s: HTTP %d %s" % (url, resp.status,
                                                              data[:200].decode("utf-8",
                                                                                "replace")))
    if not reportauth.verify(token, data, reply_sig, signature):
        raise EndpointError("report endpoint %s: reply not signed for this report" % url)
    try:
        doc = json.loads(data)
        rc, out, outs = int(doc["rc"]), doc["out"], str(doc["outs"])
        return rc, (json.loads(out) if out else None), outs
    except (ValueError, KeyError, TypeError) as e:
        raise EndpointError("report endpoint %s: malformed reply: %s" % (url, e)) from e
