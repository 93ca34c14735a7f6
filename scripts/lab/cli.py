"""ceph-recovery-lab: bring a real local Ceph lab cluster up, down, or show its status."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Optional

from ..common.logs import configure_logging
from ..progress import steps
from ..common.sizes import format_bytes, size_arg
from ..common.version import add_version
from . import bootstrap, build, launch, procs, release, teardown
from .state import load_state

EXIT_USAGE = 2


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ceph-recovery-lab", description=__doc__)
    add_version(p, "ceph-recovery-lab")
    sub = p.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="build and start a lab cluster under --dir")
    up.add_argument("--dir", required=True)
    up.add_argument("--hosts", type=_positive, default=3)
    up.add_argument("--racks", type=_positive, default=2)
    up.add_argument("--osds-per-host", type=_positive, default=2)
    up.add_argument("--objectstore", choices=("bluestore", "memstore"), default="bluestore")
    up.add_argument("--host-mem-limit", type=size_arg, default=None,
                    help="memory cgroup limit per lab host, e.g. 600M, 1G")
    up.add_argument("--netns", action="store_true", help="each lab host in its own netns")
    up.add_argument("--no-helpers", dest="helpers", action="store_false")
    up.add_argument("--module-dir", default=None,
                    help="mgr_module/recovery (default: $CEPH_RECOVERY_MODULE_DIR or found "
                         "above the current directory)")
    up.add_argument("--ceph", choices=release.RELEASES, default="tentacle",
                    help="Ceph release: tentacle (the default, as the demo's and CI's) or reef "
                         "(a Debian chroot built once by chroot.sh and cached), or pacific (the "
                         "host's packages)")
    up.add_argument("--mgrs", type=int, choices=(1, 2, 3), default=1,
                    help="mgr daemons (mgr.x active, the others standby)")
    up.add_argument("--pg-num", type=_positive, default=32)
    up.add_argument("--mtu", type=_positive, default=9000)
    up.add_argument("--timeout", type=_positive, default=300,
                    help="seconds to wait for OSDs up and for HEALTH_OK")
    down = sub.add_parser("down", help="stop and remove the lab under --dir")
    down.add_argument("--dir", required=True)
    status = sub.add_parser("status", help="show the lab under --dir")
    status.add_argument("--dir", required=True)
    status.add_argument("--json", action="store_true")
    cli = sub.add_parser("ceph", help="the lab release's own ceph CLI on the lab: "
                         "ceph-recovery-lab ceph --dir D -- -s")
    cli.add_argument("--dir", required=True)
    cli.add_argument("args", nargs=argparse.REMAINDER,
                     help="the ceph command's arguments (after --)")
    return p


def options_from(args: argparse.Namespace) -> build.LabOptions:
    if args.racks > args.hosts:
        raise ValueError(f"--racks {args.racks} > --hosts {args.hosts}")
    module_dir = bootstrap.module_dir_from(args.module_dir, os.getcwd())
    if module_dir is None or not os.path.isdir(module_dir):
        raise ValueError("cannot find mgr_module/recovery: pass --module-dir or set "
                         "CEPH_RECOVERY_MODULE_DIR, or run from inside the repository")
    return build.LabOptions(
        hosts=args.hosts, racks=args.racks, osds_per_host=args.osds_per_host,
        objectstore=args.objectstore, host_mem_limit=args.host_mem_limit, netns=args.netns,
        helpers=args.helpers, module_dir=module_dir, pg_num=args.pg_num,
        health_timeout=args.timeout, mtu=args.mtu, ceph=args.ceph,
        mgrs=args.mgrs)


def cmd_up(args: argparse.Namespace) -> int:
    try:
        opts = options_from(args)
    except ValueError as exc:
        print(f"ceph-recovery-lab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    t0 = time.monotonic()
    try:
        with steps("lab up", build.UP_STEPS) as advance:
            state = build.up(args.dir, opts, lambda what: advance(description=what))
    except (build.LabExists, build.LabUsageError) as exc:
        print(f"ceph-recovery-lab: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001 - reported, lab already torn down
        print(f"ceph-recovery-lab: up failed and was cleaned up: {exc}", file=sys.stderr)
        return 1
    print(f"lab up in {time.monotonic() - t0:.1f}s: {len(state['osds'])} OSDs on "
          f"{len(state['hosts'])} hosts, mon {state['mon_addr']}, pool {state['pool']}")
    print(f"  ceph-recovery-lab ceph --dir {state['dir']} -- -s   # the lab release's CLI")
    print(f"  ceph-recovery-lab down --dir {state['dir']}")
    return 0


def lab_ceph_argv(state: Dict[str, Any], args: List[str]) -> List[str]:
    """The lab release's ceph CLI on the lab (a client must be of the cluster's release:
    Debian 12's Pacific client cannot read Tentacle's keys)."""
    args = args[1:] if args[:1] == ["--"] else args
    return release.tool(state, "ceph") + ["-c", state["conf"]] + list(args)


def _lab(lab_dir: str) -> Optional[Dict[str, Any]]:
    """The lab's state, or None after saying on stderr why there is none."""
    try:
        return load_state(lab_dir)
    except (OSError, ValueError) as exc:
        print(f"ceph-recovery-lab: no lab in {lab_dir}: {exc}", file=sys.stderr)
        return None


def cmd_ceph(args: argparse.Namespace) -> int:
    state = _lab(args.dir)
    if state is None:
        return EXIT_USAGE
    return subprocess.run(lab_ceph_argv(state, args.args), env=release.tool_env(state)
                          ).returncode


def cmd_down(args: argparse.Namespace) -> int:
    report = teardown.down(args.dir)
    left = {k: v for k, v in report.items() if v}
    if left:
        print(f"ceph-recovery-lab: down left things behind: {json.dumps(left)}", file=sys.stderr)
        return 1
    print(f"lab {os.path.abspath(args.dir)} is down (logs kept in log/)")
    return 0


def collect_status(state: Dict[str, Any]) -> Dict[str, Any]:
    """Processes (alive or not), per-host cgroup memory and the cluster's health."""
    daemons: Dict[str, Any] = {}
    for name, pid in sorted(state.get("pids", {}).items()):
        daemons[name] = {"pid": pid, "alive": procs.alive(pid)}
    for osd_id in sorted(state["osds"], key=int):
        pid = launch.osd_pid(state, int(osd_id))
        daemons[f"osd.{osd_id}"] = {"pid": pid, "alive": pid is not None,
                                    "host": state["osds"][osd_id]["host"]}
    memory = {h: launch.cgroup_memory(state, h) for h in state["hosts"]}
    try:
        health: Optional[Dict[str, Any]] = launch.ceph(state, "health", timeout=10)
    except launch.CephError as exc:
        health = {"status": "UNREACHABLE", "error": str(exc)}
    return {"dir": state["dir"], "phase": state.get("phase"), "mon_addr": state["mon_addr"],
            "health": health, "daemons": daemons, "memory": memory}


def _print_status(st: Dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table
    console = Console()
    console.print(f"lab {st['dir']} ({st['phase']}), mon {st['mon_addr']}, "
                  f"health {st['health'].get('status')}")
    table = Table("daemon", "pid", "alive", "host")
    for name, info in st["daemons"].items():
        table.add_row(name, str(info["pid"]), "yes" if info["alive"] else "NO",
                      info.get("host", ""))
    console.print(table)
    mem = Table("host", "usage MiB", "limit MiB", "max MiB", "oom_kill")
    for host, m in st["memory"].items():
        mem.add_row(host, *(format_bytes(m[k], "MiB") for k in ("usage", "limit", "max_usage")),
                    str(m["oom_kill"]))
    console.print(mem)


def cmd_status(args: argparse.Namespace) -> int:
    state = _lab(args.dir)
    if state is None:
        return EXIT_USAGE
    st = collect_status(state)
    if args.json:
        print(json.dumps(st, indent=2, sort_keys=True))
    else:
        _print_status(st)
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    configure_logging(console_on_tty=True)
    if os.geteuid() != 0:
        print("ceph-recovery-lab: must run as root (cgroups, namespaces)", file=sys.stderr)
        return EXIT_USAGE
    return {"up": cmd_up, "down": cmd_down, "status": cmd_status,
            "ceph": cmd_ceph}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
