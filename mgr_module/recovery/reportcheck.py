"""Strict validation of a helper report before it reaches the engine.

A report comes from a key on a node, so it is untrusted input: every size, count and number is
bounded here, and a report that breaks any rule is refused whole with EINVAL (nothing changes).
The protocol parser (ceph_recovery.protocol.parse_report) checks the shape; this adds the
limits and the identity rule: the `host` argument of the command (which a per-host cephx cap
pins with `with host=<h>`) must name the report's host.
No mgr_module import: unit-tested outside ceph-mgr.
"""
from __future__ import annotations

import errno
import json
import math
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ceph_recovery.protocol import PROTOCOL_VERSION, ProtocolError, Report, parse_report

from .inputs import InputError
from .versions import refuse_unless_spoken

MAX_REPORT_BYTES = 256 * 1024      # whole report JSON
MAX_NETWORK_BYTES = 192 * 1024     # its `network` part (peers of every host)
MAX_OSDS = 1024                    # OSD processes in one report
MAX_IDS = 1024                     # entries of `done` / `failed`
MAX_ID_LEN = 128                   # one instruction id
MAX_ERROR_LEN = 1024               # one `failed` entry's error text
MAX_HOSTS = 4096                   # distinct hosts the engine keeps reports for
MAX_DEPTH = 16                     # nesting of the whole report (the network part: 8)
RETIRED_KEPT = 8                   # replaced instances remembered per host (late reports)
_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET_RE = re.compile(r"[\[\]{}]")
MAX_INT = 1 << 62                  # any integer field (bytes, ids, pids, seq)
HOST_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


def _bad(msg: str) -> InputError:
    return InputError(errno.EINVAL, "malformed helper report: %s" % msg)


def _no_constant(name: str) -> Any:
    raise _bad("non-finite number %s" % name)


def _number(v: Any, where: str, integer: bool = False) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _bad("%s must be a number, got %r" % (where, type(v).__name__))
    if integer and not isinstance(v, int):
        raise _bad("%s must be an integer" % where)
    if isinstance(v, float) and not math.isfinite(v):
        raise _bad("%s must be finite" % where)
    if v < 0 or v > MAX_INT:
        raise _bad("%s out of range (0..2^62): %r" % (where, v))


def _opt_number(d: Mapping[str, Any], key: str, where: str, integer: bool = False) -> None:
    if d.get(key) is not None:
        _number(d[key], "%s.%s" % (where, key), integer)


def _check_numbers_in(value: Any, where: str, depth: int = 0) -> None:
    """Every number anywhere inside (the network part) is finite; nesting is bounded."""
    if depth > 8:
        raise _bad("%s nested too deeply" % where)
    if isinstance(value, float) and not math.isfinite(value):
        raise _bad("%s holds a non-finite number" % where)
    if isinstance(value, Mapping):
        for v in value.values():
            _check_numbers_in(v, where, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_numbers_in(v, where, depth + 1)


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before json.loads: its recursive parser raises
    RecursionError (or exhausts a small thread stack) on a few hundred KB of brackets."""
    depth = 0
    for b in _BRACKET_RE.findall(_STRING_RE.sub("", text)):
        depth += 1 if b in "[{" else -1
        if depth > MAX_DEPTH:
            raise _bad("nested deeper than %d levels" % MAX_DEPTH)


def _check_memory(mem: Mapping[str, Any]) -> None:
    """The sizes must describe a memory: total > 0, used and available within it."""
    if mem["total"] <= 0:
        raise _bad("memory.total must be greater than zero")
    for key in ("used", "available"):
        if mem[key] > mem["total"]:
            raise _bad("memory.%s (%d) is larger than memory.total (%d)"
                       % (key, mem[key], mem["total"]))


def check_host(host: Any, where: str = "host") -> str:
    if not isinstance(host, str) or not HOST_RE.match(host):
        raise _bad("%s must be 1-63 characters of [A-Za-z0-9._-], got %r"
                   % (where, host if not isinstance(host, str) else host[:80]))
    return host


def _check_ids(d: Mapping[str, Any], key: str) -> None:
    ids = d.get(key, [])
    if not isinstance(ids, list) or len(ids) > MAX_IDS:
        raise _bad("%s must be a list of at most %d entries" % (key, MAX_IDS))
    for x in ids:
        x = x.get("id") if key == "failed" and isinstance(x, Mapping) else x
        if not isinstance(x, str) or not 0 < len(x) <= MAX_ID_LEN:
            raise _bad("%s: every instruction id must be a string of 1-%d characters"
                       % (key, MAX_ID_LEN))


def parse_failed(d: Mapping[str, Any]) -> List[Dict[str, str]]:
    """The helper's `failed` list: [{"id", "error"}] (error truncated to MAX_ERROR_LEN)."""
    out = []
    for x in d.get("failed", []) or []:
        if not isinstance(x, Mapping):
            raise _bad("failed: every entry must be an object {id, error}")
        err = x.get("error", "")
        if not isinstance(err, str):
            raise _bad("failed: error must be a string")
        out.append({"id": x["id"], "error": err[:MAX_ERROR_LEN]})
    return out


def _check_limits(d: Mapping[str, Any]) -> None:
    _number(d.get("time"), "time")
    _number(d.get("seq"), "seq", integer=True)
    mem = d.get("memory")
    if not isinstance(mem, Mapping):
        raise _bad("memory must be an object")
    for key in ("total", "used", "available"):
        _number(mem.get(key), "memory.%s" % key, integer=True)
    _check_memory(mem)
    for key in ("limit", "swap_total"):
        _opt_number(mem, key, "memory", integer=True)
    osds = d.get("osds")
    if not isinstance(osds, list) or len(osds) > MAX_OSDS:
        raise _bad("osds must be a list of at most %d entries" % MAX_OSDS)
    seen = set()
    for i, o in enumerate(osds):
        w = "osds[%d]" % i
        if not isinstance(o, Mapping):
            raise _bad("%s must be an object" % w)
        _number(o.get("id"), w + ".id", integer=True)
        if o["id"] in seen:
            raise _bad("%s: osd.%d listed twice" % (w, o["id"]))
        seen.add(o["id"])
        _opt_number(o, "rss", w, integer=True)
        _opt_number(o, "pid", w, integer=True)
        _opt_number(o, "started_at", w)
        _opt_number(o, "pglog_dups", w, integer=True)
    _check_ids(d, "done")
    _check_ids(d, "failed")
    net = d.get("network", {})
    if len(json.dumps(net, default=str)) > MAX_NETWORK_BYTES:
        raise _bad("network part larger than %d bytes" % MAX_NETWORK_BYTES)
    _check_numbers_in(net, "network")


def check_report(text: Any, host_arg: Optional[str] = None
                 ) -> Tuple[Report, List[Dict[str, str]]]:
    """(parsed report, failed list) or InputError(EINVAL). `host_arg` is required and must
    equal the report's host: the per-host key's cap (`with host=<h>`) pins the argument, this
    pins the report; without it any key allowed the command could report for any host."""
    if not isinstance(text, str):
        raise _bad("report must be a JSON string")
    if len(text.encode("utf-8", "replace")) > MAX_REPORT_BYTES:
        raise _bad("larger than %d bytes" % MAX_REPORT_BYTES)
    if host_arg is None:
        raise InputError(errno.EINVAL, "helper-report: the host argument is required "
                                       "(`ceph recovery helper-report <report> <host>`)")
    if not isinstance(host_arg, str):
        raise InputError(errno.EINVAL, "helper-report: the host argument must be a string")
    _check_depth(text)
    try:
        d = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:
        raise _bad(str(e))
    if not isinstance(d, Mapping):
        raise _bad("report must be a JSON object")
    # a protocol this module does not speak: refused before any other field is read (their
    # meaning may have changed), named by the host the key's cap pins
    refuse_unless_spoken(d, check_host(host_arg, "host argument"))
    if isinstance(d.get("version"), bool) or not isinstance(d.get("version"), int):
        raise _bad("version must be an integer helper protocol version, got %r (this side "
                   "speaks %d)" % (d.get("version"), PROTOCOL_VERSION))
    host = check_host(d.get("host"))
    if host_arg is not None and host_arg != host:
        raise InputError(errno.EACCES, "helper-report: argument host=%r does not match the "
                                       "report's host %r" % (host_arg[:80], host))
    _check_limits(d)
    try:
        parsed = parse_report(d)
    except (ProtocolError, ValueError, TypeError, OverflowError) as e:
        raise _bad(str(e))
    return parsed, parse_failed(d)


def check_new_host(host: str, known: Mapping[str, Any], crush_hosts: Optional[Any]) -> None:
    """A report from a host the engine does not know yet must name a CRUSH host (when the
    map is known) and must not grow the engine's host table past MAX_HOSTS."""
    if host in known:
        return
    if crush_hosts is not None and host not in crush_hosts:
        raise InputError(errno.ENOENT, "helper-report: host %r is not a host of the CRUSH "
                                       "map (see `ceph osd tree`)" % host)
    if len(known) >= MAX_HOSTS:
        raise InputError(errno.EINVAL, "helper-report: already %d hosts reporting (limit)"
                         % MAX_HOSTS)


def check_fresh(report: Report, last: Optional[Report], retired: Any) -> None:
    """A report must be newer than the last one accepted from its helper: the helper numbers
    its reports 1, 2, ... per process (`seq`) and names the process (`instance`). Same
    instance: seq must grow. Another instance: a restarted helper, accepted, unless it is one
    this host's helper already replaced (`retired`). So a report that arrives late (sent
    through a handle the helper abandoned) never overwrites a newer one. ESTALE, unchanged."""
    if last is None:
        return
    if report.instance in retired:
        raise InputError(errno.ESTALE, "helper-report: stale report from %s: helper instance "
                         "%r was replaced by %r; ignored"
                         % (report.host, report.instance, last.instance))
    if report.instance == last.instance and report.seq <= last.seq:
        raise InputError(errno.ESTALE, "helper-report: stale report from %s: seq %d is not "
                         "newer than the last accepted seq %d of instance %r; ignored"
                         % (report.host, report.seq, last.seq, report.instance))
