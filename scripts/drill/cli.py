"""ceph-recovery-drill: a drill of the module (`ceph recovery drill`) on the lab, with what only
the lab can add and measure.

  ceph-recovery-drill --dir D --fail host:h2|rack:r1 [--budget 90%|BYTES]
                      [--host-mem-limit BYTES | --fit-first F | --fit-restart F] [--naive]
                      [--objects N] [--objects-before N] [--object-size BYTES]
                      [--downtime S] [--write-load N] [--stop clean|kill] [--stall-limit S]
                      [--inactive-grace S] [--keep] --json OUT
  ceph-recovery-drill render --report FILE|- --png OUT
  ceph-recovery-drill compare --naive N.json --controlled C.json --out DIR

The tool is a thin client of the module's drill (moduledrill.py): the module stops the domain
through the helpers after ok-to-stop, keeps it down --downtime s and brings it back by its
controlled start. The tool writes --objects checksummed objects before the drill and again
while the domain is down, limits the failed hosts' memory cgroups once they are down
(--host-mem-limit; cleared at the end), and with --naive answers `down` by `drill abort`
(every OSD at once), then restarts dead ones as systemd would (after 10 s, at most 3 times):
the baseline. It samples host cgroup usage, per-OSD RSS, process starts and OOM kills.

`render` draws the PNG of a module drill's report (`ceph recovery drill report -f json`,
from a file or stdin): memory per host vs budget, OSDs up, PGs active/clean and, with
--write-load, the client write latency p50/p99.

If D holds no lab, one is brought up (3 hosts x 2 OSDs, 2 racks) and torn down at the end
unless --keep. Writes OUT (JSON: the module's report under `drill`, the lab's measures beside
it) and OUT's name with .png (the timeline).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Dict, List, Optional

from ceph_recovery.drill import STOP_CLEAN, STOP_MODES

from ..common.logs import configure_logging
from ..common.sizes import size_arg
from ..common.version import add_version
from .runner import Drill, DrillOptions

SUMMARY_KEYS = ("mode", "outcome", "start_order", "max_in_flight_per_host",
                "peak_mem_bytes_by_host", "budget_bytes_by_host", "oom_kills_by_host",
                "process_starts_by_osd",
                "objects_written", "objects_verified_ok", "time_to_all_up_s",
                "time_to_all_pgs_active_s", "time_to_all_pgs_clean_s", "final_health")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ceph-recovery-drill", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_version(p, "ceph-recovery-drill")
    p.add_argument("--dir", required=True, help="lab directory (brought up if empty)")
    p.add_argument("--fail", required=True, help="host:NAME or rack:NAME")
    p.add_argument("--budget", default="90%", help="memory budget per host: 90%% or bytes/24G")
    p.add_argument("--host-mem-limit", type=size_arg, default=None,
                   help="memory cgroup limit of the failed hosts during recovery")
    p.add_argument("--naive", action="store_true", help="start every failed OSD at once")
    p.add_argument("--objects", type=int, default=2000,
                   help="objects written before, and again during, the outage")
    p.add_argument("--objects-before", type=int, default=None, metavar="N",
                   help="objects written before the outage (default: --objects)")
    p.add_argument("--object-size", type=size_arg, default=4096)
    p.add_argument("--downtime", type=float, default=30.0, help="seconds the domain stays down")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for recovery")
    p.add_argument("--restart-mgr-after", type=float, default=None,
                   help="kill and restart ceph-mgr this many seconds into the recovery")
    p.add_argument("--concurrency", default=None, metavar="N|auto",
                   help="controlled: start-controlled --concurrency (default: the module's)")
    p.add_argument("--fit-first", type=float, default=None, metavar="F",
                   help="budget = F x the module's own predicted peak of the first OSD it "
                        "would start, and the failed hosts' cgroups limited to that budget / "
                        "0.9 (the tightest run that still admits one OSD); with --naive, the "
                        "same limit, then every OSD started at once")
    p.add_argument("--fit-restart", type=float, default=None, metavar="F",
                   help="controlled: budget = the module's predicted peak of the second OSD "
                        "it would start on a failed host + F x the first's (0 < F < 1: room "
                        "for the first beside the second only once it was restarted), the "
                        "cgroups limited as with --fit-first")
    p.add_argument("--write-load", type=int, default=None, metavar="N",
                   help="the drill writes N objects/s to a pool of its own and verifies them")
    p.add_argument("--stop", choices=STOP_MODES, default=STOP_CLEAN,
                   help="how the helpers take the domain down: a clean shutdown, or SIGKILL "
                        "(a power loss)")
    p.add_argument("--stall-limit", type=float, default=None, metavar="S",
                   help="the module's stall_limit during the drill (an exit that starts "
                        "nothing for S s ends incomplete); restored after")
    p.add_argument("--inactive-grace", type=float, default=None, metavar="S",
                   help="the drill aborts once PGs stay inactive longer than S s "
                        "(drill start --inactive-grace; default the module's 20 s)")
    p.add_argument("--recovery-sleep", type=float, default=0.0, metavar="S",
                   help="the lab's osd_recovery_sleep_hdd during the drill (default 0: recovery "
                        "at full speed; 0.02 keeps returning OSDs recovering for minutes, for "
                        "make-room restarts of OSDs still recovering; wpq builds only, mclock "
                        "ignores it)")
    p.add_argument("--keep", action="store_true", help="keep a lab the drill brought up")
    p.add_argument("--module-dir", default=None, help="mgr_module/recovery for a new lab")
    p.add_argument("--json", required=True, dest="json_out", help="report file")
    return p


def render_main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(prog="ceph-recovery-drill render",
                                description="PNG of `ceph recovery drill report -f json`")
    p.add_argument("--report", required=True, help="the report's JSON file, or - for stdin")
    p.add_argument("--png", required=True, help="the PNG to write")
    args = p.parse_args(argv)
    try:
        if args.report == "-":
            rep = json.load(sys.stdin)
        else:
            with open(args.report) as f:
                rep = json.load(f)
        if not isinstance(rep, dict) or not isinstance(rep.get("timeline"), list):
            raise ValueError("not a drill report (no timeline)")
        from .report import render_module_report
        n = render_module_report(rep, args.png)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print("ceph-recovery-drill render: %s" % e, file=sys.stderr)
        return 2
    print("%s: %d series, %d samples" % (args.png, n, len(rep["timeline"])))
    return 0


def relay_argv(argv: List[str], values: Dict[str, str]) -> List[str]:
    """argv with the values of the options in `values` (e.g. --dir, --json) replaced: the
    chroot's command starts in its own root, where only absolute lab paths are seen."""
    out: List[str] = []
    it = iter(argv)
    for a in it:
        name = a.split("=", 1)[0]
        if name in values:
            if "=" not in a:
                next(it, None)
            out += [name, values[name]]
        else:
            out.append(a)
    return out


def in_lab_release(args: argparse.Namespace, argv: List[str]) -> Optional[int]:
    """On a lab of a chroot release (Reef, Tentacle) run from the host, the drill runs again
    under that release's ceph-recovery-drill: a client must be of the cluster's release
    (Debian 12's Pacific librados cannot read Tentacle's keys). Its report is written in the
    lab's log/ and copied to --json. None: run here (the host's release, inside the chroot,
    or no lab yet: the drill brings a Pacific one up)."""
    from ceph_recovery_tools.lab import build, inrelease, release
    from ceph_recovery_tools.lab.state import load_state
    if not build.holds_cluster(args.dir):
        return None
    state = load_state(args.dir)
    if not inrelease.in_chroot(state):
        return None
    out = os.path.abspath(args.json_out)
    inside = inrelease.report_inside(state, out)
    argv = relay_argv(argv, {"--json": inside, "--dir": state["dir"]})
    rc = subprocess.run(release.tool_argv(state, "ceph-recovery-drill") + argv,
                        env=release.tool_env(state)).returncode
    if inrelease.copy_report(inside, out):
        print("report: %s" % out)
    return rc


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["render"]:
        return render_main(argv[1:])
    if argv[:1] == ["compare"]:
        from .compare import main as compare_main
        return compare_main(argv[1:])
    args = parser().parse_args(argv)
    if args.fit_first is not None and (args.fit_first < 1.0
                                       or args.host_mem_limit is not None):
        print("ceph-recovery-drill: --fit-first needs F >= 1 and no --host-mem-limit (it "
              "sets the limit)",
              file=sys.stderr)
        return 2
    if args.fit_restart is not None and (args.naive or not 0 < args.fit_restart < 1
                                         or args.host_mem_limit is not None
                                         or args.fit_first is not None):
        print("ceph-recovery-drill: --fit-restart needs a controlled run, 0 < F < 1 and no "
              "--host-mem-limit or --fit-first", file=sys.stderr)
        return 2
    if min(args.objects, args.objects_before or 0, args.downtime, args.recovery_sleep) < 0 \
            or args.timeout <= 0:
        print("ceph-recovery-drill: --objects/--objects-before/--downtime/--recovery-sleep "
              "must be >= 0, --timeout > 0", file=sys.stderr)
        return 2
    relayed = in_lab_release(args, argv)
    if relayed is not None:
        return relayed
    configure_logging()
    module_dir = args.module_dir
    if module_dir is None:
        from ceph_recovery_tools.lab import bootstrap
        module_dir = bootstrap.module_dir_from(None, os.getcwd())
    opts = DrillOptions(lab_dir=os.path.abspath(args.dir), fail=args.fail, budget=args.budget,
                        host_mem_limit=args.host_mem_limit, naive=args.naive,
                        objects=args.objects, objects_before=args.objects_before,
                        object_size=args.object_size,
                        downtime=args.downtime, timeout=args.timeout, keep=args.keep,
                        restart_mgr_after=args.restart_mgr_after,
                        fit_first=args.fit_first, fit_restart=args.fit_restart,
                        concurrency=args.concurrency,
                        write_load=args.write_load, stop=args.stop,
                        stall_limit=args.stall_limit,
                        inactive_grace=args.inactive_grace,
                        recovery_sleep=args.recovery_sleep,
                        json_out=os.path.abspath(args.json_out), module_dir=module_dir)
    try:
        result = Drill(opts).run()
    except (ValueError, RuntimeError, TimeoutError) as e:
        print("ceph-recovery-drill: %s" % e, file=sys.stderr)
        return 1
    print(json.dumps({k: result.get(k) for k in SUMMARY_KEYS}, indent=1, default=str))
    print("report: %s\ntimeline: %s" % (opts.json_out, result.get("timeline_png")))
    ok = (result["objects_verified_ok"] == result["objects_written"]
          and not result.get("timed_out")
          and (args.naive or result.get("outcome") == "done"))
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
