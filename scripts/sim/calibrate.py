"""What the memory model gives for one host's returning OSDs (docs/memory-model.md table).

Starts the OSDs of the first failed host together with no OOM killer, runs them to clean and
reports each one's load-time RSS, peak and RSS at the end, plus the host sums that decide the
field's story: all at once vs one at a time vs the host's RAM.
"""
from __future__ import annotations

import statistics

from .cluster import ACTIVE
from .engine import RunConfig, Sim
from .params import Params
from .strategies import Unlimited
from .topology import Topology


def host_footprints(topo: Topology, params: Params, downtime_s: float, fail: str = "rack:1",
                    seed: int = 0, tick: float = 5.0) -> dict:
    cfg = RunConfig(strategy="unlimited", fail=fail, downtime_s=downtime_s, seed=seed)
    sim = Sim(topo, params, cfg, Unlimited(cfg))
    host = sim.failed[0].host
    osds = [o for o in sim.failed if o.host == host]
    for o in osds:
        sim.lc.start(o, 0.0)
    peak = {o.id: o.rss for o in osds}
    t = 0.0
    while any(o.phase != ACTIVE for o in osds) and t < 7 * 86400:
        sim.lc.advance(t, t + tick)
        t += tick
        for o in osds:
            peak[o.id] = max(peak[o.id], o.rss)
    sim.lc.advance(t, t + params.cache_fill_s)          # caches refilled: the settled RSS
    settled = sorted(o.rss for o in osds)
    peaks = sorted(peak.values())
    ram = sim.cl.host_ram
    one_at_a_time = sum(settled[:-1]) + peaks[-1] + params.host_system_bytes
    return {"downtime_s": downtime_s, "osds_on_host": len(osds), "host_ram": ram,
            "load_bytes": osds[0].load_bytes, "peak_mean": statistics.mean(peaks),
            "peak_max": peaks[-1], "settled_mean": statistics.mean(settled),
            "all_at_once": sum(peaks) + params.host_system_bytes,
            "one_at_a_time_worst": one_at_a_time, "time_to_clean_s": t}
