"""Maintenance windows, pure core: snapshots in, exact ordered action lists out."""
from __future__ import annotations

import errno
from dataclasses import replace

import pytest

from ceph_recovery import maintenance as M
from ceph_recovery.actions import StopOsd, UnsetGroupFlag

from rackcases import snap  # see conftest.py: the three-rack cluster

NOW = 1000.0
OK = (True, [], "ok-to-stop")


def enter(bucket="h2", s=None, windows=(), verdict=OK, reason="kernel", run_active=False):
    return M.check_enter(bucket, s or snap(), list(windows), run_active, verdict, reason,
                         3600.0, NOW)


def kinds(actions):
    return [(a.kind, getattr(a, "bucket", None) or getattr(a, "osd", None),
             getattr(a, "flag", None)) for a in actions]


# ------------------------------------------------------------------ enter: refusals
def test_enter_refused_when_ok_to_stop_names_pgs_and_no_window_is_made():
    verdict = M.ok_to_stop_verdict(-errno.EBUSY, {"ok_to_stop": False, "osds": [2, 3],
                                                  "bad_become_inactive": ["1.7", "1.2"]})
    assert verdict == (False, ["1.2", "1.7"], "2 PG(s) would become inactive: 1.2 1.7")
    with pytest.raises(M.Refused) as e:
        enter(verdict=verdict)
    assert e.value.errno == errno.EBUSY
    assert "1.2 1.7" in e.value.message and "osd.2, osd.3" in e.value.message


def test_a_verdict_without_json_is_not_ok():
    assert M.ok_to_stop_verdict(-errno.ETIMEDOUT, None)[0] is False
    assert M.ok_to_stop_verdict(0, {"ok_to_stop": True})[0] is True
    # rc EBUSY wins over a JSON that says yes
    assert M.ok_to_stop_verdict(-errno.EBUSY, {"ok_to_stop": True})[0] is False


@pytest.mark.parametrize("case,code", [("overlap_rack", errno.EBUSY), ("same", errno.EBUSY),
                                       ("run", errno.EBUSY), ("empty", errno.EINVAL)])
def test_enter_refusals(case, code):
    w = enter("h2")
    with pytest.raises(M.Refused) as e:
        if case == "overlap_rack":
            enter("r1", windows=[w])
        elif case == "same":
            enter("h2", windows=[w])
        elif case == "run":
            enter("h3", run_active=True)
        else:
            enter("nosuch")
    assert e.value.errno == code


def test_enter_records_the_bucket_osds_and_a_noout_set_before():
    w = enter(s=snap(flags={"h2": {"noout"}}))
    assert (w.osds, w.phase, w.noout_before, w.entered_at) == ((2, 3), M.ENTERING, True, NOW)
    assert M.held_buckets([w]) == frozenset({"h2"})


# ------------------------------------------------------------------ enter: the ticks
def test_enter_sets_noout_first_and_stops_only_once_both_flags_are_in_the_map():
    w = enter()
    st = M.plan_windows(snap(), [w], M.RunView(), NOW)
    assert kinds(st.actions) == [("set_group_flag", "h2", "noout")]
    assert st.windows == (w,) and st.outcomes == ()
    # noout visible, noup (the hold plan() sets from held_buckets) not yet: nothing stopped
    st = M.plan_windows(snap(flags={"h2": {"noout"}}), [w], M.RunView(), NOW + 2)
    assert st.actions == ()
    st = M.plan_windows(snap(flags={"h2": {"noout", "noup"}}), [w], M.RunView(), NOW + 4)
    assert kinds(st.actions) == [("stop_osd", 2, None), ("stop_osd", 3, None)]
    assert all(isinstance(a, StopOsd) and a.host == "h2" for a in st.actions)
    assert st.windows[0].stops == {2: NOW + 4, 3: NOW + 4}


def test_stops_are_not_repeated_within_the_retry_time_and_the_window_opens_when_all_down():
    w = replace(enter(), stops={2: NOW, 3: NOW})
    held = {"h2": {"noout", "noup"}}
    st = M.plan_windows(snap(down=(2,), flags=held), [w], M.RunView(), NOW + 5)
    assert st.actions == ()                      # osd.3 still up, its stop is 5 s old
    st = M.plan_windows(snap(down=(2,), flags=held), [w], M.RunView(),
                        NOW + M.STOP_RETRY_S + 1)
    assert kinds(st.actions) == [("stop_osd", 3, None)]
    st = M.plan_windows(snap(down=(2, 3), flags=held), [w], M.RunView(), NOW + 90)
    assert st.actions == ()
    assert st.windows[0].phase == M.OPEN and st.windows[0].opened_at == NOW + 90
    assert [(o.what, o.ok) for o in st.outcomes] == [("maintenance enter h2", True)]


def test_a_down_osd_whose_process_still_runs_is_stopped():
    w = enter()
    s = snap(down=(2, 3), flags={"h2": {"noout", "noup"}})
    osds = tuple(replace(o, process="running") if o.id == 3 else o for o in s.osds)
    st = M.plan_windows(replace(s, osds=osds), [w], M.RunView(), NOW)
    assert kinds(st.actions) == [("stop_osd", 3, None)]


def test_mgr_failover_mid_enter_stops_only_what_is_still_running():
    """The window persisted (through JSON) by the old mgr; osd.2 is down already."""
    held = {"h2": {"noout", "noup"}}
    # the old mgr issued both stops 3 s ago: nothing is repeated
    both = M.window_from_dict(M.window_to_dict(replace(enter(), stops={2: NOW, 3: NOW})))
    assert both.stops == {2: NOW, 3: NOW}
    st = M.plan_windows(snap(down=(2,), flags=held), [both], M.RunView(), NOW + 3)
    assert st.actions == ()
    # the old mgr died before osd.3's stop was recorded: only osd.3 is stopped
    one = M.window_from_dict(M.window_to_dict(replace(enter(), stops={2: NOW})))
    st = M.plan_windows(snap(down=(2,), flags=held), [one], M.RunView(), NOW + 3)
    assert kinds(st.actions) == [("stop_osd", 3, None)]


def test_mgr_failover_after_noout_before_the_hold_sets_nothing_twice():
    st = M.plan_windows(snap(flags={"h2": {"noout"}}), [enter()], M.RunView(), NOW)
    assert st.actions == ()


# ------------------------------------------------------------------ open
def test_an_open_window_restores_a_noout_someone_removed_and_holds_its_bucket():
    w = replace(enter(), phase=M.OPEN, opened_at=NOW)
    st = M.plan_windows(snap(down=(2, 3), flags={"h2": {"noup"}}), [w], M.RunView(), NOW)
    assert kinds(st.actions) == [("set_group_flag", "h2", "noout")]
    assert M.held_buckets(st.windows) == frozenset({"h2"})
    assert M.busy(st.windows) == []


def test_recovery_maintenance_is_raised_only_past_max_duration():
    w = replace(enter(reason="kernel 6.1"), phase=M.OPEN, opened_at=NOW)
    s = snap(down=(2, 3), flags={"h2": {"noout", "noup"}})
    assert M.plan_windows(s, [w], M.RunView(), NOW + 3599).health == ()
    (h,) = M.plan_windows(s, [w], M.RunView(), NOW + 3700).health
    assert (h.code, h.severity, h.count) == ("RECOVERY_MAINTENANCE", "warning", 1)
    assert h.detail == ("h2: in maintenance for 1h01m, past its max-duration 1h00m "
                        "(open; reason: kernel 6.1)",)


# ------------------------------------------------------------------ exit
def test_exit_refusals():
    w = replace(enter(), phase=M.OPEN)
    with pytest.raises(M.Refused) as e:
        M.check_exit("h3", [w], False)
    assert e.value.errno == errno.ENOENT
    with pytest.raises(M.Refused) as e:
        M.check_exit("h2", [w], True)
    assert e.value.errno == errno.EBUSY
    with pytest.raises(M.Refused) as e:
        M.check_exit("h2", [M.exiting(w, "r5")], False)
    assert e.value.errno == errno.EBUSY
    assert M.check_exit("h2", [w], False) is w


def test_exit_releases_the_hold_to_its_run_and_restores_noout_only_at_the_end():
    w = M.exiting(replace(enter(), phase=M.OPEN), "r7")
    assert M.held_buckets([w]) == frozenset() and M.busy([w]) == [w]
    half = snap(down=(3,), flags={"h2": {"noout"}})
    # the run is going on (one OSD still down): nothing
    for phase in ("idle", "running", "paused"):
        st = M.plan_windows(half, [w], M.RunView("r7", phase, True), NOW)
        assert (st.actions, st.windows, st.outcomes) == ((), (w,), ())
    done = M.RunView("r7", "done", False)
    up = snap(flags={"h2": {"noout"}})
    st = M.plan_windows(up, [w], done, NOW)
    assert kinds(st.actions) == [("unset_group_flag", "h2", "noout")]
    assert isinstance(st.actions[0], UnsetGroupFlag) and st.windows == (w,)
    st = M.plan_windows(snap(), [w], done, NOW + 2)          # noout gone from the map
    assert st.actions == () and st.windows == ()
    assert [(o.what, o.ok, o.errno) for o in st.outcomes] == [("maintenance exit h2", True, 0)]


def test_exit_keeps_a_noout_the_bucket_had_before_enter():
    w = M.exiting(replace(enter(s=snap(flags={"h2": {"noout"}})), phase=M.OPEN), "r7")
    st = M.plan_windows(snap(flags={"h2": {"noout"}}), [w], M.RunView("r7", "done"), NOW)
    assert st.actions == () and st.windows == () and st.outcomes[0].ok


@pytest.mark.parametrize("phase,code,err", [("aborted", "aborted", errno.ECANCELED),
                                            ("done", "failed", errno.EIO)])
def test_an_aborted_or_incomplete_exit_puts_the_window_back_in_maintenance(phase, code, err):
    w = M.exiting(replace(enter(), phase=M.OPEN), "r7")
    st = M.plan_windows(snap(down=(3,), flags={"h2": {"noout"}}), [w],
                        M.RunView("r7", phase), NOW)
    assert st.actions == ()
    (back,) = st.windows
    assert back.phase == M.ENTERING and back.exit_run == "" and "r7" in back.note
    assert M.held_buckets(st.windows) == frozenset({"h2"})       # held again, noout kept
    (o,) = st.outcomes
    assert (o.ok, o.code, o.errno) == (False, code, err)
    # osd.2 came up during the exit: it is stopped again once the hold is back in the map
    st = M.plan_windows(snap(down=(3,), flags={"h2": {"noout", "noup"}}), st.windows,
                        M.RunView("r7", phase), NOW + 2)
    assert kinds(st.actions) == [("stop_osd", 2, None)]
    # back in maintenance: no new "enter" outcome hides the failed exit from `wait`
    st = M.plan_windows(snap(down=(2, 3), flags={"h2": {"noout", "noup"}}), st.windows,
                        M.RunView("r7", phase), NOW + 4)
    assert st.windows[0].phase == M.OPEN and st.outcomes == ()


def test_mgr_failover_mid_exit_resumes_without_starting_anything_itself():
    """Persisted exiting window + the run state the old mgr saved: the window leaves the
    starting to the run, and a noout unset that was carried out is not repeated."""
    w = M.window_from_dict(M.window_to_dict(M.exiting(replace(enter(), phase=M.OPEN),
                                                      "r7")))
    st = M.plan_windows(snap(down=(3,), flags={"h2": {"noout"}}), [w],
                        M.RunView("r7", "running", True), NOW)
    assert st.actions == ()
    st = M.plan_windows(snap(), [w], M.RunView("r7", "done"), NOW)
    assert st.actions == () and st.windows == () and st.outcomes[0].ok


def test_a_window_whose_exit_run_was_replaced_goes_back_if_osds_are_down():
    w = M.exiting(replace(enter(), phase=M.OPEN), "r7")
    st = M.plan_windows(snap(down=(2,), flags={"h2": {"noout"}}), [w],
                        M.RunView("r9", "running", True), NOW)
    assert st.windows[0].phase == M.ENTERING and st.outcomes[0].code == "failed"


# ------------------------------------------------------------------ outcomes, parsing
def test_run_outcomes():
    assert M.run_outcome("r1", "done", [], NOW).errno == 0
    assert M.run_outcome("r1", "aborted", [], NOW).errno == errno.ECANCELED
    o = M.run_outcome("r1", "done", [4, 5], NOW)
    assert (o.errno, o.reason) == (errno.EIO, "run r1 ended with osd.4, osd.5 still down")
    assert M.outcome_from_dict(M.outcome_to_dict(o)) == o


@pytest.mark.parametrize("text,secs", [("4h", 14400.0), ("90m", 5400.0), ("30s", 30.0),
                                       ("600", 600.0), ("1d", 86400.0)])
def test_parse_duration(text, secs):
    assert M.parse_duration(text) == secs


@pytest.mark.parametrize("text", ["", "h", "-1h", "0", "4x", "abc"])
def test_parse_duration_rejects(text):
    with pytest.raises(ValueError):
        M.parse_duration(text)


def test_a_malformed_window_entry_is_a_value_error():
    with pytest.raises(ValueError):
        M.window_from_dict({"bucket": "h2", "phase": "half-open"})
