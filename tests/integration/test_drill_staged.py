"""Staged starts on the real lab: a fresh lab of three hosts with four OSDs each (the release
of CEPH_RECOVERY_FULL_RELEASE, Tentacle under tox), h2 killed for 20 s while 20,000 objects
are written, then brought back by the module's drill exit under `--budget auto` with h2's
memory cgroup limited to LIMIT. There the four returning OSDs' predicted peaks do not fit the
budget together, but the load of one fits beside another that peers: the module grants it
*staged* (orchestrator/staging.py), it loads while the other peers, and it is let boot only
once the rest of its predicted peak fits. Asserted: a staged grant, boots in the journal after
their grants, two OSDs of h2 in flight at once (the module's own count), no OOM kill, the
exit complete and every object read back; the drill report's h2 budget is the one the exit ran
under (0.9 x LIMIT), not the unlimited host's.

The limit is the one of the staged-start lab drills (docs/data/staged-lab/): there the four OSDs'
predicted peaks were 154-194 MiB each (630 MiB budget) and their loads 95-107 MiB.
"""
from __future__ import annotations

import json
import os

import pytest

from ceph_recovery_tools.lab import inrelease
from ceph_recovery_tools.lab.restore import restore

pytestmark = [pytest.mark.integration, pytest.mark.slow]

HOST = "h2"
MiB = 1 << 20
LIMIT = 700 * MiB
OBJECTS = 20000
DOWNTIME = 20.0
TIMEOUT = 600.0
STALL_LIMIT = 90.0
INACTIVE_GRACE = 120.0     # s: see tests/integration/test_drill_memory.py


@pytest.fixture(scope="module")
def staged(lab_factory, tmp_path_factory):
    state = lab_factory(osds_per_host=4)
    out = os.path.join(os.environ.get("CEPH_RECOVERY_DRILL_OUT")
                       or str(tmp_path_factory.mktemp("drill-staged")), "staged-700.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    try:
        r = inrelease.run_drill(state, out, fail="host:" + HOST, objects=OBJECTS, stop="kill",
                                downtime=DOWNTIME, timeout=TIMEOUT, stall_limit=STALL_LIMIT,
                                inactive_grace=INACTIVE_GRACE, budget="auto",
                                host_mem_limit=LIMIT)
    finally:
        restore(state)
    print("\nstaged: %s" % json.dumps({k: r.get(k) for k in (
        "outcome", "oom_kills_by_host", "module_max_in_flight_per_host", "budget_bytes_by_host",
        "time_to_all_up_s", "time_to_all_pgs_clean_s", "predictions")}, default=str))
    yield state, r
    lab_factory.down()


def _actions(r, kind):
    return [(j["time"], j["action"]) for j in r["journal"] if j["action"]["kind"] == kind]


def test_a_staged_start_loads_beside_a_peering_osd_and_boots_when_its_peak_fits(staged):
    state, r = staged
    osds = set(state["hosts"][HOST]["osds"])
    grants = _actions(r, "grant_start")
    boots = _actions(r, "allow_boot")
    assert {a["osd"] for _, a in grants} == osds, grants
    staged_grants = [(t, a) for t, a in grants if "staged:" in a.get("reason", "")]
    assert staged_grants, ("no staged start: the path under test did not run",
                           [a.get("reason") for _, a in grants])
    for t, a in staged_grants:
        boot = [tb for tb, b in boots if b["osd"] == a["osd"]]
        assert boot and boot[0] >= t, (a, boots)
    assert r["module_max_in_flight_per_host"][HOST] >= 2


def test_the_staged_exit_is_safe_and_complete(staged):
    _state, r = staged
    assert r["oom_kills_by_host"][HOST] == 0
    assert r["outcome"] == "done", (r.get("reason"), r.get("stalled"))
    assert r["time_to_all_up_s"] is not None and r["time_to_all_pgs_clean_s"] is not None
    assert r["objects_written"] == 2 * OBJECTS
    assert r["objects_verified_ok"] == r["objects_written"], r["objects_bad"]
    # auto: 0.9 of the host's memory (its cgroup limit), 0.95 once predictions held
    budget = int(0.9 * LIMIT)
    assert r["budget_bytes_by_host"][HOST] == budget, r["budget_bytes_by_host"]
    said = [int(a["reason"].split("budget ")[-1].split(" MiB")[0]) for _, a in
            _actions(r, "grant_start") if "budget " in a.get("reason", "")]
    assert said[0] == budget // MiB and set(said) <= {budget // MiB, int(0.95 * LIMIT) // MiB}, \
        said
