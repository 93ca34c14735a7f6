"""An OSD whose process dies at start, before any helper report shows it running (found by the
fault matrix on the lab: a missing BlueStore block device), is a failed start: it is granted
again at most MAX_START_FAILURES times in a run, GRANT_RETRY_S apart, and then named by
RECOVERY_START_FAILED. Before, it was re-granted on every tick (every ~4 s, without end)."""
from __future__ import annotations


from ceph_recovery.inflight import GRANT_RETRY_S, MAX_START_FAILURES

import mgrcases as cases  # noqa: E402  (registered by conftest.py)
STOPPED, all_helpers, tick = cases.STOPPED, cases.all_helpers, cases.tick


def run_begun():
    """A run begun at t=1000 with osd.4 and osd.5 of h3 down."""
    world = {"map": cases.load("osdmap_h3down.json"), "tree": cases.load("tree_h3down.json"),
             "pgs": cases.load("pgdump_h3down.json")}
    eng, _ceph = cases.make_engine(world["map"])
    all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.begin(eng.start("80%", [], 1, 1000.0), 1000.0)
    return world, eng


def test_an_osd_that_dies_at_start_is_granted_a_bounded_number_of_times():
    world, eng = run_begun()
    starts, done = {4: 0, 5: 0}, ()
    now = 1001.0
    while now < 1001.0 + 8 * GRANT_RETRY_S:
        tick(eng, world, now)
        failed = sorted(eng.run.progress.osd_map("failures"))
        named = " ".join(str(h) for h in eng.plan_out.health if h.code == "RECOVERY_START_FAILED")
        # once failed, named on every tick of the run (not only the tick it failed in)
        assert all("osd.%d" % o in named for o in failed), (now, failed, named)
        # the helper carries out every start; the process dies before the next report
        reply = all_helpers(eng, now + 1, [STOPPED(4), STOPPED(5)], done=done)
        done = tuple(i.id for i in reply.instructions if i.op == "start")
        for i in reply.instructions:
            starts[i.osd] += 1
        now += 4.0
    assert starts[4] <= MAX_START_FAILURES and starts[5] <= MAX_START_FAILURES, starts
    assert starts[4] >= 1
    health = [h for h in eng.plan_out.health if h.code == "RECOVERY_START_FAILED"]
    assert health and "gave up" in " ".join(str(h) for h in health), health


def test_osds_left_held_by_an_abort_stay_named_after_the_mode_goes_idle():
    """Found by the fault matrix: after an abort the engine sets the mode back to idle, and
    RECOVERY_ABORTED (naming the OSDs the run left with noup) vanished one tick later, while
    the noup stayed."""
    world, eng = run_begun()
    tick(eng, world, 1001.0)
    eng.set_mode("abort", 1002.0)
    for k in range(4):
        all_helpers(eng, 1003.0 + k, [STOPPED(4), STOPPED(5)])
        tick(eng, world, 1003.0 + k)
    assert eng.run.progress.phase == "aborted" and eng.run.intent.mode == "idle"
    noup = sorted(o["osd"] for o in world["map"]["osds"] if "noup" in o["state"])
    assert noup == [4, 5]
    named = [str(h) for h in eng.health_checks() if h.code == "RECOVERY_ABORTED"]
    assert named and "osd.4" in named[0] and "osd.5" in named[0], named
