"""`ceph-recovery-bench --sweep --out DIR`: one rack down 1 h, 12 OSDs per host, hosts x RAM x
strategies, run in a process pool of at most 2; plus a 10,000-OSD table. With `--host-out`
instead: one or two hosts down 1 h and 4 h, longer than mon_osd_down_out_interval (the
monitor marks them out; they come back in by a backfill), naive against controlled.

Every cell is one `ceph-recovery-sim` run (same code path as the CLI). A run that raises
(e.g. a core that rejects `--concurrency auto`) is recorded as {"error": ...} and reported
as "not available", never fatal to the sweep.
"""
from __future__ import annotations

import time
from concurrent.futures import ProcessPoolExecutor
from typing import Dict, List, Optional, Sequence, Tuple

from ceph_recovery_tools.progress import steps
from ceph_recovery_tools.sim.cli import build_params
from ceph_recovery_tools.sim.cli import parser as sim_parser
from ceph_recovery_tools.sim.cli import run as sim_run
from ceph_recovery_tools.sim.params import GiB, Params
from ceph_recovery_tools.sim.topology import load as load_topology

OSDS_PER_HOST = 12
HOSTS = (30, 100, 500)
RAM_GIB = (40, 44, 48, 56, 64)
# (label, strategy, extra sim args)
VARIANTS = (("naive", "naive", ()), ("controlled", "controlled", ()),   # default: auto
            ("ctl-1", "controlled", ("--concurrency", "1")),
            ("ctl-cover", "controlled", ("--concurrency", "auto", "--start-order",
                                         "cover_first")),
            ("unlimited", "unlimited", ()), ("oracle", "oracle", ()),
            # the oracle at controlled's own budget: perfect footprints, the same 0.9 of RAM
            ("oracle-0.9", "oracle", ("--budget", "0.9")),
            # controlled at the oracle's budget: its decisions against perfect footprints
            ("ctl-0.95", "controlled", ("--budget", "0.95")))
BIG = (840, 84)                  # 10,080 OSDs: 840 hosts x 12, racks of 10 hosts like the sweep
BIG_RAM_GIB = (48, 64)
BIG_VARIANTS = ("naive", "controlled", "unlimited")
# one or two hosts down past mon_osd_down_out_interval: (hosts, --fail, downtime s)
HOST_OUT_CELLS = tuple((h, fail, down) for h in (30, 100)
                       for fail in ("host:1", "host:1,host:2") for down in (3600, 14400))
HOST_OUT_RAM_GIB = (48, 64)
# (label, strategy, extra sim args): "ctl-together" returns the out OSDs the other way
# (noin while they start, one `osd in` of them all: sim/outreturn.py), to compare with the
# monitor's mark-in at each boot that the controlled start keeps
HOST_OUT_VARIANTS = (("naive", "naive", ()), ("controlled", "controlled", ()),
                     ("ctl-together", "controlled", ("--param", "out_return=together")))
DEFAULT_HORIZON_S = 6 * 3600.0   # every run that gets anywhere is clean within ~1 h
# a host-out cell's backfill of whole PGs (ctl-together) takes ~7 h on 30 hosts
HOST_OUT_HORIZON_S = 12 * 3600.0
WORKERS = 2


def cell_argv(hosts: int, ram_gib: float, strategy: str, extra, seed: int,
              horizon: float, fail: str = "rack:1", downtime: int = 3600) -> List[str]:
    return ["--osds", str(hosts * OSDS_PER_HOST), "--hosts", str(hosts),
            "--racks", str(max(1, hosts // 10)), "--fail", fail, "--downtime", str(downtime),
            "--host-ram", str(int(ram_gib * GiB)), "--strategy", strategy,
            "--seed", str(seed), "--horizon", str(horizon)] + list(extra)


def _run_cell(job: Tuple[dict, List[str]]) -> dict:
    meta, argv = job
    t0 = time.perf_counter()
    try:
        res = sim_run(sim_parser().parse_args(argv))
    except (ValueError, LookupError, RuntimeError) as e:
        res = {"error": "%s: %s" % (type(e).__name__, e)}
    res.update(meta)
    res["argv"] = argv
    res["cell_wall_s"] = round(time.perf_counter() - t0, 2)
    return res


def jobs(hosts=HOSTS, rams=RAM_GIB, seed: int = 1, horizon: float = DEFAULT_HORIZON_S,
         big: bool = True, sim_args: Sequence[str] = ()) -> List[Tuple[dict, List[str]]]:
    """Every cell's ceph-recovery-sim argv; `sim_args` go to every run (e.g. a --param
    override for a sensitivity sweep)."""
    out = []
    for h in hosts:
        for ram in rams:
            for label, strat, extra in VARIANTS:
                out.append(({"table": "sweep", "hosts_n": h, "ram_gib": ram, "variant": label},
                            cell_argv(h, ram, strat, tuple(extra) + tuple(sim_args), seed,
                                      horizon)))
    if big:
        for ram in BIG_RAM_GIB:
            for strat in BIG_VARIANTS:
                out.append(({"table": "big", "hosts_n": BIG[0], "ram_gib": ram,
                             "variant": strat},
                            cell_argv(BIG[0], ram, strat, tuple(sim_args), seed, horizon)))
    return out


def host_out_jobs(seed: int = 1, horizon: float = DEFAULT_HORIZON_S,
                  sim_args: Sequence[str] = (), cells=HOST_OUT_CELLS,
                  rams=HOST_OUT_RAM_GIB) -> List[Tuple[dict, List[str]]]:
    """The host-down cells (table "host-out"): every cell's argv, naive and controlled."""
    out = []
    for h, fail, down in cells:
        for ram in rams:
            for label, strat, extra in HOST_OUT_VARIANTS:
                out.append(({"table": "host-out", "hosts_n": h, "ram_gib": ram,
                             "variant": label, "fail": fail, "downtime_s": down},
                            cell_argv(h, ram, strat, tuple(extra) + tuple(sim_args), seed,
                                      horizon, fail, down)))
    return out


def check_sim_args(sim_args: Sequence[str]) -> None:
    """ValueError naming what is wrong when `sim_args` would fail every run."""
    try:
        args = sim_parser().parse_args(cell_argv(HOSTS[0], RAM_GIB[0], "controlled",
                                                 tuple(sim_args), 1, 60.0))
    except SystemExit:
        raise ValueError("--sim-arg %s: not a ceph-recovery-sim argument" % " ".join(sim_args))
    build_params(args)


def _cost(job) -> float:
    """Rough order of wall time: big clusters and plan()-driven strategies first."""
    meta = job[0]
    w = 1.0 if meta["variant"] in ("naive", "unlimited") else 6.0
    return -meta["hosts_n"] * w


def feasibility(ram_gib: float, p: Optional[Params] = None) -> dict:
    """Does the host's settled state fit its RAM: 12 OSDs at their steady RSS (never below
    their load: PG logs are not cache) + system, with osd_memory_target at its default and at
    the lowest Ceph accepts (Params.osd_memory_target_min)?"""
    p = p or Params()
    load = p.load_bytes(96)        # ~96 PG copies per OSD at the default pg_bits
    ram = ram_gib * GiB

    def need(target: int) -> int:
        return OSDS_PER_HOST * max(p.steady_for_target(target), load) + p.host_system_bytes

    d, m = need(p.osd_memory_target), need(p.osd_memory_target_min)
    return {"settled_default_gib": round(d / GiB, 2), "fits_default": d <= ram,
            "settled_min_target_gib": round(m / GiB, 2), "fits_min_target": m <= ram,
            "min_target_mib": p.osd_memory_target_min >> 20}


def prebuild(hosts=HOSTS, big: bool = True) -> None:
    """Build the placements once, in this process, before the pool reads them from cache."""
    shapes = [(h * OSDS_PER_HOST, h, max(1, h // 10)) for h in hosts]
    if big:
        shapes.append((BIG[0] * OSDS_PER_HOST, BIG[0], BIG[1]))
    for n, h, r in shapes:
        load_topology(n, h, r)


def run_sweep(seed: int = 1, horizon: float = DEFAULT_HORIZON_S, hosts=HOSTS, rams=RAM_GIB,
              big: bool = True, workers: int = WORKERS, log=print,
              sim_args: Sequence[str] = (), host_out: bool = False) -> Dict[str, object]:
    """The sweep's cells (host_out: the host-down cells instead) in a process pool."""
    t0 = time.perf_counter()
    if host_out:
        hosts, big = sorted({h for h, _f, _d in HOST_OUT_CELLS}), False
        rams = HOST_OUT_RAM_GIB
        horizon = max(horizon, HOST_OUT_HORIZON_S)
    prebuild(hosts, big)
    todo = sorted(host_out_jobs(seed, horizon, sim_args) if host_out else
                  jobs(hosts, rams, seed, horizon, big, sim_args), key=_cost)
    rows = []
    with ProcessPoolExecutor(max_workers=max(1, min(WORKERS, workers))) as pool, \
            steps("sweep cells", len(todo)) as advance:
        for r in pool.map(_run_cell, todo):
            log("cell %-5s %2s GiB %-10s %6.1f s%s" % (
                r["hosts_n"], r["ram_gib"], r["variant"], r["cell_wall_s"],
                "  " + r["error"] if "error" in r else ""))
            rows.append(r)
            advance(description="%s hosts, %s GiB" % (r["hosts_n"], r["ram_gib"]))
    feas = {str(ram): feasibility(ram) for ram in sorted(set(rams) | set(BIG_RAM_GIB))}
    return {"rows": rows, "feasibility": feas, "seed": seed, "horizon_s": horizon,
            "sim_args": list(sim_args),
            "workers": min(WORKERS, workers), "total_wall_s": round(time.perf_counter() - t0, 1)}


__all__ = ["run_sweep", "feasibility", "jobs", "host_out_jobs", "cell_argv", "check_sim_args"]
