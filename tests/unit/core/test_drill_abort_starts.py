"""A drill's abort gives each down OSD of its bucket exactly one start instruction: the
helpers' process states lag the instruction (a report built before the start, or none fresh),
and the tick that follows must not instruct the same start again."""
from __future__ import annotations

import json
from dataclasses import replace

from ceph_recovery import drill as D
from ceph_recovery import maintenance as M
from ceph_recovery.model import OsdState, Snapshot

NOW = 1000.0
OK = (True, [], "ok-to-stop")
HELD = {"h2": frozenset(["noout", "noup"])}
NOOUT = {"h2": frozenset(["noout"])}


def snap(states, flags):
    """Two hosts x 2 OSDs; h2 (r1) holds osd.2 and osd.3. states: osd -> (up, process)."""
    osds = []
    for i in range(4):
        host = "h%d" % (i // 2 + 1)
        up, proc = states.get(i, (True, "running"))
        osds.append(OsdState(id=i, host=host, crush_path=("default", "r1", host), up=up,
                             process=proc))
    return Snapshot(epoch=10, osds=tuple(osds), bucket_flags=dict(flags), pgs_total=32,
                    pgs_active=32, pgs_clean=32)


def down_drill():
    """A drill on h2 whose window is open (osd.2, osd.3 stopped), then `drill abort`."""
    s = snap({2: (False, "stopped"), 3: (False, "stopped")}, HELD)
    d, w = D.check_start("d1000", "h2", 60.0, snap({}, {}), [], [], False, OK, {}, "", "",
                         NOW)
    st = D.plan_drill(s, d, [replace(w, phase=M.OPEN)], D.Observed(), NOW + 5)
    assert st.drill.phase == D.DOWN
    return D.check_abort([st.drill], "operator abort"), st.windows


def run(ticks, d, windows):
    """Tick the drill through (time, states, flags) and the actions of each tick, in order;
    the drill goes through its persisted form between ticks (an mgr failover may come)."""
    out = []
    for t, states, flags in ticks:
        st = D.plan_drill(snap(states, flags), d, windows, D.Observed(), NOW + t)
        out.append([(a.kind, getattr(a, "osd", None) or getattr(a, "bucket", None))
                    for a in st.actions])
        d = D.drill_from_dict(json.loads(json.dumps(D.drill_to_dict(st.drill))))
        windows = st.windows
    return out, d


STOPPED = (False, "stopped")
UNKNOWN = (False, "unknown")
BOOTING = (False, "running")


def test_each_osd_gets_exactly_one_start_instruction_on_abort():
    d, ws = down_drill()
    acts, d = run([
        (6.0, {2: STOPPED, 3: STOPPED}, HELD),     # the abort: both started at once
        (8.0, {2: STOPPED, 3: STOPPED}, NOOUT),    # the helper's report predates the start
        (10.0, {2: UNKNOWN, 3: STOPPED}, NOOUT),   # no fresh report for osd.2
        (12.0, {2: BOOTING, 3: BOOTING}, NOOUT),
        (14.0, {}, NOOUT),                         # both up: noout unset
        (16.0, {}, {}),
    ], d, ws)
    assert acts == [[("grant_start", 2), ("grant_start", 3)], [], [], [],
                    [("unset_group_flag", "h2")], []]
    assert d.phase == D.ABORTED
    # the report's times run from the abort (the bucket's return), as from an exit's start
    r = D.report(d)
    assert (r["downtime_s"], r["time_to_all_up_s"], r["time_to_all_active_s"],
            r["time_to_clean_s"]) == (1.0, 8.0, 8.0, 8.0)


def test_a_start_that_failed_is_instructed_again_only_after_the_retry_time():
    d, ws = down_drill()
    retry = D.START_RETRY_S
    acts, d = run([
        (6.0, {2: STOPPED, 3: STOPPED}, HELD),
        (8.0, {2: BOOTING, 3: STOPPED}, NOOUT),                # osd.3's start did not take
        (6.0 + retry, {2: BOOTING, 3: STOPPED}, NOOUT),        # not yet past the retry time
        (6.5 + retry, {3: STOPPED}, NOOUT),                    # past it: osd.3 once more
        (7.0 + retry, {3: STOPPED}, NOOUT),
        (9.0 + retry, {}, NOOUT),
    ], d, ws)
    assert acts == [[("grant_start", 2), ("grant_start", 3)], [], [], [("grant_start", 3)],
                    [], [("unset_group_flag", "h2")]]
