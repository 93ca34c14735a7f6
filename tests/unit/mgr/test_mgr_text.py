"""Plain-text output of `ceph recovery status` / `network` (the default without -f json):
rendered from the real engine's status on recorded lab dumps (h3 down, a run granted osd.4)."""
from __future__ import annotations

import json
import os

from ceph_recovery.protocol import parse_report
from cephfake import FakeCeph  # see conftest.py
from recovery import engine as engine_mod, text  # see conftest.py

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mgr")


def load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def report(host, osds, now):
    return parse_report({"version": 1, "host": host, "time": now, "seq": 1,
                         "memory": {"total": 8 << 30, "used": 700 << 20, "available": 6 << 30,
                                    "limit": None, "source": "host"}, "osds": osds, "done": []})


def running_status():
    m, tree, pgs = load("osdmap_h3down.json"), load("tree_h3down.json"), load("pgdump_h3down.json")
    eng = engine_mod.Engine(FakeCeph(), lambda *a, **k: None)
    up = [{"id": i, "process": "running", "rss": 70 << 20, "started_at": 990.0}
          for i in range(4)]
    for now in (1000.0, 1002.0):
        eng.helper_report(report("h1", up[:2], now), now)
        eng.helper_report(report("h2", up[2:], now), now)
        eng.helper_report(report("h3", [{"id": 4, "process": "stopped"},
                                        {"id": 5, "process": "stopped"}], now), now)
        if now == 1000.0:
            eng.observe(m, tree, pgs, now)
            eng.begin(eng.start("80%", [], 1, now), now)
        eng.tick(m, tree, pgs, now + 1, lambda: m["epoch"])
    return eng.status(1004.0)


def test_status_text_shows_phase_hosts_and_journal():
    st = running_status()
    out = text.status_text(st)
    lines = out.splitlines()
    assert lines[0] == "run %s: running (controlled), budget 80%%, concurrency 1, scope all" % (
        st["run_id"])
    header = next(ln for ln in lines if ln.startswith("HOST"))
    assert header.split() == ["HOST", "USED", "BUDGET", "DOWN", "IN", "FLIGHT", "NEXT",
                              "PREDICTED", "WAITING", "ON"]
    h3 = next(ln for ln in lines if ln.startswith("h3 "))
    assert "osd.4,osd.5" in h3 and "700 MiB" in h3 and "6554 MiB" in h3
    assert "grant_start host=h3 osd=4" in out
    assert "journal (last %d of %d" % (min(15, len(st["journal"])), len(st["journal"])) in out
    for a in ("set_flag flag=noout", "hold_osd osd=4", "hold_osd osd=5"):
        assert a in out, a


def test_a_memory_wait_shows_its_eta():
    st = running_status()
    st["hosts"]["h3"].update(waiting_on="memory", waiting_for="settling osd.4", eta_s=41.6)
    h3 = next(ln for ln in text.status_text(st).splitlines() if ln.startswith("h3 "))
    assert h3.endswith("memory (ETA 42 s)")


def test_idle_status_text_has_no_tables():
    eng = engine_mod.Engine(FakeCeph(), lambda *a, **k: None)
    out = text.status_text(eng.status(1000.0))
    assert out.startswith("run -: idle")
    assert "HOST" not in out and "journal" not in out


def test_network_text_is_the_cores_table():
    from recovery import core
    view = core.network_view({}, (), 1000.0)
    out = core.network_text(view)
    assert out.splitlines()[0].split() == ["PAIR", "LOSS", "BY", "SIZE", "RTT", "ms", "Mbit/s"]
    assert "findings: 0" in out


def test_status_shows_service_restored_apart_from_all_up():
    st = {"run_id": "r", "pgs": {"total": 10, "active": 10},
          "summary": {"service_restored_at": 3600.0, "finished_at": None,
                      "counts": {"candidates": 2}}}
    assert text.service_line(st) == ("service restored at 01:00:00 (every PG active); "
                                      "all up: no, 2 OSD(s) in scope still down")
    st["summary"].update(finished_at=3725.0, counts={"candidates": 0})
    assert text.service_line(st) == ("service restored at 01:00:00 (every PG active); "
                                     "all up at 01:02:05")
    st.update(pgs={"total": 10, "active": 7})
    st["summary"].update(service_restored_at=None, finished_at=None, counts={"candidates": 3})
    assert text.service_line(st) == ("service not restored (3 of 10 PGs not active); "
                                     "all up: no, 3 OSD(s) in scope still down")
    st["summary"].update(inactive_pg_s=1234.4)
    assert text.service_line(st) == ("service not restored (3 of 10 PGs not active); 1,234 "
                                     "PG-seconds without client I/O since the run began; "
                                     "all up: no, 3 OSD(s) in scope still down")
    assert text.service_line({"run_id": "", "summary": {}}) is None


def test_a_staged_osd_is_marked_in_the_in_flight_column():
    st = running_status()
    assert st["staged"] == [] and st["hosts"]["h3"]["staged"] == []
    st["hosts"]["h3"].update(in_flight=[4, 5], staged=[5])
    h3 = next(ln for ln in text.status_text(st).splitlines() if ln.startswith("h3 "))
    assert "osd.4,osd.5 (staged)" in h3


def test_the_budget_line_shows_a_fixed_budgets_state():
    assert text._budget({"kind": "fraction", "value": 0.9, "state": "validated"}) == \
        "90% (validated)"
    assert text._budget({"kind": "fraction", "value": 0.9, "state": None}) == "90%"
    assert text._budget({"kind": "auto", "value": 0.9, "now": 0.95, "state": "raised"}) == \
        "auto at 95% (raised)"


def test_a_rebuilding_osd_shows_in_the_status():
    """h3's helper reports osd.4 rebuilding its allocator: `-f json` lists it under the host's
    `rebuilding`, the text marks it where it stands (IN FLIGHT if the run granted it, else
    DOWN)."""
    m, tree, pgs = load("osdmap_h3down.json"), load("tree_h3down.json"), load("pgdump_h3down.json")
    eng = engine_mod.Engine(FakeCeph(), lambda *a, **k: None)
    up = [{"id": i, "process": "running", "rss": 70 << 20, "started_at": 990.0}
          for i in range(4)]
    for now in (1000.0, 1002.0):
        four = {"id": 4, "process": "stopped"} if now == 1000.0 else {
            "id": 4, "process": "running", "rss": 90 << 20, "started_at": 1001.0,
            "state": "rebuilding"}
        eng.helper_report(report("h1", up[:2], now), now)
        eng.helper_report(report("h2", up[2:], now), now)
        eng.helper_report(report("h3", [four, {"id": 5, "process": "stopped"}], now), now)
        if now == 1000.0:
            eng.observe(m, tree, pgs, now)
            eng.begin(eng.start("80%", [], 1, now), now)
        eng.tick(m, tree, pgs, now + 1, lambda: m["epoch"])
    st = eng.status(1004.0)
    h = st["hosts"]["h3"]
    assert h["rebuilding"] == [4] and st["hosts"]["h1"]["rebuilding"] == []
    row = next(ln for ln in text.status_text(st).splitlines() if ln.startswith("h3 "))
    assert ("osd.4 (rebuilding)" in row) and row.count("(rebuilding)") == 1
    h.update(in_flight=[])                  # not the run's: marked in DOWN
    row = next(ln for ln in text.status_text(st).splitlines() if ln.startswith("h3 "))
    assert "osd.4 (rebuilding),osd.5" in row
