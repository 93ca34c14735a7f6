"""The simulator reports each running OSD's own state as the helper reads it from the admin
socket ("initializing" while it loads, "preboot" once loaded), and plan() boots an OSD at the
first tick after its load instead of after two flat rss samples; `--no-daemon-state` runs
the old rule. 60 OSDs, rack:1 down 1 h, 5 s ticks (load_s 5 s)."""
from __future__ import annotations

import json

from ceph_recovery_tools.sim.cli import parser, run
from ceph_recovery_tools.sim.cluster import BOOTING, LOADING, PREBOOT
from ceph_recovery_tools.sim.controlled import DAEMON_STATES

BASE = ["--osds", "60", "--hosts", "5", "--racks", "5", "--fail", "rack:1",
        "--downtime", "3600", "--horizon", "86400", "--strategy", "controlled"]


def traced(tmp_path, *extra):
    path = tmp_path / ("trace%d.jsonl" % len(extra))
    out = run(parser().parse_args(BASE + ["--trace", str(path)] + list(extra)))
    grants, boots = {}, {}
    for line in path.read_text().splitlines():
        tick = json.loads(line)
        for a in tick["actions"]:
            kind, _, rest = a.partition(" ")
            osd = rest.split(":")[0]
            if kind == "grant_start" and "staged:" not in a:  # staged: boots in its turn
                grants.setdefault(osd, tick["t"])
            elif kind == "allow_boot" and "load-time rss" in a:
                boots.setdefault(osd, (tick["t"], a))
    return out, grants, boots


def test_the_phases_map_to_ceph_osd_states():
    assert (DAEMON_STATES[LOADING], DAEMON_STATES[PREBOOT], DAEMON_STATES[BOOTING]) == (
        "initializing", "preboot", "booting")


def test_with_the_daemon_state_each_boot_comes_one_tick_after_its_grant(tmp_path):
    with_state, grants, boots = traced(tmp_path)
    assert with_state["oom_kills"] == 0 and with_state["plan_done"], with_state
    assert grants and set(grants) <= set(boots)
    delays = sorted(t - grants[o] for o, (t, _) in boots.items() if o in grants)
    # each boot on its daemon's preboot, as its allow_boot line says with the time since the
    # grant: one tick after it for most, never more than two
    assert delays[len(delays) // 2] == 5.0 and set(delays) <= {5.0, 10.0}, delays
    assert all("in preboot (the daemon's state) after %ds" % (t - grants[o]) in a
               for o, (t, a) in boots.items() if o in grants)

    without, grants0, boots0 = traced(tmp_path, "--no-daemon-state")
    assert without["oom_kills"] == 0
    assert {t - grants0[o] for o, (t, _) in boots0.items() if o in grants0} == {10.0}
    assert all("flat after 10s in preboot" in a for o, (_, a) in boots0.items() if o in grants0)
    delays0 = [t - grants0[o] for o, (t, _) in boots0.items() if o in grants0]
    assert sum(delays) / len(delays) < sum(delays0) / len(delays0)
