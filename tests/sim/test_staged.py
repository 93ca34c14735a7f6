"""Staged starts on the 1,200-OSD model (100 hosts of 12 with 64 GiB, rack:1 = 10 hosts down
1 h, the defaults: concurrency auto, budget auto): a host's 12 returning OSDs do not fit
together, so its starts beside others are staged (staging.py). Every staged OSD loads while
the ones before it peer and boots in its turn: invariant I10 (checked on every tick) holds, no
OOM kill, every OSD back. Only simulated outcomes are asserted, never timings."""
from __future__ import annotations

import json

from ceph_recovery_tools.sim.cli import parser, run

ARGS = ["--osds", "1200", "--hosts", "100", "--racks", "10", "--fail", "rack:1",
        "--downtime", "3600", "--horizon", "86400", "--strategy", "controlled",
        "--check-invariants"]


def test_staged_osds_load_beside_others_and_boot_in_their_turn(tmp_path):
    path = tmp_path / "trace.jsonl"
    r = run(parser().parse_args(ARGS + ["--trace", str(path)]))
    assert r["converged"] and r["osds_down_at_end"] == 0 and r["pgs_inactive_at_end"] == 0
    assert r["oom_kills"] == 0 and r["invariant_violations"] == 0
    staged, boots = {}, {}
    for line in path.read_text().splitlines():
        tick = json.loads(line)
        for a in tick["actions"]:
            kind, _, rest = a.partition(" ")
            osd = rest.split(":")[0]
            if kind == "grant_start" and "staged:" in a:
                staged.setdefault(osd, tick["t"])
            elif kind == "allow_boot" and "load-time rss" in a:
                boots.setdefault(osd, tick["t"])
    assert len(staged) >= 10 and set(staged) <= set(boots)
    # each boots after its load (one 5 s tick); many waited longer in preboot for their turn
    waits = sorted(boots[o] - staged[o] for o in staged)
    assert waits[0] >= 5.0 and sum(1 for w in waits if w > 5.0) >= len(waits) // 4, waits
