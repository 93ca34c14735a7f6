"""Helper reports are untrusted: every malformed or oversized report is refused with a clear
errno and changes nothing in the engine (defect 4). Hypothesis mutates a valid report."""
from __future__ import annotations

import copy
import errno
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from recovery import engine as engine_mod, reportcheck  # see conftest.py
from recovery.inputs import InputError

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "mgr")


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def valid(host="h1", osds=((0, 70 << 20), (1, 70 << 20))):
    return {"version": 1, "host": host, "time": 1000.0, "seq": 1,
            "memory": {"total": 8 << 30, "used": 50 << 20, "available": 6 << 30,
                       "limit": None, "source": "host"},
            "osds": [{"id": i, "process": "running", "rss": rss, "started_at": 990.0}
                     for i, rss in osds],
            "done": [], "network": {}}


class Quiet(object):
    def mon_command(self, cmd):
        return 0, "", ""

    def osd_command(self, osd, cmd, timeout):
        return 0, "", ""


def engine():
    eng = engine_mod.Engine(Quiet(), lambda *a, **k: None)
    eng.observe(load("osdmap_h3down.json"), load("tree_h3down.json"),
                load("pgdump_h3down.json"), 1000.0)
    return eng


def fingerprint(eng):
    return (dict(eng.reports), eng.run.dumps())


def refused(eng, text, host="h1"):
    before = fingerprint(eng)
    with pytest.raises(InputError) as e:
        eng.handle_report(text, host, 1000.0)
    assert fingerprint(eng) == before
    assert e.value.message
    return e.value


def test_valid_report_is_taken():
    eng = engine()
    reply = eng.handle_report(json.dumps(valid()), "h1", 1000.0)
    assert reply.host == "h1" and "h1" in eng.reports


@pytest.mark.parametrize("mutate", [
    lambda r: r["osds"][0].update(rss="x"),
    lambda r: r["osds"][0].update(rss=float("inf")),
    lambda r: r["osds"][0].update(rss=-1),
    lambda r: r["osds"][0].update(started_at=float("nan")),
    lambda r: r["memory"].update(used=float("inf")),
    lambda r: r["memory"].update(total="8G"),
    lambda r: r.update(time=float("inf")),
    lambda r: r.update(time=-5),
    lambda r: r.update(seq=1.5),
    lambda r: r.update(host="h" * 200),
    lambda r: r.update(host="h1;rm"),
    lambda r: r.update(done=["x"] * (reportcheck.MAX_IDS + 1)),
    lambda r: r.update(done=["y" * (reportcheck.MAX_ID_LEN + 1)]),
    lambda r: r.update(osds=[{"id": i, "process": "stopped"}
                             for i in range(reportcheck.MAX_OSDS + 1)]),
    lambda r: r["osds"].append(dict(r["osds"][0])),
    lambda r: r.update(network={"pairs": [{"rtt": float("inf")}]}),
    lambda r: r.update(network={"blob": "z" * (reportcheck.MAX_NETWORK_BYTES + 1)}),
    lambda r: r.update(failed=[{"id": 3, "error": "x"}]),
], ids=lambda f: "mutation")
def test_malformed_report_is_einval_and_changes_nothing(mutate):
    eng = engine()
    eng.handle_report(json.dumps(valid()), "h1", 999.0)
    r = valid()
    mutate(r)
    assert refused(eng, json.dumps(r)).errno == errno.EINVAL


def test_oversized_report_is_refused():
    eng = engine()
    text = json.dumps(valid())[:-1] + ', "pad": "%s"}' % ("p" * reportcheck.MAX_REPORT_BYTES)
    assert refused(eng, text).errno == errno.EINVAL


def test_host_argument_must_name_the_reports_host():
    eng = engine()
    assert refused(eng, json.dumps(valid("h2", ((2, 1), (3, 1)))), host="h1").errno \
        == errno.EACCES


def test_unknown_host_cannot_grow_the_host_table():
    eng = engine()
    assert refused(eng, json.dumps(valid("nosuchhost")), "nosuchhost").errno == errno.ENOENT


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70),
                      st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
FIELDS = ["version", "host", "time", "seq", "memory", "osds", "done", "network", "failed"]


@st.composite
def mutated(draw):
    r = valid()
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(["top", "memory", "osd"]))
        if where == "top":
            r[draw(st.sampled_from(FIELDS))] = draw(JSON_LEAF)
        elif where == "memory" and isinstance(r.get("memory"), dict):
            r["memory"][draw(st.sampled_from(["total", "used", "available", "limit",
                                              "swap_total", "source"]))] = draw(JSON_LEAF)
        elif isinstance(r.get("osds"), list) and r["osds"]:
            r["osds"][0][draw(st.sampled_from(["id", "process", "pid", "rss",
                                               "started_at"]))] = draw(JSON_LEAF)
    return r


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_any_mutated_report_is_taken_or_refused_cleanly(r):
    """Never an exception other than InputError; a refusal changes nothing; an accepted
    report holds only finite, non-negative numbers."""
    eng = engine()
    before = fingerprint(eng)
    text = json.dumps(copy.deepcopy(r))
    host = r.get("host") if isinstance(r.get("host"), str) else "h1"
    try:
        eng.handle_report(text, host, 1000.0)
    except InputError as e:
        # EPROTONOSUPPORT: a well-formed report in a protocol the module does not speak
        assert e.errno in (errno.EINVAL, errno.ENOENT, errno.EACCES,
                           errno.EPROTONOSUPPORT) and e.message
        assert fingerprint(eng) == before
        return
    rep, _t = eng.reports[r["host"]]
    m = rep.memory
    assert min(m.used, m.available, m.swap_total) >= 0 and m.total > 0
    assert m.used <= m.total and m.available <= m.total
    assert all(o.rss >= 0 and o.id >= 0 for o in rep.osds)
    assert rep.time == rep.time and rep.time >= 0 and rep.time != float("inf")


def test_a_rebuilding_osd_is_taken_and_reaches_the_snapshot():
    """The allocator rebuild ("rebuilding", from the OSD's log) is a daemon state like the
    admin socket's: any name within MAX_STATE_LEN is taken, this one reaches OsdState."""
    from ceph_recovery.model import DAEMON_REBUILDING
    from recovery import cluster
    eng = engine()
    r = valid()
    r["osds"][0]["state"] = DAEMON_REBUILDING
    eng.handle_report(json.dumps(r), "h1", 1000.0)
    parsed, _ = reportcheck.check_report(json.dumps(r), "h1")
    assert parsed.osds[0].state == DAEMON_REBUILDING
    osd_map, tree, pgs = load("osdmap_h3down.json"), load("tree_h3down.json"), \
        load("pgdump_h3down.json")
    r = dict(valid(host="h3", osds=((4, 90 << 20),)), time=100.0)
    r["osds"][0]["state"] = DAEMON_REBUILDING
    rep, _ = reportcheck.check_report(json.dumps(r), "h3")
    snap = cluster.build_snapshot(osd_map, tree, pgs, {"h3": (rep, 100.0)}, now=101.0,
                                  stale_after=30.0)
    assert (snap.osd(4).daemon_state, snap.osd(4).rss_bytes) == (DAEMON_REBUILDING, 90 << 20)
    r["osds"][0]["state"] = "r" * 33                   # not a state name: refused whole
    with pytest.raises(InputError) as e:
        reportcheck.check_report(json.dumps(r), "h3")
    assert e.value.errno == errno.EINVAL
