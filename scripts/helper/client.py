"""python-rados access for the helper: connect with a timeout, mon/mgr commands with retries.

Connecting and mon commands are bounded: the connect timeout and `rados_mon_op_timeout`/
`client_mount_timeout` keep a dead or unreachable mon from blocking the helper (or the boot
gate) for long. Mgr commands block (see connect's op_timeout); their caller bounds them.
Transient errors (timeouts, connection resets) are retried by tenacity; an answer with a
non-zero rc is returned, not retried (the caller decides: EBUSY from ok-to-stop is an answer).
"""
from __future__ import annotations

import errno
import json
from typing import Any, Callable, Dict, List, Optional, Tuple

import rados
from tenacity import (retry, retry_if_exception_type, retry_if_result, stop_after_attempt,
                      stop_after_delay, wait_exponential)

TRANSIENT = (rados.TimedOut, rados.ConnectionShutdown, rados.InterruptedOrTimeoutError)


class ClusterUnreachable(RuntimeError):
    """The mon could not be reached within the timeout."""


class CommandFailed(RuntimeError):
    def __init__(self, what: str, rc: int, outs: str) -> None:
        self.rc, self.outs = rc, outs
        super().__init__("%s -> rc %d: %s" % (what, rc, outs))


def connect(conf: str, name: str, keyring: Optional[str] = None,
            timeout: float = 5.0, op_timeout: bool = True) -> "rados.Rados":
    """Connected Rados handle, or ClusterUnreachable after about `timeout` seconds.

    op_timeout=False makes a handle for mgr commands: `rados_mon_op_timeout` 0, so
    mgr_command blocks until the mgr answers. With a timeout, librados (Pacific) returns
    ETIMEDOUT while MgrClient still holds the caller's stack buffers and completion, and the
    late reply or session reset writes into freed memory. The caller bounds the blocking call
    itself (see Helper._mgr)."""
    t = str(max(1, int(timeout)))
    opts = {"client_mount_timeout": t, "rados_mon_op_timeout": t if op_timeout else "0",
            "rados_osd_op_timeout": t,
            # the helper/gate is a short-lived client: no admin socket, no log file clutter
            "admin_socket": "", "log_to_stderr": "false", "err_to_stderr": "false",
            "log_file": ""}
    if keyring:
        opts["keyring"] = keyring
    cluster = rados.Rados(conffile=conf, name=name, conf=opts)
    try:
        cluster.connect(timeout=max(1, int(timeout)))
    except (rados.Error, OSError) as exc:
        try:
            cluster.shutdown()
        except Exception:    # noqa: BLE001 - best effort cleanup of a failed handle
            pass
        raise ClusterUnreachable("cannot reach the monitors with %s as %s: %s"
                                 % (conf, name, exc)) from exc
    return cluster


def _retrying(timeout: float, attempts: int):
    # librados reports a command timeout as -ETIMEDOUT, mgr_command sometimes as +ETIMEDOUT
    timed_out = retry_if_result(lambda res: abs(res[0]) in (errno.ETIMEDOUT, errno.EINTR))
    return retry(retry=(retry_if_exception_type(TRANSIENT) | timed_out), reraise=True,
                 retry_error_callback=lambda state: state.outcome.result(),
                 stop=(stop_after_attempt(attempts) | stop_after_delay(timeout * attempts)),
                 wait=wait_exponential(multiplier=0.2, max=2))


def _send(command: Callable[..., Tuple[int, bytes, str]], prefix: str, timeout: float,
          attempts: int, args: Dict[str, Any], call_timeout: int) -> Tuple[int, bytes, str]:
    """One `-f json` command through a rados mon_command/mgr_command, under the retry policy."""
    cmd = json.dumps(dict(args, prefix=prefix, format="json"))

    @_retrying(timeout, attempts)
    def call() -> Tuple[int, bytes, str]:
        return command(cmd, b"", timeout=call_timeout)

    return call()


def mon_json(cluster: "rados.Rados", prefix: str, timeout: float = 5.0, attempts: int = 3,
             **args: Any) -> Any:
    """`ceph <prefix> -f json` through the mon; CommandFailed on a non-zero rc."""
    rc, out, outs = _send(cluster.mon_command, prefix, timeout, attempts, args,
                          int(max(1, timeout)))
    if rc != 0:
        raise CommandFailed(prefix, rc, outs)
    return json.loads(out) if out else None


def mgr_json(cluster: "rados.Rados", prefix: str, timeout: float = 5.0, attempts: int = 3,
             **args: Any) -> Tuple[int, Any, str]:
    """A mgr (module) command: (rc, parsed JSON or None, status string). Not raised on rc.

    The call itself has no timeout (timeout=0; the handle must come from
    connect(op_timeout=False)): a blocking mgr_command is the only memory-safe one in
    librados, so the caller runs it in a thread with its own deadline."""
    rc, out, outs = _send(cluster.mgr_command, prefix, timeout, attempts, args, 0)
    try:
        parsed = json.loads(out) if out else None
    except ValueError:
        parsed = None
    return rc, parsed, outs


def osd_map_view(cluster: "rados.Rados", timeout: float = 5.0,
                 attempts: int = 3) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """(osd dump, osd tree) as JSON, the inputs of gate.gate_decision."""
    return (mon_json(cluster, "osd dump", timeout, attempts),
            mon_json(cluster, "osd tree", timeout, attempts))


def mon_addrs(cluster: "rados.Rados") -> List[str]:
    """The mon addresses of the conf's mon_host ("v2:1.2.3.4:3300,v1:..." or "[v2:...,v1:...]")."""
    raw = cluster.conf_get("mon_host") or ""
    out = []
    for part in raw.replace("[", " ").replace("]", " ").replace(",", " ").split():
        if part:
            out.append(part)
    return out
