"""Drills, pure core: snapshots in, exact ordered action lists and drill phases out."""
from __future__ import annotations

import errno
import json
from dataclasses import replace
from functools import partial

import pytest

from ceph_recovery import drill as D
from ceph_recovery import drillload as L
from ceph_recovery import maintenance as M
from ceph_recovery.model import HostMem, OsdState, Snapshot

import rackcases  # see conftest.py

NOW = 1000.0
OK = (True, [], "ok-to-stop")
GIB = 2 ** 30


# the three-rack cluster with its hosts' memory and 64 PGs
snap = partial(rackcases.snap, mem=True, total=64)


HELD = {"h2": ["noout", "noup"]}


def start(s=None, verdict=OK, drills=(), windows=(), run_active=False, downtime=30.0):
    return D.check_start("d1000", "h2", downtime, s or snap(), list(windows), list(drills),
                         run_active, verdict, {"h2": 12 * GIB}, "80%", "", NOW)


def kinds(actions):
    return [(a.kind, getattr(a, "bucket", None) or getattr(a, "osd", None),
             getattr(a, "flag", None)) for a in actions]


def tick(s, d, windows, t, health="HEALTH_OK"):
    return D.plan_drill(s, d, list(windows), D.Observed(health=health, degraded_objects=7),
                        NOW + t)


def open_drill(t=5.0):
    """A drill whose window is open: h2's OSDs down and stopped, held, noout."""
    d, w = start()
    st = tick(snap(down=(2, 3), flags=HELD), d, [replace(w, phase=M.OPEN)], t)
    assert st.drill.phase == D.DOWN and st.actions == () and not st.start_exit
    return st.drill, st.windows


# ------------------------------------------------------------------ start
def test_start_refused_when_ok_to_stop_does_not_clear_the_bucket():
    verdict = M.ok_to_stop_verdict(-errno.EBUSY, {"ok_to_stop": False,
                                                  "bad_become_inactive": ["1.7"]})
    with pytest.raises(M.Refused) as e:
        start(verdict=verdict)
    assert e.value.errno == errno.EBUSY and "1.7" in e.value.message


def test_start_refused_while_another_drill_goes_on_and_on_a_bad_downtime():
    d, _w = start()
    with pytest.raises(M.Refused) as e:
        start(drills=[d])
    assert e.value.errno == errno.EBUSY and "d1000" in e.value.message
    with pytest.raises(M.Refused) as e:
        start(downtime=0.0)
    assert e.value.errno == errno.EINVAL


def test_start_makes_a_window_with_the_drill_as_reason():
    d, w = start()
    assert (d.phase, d.osds, d.hosts, d.downtime_s) == (D.ENTERING, (2, 3), ("h2",), 30.0)
    assert (w.bucket, w.phase, w.reason, w.osds) == ("h2", M.ENTERING, "drill d1000", (2, 3))


def test_a_kill_drill_sigkills_its_bucket_through_its_window_and_survives_a_failover():
    d, w = D.check_start("d1000", "h2", 30.0, snap(), [], [], False, OK, {"h2": 12 * GIB},
                         "80%", "", NOW, stop=D.STOP_KILL)
    assert d.stop == D.STOP_KILL and w.kill
    st = M.plan_windows(snap(flags=HELD), [w], M.RunView(), NOW + 1)
    assert [(a.kind, a.osd, a.kill) for a in st.actions] == [("stop_osd", 2, True),
                                                            ("stop_osd", 3, True)]
    assert st.actions[0].to_dict()["kill"] is True and "SIGKILL" in st.actions[0].reason
    assert D.drill_from_dict(json.loads(json.dumps(D.drill_to_dict(d)))).stop == D.STOP_KILL
    assert M.window_from_dict(json.loads(json.dumps(M.window_to_dict(w)))).kill
    # a clean drill (the default): a clean stop, and its dict reads as before the option
    d, w = start()
    st = M.plan_windows(snap(flags=HELD), [w], M.RunView(), NOW + 1)
    assert [a.kill for a in st.actions] == [False, False]
    assert "kill" not in st.actions[0].to_dict() and D.drill_to_dict(d)["stop"] == "clean"
    with pytest.raises(M.Refused) as e:
        D.check_start("d1000", "h2", 30.0, snap(), [], [], False, OK, {}, "", "", NOW,
                      stop="pull-the-plug")
    assert e.value.errno == errno.EINVAL and "clean or kill" in e.value.message


def test_a_kill_drill_with_a_write_load_opens_a_kill_window_once_its_pool_is_ready():
    d, _w = D.check_start("d1000", "h2", 30.0, snap(), [], [], False, OK, {}, "", "", NOW,
                          write_load=5, stop=D.STOP_KILL)
    assert d.phase == D.PREPARING
    d = replace(d, load=replace(d.load, state=L.CREATED))
    st = D.plan_drill(snap(), d, [], D.Observed(), NOW + 1)
    assert st.drill.phase == D.ENTERING and [w.kill for w in st.windows] == [True]


# ------------------------------------------------------------------ normal course
def test_downtime_elapsed_asks_for_the_exit_and_not_before():
    d, ws = open_drill(t=5.0)
    early = tick(snap(down=(2, 3), flags=HELD), d, ws, 5.0 + 29.0)
    assert not early.start_exit and early.actions == ()
    due = tick(snap(down=(2, 3), flags=HELD), early.drill, ws, 5.0 + 30.0)
    assert due.start_exit and due.actions == () and due.drill.phase == D.DOWN


def test_exit_then_window_closed_then_clean_ends_done_with_times():
    d, ws = open_drill(t=5.0)
    d = D.exit_started(d, "r1035", NOW + 35.0)
    ws = [M.exiting(ws[0], "r1035")]
    st = tick(snap(down=(3,), active=60, clean=50), d, ws, 40.0)      # one OSD back
    assert st.drill.phase == D.EXITING and st.actions == () and st.outcome is None
    assert st.drill.up_at is None
    st = tick(snap(active=60, clean=50), st.drill, ws, 45.0)          # both up, window open
    assert st.drill.phase == D.EXITING and st.drill.up_at == NOW + 45.0
    st = tick(snap(clean=50), st.drill, [], 50.0)                      # window closed
    assert st.drill.phase == D.EXITING and st.drill.up_at == NOW + 45.0
    assert st.drill.active_at == NOW + 50.0 and st.drill.clean_at is None
    st = tick(snap(), st.drill, [], 70.0)
    assert st.drill.phase == D.DONE and st.outcome.ok and st.outcome.what == "drill d1000"
    r = D.report(st.drill)
    assert (r["downtime_s"], r["time_to_all_active_s"], r["time_to_clean_s"]) == (
        30.0, 15.0, 35.0)
    assert r["hosts"]["h2"] == {"peak_bytes": 4 * GIB, "budget_bytes": 12 * GIB,
                                "peak_over_budget": False}
    assert [s["bucket_up"] for s in r["timeline"]] == [0, 1, 2, 2, 2]
    assert r["timeline"][1]["degraded_objects"] == 7 and "mem_used" in r["timeline"][1]
    line = D.summary_line(st.drill)
    assert "done" in line and "downtime 30s" in line and "4.0G/12.0G" in line
    assert D.summary_line(replace(st.drill, peaks={"h2": 300 << 20})).endswith("h2 300M/12.0G")


def test_an_exit_reports_the_budgets_it_started_under_not_those_of_the_drills_start():
    """A host limited while it was down (a cgroup limit) gets a lower fraction budget at the
    exit: the report's per-host budget and peak-over-budget are against that one."""
    d, ws = open_drill(t=5.0)
    assert d.budgets == {"h2": 12 * GIB}
    d = D.exit_started(d, "r1035", NOW + 35.0, {"h2": 3 * GIB})
    st = tick(snap(), d, [M.exiting(ws[0], "r1035")], 40.0)
    assert D.report(st.drill)["hosts"]["h2"] == {"peak_bytes": 4 * GIB,
                                                 "budget_bytes": 3 * GIB,
                                                 "peak_over_budget": True}
    assert D.exit_started(d, "r1035", NOW + 35.0).budgets == {"h2": 3 * GIB}  # none: kept


# ------------------------------------------------------------------ aborts
def abort_list(st):
    return kinds(st.actions)


def test_a_longer_inactive_grace_lets_a_slow_peering_run_on_and_survives_a_failover():
    d, w = D.check_start("d1000", "h2", 900.0, snap(), [], [], False, OK, {"h2": 12 * GIB},
                         "80%", "", NOW, inactive_grace_s=120.0)
    d = D.drill_from_dict(json.loads(json.dumps(D.drill_to_dict(d))))
    assert d.inactive_grace_s == 120.0
    st = tick(snap(down=(2, 3), flags=HELD), d, [replace(w, phase=M.OPEN)], 5.0)
    d, ws = st.drill, st.windows
    s = snap(down=(2, 3), flags=HELD, active=63)
    st = tick(s, d, ws, 6.0)
    st = tick(s, st.drill, ws, 6.0 + 120.0)
    assert st.drill.phase == D.DOWN and st.actions == ()
    st = tick(s, st.drill, ws, 6.0 + 121.0)
    assert st.drill.phase == D.ABORTING and "1 PG(s) inactive for more than 120s" in \
        st.drill.reason
    # an entry persisted before the option reads with the default
    old = D.drill_to_dict(d)
    del old["inactive_grace_s"]
    assert D.drill_from_dict(old).inactive_grace_s == D.INACTIVE_GRACE_S


@pytest.mark.parametrize("grace", [0.0, 4.9, 3601.0])
def test_an_inactive_grace_out_of_range_is_einval(grace):
    with pytest.raises(M.Refused) as e:
        D.check_start("d1000", "h2", 30.0, snap(), [], [], False, OK, {"h2": 12 * GIB},
                      "80%", "", NOW, inactive_grace_s=grace)
    assert e.value.errno == errno.EINVAL and "--inactive-grace" in e.value.message


def test_inactive_pg_past_the_grace_aborts_and_starts_every_osd_at_once():
    d, ws = open_drill(t=5.0)
    s = snap(down=(2, 3), flags=HELD, active=60)
    st = tick(s, d, ws, 6.0)                          # inactive: within the grace
    assert st.drill.phase == D.DOWN and st.drill.inactive_since == NOW + 6.0
    st = tick(s, st.drill, ws, 6.0 + D.INACTIVE_GRACE_S)
    assert st.drill.phase == D.DOWN
    st = tick(s, st.drill, ws, 6.0 + D.INACTIVE_GRACE_S + 1)
    assert st.drill.phase == D.ABORTING and "4 PG(s) inactive" in st.drill.reason
    assert st.windows == ()                           # the hold goes with the window
    assert abort_list(st) == [("grant_start", 2, None), ("grant_start", 3, None)]
    assert not st.abort_run                           # no exit run yet
    # all up: noout (set by the drill) unset, then aborted
    st = tick(snap(flags={"h2": ["noout"]}), st.drill, (), 40.0)
    assert abort_list(st) == [("unset_group_flag", "h2", "noout")]
    st = tick(snap(), st.drill, (), 42.0)
    assert st.drill.phase == D.ABORTED and st.actions == ()
    assert not st.outcome.ok and st.outcome.errno == errno.ECANCELED


def test_an_osd_killed_on_every_start_of_an_abort_is_left_down_after_abort_starts():
    """The abort's starts stop at ABORT_STARTS per OSD (an OOM loop is no way back): once the
    last is ABORT_STARTS' START_RETRY_S old and the OSD still stopped, noout is unset and the
    drill ends aborted naming it; an mgr failover in between keeps the count."""
    d, ws = open_drill(t=5.0)
    d = D.check_abort([d], "operator abort")
    dead = snap(down=(2, 3), flags={"h2": ["noout"]}, running=(3,))   # osd.2 OOM-killed
    st = tick(snap(down=(2, 3), flags=HELD), d, ws, 6.0)
    assert abort_list(st) == [("grant_start", 2, None), ("grant_start", 3, None)]
    t, retries = 6.0, 0
    while True:
        t += D.START_RETRY_S + 1
        st = tick(dead, D.drill_from_dict(json.loads(json.dumps(D.drill_to_dict(st.drill)))),
                  (), t)
        if not st.actions:
            break
        assert abort_list(st) == [("grant_start", 2, None)]
        retries += 1
    assert retries == D.ABORT_STARTS - 1 and st.drill.starts == {2: D.ABORT_STARTS, 3: 1}
    assert st.drill.phase == D.ABORTING                 # osd.3 still coming up
    up3 = snap(down=(2,), flags={"h2": ["noout"]})
    st = tick(up3, st.drill, (), t + 1)
    assert abort_list(st) == [("unset_group_flag", "h2", "noout")]
    st = tick(snap(down=(2,)), st.drill, (), t + 2)
    assert st.drill.phase == D.ABORTED and st.actions == ()
    assert st.drill.reason.endswith("osd.2 not up after %d starts each: left down"
                                    % D.ABORT_STARTS)
    assert st.drill.up_at is None and st.outcome.errno == errno.ECANCELED


def test_pgs_active_again_within_the_grace_do_not_abort():
    d, ws = open_drill(t=5.0)
    st = tick(snap(down=(2, 3), flags=HELD, active=60), d, ws, 6.0)
    st = tick(snap(down=(2, 3), flags=HELD), st.drill, ws, 10.0)
    st = tick(snap(down=(2, 3), flags=HELD, active=60), st.drill, ws, 12.0)
    st = tick(snap(down=(2, 3), flags=HELD, active=60), st.drill, ws, 12.0 + 15.0)
    assert st.drill.phase == D.DOWN and st.actions == ()


def test_health_err_during_the_exit_aborts_its_run_and_keeps_the_bucket_in_maintenance():
    """Once the exit's controlled start owns the bucket's OSDs, an abort never starts them
    outside its budget: it aborts the exit's run (which stops what it had not let boot), the
    window goes back into maintenance, and the drill ends aborted there."""
    d, ws = open_drill(t=5.0)
    d = D.exit_started(d, "r1035", NOW + 35.0)
    ws = [M.exiting(ws[0], "r1035")]
    st = tick(snap(down=(2, 3), running=(2,)), d, ws, 36.0, health="HEALTH_ERR")
    assert st.drill.phase == D.EXITING and st.drill.reason == "HEALTH_ERR appeared"
    assert st.abort_run and st.windows == tuple(ws)
    assert abort_list(st) == []               # nothing started at once
    # the run aborted, the window went back into maintenance: the drill ends aborted there
    back = [replace(ws[0], phase=M.ENTERING, exit_run="", note="exit run r1035 aborted")]
    end = tick(snap(down=(2, 3), running=(2,)), st.drill, back, 38.0, health="HEALTH_ERR")
    assert end.drill.phase == D.ABORTED and abort_list(end) == []
    assert end.drill.reason.startswith("aborted (HEALTH_ERR appeared): the exit failed: exit "
                                       "run r1035 aborted; h2 stays in maintenance")
    assert end.windows == tuple(back)


def test_operator_abort_while_entering():
    d, w = start()
    d = D.check_abort([d], "operator abort")
    st = tick(snap(down=(2,), flags=HELD), d, [w], 3.0)
    assert st.drill.phase == D.ABORTING and st.drill.reason == "operator: operator abort"
    assert abort_list(st) == [("grant_start", 2, None)]
    with pytest.raises(M.Refused) as e:
        D.check_abort([st.drill], "again")
    assert e.value.errno == errno.EBUSY


def test_abort_and_report_refusals():
    with pytest.raises(M.Refused) as e:
        D.check_abort([], "x")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(M.Refused) as e:
        D.find([], None)
    assert e.value.errno == errno.ENOENT
    d, _w = start()
    with pytest.raises(M.Refused) as e:
        D.find([d], "d1")
    assert e.value.errno == errno.ENOENT and "d1000" in e.value.message


def test_budget_and_abort_act_on_the_going_drill_not_on_an_ended_one():
    old, _w = start()
    old = replace(old, id="d1", phase=D.DONE)
    d, _w = start()
    assert D.going([old, d]) is d
    assert D.check_budget([old, d], "2G", {"h2": 2 << 30}).budgets == {"h2": 2 << 30}
    with pytest.raises(M.Refused) as e:
        D.check_budget([old], "2G", {})
    assert e.value.errno == errno.ENOENT
    with pytest.raises(M.Refused) as e:
        D.check_budget([old, replace(d, phase=D.EXITING)], "2G", {})
    assert e.value.errno == errno.EBUSY and "before its exit begins" in e.value.message


@pytest.mark.parametrize("note", ["exit run r1035 ended with osd.3 still down",
                                  "exit run r1035 aborted"])
def test_a_failed_exit_ends_the_drill_with_its_bucket_kept_in_maintenance(note):
    d, ws = open_drill(t=5.0)
    d = D.exit_started(d, "r1035", NOW + 35.0)
    back = replace(ws[0], phase=M.ENTERING, note=note)
    st = tick(snap(down=(3,)), d, [back], 60.0)
    assert st.drill.phase == D.ABORTED and note in st.drill.reason
    assert "h2 stays in maintenance" in st.drill.reason
    assert st.actions == () and not st.abort_run and list(st.windows) == [back]
    assert st.outcome is not None and not st.outcome.ok


def test_noout_set_before_the_drill_is_kept_on_abort():
    d, w = start(s=snap(flags={"h2": ["noout"]}))
    assert d.noout_before
    d = D.check_abort([d], "stop")
    st = tick(snap(flags={"h2": ["noout"]}), d, [w], 3.0)
    assert st.drill.phase == D.ABORTED and st.actions == ()


# ------------------------------------------------------------------ persistence, bounds
def test_mgr_failover_mid_drill_resumes_from_the_persisted_state():
    d, ws = open_drill(t=5.0)
    st = tick(snap(down=(2, 3), flags=HELD), d, ws, 20.0)
    text = json.dumps(D.drill_to_dict(st.drill))          # what the module persisted
    back = D.drill_from_dict(json.loads(text))
    assert back == st.drill
    # the new mgr's first tick past the downtime asks for the exit, as the old one would
    due = tick(snap(down=(2, 3), flags=HELD), back, ws, 35.0)
    assert due.start_exit and due.actions == ()


def test_the_timeline_stays_bounded_and_covers_the_whole_drill():
    d, ws = open_drill(t=5.0)
    d = replace(d, downtime_s=1e9)
    for k in range(3 * D.MAX_SAMPLES):
        d = tick(snap(down=(2, 3), flags=HELD), d, ws, 6.0 + k).drill
    assert len(d.samples) <= D.MAX_SAMPLES
    assert d.samples[0]["t"] == 5.0 and d.samples[-1]["t"] == 6.0 + 3 * D.MAX_SAMPLES - 1
    assert len(json.dumps(D.drill_to_dict(d))) < 60000     # one state-store chunk


def test_a_malformed_persisted_drill_is_rejected():
    with pytest.raises(ValueError):
        D.drill_from_dict({"id": "d1", "phase": "nonsense"})


def test_a_bucket_of_many_hosts_keeps_fewer_samples_within_one_chunk():
    hosts = tuple("h%d" % i for i in range(1, 7))
    osds = tuple(OsdState(id=i, host="h%d" % (i + 1), crush_path=("default", "big",
                                                                   "h%d" % (i + 1)), up=False)
                 for i in range(6))
    s = Snapshot(epoch=1, osds=osds, hosts=tuple(
        HostMem(name=h, mem_total=1 << 40, mem_used=(1 << 40) - 1, mem_available=1)
        for h in hosts), pgs_total=8, pgs_active=8, pgs_clean=8)
    d = D.Drill(id="d1", bucket="big", downtime_s=1e9, started_at=NOW, phase=D.DOWN,
                down_at=NOW, hosts=hosts, osds=tuple(range(6)))
    for k in range(1000):
        d = D.plan_drill(s, d, [M.Window(bucket="big", phase=M.OPEN)], D.Observed(),
                         NOW + 1e6 + k).drill
    assert len(d.samples) <= D.sample_limit(len(hosts)) <= D.MAX_SAMPLES
    assert len(json.dumps([dict(x) for x in d.samples])) <= D.TIMELINE_BYTES
    assert D.sample_limit(500) == 16 and D.sample_limit(1) == D.MAX_SAMPLES


# ------------------------------------------------------------------ --write-load (drillload)

def start_load(rate=10):
    return D.check_start("d1000", "h2", 30.0, snap(), [], [], False, OK, {"h2": 12 * GIB},
                         "80%", "", NOW, write_load=rate)


def tick_load(s, d, windows, t, seen=None):
    return D.plan_drill(s, d, list(windows), D.Observed(load=seen), NOW + t)


def test_the_pool_is_the_drills_own_and_sized_for_the_hosts_left_up():
    d, _w = start_load()
    assert d.load == L.Load(rate=10, pool="recovery-drill-d1000", size=3, min_size=2)
    assert L.pool_sizes(6, 1) == (3, 2) and L.pool_sizes(3, 2) == (3, 1)
    assert L.pool_sizes(2, 1) == (2, 1) and L.pool_sizes(1, 0) == (1, 1)
    assert start_load(rate=0)[0].load is None
    for bad in (-1, L.MAX_RATE + 1):
        with pytest.raises(M.Refused) as e:
            start_load(rate=bad)
        assert e.value.errno == errno.EINVAL


def test_the_pool_is_created_first_then_the_window_opens_then_writes_go_on_while_down():
    d, w = start_load()
    assert d.phase == D.PREPARING
    st = tick_load(snap(), d, [], 1.0)                # first tick: not stored yet
    assert st.load_order == L.IDLE and st.actions == () and st.windows == ()
    st = tick_load(snap(), st.drill, [], 3.0)
    assert st.load_order == L.CREATE and st.windows == ()
    # the pool is there but its PGs are still being created: no window yet, writes begin
    st = tick_load(snap(total=72, active=64), st.drill, [], 5.0, L.Seen(pool_ready=True))
    assert st.drill.phase == D.PREPARING and st.windows == () and st.load_order == L.WRITE
    st = tick_load(snap(total=72), st.drill, [], 7.0, L.Seen(pool_ready=True, written=40))
    assert st.drill.phase == D.ENTERING and st.load_order == L.WRITE
    assert [(x.bucket, x.phase, x.reason) for x in st.windows] == [
        ("h2", M.ENTERING, "drill d1000")]
    st = tick_load(snap(down=(2, 3), flags=HELD), st.drill, [replace(w, phase=M.OPEN)], 9.0,
                   L.Seen(pool_ready=True, written=44, latencies_ms=(2.0, 4.0, 3.0, 90.0)))
    assert st.drill.phase == D.DOWN and st.drill.load.state == L.CREATED
    assert st.load_order == L.WRITE and st.actions == ()
    s = st.drill.samples[-1]
    assert (s["objects_written"], s["write_p50_ms"], s["write_p99_ms"]) == (44, 3.0, 90.0)


def test_a_pool_that_cannot_be_created_aborts_the_drill_before_any_osd_stops():
    d, _w = start_load()
    st = tick_load(snap(), d, [], 1.0)
    st = tick_load(snap(), st.drill, [], 3.0, L.Seen(error="osd pool create: rc -1 EPERM"))
    assert st.drill.phase == D.ABORTING and "not created: osd pool create" in st.drill.reason
    assert st.actions == () and st.load_order == L.REMOVE
    st = tick_load(snap(), st.drill, [], 5.0, L.Seen(removed=True))
    assert st.drill.phase == D.ABORTED and st.actions == ()


def test_an_operators_window_opened_meanwhile_aborts_the_drill_and_is_kept():
    d, _w = start_load()
    other = M.Window(bucket="h2", phase=M.OPEN, reason="patch", osds=(2, 3))
    d = replace(d, load=replace(d.load, state=L.CREATED))
    st = tick_load(snap(down=(2, 3)), d, [other], 3.0)
    assert st.drill.phase == D.ABORTING and "window cannot open" in st.drill.reason
    assert st.windows == (other,)


def ended_exit(seen=None):
    """A write-load drill whose exit is over (window closed, every PG active+clean)."""
    d, w = start_load()
    d = replace(d, phase=D.DOWN, down_at=NOW, load=replace(d.load, state=L.CREATED))
    d = D.exit_started(d, "r1", NOW + 30.0)
    st = tick_load(snap(down=(3,)), d, [M.exiting(replace(w, phase=M.OPEN), "r1")], 31.0)
    assert st.load_order == L.WRITE                    # through the controlled start
    st = tick_load(snap(), st.drill, [], 40.0)
    return st


def test_writes_stop_once_the_bucket_is_up_then_verify_then_remove_then_done():
    st = ended_exit()
    assert st.drill.phase == D.EXITING and st.load_order == L.VERIFY and st.outcome is None
    st = tick_load(snap(), st.drill, [], 42.0, L.Seen(pool_ready=True, written=300, verified=300))
    assert st.load_order == L.REMOVE and st.outcome is None
    assert (st.drill.load.state, st.drill.load.verified, st.drill.load.bad) == (
        L.VERIFIED, 300, 0)
    st = tick_load(snap(), st.drill, [], 44.0, L.Seen(pool_ready=True, written=300, verified=300,
                                                 removed=True))
    assert st.drill.phase == D.DONE and st.outcome.ok and st.load_order is None
    r = D.report(st.drill)["write_load"]
    assert (r["objects_written"], r["objects_verified"], r["pool_state"]) == (
        300, 300, L.REMOVED)


def test_no_verify_while_a_pg_is_inactive():
    st = ended_exit()
    st = tick_load(snap(active=60, clean=60), st.drill, [], 42.0)
    assert st.load_order == L.IDLE and st.drill.phase == D.EXITING


def test_a_refused_removal_ends_the_drill_naming_the_pool_left():
    st = ended_exit()
    st = tick_load(snap(), st.drill, [], 42.0, L.Seen(pool_ready=True, verified=0))
    st = tick_load(snap(), st.drill, [], 44.0, L.Seen(pool_ready=True, verified=0,
                                                 error="osd pool rm: rc -1 EPERM"))
    assert st.drill.phase == D.DONE and "pool recovery-drill-d1000 left" in st.drill.reason


def test_abort_writes_until_all_are_back_then_verifies_and_removes_the_pool():
    d, w = start_load()
    d = replace(d, phase=D.DOWN, down_at=NOW, load=replace(d.load, state=L.CREATED))
    d = D.check_abort([d], "stop")
    st = tick_load(snap(down=(2, 3), flags=HELD), d, [replace(w, phase=M.OPEN)], 10.0)
    assert st.drill.phase == D.ABORTING and st.load_order == L.WRITE
    assert kinds(st.actions) == [("grant_start", 2, None), ("grant_start", 3, None)]
    st = tick_load(snap(), st.drill, (), 20.0)
    assert st.drill.phase == D.ABORTING and st.load_order == L.VERIFY and st.actions == ()
    st = tick_load(snap(), st.drill, (), 22.0, L.Seen(pool_ready=True, written=5, verified=4))
    assert st.load_order == L.REMOVE and st.drill.load.bad == 0
    st = tick_load(snap(), st.drill, (), 24.0, L.Seen(pool_ready=True, written=5, verified=4,
                                                 bad=1, removed=True))
    assert st.drill.phase == D.ABORTED and st.outcome.errno == errno.ECANCELED


def test_an_abort_before_the_pool_was_confirmed_still_removes_it():
    d, w = start_load()
    d = D.check_abort([d], "stop")
    st = tick_load(snap(down=(3,)), d, [], 3.0)       # an OSD down by hand: still starting
    assert st.drill.phase == D.ABORTING and st.load_order == L.IDLE
    assert kinds(st.actions) == [("grant_start", 3, None)]
    st = tick_load(snap(), st.drill, [], 3.0)
    assert st.drill.phase == D.ABORTING and st.load_order == L.REMOVE
    st = tick_load(snap(), st.drill, (), 5.0, L.Seen(removed=True))
    assert st.drill.phase == D.ABORTED


def test_the_load_survives_a_failover_in_the_persisted_drill():
    st = ended_exit()
    back = D.drill_from_dict(json.loads(json.dumps(D.drill_to_dict(st.drill))))
    assert back == st.drill and back.load.state == L.CREATED
    assert tick_load(snap(), back, [], 42.0).load_order == L.VERIFY
    with pytest.raises(ValueError):
        L.from_dict({"state": "created", "pool": "rbd", "rate": 1, "size": 3, "min_size": 2})


def test_percentiles_and_inactive_pg_seconds():
    assert L.percentile([5.0], 99) == 5.0
    assert L.percentile(list(range(1, 101)), 50) == 50.0
    assert L.percentile(list(range(1, 101)), 99) == 99.0
    samples = [{"t": 0.0, "pgs_total": 64, "pgs_active": 64},
               {"t": 10.0, "pgs_total": 64, "pgs_active": 60},
               {"t": 12.0, "pgs_total": 64, "pgs_active": 62},
               {"t": 15.0, "pgs_total": 64, "pgs_active": 64}]
    assert D.inactive_pg_seconds(samples, 10.0) == 4 * 2.0 + 2 * 3.0
    assert D.inactive_pg_seconds(samples, None) == 14.0
    assert D.inactive_pg_seconds(samples, 99.0) is None
