"""Restarts over budget on two hosts whose OSDs share PGs, on the lab of 3 hosts x 2 OSDs
(pool size 3, min_size 2, failure domain host: every PG has one OSD on each host).

The run must be open while every PG is clean, or ok-to-stop itself refuses any restart: the
candidate it waits for is h1's second OSD, given CRUSH weight 0 first (it holds no PG) and
then SIGKILLed. A balloon process (fault_row.balloon) joins each of h1's and h2's memory cgroups, OVER
past the budget (more than a restart frees, so the candidate does not fit until they end),
and a controlled run starts, scoped to h1 and h2: the budget binds in-scope hosts only, and h3
(its two OSDs backfilling under the writes) is no part of this row. Each host's over-budget response ends in a restart of its
heaviest OSD, which ok-to-stop clears alone; h1's remaining OSD holds every PG's h1 copy, so
it shares PGs with each OSD of h2, and both down at once would take those PGs below
min_size. The rule under test: a restart in flight counts as stopped for every later stop
decision on every host. So the second host's restart waits until the first restarted OSD is
up again: sampled every SAMPLE_S, no two OSDs that share a PG are down at once and no PG is
`peered` (below min_size), and the second restart went out only after the first restarted
OSD was seen up again. Which one held the second back is recorded, not asserted: where both
hosts asked ok-to-stop in the same tick, the in-flight rule (the mon had cleared it); where
the second asked once the first was down, the mon itself. Then the candidate's weight is put back, the balloons end, it starts and backfills,
and the row ends with the checks every fault row ends with (fault_row.Row.finish)."""
from __future__ import annotations

import signal
import threading
import time
from typing import Dict, List, Set

import pytest

from ceph_recovery_tools.lab import launch
import fault_row as fr  # see conftest.py

pytestmark = pytest.mark.integration

HOSTS = ("h1", "h2")       # the two hosts put over budget; the candidate is on the first
MiB = 1 << 20
BUDGET = 1536 * MiB        # per host: room for the candidate's prediction on an idle host
OVER = 512 * MiB           # past the budget, by each balloon: more than a lab OSD's restart frees
OBJECTS = 3000             # written while the candidate is down
SAMPLE_S = 0.5



def acting_sets(state) -> List[Set[int]]:
    """Each PG's acting OSDs (`pg dump pgs_brief`), all up: who shares a PG with whom."""
    d = launch.ceph(state, "pg", "dump", "pgs_brief", timeout=60)
    rows = d.get("pg_stats", d) if isinstance(d, dict) else d
    return [set(p["acting"]) for p in rows]


class Sampler(object):
    """Every SAMPLE_S: the down OSDs (`osd dump`) and the PGs `peered` (below min_size)."""

    def __init__(self, state) -> None:
        self.state, self.stop = state, threading.Event()
        self.down: List[tuple] = []
        self.peered: List[tuple] = []
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                now = time.time()
                self.down.append((now, {x["osd"] for x in fr.osd_dump(self.state)["osds"]
                                        if not x["up"]}))
                d = launch.ceph(self.state, "pg", "dump", "pgs_brief", timeout=30)
                rows = d.get("pg_stats", d) if isinstance(d, dict) else d
                bad = [p["pgid"] for p in rows if "peered" in p["state"].split("+")]
                if bad:
                    self.peered.append((now, bad))
            except launch.CephError:
                pass
            self.stop.wait(SAMPLE_S)

    def close(self) -> None:
        self.stop.set()
        self.t.join(30)


def over_budget_seen(state) -> bool:
    """Every host of HOSTS over BUDGET in the module's latest helper reports (a dry run)."""
    plan = launch.ceph(state, "recovery", "start-controlled", "--dry-run", "--budget",
                       str(BUDGET), "--scope", *HOSTS, timeout=60)
    return all((plan["hosts"].get(h) or {}).get("used", 0) > BUDGET for h in HOSTS)


def both_hosts_restarted(state, since, host_of) -> List[Dict]:
    """The carried-out restarts, once each of HOSTS has one, else None."""
    rs = fr.kinds(fr.journal(state, since), "restart_osd")
    return rs if {host_of[j["action"]["osd"]] for j in rs} >= set(HOSTS) else None


def crush_weight(state, osd) -> float:
    return [n["crush_weight"] for n in launch.ceph(state, "osd", "tree")["nodes"]
            if n.get("id") == osd][0]


def set_weight(state, osd, weight) -> None:
    launch.ceph(state, "osd", "crush", "reweight", "osd.%d" % osd, str(weight), json_out=False)


def drain(state, osd) -> None:
    """CRUSH weight 0 for osd.N, and its PGs moved off it: no PG acts on it."""
    set_weight(state, osd, 0)
    fr.wait_for(lambda: not [s for s in acting_sets(state) if osd in s], 300,
                "no PG on osd.%d" % osd, every=2.0)
    launch.wait_pgs_clean(state, 300)


def test_over_budget_restarts_on_two_hosts_sharing_pgs_never_overlap(healthy_lab):
    lab = healthy_lab
    host_of = {int(o): v["host"] for o, v in lab["osds"].items()}
    candidate = max(int(o) for o in lab["hosts"][HOSTS[0]]["osds"])
    others = sorted(o for o, h in host_of.items() if h in HOSTS and o != candidate)
    weight = crush_weight(lab, candidate)
    with fr.objects(lab):
        r = fr.Row(lab, "restart-overlap", [candidate] + others)
        hogs, sampler = [], None
        try:
            r.write("before", 300)
            drain(lab, candidate)
            shared = acting_sets(lab)
            assert not [s for s in shared if candidate in s], shared
            launch.stop_osd(lab, candidate, signal.SIGKILL, 10)
            fr.wait_for(lambda: not [x for x in fr.osd_dump(lab)["osds"]
                                     if x["osd"] == candidate and x["up"]], 90,
                        "osd.%d down" % candidate)
            r.write("during", OBJECTS)
            sampler = Sampler(lab)
            for h in HOSTS:
                used = launch.cgroup_memory(lab, h)["usage"]
                hogs.append(fr.balloon(lab, h, max(0, BUDGET - used) + OVER))
            # both hosts over budget in the module's view before the run's first tick, so
            # that their responses (heap release, ok-to-stop) come in the same ticks
            fr.wait_for(lambda: over_budget_seen(lab), 60, "%s over budget in the helpers' "
                        "reports" % (HOSTS,), every=1.0)
            t_fault = time.time()
            launch.ceph(lab, "recovery", "start-controlled", "--budget", str(BUDGET),
                        "--concurrency", "1", "--scope", *HOSTS, json_out=False, timeout=60)
            restarts = fr.wait_for(lambda: both_hosts_restarted(lab, t_fault, host_of), 300,
                                   "a restart on each of %s" % (HOSTS,), every=1.0)
            first = restarts[0]["action"]["osd"]
            second = [j["action"]["osd"] for j in restarts
                      if host_of[j["action"]["osd"]] != host_of[first]][0]
            fr.wait_for(lambda: not [x for x in fr.osd_dump(lab)["osds"] if not x["up"]
                                     and x["osd"] != candidate], 120,
                        "the restarted OSDs up again")
            # its disk back in CRUSH before it starts: it returns by a backfill of its PGs
            set_weight(lab, candidate, weight)
        finally:
            for p in hogs:
                p.kill()
                p.wait()
            if sampler is not None:
                sampler.close()
        try:
            r.wait_done(300)
            r.write("after", 150)
            res = r.finish(t_fault, single_start=False)
            entries = r.remember()
            # the two restarted OSDs share PGs: the property was exercised
            together = [s for s in shared if first in s and second in s]
            assert host_of[first] != host_of[second] and together, (first, second, shared)
            overlap = [(t, d) for t, d in sampler.down if {first, second} <= d]
            assert not overlap, overlap[:3]
            assert not sampler.peered, sampler.peered[:3]
            # the first restart was seen down, and the second went out only once it was up
            # again (while it was in flight, the second host stayed over budget)
            t2 = [j["time"] for j in restarts if j["action"]["osd"] == second][0]
            first_down = [t for t, d in sampler.down if first in d
                          and restarts[0]["time"] - 1 <= t <= t2]
            assert first_down and t2 > max(first_down), (first_down, t2)
            # whether ok-to-stop had cleared the second alone before the first went out (then
            # only the in-flight rule held it back), or refused it while the first was down
            cleared = [j for j in fr.kinds(entries, "query_ok_to_stop", second)
                       if str(j.get("result")).startswith("ok_to_stop=True")
                       and j["time"] <= restarts[0]["time"]]
            res.update({"fault": "h1 and h2 over budget at once (%d MiB past it on each), "
                        "osd.%d (CRUSH weight 0) the candidate" % (OVER // MiB, candidate),
                        "restarts": ["osd.%d at +%.1f s" % (j["action"]["osd"],
                                                            j["time"] - t_fault)
                                     for j in restarts],
                        "pgs_shared_by_the_two": len(together), "samples": len(sampler.down),
                        "second_after_first_up_s": round(t2 - max(first_down), 1),
                        "second_cleared_alone_before_the_first": bool(cleared)})
            fr.RESULTS[r.name] = res
            print("restart-overlap row: %s" % res)
        finally:
            r.close()
            if crush_weight(lab, candidate) != weight:
                set_weight(lab, candidate, weight)
