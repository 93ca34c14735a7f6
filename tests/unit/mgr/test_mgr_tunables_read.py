"""The module's read of the CRUSH tunables (tickreads.TickReads._tunables): `osd crush
show-tunables` once every TUNABLES_REFRESH_S, its numbers only, None when the mon does not
answer; the engine hands them to the core in the snapshot (RECOVERY_CRUSH_TUNABLES)."""
from __future__ import annotations

import json

import mgrcases  # see conftest.py
from mgrcases import world  # noqa: F401  (the fixture)
from ceph_recovery.model import Intent, Progress
from ceph_recovery.plan import plan
from ceph_recovery.policies import resolve
from recovery import tickreads  # see conftest.py

SHOW = {"choose_local_tries": 2, "choose_local_fallback_tries": 5, "choose_total_tries": 19,
        "chooseleaf_descend_once": 0, "profile": "argonaut", "require_feature_tunables": 0}


class Reads(tickreads.TickReads):
    def __init__(self, answers):
        self._reads, self.answers, self.asked = {}, list(answers), []

    def mon_command(self, cmd):
        self.asked.append(cmd["prefix"])
        return self.answers.pop(0)


def test_tunables_read_once_per_refresh_numbers_only(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(tickreads.time, "monotonic", lambda: clock[0])
    r = Reads([(0, json.dumps(SHOW), ""), (-110, "", "timed out")])
    want = {k: v for k, v in SHOW.items() if k != "profile"}
    assert r._tunables() == want
    clock[0] += tickreads.TUNABLES_REFRESH_S - 1
    assert r._tunables() == want and r.asked == ["osd crush show-tunables"]
    clock[0] += 1
    assert r._tunables() is None         # the mon did not answer: unknown, not "optimal"
    assert r.asked == ["osd crush show-tunables"] * 2


def test_a_garbled_answer_is_unknown(monkeypatch):
    monkeypatch.setattr(tickreads.time, "monotonic", lambda: 5.0)
    assert Reads([(0, "not json", "")])._tunables() is None
    assert Reads([(0, "[1, 2]", "")])._tunables() is None


def test_the_engine_hands_the_tunables_to_the_core(world):
    """h3's OSDs down and out under argonaut tunables: the dry run names h3."""
    m = json.loads(json.dumps(world["map"]))
    for e in m["osds"]:
        if not e["up"]:
            e["in"] = 0
    eng, _ceph = mgrcases.make_engine(m)
    eng.crush_tunables = {k: v for k, v in SHOW.items() if isinstance(v, int)}
    mgrcases.all_helpers(eng, 1000.0, [mgrcases.STOPPED(4), mgrcases.STOPPED(5)])
    snap = eng.observe(m, world["tree"], world["pgs"], 1000.0)
    assert snap.crush_tunables == eng.crush_tunables
    intent = Intent(mode="controlled", run_id="r1")
    res = plan(snap, intent, Progress(), resolve(intent), 1000.0)
    lines = [d for h in res.health if h.code == "RECOVERY_CRUSH_TUNABLES" for d in h.detail]
    assert len(lines) == 1 and lines[0].startswith("h3: 2 out OSDs (osd.4, osd.5)"), lines
