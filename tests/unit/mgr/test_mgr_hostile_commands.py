"""Every command handler of the mgr module, driven with hostile arguments.

The Module class itself runs, outside ceph-mgr (mgrlab.LabModule: the recorded lab dumps as
the cluster and cephfake.FakeCeph as the mon). Hypothesis draws non-finite numbers, huge and deeply nested strings, wrong types and
plausible names for every argument of every command. The rule for each call: rc 0, or a
negative errno with a non-empty message, never an exception; a refused command changes
nothing; after an accepted one the next tick and `maintenance ls` / `status` still work.
"""
from __future__ import annotations

import errno
import inspect
import json
import math

from hypothesis import HealthCheck, event, given, settings, strategies as st

from mgrlab import LabModule, module, valid_report  # see conftest.py


READS = ("osd ok-to-stop", "config get", "config dump")


def fingerprint(m):
    """What a command may change: the run state, the helpers' reports, the cluster."""
    eng = m.engine
    return (eng.run.dumps(), {h: r for h, (r, _t) in eng.reports.items()},
            dict(eng.retired_instances), dict(eng.tput_requests),
            [c for c in m.ceph.mutations() if c.get("prefix") not in READS])


NUMBERS = st.sampled_from([float("inf"), float("-inf"), float("nan"), -1, 0, -1e300, 1e300,
                           10 ** 30, -(10 ** 30), 2 ** 63, 1.5, 3])
TEXTS = st.sampled_from([
    "inf", "-inf", "nan", "NaN", "Infinity", "1e999", "9" * 400, "9" * 400 + "G",
    "9" * 400 + "%", "-1", "0", "-5m", "1e308d", "infh", "nans", "", " ", "x" * 300000,
    "[" * 200000, "{" * 1000, "h" * 300, "h1;rm -rf", "\x00", "\u202e", "auto", "80%", "24G",
    "1h", "30s", "20s", "2", "kill", "clean", "h1", "h2", "h3", "r1", "r2", "default",
    "osd.0", "unblock_first", "cover_first", "json", "json-pretty", "plain"])
SPECIAL = st.one_of(st.none(), st.booleans(), st.just([]), st.just({}),
                    st.just(["h1"] * 3), st.just([["h1"]]), st.just({"a": [1]}),
                    st.just(["x" * 100000]), st.binary(max_size=8))
HOSTILE = st.one_of(NUMBERS, TEXTS, SPECIAL, st.text(max_size=30),
                    st.integers(-2 ** 70, 2 ** 70), st.floats())
REPORTS = st.one_of(
    st.builds(valid_report, st.just("h1"), st.integers(0, 3), st.sampled_from(["i1", "i2"])),
    st.builds(valid_report, st.sampled_from(["h1", "h2", "h3", "zz", ""]),
              st.sampled_from([0, 1, 2, -1, 2 ** 63]), st.sampled_from(["i1", "i2", ""])),
    st.just("[" * 200000), st.just("{\"a\":" * 50000), st.just(json.dumps([[[[[[]]]]]])),
    st.just(valid_report().replace('"used": 1073741824', '"used": 9999999999999')),
    st.just(valid_report().replace('"total": 8589934592', '"total": 0')))

# values a command accepts, so that sequences reach the states hostile input then meets
PLAUSIBLE = {
    "bucket": ["h1", "h2", "h3", "r1"], "fail": ["h1", "h2", "r2"], "scope": [["h3"], None],
    "budget": ["80%", "auto", "24G"], "concurrency": ["1", "auto"], "downtime": ["30s", "1h"],
    "max_duration": ["1h", "2d"], "reason": ["disk swap"], "stop": ["clean", "kill"],
    "inactive_grace": ["20s"], "write_load": [None], "host": ["h1", "h1", "h3"],
    "hosts": [["h1"], None], "drill_id": [None], "format": ["json", "plain"], "dry_run": [False],
    "leave_out": [False, True], "start_order": ["unblock_first", "cover_first"]}

COMMANDS = sorted(n for n in dir(module.Module) if n.startswith("cmd_"))


@st.composite
def calls(draw):
    """(method name, kwargs): every parameter either left out (when it has a default) or
    hostile; a helper report's text is also drawn from valid and malicious reports."""
    name = draw(st.sampled_from(COMMANDS))
    params = inspect.signature(getattr(module.Module, name)).parameters
    kw = {}
    for p in list(params.values())[1:]:
        if p.default is not inspect.Parameter.empty and draw(st.booleans()):
            continue
        if p.name == "report":
            kw[p.name] = draw(REPORTS)
        elif p.name in PLAUSIBLE and draw(st.booleans()):
            kw[p.name] = draw(st.sampled_from(PLAUSIBLE[p.name]))
        else:
            kw[p.name] = draw(HOSTILE)
    return name, kw


def check_answer(res):
    assert isinstance(res, tuple) and len(res) == 3, res
    rc, out, err = res
    assert isinstance(rc, int) and rc <= 0
    if rc < 0:
        assert -rc in errno.errorcode, rc
        assert isinstance(err, str) and err.strip(), res


def still_works(m):
    """An accepted command leaves a state that the tick, its store and every view take."""
    m._tick()
    assert m.engine.error is None
    for fmt in ("json", "plain"):
        check_answer(m.cmd_maint_ls(format=fmt))
        check_answer(m.cmd_status(format=fmt))
        check_answer(m.cmd_drill_report(format=fmt))
    state = module.RunState.loads(m.engine.run.dumps())
    assert state.dumps() == m.engine.run.dumps()


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(calls(), min_size=1, max_size=4))
def test_every_command_answers_hostile_arguments_and_a_refusal_changes_nothing(seq):
    m = LabModule()
    assert m._guard() is None
    for name, kw in seq:
        before = fingerprint(m)
        res = getattr(m, name)(**kw)
        check_answer(res)
        event("%s %s" % (name, "accepted" if res[0] == 0 else "refused"))
        if res[0] != 0:
            assert fingerprint(m) == before, (name, kw)
        elif name not in ("cmd_status", "cmd_network", "cmd_maint_ls", "cmd_drill_report",
                          "cmd_wait"):
            still_works(m)


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.none(), st.floats(), st.sampled_from([0.5, 2.0, 3.0, -1.0]),
                 st.integers(-2 ** 70, 2 ** 70)))
def test_wait_answers_any_timeout_at_once_when_idle(timeout):
    m = LabModule()
    check_answer(m.cmd_wait(timeout=timeout))


def test_maintenance_enter_with_an_infinite_max_duration_is_refused_and_stores_nothing():
    for bad in ("inf", "infh", "nan", "-1h", "1e308d", "9" * 400):
        m = LabModule()
        assert m._guard() is None
        before = fingerprint(m)
        rc, _out, err = m.cmd_maint_enter("h1", max_duration=bad)
        assert rc == -errno.EINVAL and "duration" in err, (bad, err)
        assert fingerprint(m) == before
        check_answer(m.cmd_maint_ls())


def test_drill_start_with_an_infinite_downtime_is_refused_before_anything_is_stored():
    for args in ({"downtime": "inf"}, {"downtime": "nan"}, {"downtime": "1e400"},
                 {"downtime": "60s", "inactive_grace": "inf"},
                 {"downtime": "60s", "budget": "9" * 400 + "G"},
                 {"downtime": "60s", "write_load": float("inf")}):
        m = LabModule()
        assert m._guard() is None
        before = fingerprint(m)
        rc, _out, err = m.cmd_drill_start("h1", **args)
        assert rc == -errno.EINVAL and err, (args, err)
        assert fingerprint(m) == before, args


def test_an_unbounded_reason_is_refused():
    m = LabModule()
    assert m._guard() is None
    before = fingerprint(m)
    rc, _out, err = m.cmd_maint_enter("h1", reason="r" * 100000)
    assert rc == -errno.EINVAL and "reason" in err
    assert fingerprint(m) == before
    assert m.cmd_maint_enter("h1", reason="r" * 256)[0] == 0


def test_a_deeply_nested_report_is_einval_not_a_recursion_error():
    m = LabModule()
    assert m._guard() is None
    for text in ("[" * 200000, "[" * 100000 + "]" * 100000, '{"a":' * 40000 + "1" +
                 "}" * 40000):
        rc, _out, err = m.cmd_helper_report(text, "h1")
        assert rc == -errno.EINVAL and "nested" in err, err
    assert not m.engine.reports


def test_helper_report_numbers_are_finite_in_the_state():
    m = LabModule()
    assert m._guard() is None
    assert m.cmd_helper_report(valid_report("h1"), "h1")[0] == 0
    assert not any(isinstance(v, float) and not math.isfinite(v)
                   for v in json.loads(m.engine.run.dumps()).values())
