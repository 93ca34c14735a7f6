"""The module's version, the helper protocols it speaks, and the helpers it refuses.

`ceph recovery version` and `status -f json`'s `version` name the module's version (the core's
`ceph_recovery.__version__`, written once) and its helper protocol. A helper report whose
protocol this module does not speak is refused with EPROTONOSUPPORT (reportcheck.py) and
remembered here per host, so that RECOVERY_HELPER_PROTOCOL names the host until its helper
speaks a protocol the module reads, or stops reporting (helper_stale_timeout).
No mgr_module import: unit-tested outside ceph-mgr.
"""
from __future__ import annotations

import errno
from typing import Any, Dict, Mapping, Optional, Tuple

from ceph_recovery import __version__ as MODULE_VERSION
from ceph_recovery.protocol import PROTOCOL_VERSION, SUPPORTED_PROTOCOLS, supported_text

from .inputs import InputError

CHECK = "RECOVERY_HELPER_PROTOCOL"
MAX_REFUSED = 256
# host -> (when refused, the protocol it sent, the helper's own version or "")
Refused = Dict[str, Tuple[float, Any, str]]


class ProtocolRefused(InputError):
    """A well-formed report in a protocol this module does not speak."""

    def __init__(self, host: str, protocol: Any, helper_version: str) -> None:
        super().__init__(errno.EPROTONOSUPPORT, (
            "helper-report: the helper on %s (ceph-recovery %s) speaks helper protocol %r; "
            "this module (ceph-recovery %s) speaks %s: install the same ceph-recovery "
            "version on the mgr hosts and this host" % (
                host, helper_version or "of unknown version", protocol, MODULE_VERSION,
                supported_text())))
        self.host = host
        self.protocol = protocol
        self.helper_version = helper_version


def refuse_unless_spoken(d: Mapping[str, Any], host: str) -> None:
    """ProtocolRefused when the report's integer `version` is not one this module reads.
    A missing or non-integer version is a malformed report (the caller's EINVAL)."""
    version = d.get("version")
    if isinstance(version, bool) or not isinstance(version, int):
        return
    if version in SUPPORTED_PROTOCOLS:
        return
    helper_version = d.get("helper_version")
    if not isinstance(helper_version, str):
        helper_version = ""
    raise ProtocolRefused(host, version, helper_version[:32])


def note_refused(refused: Refused, e: ProtocolRefused, now: float) -> None:
    """Remember the refusal; at most MAX_REFUSED hosts (a report's host is untrusted)."""
    if e.host in refused or len(refused) < MAX_REFUSED:
        refused[e.host] = (now, e.protocol, e.helper_version)


def health(refused: Refused, now: float, stale_s: float) -> Dict[str, Dict[str, Any]]:
    """RECOVERY_HELPER_PROTOCOL for the hosts refused within stale_s, in set_health_checks'
    shape; refusals older than that are forgotten (that helper stopped reporting)."""
    for host in [h for h, (t, _p, _v) in refused.items() if now - t > stale_s]:
        del refused[host]
    if not refused:
        return {}
    detail = ["host %s: helper ceph-recovery %s speaks protocol %r, this module "
              "(ceph-recovery %s) speaks %s: its reports are refused (EPROTONOSUPPORT)"
              % (h, v or "of unknown version", p, MODULE_VERSION, supported_text())
              for h, (_t, p, v) in sorted(refused.items())]
    return {CHECK: {"severity": "warning", "count": len(detail), "detail": detail,
                    "summary": "%d helper(s) speak a protocol this recovery module does not"
                               % len(detail)}}


def module_version() -> Dict[str, Any]:
    """status -f json's `version`."""
    return {"module": MODULE_VERSION, "protocol": PROTOCOL_VERSION,
            "protocols": list(SUPPORTED_PROTOCOLS)}


def version_doc(reports: Mapping[str, Any], refused: Refused, now: float) -> Dict[str, Any]:
    """`ceph recovery version -f json`: the module's version and, per host, the version and
    protocol its helper last sent (accepted or refused)."""
    helpers: Dict[str, Dict[str, Any]] = {}
    for host, (report, seen) in reports.items():
        helpers[host] = {"version": report.helper_version or None,
                         "protocol": report.version, "refused": False,
                         "seen_s_ago": round(now - seen, 1)}
    for host, (when, protocol, helper_version) in refused.items():
        helpers[host] = {"version": helper_version or None, "protocol": protocol,
                         "refused": True, "seen_s_ago": round(now - when, 1)}
    return dict(module_version(), helpers=helpers)


def version_text(doc: Mapping[str, Any]) -> str:
    """One line: 'recovery 0.1.0, helper protocol 1; helpers: h1 0.1.0, h2 REFUSED (...)'."""
    parts = []
    for host, h in sorted(doc.get("helpers", {}).items()):
        who = "%s %s" % (host, h["version"] or "(unknown version)")
        parts.append(who + (" REFUSED (protocol %r)" % (h["protocol"],) if h["refused"]
                            else ""))
    return "recovery %s, helper protocol %s; helpers: %s" % (
        doc["module"], ", ".join(str(p) for p in doc["protocols"]),
        ", ".join(parts) or "none reporting")


def accepted(refused: Refused, host: Optional[str]) -> None:
    """An accepted report from `host`: its helper speaks our protocol again."""
    if host is not None:
        refused.pop(host, None)
