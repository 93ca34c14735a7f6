"""How fast a host's memory grows within one tick, from drill timelines (the
NAME.timeline.json a drill keeps beside its picture):

  python3 -m ceph_recovery_tools.drill.growth [--tick 5] TIMELINE.json ...

Prints, per timeline and host, the sampled peak and the largest rise within any window of
`--tick` seconds. That rise is what the brake's headroom (orchestrator/brake.py: act above 90 %
of RAM or the cgroup limit) must hold between two ticks for the brake to act before the kernel.
"""
from __future__ import annotations

import argparse
import json
import os
from typing import Dict, List, Optional, Sequence, Tuple

MiB = 1 << 20


def max_rise(t: Sequence[float], used: Sequence[Optional[int]],
             tick: float) -> Tuple[int, Optional[float]]:
    """The largest used[j] - used[i] with 0 < t[j] - t[i] <= tick, and the t[i] it starts at
    ((0, None) when memory never rises)."""
    best: Tuple[int, Optional[float]] = (0, None)
    for i, (ti, ui) in enumerate(zip(t, used)):
        if ui is None:
            continue
        for tj, uj in zip(t[i + 1:], used[i + 1:]):
            if tj - ti > tick + 1e-9:
                break
            if uj is not None and uj - ui > best[0]:
                best = (uj - ui, ti)
    return best


def rows(timeline: Dict, tick: float) -> List[Dict]:
    out = []
    for host, used in sorted(timeline["used"].items()):
        seen = [u for u in used if u is not None]
        rise, at = max_rise(timeline["t"], used, tick)
        out.append({"host": host, "peak": max(seen) if seen else 0, "rise": rise, "at": at})
    return out


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="ceph-recovery-drill-growth", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tick", type=float, default=5.0, help="seconds (the module's tick: 5)")
    p.add_argument("timelines", nargs="+")
    args = p.parse_args(argv)
    print("| timeline | host | peak MiB | largest rise in %.0f s, MiB | share of peak |" % args.tick)
    print("|---|---|---|---|---|")
    for path in args.timelines:
        with open(path) as f:
            tl = json.load(f)
        name = os.path.basename(path).replace(".timeline.json", "")
        for r in rows(tl, args.tick):
            share = 100.0 * r["rise"] / r["peak"] if r["peak"] else 0.0
            print("| %s | %s | %.0f | %.0f | %.0f %% |" % (name, r["host"], r["peak"] / MiB,
                                                          r["rise"] / MiB, share))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
