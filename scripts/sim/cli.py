"""ceph-recovery-sim: run one start strategy on a model cluster and print the outcome.

    ceph-recovery-sim --osds 1200 --hosts 100 --racks 10 --fail rack:1 --downtime 3600 \
        --strategy controlled --seed 1 --json
"""
from __future__ import annotations

import argparse
import errno
import json
import sys
from typing import List, Optional

from ceph_recovery.model import (AUTO_RAISED_FRACTION, BUDGET_AUTO, DEFAULT_BUDGET_FRACTION,
                                 Intent)
from ceph_recovery.policies import REGISTRY

from ..common.version import add_version
from .params import GiB, Params, with_overrides
from .topology import TopologyError, load

STRATEGIES = ("naive", "serial", "controlled", "unlimited", "oracle")
DEFAULT_BUDGET = DEFAULT_BUDGET_FRACTION   # the Intent default, as in the module
ORACLE_BUDGET = 0.95      # the oracle's budget: a bound, with 5 % for the tick's growth


def budget_arg(text: str):
    """`auto` (the module's default budget), else a fraction of host RAM."""
    if text == BUDGET_AUTO:
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("wants 'auto' or a fraction of host RAM, got %r"
                                         % text) from None


def concurrency_arg(text: str) -> int:
    """`auto` -> 0 (memory decides how many start per host), else an integer >= 1."""
    if text == "auto":
        return 0
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError("wants 'auto' or an integer >= 1, got %r" % text)
    return n


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="ceph-recovery-sim", description=__doc__.split("\n")[0])
    add_version(ap, "ceph-recovery-sim")
    ap.add_argument("--osds", type=int, default=60)
    ap.add_argument("--hosts", type=int, default=5)
    ap.add_argument("--racks", type=int, default=5)
    ap.add_argument("--pg-bits", type=int, default=0, help="pg_num = osds << bits (default 5)")
    ap.add_argument("--fail", default="rack:1", help="rack:N or host:N, comma-separated")
    ap.add_argument("--downtime", type=float, default=3600.0, help="seconds the domain was down")
    ap.add_argument("--strategy", choices=STRATEGIES, default="controlled")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=budget_arg, default=None,
                    help="fraction of host RAM, or 'auto' (%.2f, raised to %.2f once the run's "
                    "starts peak within their predictions: the default, as in the module; "
                    "oracle %.2f)" % (DEFAULT_BUDGET, AUTO_RAISED_FRACTION, ORACLE_BUDGET))
    ap.add_argument("--host-ram", type=float, default=None,
                    help="bytes per host (default 5.33 GiB per OSD: 64 GiB for 12 OSDs)")
    ap.add_argument("--concurrency", type=concurrency_arg, default=Intent.concurrency,
                    help="controlled: starts per host, or 'auto' (0: memory decides; the "
                    "default, as in the module)")
    ap.add_argument("--start-order", default=None, metavar="POLICY",
                    help="controlled: start_order policy (%s; default: the Intent's, %s)"
                    % (", ".join(sorted(REGISTRY["start_order"])), Intent.start_order))
    ap.add_argument("--horizon", type=float, default=96 * 3600.0, help="simulated seconds")
    ap.add_argument("--tick", type=float, default=5.0, help="simulated seconds per tick")
    ap.add_argument("--no-heap-release", action="store_true",
                    help="OSDs without tcmalloc: heap release frees nothing")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="override a model parameter (see docs/memory-model.md)")
    ap.add_argument("--no-throttle", action="store_true",
                    help="controlled/oracle: the run never throttles recovery (to compare)")
    ap.add_argument("--no-membership", action="store_true",
                    help="controlled: snapshots without PG membership (as a shell that "
                    "cannot read it)")
    ap.add_argument("--no-daemon-state", action="store_true",
                    help="controlled: snapshots without the OSDs' own states (as a helper "
                    "that cannot read their admin sockets: boots wait for a flat rss)")
    ap.add_argument("--check-invariants", action="store_true",
                    help="controlled: check plan() invariants every tick, count violations")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--trace", metavar="PATH",
                    help="controlled: write one JSON line per tick (actions, health, memory)")
    ap.add_argument("--calibrate", action="store_true",
                    help="print the memory model's footprints of one failed host's OSDs "
                         "(load, peak, settled; all at once vs one at a time) and exit")
    return ap


def build_params(args) -> Params:
    kw = {}
    for item in args.param:
        name, sep, value = item.partition("=")
        if not sep:
            raise ValueError("--param wants NAME=VALUE, got %r" % item)
        cur = getattr(Params(), name, None)
        if cur is None:
            raise ValueError("unknown model parameter %r" % name)
        if isinstance(cur, str):
            kw[name] = value
        else:
            kw[name] = type(cur)(float(value)) if not isinstance(cur, bool) else value in (
                "1", "true", "yes")
    if args.no_heap_release:
        kw["heap_release"] = False
    return with_overrides(Params(), **kw)


def run(args) -> dict:
    from .engine import RunConfig, Sim
    from .strategies import make
    if args.tick <= 0 or args.horizon <= 0 or args.downtime < 0:
        raise ValueError("tick and horizon must be > 0, downtime >= 0")
    if args.budget is None:
        args.budget = ORACLE_BUDGET if args.strategy == "oracle" else BUDGET_AUTO
    kind = BUDGET_AUTO if args.budget == BUDGET_AUTO else "fraction"
    if kind == BUDGET_AUTO:
        args.budget = DEFAULT_BUDGET
    if not 0 < args.budget <= 1:
        raise ValueError("--budget is 'auto' or a fraction of host RAM in (0, 1]")
    if args.start_order is not None and args.start_order not in REGISTRY["start_order"]:
        raise ValueError("unknown --start-order %r (known: %s)" % (
            args.start_order, ", ".join(sorted(REGISTRY["start_order"]))))
    params = build_params(args)
    topo = load(args.osds, args.hosts, args.racks, args.pg_bits)
    if args.calibrate:
        from .calibrate import host_footprints
        return host_footprints(topo, params, args.downtime, args.fail, args.seed)
    cfg = RunConfig(strategy=args.strategy, fail=args.fail, downtime_s=args.downtime,
                    horizon_s=args.horizon, tick_s=args.tick, budget=args.budget,
                    budget_kind=kind,
                    host_ram=args.host_ram, concurrency=args.concurrency,
                    start_order=args.start_order or Intent.start_order,
                    check_invariants=args.check_invariants, seed=args.seed,
                    membership=not args.no_membership, throttle=not args.no_throttle,
                    daemon_state=not args.no_daemon_state)
    strategy = make(cfg)
    if args.trace and cfg.strategy in ("controlled", "oracle"):
        with open(args.trace, "w") as f:
            strategy.trace = f
            return Sim(topo, params, cfg, strategy).run()
    return Sim(topo, params, cfg, strategy).run()


def _fmt_t(v) -> str:
    return "never" if v is None else "%.0f s (%.2f h)" % (v, v / 3600.0)


def human(r: dict) -> str:
    lines = ["%s: %d OSDs / %d hosts / %d racks, %d PGs, fail %s (%d OSDs) down %.0f s" % (
        r["strategy"], r["osds"], r["hosts"], r["racks"], r["pgs"], r["fail"],
        r["failed_osds"], r["downtime_s"])]
    for k in ("time_to_all_up_s", "time_to_all_pgs_active_s", "time_to_all_pgs_clean_s"):
        lines.append("  %-26s %s" % (k, _fmt_t(r[k])))
    lines.append("  peak host mem             %.1f GiB (%.2f x budget %.1f GiB)" % (
        r["peak_host_mem_bytes"] / GiB, r["peak_host_mem_over_budget"], r["budget_bytes"] / GiB))
    lines.append("  oom_kills %d, restarts %d, heap_releases %d, units failed %d, decisions %d"
                 % (r["oom_kills"], r["restarts"], r["heap_releases"], r["units_failed"],
                    r["decisions"]))
    lines.append("  converged %s, wall %.2f s" % (r["converged"], r["wall_s"]))
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        r = run(args)
    except TopologyError as e:
        print("ceph-recovery-sim: %s" % e, file=sys.stderr)
        return e.errno
    except (ValueError, LookupError) as e:
        print("ceph-recovery-sim: %s" % e, file=sys.stderr)
        return errno.EINVAL if isinstance(e, ValueError) else errno.ENOENT
    print(json.dumps(r, indent=1, sort_keys=True) if args.json or args.calibrate else human(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
