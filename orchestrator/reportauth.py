"""The report endpoint's credentials: a per-host token and signed messages. Pure functions.

Helpers send their reports to the active mgr either as the `recovery helper-report` command
(the mgr's one command queue, authenticated by the host's cephx key) or to the module's report
endpoint over HTTP, which does not queue behind other commands. The endpoint is not cephx, so:

- the module keeps one random secret (its store, shared by every mgr through the mons) and
  derives each host's token from it: token = HMAC-SHA256(secret, "host:" + host);
- a host's token reaches only that host: it is in the reply to that host's own
  `helper-report` command, which its key's caps (`with host=<h>`) pin to the host;
- a request carries HMAC(token, body) and the reply HMAC(token, request signature + reply
  body): the module takes only reports signed with the host's token, and a helper takes only
  the answer to the request it sent. A replayed report is refused as any late report is (its
  seq, protocol.py). The body is not encrypted: reports hold memory figures and process ids.

The endpoint is advertised in the command's reply under "endpoint": {"url", "token"}.
"""
from __future__ import annotations

import hashlib
import hmac
from typing import Any, Mapping, Optional, Tuple

ENDPOINT_PATH = "/v1/report"
HOST_HEADER = "X-Recovery-Host"
SIGNATURE_HEADER = "X-Recovery-Signature"
MIN_SECRET_LEN = 32


def host_token(secret: str, host: str) -> str:
    """The host's token (hex), derived from the module's secret."""
    if len(secret) < MIN_SECRET_LEN:
        raise ValueError("the report secret is too short (%d < %d characters)"
                         % (len(secret), MIN_SECRET_LEN))
    return hmac.new(secret.encode(), ("host:" + host).encode(), hashlib.sha256).hexdigest()


def sign(token: str, body: bytes, request_signature: str = "") -> str:
    """A request's signature (request_signature empty) or a reply's, bound to its request."""
    return hmac.new(token.encode(), request_signature.encode() + b"\n" + body,
                    hashlib.sha256).hexdigest()


def verify(token: str, body: bytes, signature: Optional[str],
           request_signature: str = "") -> bool:
    return bool(signature) and hmac.compare_digest(
        sign(token, body, request_signature), str(signature))


def endpoint_url(address: str, port: int) -> str:
    """http://address:port/v1/report (an IPv6 address in brackets)."""
    host = "[%s]" % address if ":" in address and not address.startswith("[") else address
    return "http://%s:%d%s" % (host, port, ENDPOINT_PATH)


def parse_endpoint(d: Any) -> Optional[Tuple[str, str]]:
    """(url, token) from a command reply's "endpoint", or None when absent or malformed
    (the helper then keeps using the command)."""
    if not isinstance(d, Mapping):
        return None
    url, token = d.get("url"), d.get("token")
    if not (isinstance(url, str) and url.startswith("http://") and url.endswith(ENDPOINT_PATH)
            and isinstance(token, str) and len(token) == 64):
        return None
    return url, token
