"""Ceph's per-pool availability in the mgr shell (poolavail.py): when it asks the mons, what
it remembers of an answer, and what `status -f json` and a drill's report carry. The answers
are the ones a Tentacle lab gave (tests/unit/mgr/data/mgr/availability_status.json)."""
from __future__ import annotations

import errno
import json
import os
import threading

from recovery import drillcli, poolavail  # see conftest.py

from ceph_recovery import availability as AV
from ceph_recovery import drill as D

import maintcases as ME  # noqa: E402  (registered by conftest.py)

world = ME.world
PREFIX = "osd pool availability-status"
with open(os.path.join(ME.DATA, "availability_status.json")) as _f:
    LAB = json.load(_f)
ANSWER = json.dumps(LAB["tracked"])
DISABLED = (LAB["disabled_rc"], "", "Error ENOTSUP: " + LAB["disabled_message"])
UNKNOWN = (-errno.EINVAL, "", "command not known")


class Eng(object):
    """What poolavail needs of the engine: its lock, a run with drills, a `ceph`, a log."""

    def __init__(self, answers):
        self.lock = threading.RLock()
        self.run = type("Run", (), {"drills": []})()
        self.ceph = self
        self.answers, self.calls, self.logged = list(answers), [], []

    def mon_command(self, cmd, timeout=None):
        self.calls.append(cmd)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def log(self, event, **kw):
        self.logged.append((event, kw))


def test_the_disabled_answer_is_eopnotsupp():
    assert LAB["disabled_rc"] == -errno.EOPNOTSUPP


def test_classify_the_answers_of_each_release():
    state, answer, note = poolavail.classify(0, ANSWER, "")
    assert state == AV.TRACKED and answer == AV.from_ceph(LAB["tracked"]) and note == ""
    assert poolavail.classify(*DISABLED)[:2] == (AV.DISABLED, None)
    assert poolavail.classify(*UNKNOWN)[:2] == (AV.UNSUPPORTED, None)
    assert poolavail.classify(-errno.ETIMEDOUT, "", "no answer")[:2] == (AV.FAILED, None)
    assert poolavail.classify(0, "not json", "")[:2] == (AV.FAILED, None)


def test_asked_only_while_status_is_read_and_at_most_every_refresh():
    eng = Eng([(0, ANSWER, "")])
    poolavail.read(eng, 100.0)
    assert eng.calls == []                                  # nobody reads status
    poolavail.view(eng, 100.0)
    poolavail.read(eng, 101.0)
    poolavail.read(eng, 101.0 + poolavail.REFRESH_S - 1)
    assert eng.calls == [{"prefix": PREFIX, "format": "json"}]
    poolavail.read(eng, 101.0 + poolavail.REFRESH_S)
    assert len(eng.calls) == 2
    poolavail.read(eng, 100.0 + poolavail.ASKED_WINDOW_S + 1)   # the reader went away
    assert len(eng.calls) == 2


def test_not_available_is_remembered():
    eng = Eng([UNKNOWN])
    poolavail.view(eng, 0.0)
    for t in (1.0, 100.0, 200.0):
        poolavail.read(eng, t)
        poolavail.view(eng, t)
    assert len(eng.calls) == 1                  # mons without the command: asked once
    eng = Eng([DISABLED, (0, ANSWER, "")])
    poolavail.view(eng, 0.0)
    poolavail.read(eng, 1.0)
    poolavail.view(eng, poolavail.DISABLED_RETRY_S)
    poolavail.read(eng, poolavail.DISABLED_RETRY_S)
    assert len(eng.calls) == 1                  # disabled: asked again only after the retry
    assert poolavail.of(eng).note == "Error ENOTSUP: " + LAB["disabled_message"]
    poolavail.read(eng, 1.0 + poolavail.DISABLED_RETRY_S)
    assert len(eng.calls) == 2 and poolavail.of(eng).state == AV.TRACKED


def test_status_carries_cephs_records_beside_ours(world):
    eng, mon = ME.make(world)
    mon.answers[PREFIX] = [(0, ANSWER, "")]
    ME.tick(eng, world, 1000.0)
    first = eng.status(1000.5)["pool_availability"]
    assert first["ceph"] == AV.NOT_READ and {r["source"] for r in first["pools"]} == {
        "recovery"}
    ME.tick(eng, world, 1002.0)                 # a status reader: the tick asks Ceph
    pa = eng.status(1002.5)["pool_availability"]
    assert pa["ceph"] == AV.TRACKED and pa["ceph_read_at"] == 1002.0 and pa["since"] == 1000.0
    want = AV.from_ceph(LAB["tracked"])
    by = {r["pool"]: r for r in pa["pools"]}
    for name, rec in by.items():
        if name in want:
            assert rec["source"] == "ceph" and rec["ceph"] == want[name]
            assert {k: rec[k] for k in AV.FIELDS} == want[name]
        else:
            assert rec["source"] == "recovery" and rec["ceph"] is None
            assert {k: rec[k] for k in AV.FIELDS} == rec["recovery"]
    assert json.loads(json.dumps(pa)) == pa


def test_a_drill_reads_ceph_before_it_begins_and_after_it_ends(world):
    eng, mon = ME.make(world)
    before, after = LAB["tracked"], LAB["tracked_later"]
    mon.answers[PREFIX] = [(0, json.dumps(before), ""), (0, json.dumps(after), "")]
    assert drillcli.start(eng, "h2", "30s", None, None, "plain", 1000.0)[0] == 0
    assert drillcli.abort(eng, "plain", 1000.5)[0] == 0
    ME.tick(eng, world, 1001.0)                 # baseline read, then the drill ends
    (d,) = eng.run.drills
    assert d.phase == D.ABORTED and d.ceph_at_start == AV.TRACKED and d.ceph_at_end == ""
    ME.tick(eng, world, 1003.0)                 # the end's read
    ME.tick(eng, world, 1005.0)                 # nothing more to read
    assert [c["prefix"] for c in mon.calls].count(PREFIX) == 2
    (d,) = eng.run.drills
    rep = D.report(d)["pool_availability"]
    assert (rep["ceph_at_start"], rep["ceph_at_end"]) == (AV.TRACKED, AV.TRACKED)
    delta = AV.ceph_delta(AV.from_ceph(before), AV.from_ceph(after))
    assert {r["pool"]: r["ceph"] for r in rep["pools"] if r["ceph"]} == delta
    # persisted and read back by the next module: the same report
    again = D.drill_from_dict(json.loads(json.dumps(D.drill_to_dict(d))))
    assert D.report(again) == D.report(d)
