"""Input the module must refuse whole, with an errno and a message, changing nothing: helper
reports (sequence, host, memory sizes), network findings that name another host, and a
stored state whose fields have the wrong type."""
from __future__ import annotations

import errno
import json

import pytest

from ceph_recovery import netview
from ceph_recovery.model import Finding
from mgrcases import load, make_engine
from recovery.inputs import InputError
from recovery.state import RunState, leftovers_from, windows_from


def engine():
    eng, _ceph = make_engine()
    eng.observe(load("osdmap_h3down.json"), load("tree_h3down.json"),
                load("pgdump_h3down.json"), 1000.0)
    return eng


def report(host="h1", seq=1, instance="a", **memory):
    mem = {"total": 8 << 30, "used": 1 << 30, "available": 7 << 30, "limit": None,
           "source": "host"}
    mem.update(memory)
    return json.dumps({"version": 1, "host": host, "time": 1000.0, "seq": seq,
                       "instance": instance, "memory": mem,
                       "osds": [{"id": 0, "process": "running", "rss": 1 << 26}],
                       "done": [], "network": {}})


def refused(eng, text, host="h1"):
    before = (eng.run.dumps(), dict(eng.reports), dict(eng.retired_instances))
    with pytest.raises(InputError) as e:
        eng.handle_report(text, host, 1001.0)
    assert (eng.run.dumps(), dict(eng.reports), dict(eng.retired_instances)) == before
    assert e.value.message
    return e.value.errno


def test_a_report_without_the_host_argument_is_refused():
    eng = engine()
    assert refused(eng, report("h1"), None) == errno.EINVAL
    assert not eng.reports


@pytest.mark.parametrize("memory", [{"used": 9 << 30}, {"total": 0, "used": 0, "available": 0},
                                    {"available": 9 << 30}, {"total": -1},
                                    {"total": 8.5e9}])
def test_memory_sizes_that_describe_no_memory_are_refused(memory):
    assert refused(engine(), report(**memory)) == errno.EINVAL


def test_a_late_report_never_overwrites_a_newer_one():
    eng = engine()
    eng.handle_report(report(seq=5, used=2 << 30), "h1", 1000.0)
    for seq in (5, 4, 1):              # the same instance: only a higher seq is newer
        assert refused(eng, report(seq=seq, used=3 << 30)) == errno.ESTALE
    assert eng.reports["h1"][0].memory.used == 2 << 30
    eng.handle_report(report(seq=6, used=3 << 30), "h1", 1001.0)
    assert eng.reports["h1"][0].seq == 6


def test_a_restarted_helper_starts_again_from_one_and_its_old_instance_is_stale():
    eng = engine()
    eng.handle_report(report(seq=40, instance="old"), "h1", 1000.0)
    eng.handle_report(report(seq=1, instance="new"), "h1", 1001.0)    # restarted helper
    assert eng.reports["h1"][0].instance == "new"
    # a report of the replaced process delivered late, even with a higher seq
    assert refused(eng, report(seq=41, instance="old")) == errno.ESTALE
    eng.handle_report(report(seq=2, instance="new"), "h1", 1002.0)


def _loss(peer_sent, peer_received):
    return {"peers": {p: {"probes": {"small": {"size": 84, "sent": 20, "received": r}}}
                      for p, r in peer_received.items()}}


def test_one_hosts_findings_hold_only_its_own_side():
    """h1's probes say h1<->h2 loses half its packets; h2's own probes of h1 are clean.
    The finding names the pair, but only h1's report shows it: it holds h1's starts only."""
    net = {"h1": dict(_loss(20, {"h2": 10, "h3": 20}), received_at=1000.0),
           "h2": dict(_loss(20, {"h1": 20, "h3": 20}), received_at=1000.0),
           "h3": {"received_at": 1000.0}}
    f = Finding(hosts=("h1", "h2"), kind="packet_loss", since=990.0, value=0.5, detail="x")
    held = netview.own_side((f,), net, 1000.0)
    assert [g.hosts for g in held] == [("h1",)]
    # a finding attributed to h3 by its peers' probes alone holds nobody
    g = Finding(hosts=("h3",), kind="packet_loss", since=990.0, value=0.5, detail="y")
    assert netview.own_side((g,), net, 1000.0) == ()
    # a host-level kind comes from that host's own counters
    h = Finding(hosts=("h2",), kind="syn_cookies", since=990.0, value=3, detail="z")
    assert netview.own_side((h,), net, 1000.0) == (h,)


def test_the_engine_holds_starts_only_on_the_reporting_side():
    eng = engine()
    eng.options["helper_stale_timeout"] = 1e9
    rep = json.loads(report("h1"))
    rep["network"] = _loss(20, {"h3": 10, "h2": 20})
    eng.handle_report(json.dumps(rep), "h1", 1000.0)
    snap = eng.observe(load("osdmap_h3down.json"), load("tree_h3down.json"),
                       load("pgdump_h3down.json"), 1000.0)
    assert eng.findings and all("h3" in f.hosts for f in eng.findings)
    assert snap.findings and all(f.hosts == ("h1",) for f in snap.findings)


def _state(**fields):
    d = json.loads(RunState().dumps())
    d.update(fields)
    return json.dumps(d)


@pytest.mark.parametrize("fields", [
    {"heap_support": [1, 2]}, {"starts": {"1": "x"}}, {"journal": {"a": 1}},
    {"journal": [5]}, {"instructions": [1]}, {"instructions": {"a": {"id": 1}}},
    {"seq": "7"}, {"seq": 1e300}, {"windows": {"bucket": "h1"}},
    {"windows": [{"bucket": "h1", "phase": "open", "max_duration_s": "inf"}]},
    {"windows": [{"bucket": "h1", "phase": "open", "opened_at": "soon"}]},
    {"windows": [{"bucket": "h1", "phase": "open", "stops": [1]}]},
    {"outcomes": [{"what": 1}]}, {"drills": [{"id": "d1", "phase": "down"}]},
    {"leftovers": {"flags": "noout", "noup": [1]}}, {"down_seen": {"1": 10 ** 400}},
    {"pgs_seen": {"x": 1}},
])
def test_a_state_with_fields_of_the_wrong_type_is_unreadable_not_an_exception(fields):
    with pytest.raises(ValueError):
        RunState.loads(_state(**fields))


def test_a_state_holding_infinity_is_unreadable():
    with pytest.raises(ValueError):
        RunState.loads(_state(windows=[{"bucket": "h1", "phase": "open",
                                        "max_duration_s": float("inf")}]))


@pytest.mark.parametrize("marks", ['{"windows": 5}', '{"windows": [{"stops": [1]}]}',
                                   '{"phase": "running", "saved_flags": [], "held_osds": 7}',
                                   '{"leftovers": {"flags": 3}}', "[" * 100000, "7"], ids=lambda m: m[:20])
def test_malformed_marks_never_raise(marks):
    windows_from(marks)
    leftovers_from(marks)
