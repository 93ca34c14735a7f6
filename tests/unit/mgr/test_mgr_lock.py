"""While the tick waits for a mon command, status, abort and helper-report do not wait for
it (defect 7): the tick holds the engine's lock only to decide, never during mon I/O."""
from __future__ import annotations

import json
import threading

import mgrcases as cases  # noqa: E402  (registered by conftest.py)
STOPPED = cases.STOPPED


class BlockingMon(cases.FakeCeph):
    """Every mon command waits until the test releases it (an unreachable mon)."""

    def __init__(self, osd_map):
        super().__init__(osd_map)
        self.entered = threading.Event()
        self.release = threading.Event()

    def mon_command(self, cmd):
        self.entered.set()
        self.release.wait(60)
        return super().mon_command(cmd)


def report_text(host, osds, t):
    return json.dumps({"version": 1, "host": host, "time": t, "seq": 3,
                       "memory": {"total": 8 << 30, "used": 50 << 20, "available": 6 << 30,
                                  "limit": None, "source": "host"},
                       "osds": osds, "done": []})


def test_commands_answer_while_the_tick_waits_for_the_mon():
    world = {"map": cases.load("osdmap_h3down.json"), "tree": cases.load("tree_h3down.json"),
             "pgs": cases.load("pgdump_h3down.json")}
    ceph = BlockingMon(world["map"])
    eng = cases.engine_mod.Engine(ceph, lambda *a, **k: None)
    cases.all_helpers(eng, 1000.0, [STOPPED(4), STOPPED(5)])
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    eng.begin(eng.start("80%", [], 1, 1000.0), 1000.0)
    ticker = threading.Thread(target=cases.tick, args=(eng, world, 1001.0), daemon=True)
    ticker.start()
    assert ceph.entered.wait(30), "the tick never sent a mon command"
    answers = {}

    def commands():
        with eng.lock:
            answers["status"] = eng.status(1002.0)["phase"]
        with eng.lock:
            answers["report"] = eng.handle_report(
                report_text("h3", [STOPPED(4), STOPPED(5)], 1002.0), "h3", 1002.0).host
        with eng.lock:
            eng.set_mode("abort", 1002.0)
            answers["abort"] = eng.run.intent.mode
    worker = threading.Thread(target=commands, daemon=True)
    worker.start()
    worker.join(30)
    blocked = ticker.is_alive() and not ceph.release.is_set()
    ceph.release.set()
    ticker.join(60)
    assert blocked, "the mon command returned before the commands ran"
    assert set(answers) == {"status", "report", "abort"}, answers
    assert answers["report"] == "h3" and answers["abort"] == "abort"
