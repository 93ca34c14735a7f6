"""ceph-recovery-helper: run | gate <osd> | start-osd <osd>.

  run        the node helper daemon (one per OSD host)
  gate       the boot gate for ceph-osd@N's ExecCondition=: exit 0 may start, 1 held
  start-osd  the lab's stand-in for `systemctl start ceph-osd@N` with the gate drop-in:
             runs the gate, then spawns the OSD in its lab host's cgroup/netns
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from typing import Any, Dict, List, Optional

# Only the standard library at import time: the boot gate must still answer (and say why) when
# a dependency is broken (python3-rados built for another Python, a missing package); every
# project and third-party import happens inside the functions below.

from . import caps
from ..common.version import add_version
from .caps import HELPER_NAME
from .defaults import DEFAULT_GRANT_TTL, DEFAULT_STATE_DIR
DEFAULT_CONF = "/etc/ceph/ceph.conf"
EXIT_ALLOW, EXIT_HELD, EXIT_ERROR = 0, 1, 2


def configure_logging(level: str = "info") -> None:
    from ..common.logs import configure_logging as configure
    configure(level)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--conf", "-c", default=None, help="ceph.conf (default: the lab's, else "
                   "$CEPH_CONF, else %s)" % DEFAULT_CONF)
    p.add_argument("--name", "-n", default=HELPER_NAME, help="cephx name (default %(default)s)")
    p.add_argument("--keyring", "-k", default=None, help="keyring (default: from ceph.conf, "
                   "or the lab's helper keyring)")
    p.add_argument("--lab-dir", default=None, help="lab directory (ceph-recovery-lab --dir)")
    p.add_argument("--state-dir", default=None, help="default %s (lab: D/helper/<host>)"
                   % DEFAULT_STATE_DIR)
    p.add_argument("--timeout", type=float, default=5.0, help="mon connect/command timeout")
    p.add_argument("--log-level", default="info")


def _gate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-cache", choices=("allow", "hold"), default="allow",
                   help="decision when the mon is unreachable and nothing is cached")
    p.add_argument("--grant-ttl", type=float, default=DEFAULT_GRANT_TTL,
                   help="seconds a cached mgr grant stays valid (default %(default)s)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ceph-recovery-helper", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_version(ap, "ceph-recovery-helper")
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="the helper daemon")
    _common(run)
    _gate_args(run)
    run.add_argument("--host", default=socket.gethostname().split(".")[0],
                     help="CRUSH host name of this node (default: short hostname)")
    run.add_argument("--launcher", choices=("systemd", "cephadm", "process"), default=None,
                     help="default systemd, or process with --lab-dir; cephadm needs --fsid")
    run.add_argument("--fsid", default=None, help="cluster fsid (cephadm unit names)")
    run.add_argument("--interval", type=float, default=2.0)
    run.add_argument("--cgroup", default=None, help="memory cgroup dir to report instead "
                     "of the host (v1 or v2); the lab host's cgroup with --lab-dir")
    run.add_argument("--stop-timeout", type=float, default=60.0)
    run.add_argument("--probe-budget", type=float, default=1.0,
                     help="seconds the network probe may take per cycle")
    run.add_argument("--once", action="store_true", help="one cycle, print the reply, exit")
    for name, hlp in (("gate", "boot gate: exit 0 may start, 1 held"),
                      ("start-osd", "lab: gate, then spawn the OSD (exit 1 if held)")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("osd", type=int)
        _common(p)
        _gate_args(p)
    return ap


def _lab(args) -> Optional[Dict[str, Any]]:
    if not args.lab_dir:
        return None
    from ceph_recovery_tools.lab.state import load_state
    return load_state(args.lab_dir)


def _resolve(args, host: Optional[str]) -> Dict[str, Any]:
    """conf/keyring/state dir/cgroup from the flags, filled in from the lab when given."""
    lab = _lab(args)
    # like the ceph CLI: -c/--conf, else (the lab's, else) $CEPH_CONF, else the default
    out = {"conf": args.conf or (lab["conf"] if lab else None)
           or os.environ.get("CEPH_CONF") or DEFAULT_CONF,
           "keyring": args.keyring or (lab.get("helper_keyring") if lab else None),
           "state_dir": args.state_dir, "cgroup": getattr(args, "cgroup", None), "lab": lab}
    if lab and host:
        if host not in lab["hosts"]:
            raise SystemExit("ceph-recovery-helper: host %r is not in the lab %s (hosts: %s)"
                             % (host, args.lab_dir, ", ".join(sorted(lab["hosts"]))))
        out["state_dir"] = out["state_dir"] or os.path.join(lab["dir"], "helper", host)
        out["cgroup"] = out["cgroup"] or lab["hosts"][host]["cgroup"]["path"]
    out["state_dir"] = out["state_dir"] or DEFAULT_STATE_DIR
    out["name"] = caps.key_name(args.name, _read_text(out["keyring"]))
    return out


def _read_text(path: Optional[str]) -> Optional[str]:
    try:
        with open(path or "") as f:
            return f.read()
    except OSError:
        return None


def _osd_host(args, osd: int) -> Optional[str]:
    lab = _lab(args)
    if not lab:
        return None
    info = lab["osds"].get(str(osd))
    if info is None:
        raise SystemExit("ceph-recovery-helper: osd.%d is not in the lab %s" % (osd, args.lab_dir))
    return info["host"]


def gate_fn(args, conf: Dict[str, Any]):
    from . import gatecheck
    from .state import StateDir
    state = StateDir(conf["state_dir"])

    def check(osd: int):
        res = gatecheck.check(osd, conf["conf"], conf["name"], conf["keyring"], state,
                              args.timeout, args.no_cache, args.grant_ttl)
        return res.allowed, res.reason, res.source
    return check


def cmd_gate(args) -> int:
    conf = _resolve(args, _osd_host(args, args.osd))
    try:
        allowed, reason, source = gate_fn(args, conf)(args.osd)
    except Exception as exc:   # noqa: BLE001 - the gate must answer, never crash undecided
        return gate_failsafe(str(args.osd), args.no_cache == "hold",
                             "%s: %s" % (type(exc).__name__, exc))
    import structlog
    structlog.get_logger("ceph-recovery-gate").info("gate", osd=args.osd, allowed=allowed,
                                                    reason=reason, source=source)
    print("osd.%d %s: %s" % (args.osd, "may start" if allowed else "held", reason))
    return EXIT_ALLOW if allowed else EXIT_HELD


def cmd_start_osd(args) -> int:
    import structlog
    from . import launchers
    log = structlog.get_logger("ceph-recovery-helper")
    if not args.lab_dir:
        print("start-osd needs --lab-dir (in production: systemctl start ceph-osd@%d)"
              % args.osd, file=sys.stderr)
        return EXIT_ERROR
    conf = _resolve(args, _osd_host(args, args.osd))
    launcher = launchers.ProcessLauncher(args.lab_dir, gate_fn(args, conf))
    try:
        result = launcher.start(args.osd)
    except Exception as exc:   # noqa: BLE001 - report any launch failure as an error exit
        log.error("start_failed", osd=args.osd, error=str(exc))
        print("osd.%d: start failed: %s" % (args.osd, exc), file=sys.stderr)
        return EXIT_ERROR
    print("osd.%d: %s" % (args.osd, result))
    return EXIT_HELD if result == "held" else EXIT_ALLOW


def cmd_run(args) -> int:
    from ceph_recovery import protocol
    from . import daemon, launchers
    conf = _resolve(args, args.host)
    if not os.path.isfile(conf["conf"]):
        print("ceph-recovery-helper run: ceph.conf %s not found (from %s)" % (
            conf["conf"], "--conf" if args.conf else "--lab-dir" if args.lab_dir else
            "$CEPH_CONF" if os.environ.get("CEPH_CONF") else "the default"), file=sys.stderr)
        return EXIT_ERROR
    kind = args.launcher or ("process" if args.lab_dir else "systemd")
    if kind == "process":
        if not args.lab_dir:
            print("--launcher process needs --lab-dir", file=sys.stderr)
            return EXIT_ERROR
        launcher = launchers.ProcessLauncher(args.lab_dir, gate_fn(args, conf))
    else:
        try:
            launcher = launchers.unit_launcher(kind, args.fsid)
        except ValueError as exc:
            print(str(exc), file=sys.stderr)
            return EXIT_ERROR
    opts = daemon.Options(host=args.host, conf=conf["conf"], name=conf["name"],
                          keyring=conf["keyring"], state_dir=conf["state_dir"],
                          interval=args.interval, cgroup=conf["cgroup"], timeout=args.timeout,
                          stop_timeout=args.stop_timeout, probe_budget=args.probe_budget,
                          lab_dir=args.lab_dir)
    helper = daemon.Helper(opts, launcher)
    if args.once:
        try:
            ins = helper.run_cycle(time.time())
        finally:
            helper.close()
        print(json.dumps(None if ins is None else protocol.instructions_to_dict(ins)))
        return EXIT_ALLOW if ins is not None else EXIT_ERROR
    return helper.run()


def _argv_holds(argv: List[str]) -> bool:
    return any(a == "--no-cache=hold" for a in argv) or any(
        a == "--no-cache" and b == "hold" for a, b in zip(argv, argv[1:]))


def gate_failsafe(osd: str, hold: bool, error: str) -> int:
    """The gate failed before deciding (import error, usage error, any exception): answer by
    the --no-cache policy (allow unless `--no-cache hold`) and say why on stderr (the
    journal). Never exit 1 silently: systemd would skip the OSD start and never retry it."""
    print("ceph-recovery-helper gate %s: gate error before any decision: %s; %s by the "
          "fail-safe policy --no-cache %s" % (osd, error, "held" if hold else "may start",
                                              "hold" if hold else "allow"), file=sys.stderr)
    return EXIT_HELD if hold else EXIT_ALLOW


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    is_gate = bool(argv) and argv[0] == "gate"
    try:
        args = build_parser().parse_args(argv)
        configure_logging(args.log_level)
        handler = {"run": cmd_run, "gate": cmd_gate, "start-osd": cmd_start_osd}[args.cmd]
        return handler(args)
    except SystemExit as exc:
        if not is_gate or exc.code in (0, None):
            raise
        return gate_failsafe(" ".join(argv[1:2]), _argv_holds(argv),
                             "usage or setup error (exit %s)" % exc.code)
    except Exception as exc:   # noqa: BLE001 - the gate answers whatever went wrong
        if not is_gate:
            raise
        return gate_failsafe(" ".join(argv[1:2]), _argv_holds(argv),
                             "%s: %s" % (type(exc).__name__, exc))


if __name__ == "__main__":
    sys.exit(main())
