"""The network probe's mon round trip, run on its own thread beside the cycle's other probes:
a TCP banner round trip to each mon address (connect, wait for the messenger's first bytes)
and the timed mon command the helper hands in (ProbeContext.mon_rtt).

A mon probe may outlive its cycle's budget (an unreachable mon blocks in connect or in the
command): the cycle reports it as still running and moves on, a later cycle starts no second
one for the host while it runs, and the round trip it finally took is reported by the next
cycle. start() and result() are netprobe.probe_cycle's two halves of it.
"""
from __future__ import annotations

import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from . import netprobe_parse

if TYPE_CHECKING:
    from .netprobe import ProbeContext

_MON_INFLIGHT: Dict[str, float] = {}    # host -> monotonic start of a mon probe still running
_MON_LATE: Dict[str, float] = {}        # host -> RTT of a mon probe that outlived its cycle
_LOCK = threading.Lock()                # guards both: the probe thread and the cycle use them


def banner_rtt(addr: str, timeout: float) -> float:
    """Seconds from connect() to the mon messenger's first bytes (both msgr v1 and v2 send
    their banner at once). Raises OSError on failure."""
    ip = netprobe_parse.ip_of(addr)
    port = int(addr.split("/", 1)[0].rsplit(":", 1)[1])
    t0 = time.monotonic()
    with socket.create_connection((ip, port), timeout=timeout) as s:
        s.settimeout(max(0.05, timeout - (time.monotonic() - t0)))
        if not s.recv(16):
            raise OSError("mon closed the connection before its banner")
    return time.monotonic() - t0


def _probe(ctx: ProbeContext, out: Dict[str, Any]) -> None:
    key = ctx.host
    try:
        banners = {}
        for a in ctx.mon_addrs:
            try:
                banners[a] = round(banner_rtt(a, max(1.0, ctx.budget_s * 4)), 6)
            except (OSError, ValueError, IndexError) as exc:
                out.setdefault("errors", []).append("%s: %s" % (a, exc))
        if banners:
            out["banner_rtt_s"] = banners
        if ctx.mon_rtt is not None:
            t0 = time.monotonic()
            try:
                ctx.mon_rtt()
                out["command_rtt_s"] = round(time.monotonic() - t0, 6)
            except Exception as exc:  # noqa: BLE001 - any failure is a finding
                out["command_rtt_s"] = round(time.monotonic() - t0, 6)
                out.setdefault("errors", []).append("mon command: %s" % exc)
    finally:
        with _LOCK:
            _MON_INFLIGHT.pop(key, None)
            if out.get("abandoned"):          # its cycle gave up: report it next cycle
                samples = list((out.get("banner_rtt_s") or {}).values())
                samples += [out["command_rtt_s"]] if "command_rtt_s" in out else []
                if samples:
                    _MON_LATE[key] = max(samples)


def start(ctx: ProbeContext) -> Tuple[Optional[threading.Thread], Dict[str, Any], float]:
    out: Dict[str, Any] = {"host": ctx.host}
    with _LOCK:
        started = _MON_INFLIGHT.get(ctx.host)
        if started is not None:              # the previous cycle's probe has not returned yet
            return None, out, started       # result() reports how long it has been running
        started = time.monotonic()
        _MON_INFLIGHT[ctx.host] = started
    if not ctx.mon_addrs and ctx.mon_rtt is None:
        with _LOCK:
            _MON_INFLIGHT.pop(ctx.host, None)
        return None, {"skip": True, "host": ctx.host}, started
    t = threading.Thread(target=_probe, args=(ctx, out), name="netprobe-mon", daemon=True)
    t.start()
    return t, out, started


def result(thread, out: Dict[str, Any], started: float, deadline: float) -> Optional[Dict]:
    if out.get("skip"):
        return None
    if thread is not None:
        thread.join(max(0.0, deadline - time.monotonic()))
    done = thread is not None and not thread.is_alive()
    samples = list((out.get("banner_rtt_s") or {}).values())
    if "command_rtt_s" in out:
        samples.append(out["command_rtt_s"])
    errors = list(out.get("errors", ()))
    with _LOCK:
        late = _MON_LATE.pop(out.get("host", ""), None)
        if not done:
            out["abandoned"] = True
    if late is not None:
        samples.append(late)
        errors.append("previous mon round trip took %.2f s" % late)
    if not done:
        rtt = max([time.monotonic() - started] + samples)
        errors.append("mon round trip still running after %.2f s"
                      % (time.monotonic() - started))
        return {"rtt_s": round(rtt, 6), "ok": False, "error": "; ".join(errors)}
    res = {"rtt_s": max(samples) if samples else None, "ok": bool(samples),
           "error": "; ".join(errors)}
    res.update({k: out[k] for k in ("banner_rtt_s", "command_rtt_s") if k in out})
    return res
