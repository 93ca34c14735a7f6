"""Progress/Intent <-> JSON (ceph_recovery.persist): exact round trips, clear errors."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ceph_recovery.model import PHASE_PAUSED, Budget, Intent, Observation, Progress, RunPhase
from ceph_recovery.persist import (intent_from_dict, intent_to_dict, progress_from_dict,
                                   progress_from_json, progress_to_dict, progress_to_json)

osd_ids = st.integers(0, 10000)
times = st.floats(0, 2e9, allow_nan=False, allow_infinity=False)
names = st.text("abcdefgh-0123456789", min_size=1, max_size=8)

def _progress(maps, **fields):
    return Progress(**fields).with_columns(**maps)


progresses = st.builds(
    _progress,
    maps=st.fixed_dictionaries({
        "granted": st.dictionaries(osd_ids, times, max_size=5),
        "booting": st.dictionaries(osd_ids, times, max_size=5),
        "restarted": st.dictionaries(osd_ids, times, max_size=3),
        "heap_released": st.dictionaries(osd_ids, times, max_size=3),
        "peaks": st.dictionaries(osd_ids, st.integers(0, 1 << 40), max_size=3),
        "downtime": st.dictionaries(osd_ids, times, max_size=3),
        "fresh_rss": st.dictionaries(osd_ids, st.integers(0, 1 << 40), max_size=3),
        "failures": st.dictionaries(osd_ids, st.integers(0, 9), max_size=3),
        "settling": st.dictionaries(osd_ids, times, max_size=3),
        "grew_at": st.dictionaries(osd_ids, times, max_size=3)}),
    run_id=names, phase=st.sampled_from(list(RunPhase)),
    epoch=st.integers(0, 10 ** 9),
    finished=st.frozensets(osd_ids, max_size=5), held_osds=st.frozensets(osd_ids, max_size=5),
    held_buckets=st.frozensets(names, max_size=3), auto_held=st.frozensets(names, max_size=3),
    saved_flags=st.one_of(st.none(), st.frozensets(st.sampled_from(["noout", "noup", "nodown"]))),
    observations=st.lists(st.builds(Observation, osd=osd_ids, pgs=st.integers(0, 500),
                                    downtime_s=times, pg_log_entries=st.integers(0, 10 ** 7),
                                    peak_bytes=st.integers(0, 1 << 40)), max_size=4).map(tuple),
    started_at=st.one_of(st.none(), times), finished_at=st.one_of(st.none(), times))


@settings(max_examples=200, deadline=None)
@given(progresses)
def test_progress_json_round_trip_is_exact(p):
    text = progress_to_json(p)
    assert json.loads(text)["schema"] == 1
    back = progress_from_json(text)
    assert back == p
    assert progress_to_json(back) == text


def test_progress_dict_keys_are_strings_and_come_back_as_ints():
    p = Progress(run_id="r", finished=frozenset({3})).with_columns(granted={12: 5.0})
    d = progress_to_dict(p)
    assert d["granted"] == {"12": 5.0} and d["finished"] == [3]
    assert progress_from_dict(d).osd_map("granted") == {12: 5.0}


@pytest.mark.parametrize("text,needle", [
    pytest.param("{nope", "not valid JSON", id="not_json"),
    pytest.param("[]", "expected a JSON object", id="not_object"),
    pytest.param('{"schema": 2}', "unsupported schema", id="future_schema"),
    pytest.param('{"phase": "running"}', "unsupported schema", id="no_schema"),
    pytest.param('{"schema": 1, "phase": "sideways"}', "unknown phase", id="bad_phase"),
    pytest.param('{"schema": 1, "granted": {"x": 1.0}}', "non-integer OSD id", id="bad_osd_key"),
    pytest.param('{"schema": 1, "granted": {"3": "soon"}}', "must be a number", id="bad_time"),
    pytest.param('{"schema": 1, "held_buckets": [1]}', "list of strings", id="bad_buckets"),
    pytest.param('{"schema": 1, "observations": [[1, 2]]}', "observations[0]", id="bad_obs"),
    pytest.param('{"schema": 1, "run_id": 5}', "run_id", id="bad_run_id"),
])
def test_progress_from_json_rejects_bad_input(text, needle):
    with pytest.raises(ValueError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        progress_from_json(text)


def test_intent_round_trip():
    i = Intent(mode="controlled", budget=Budget(kind="bytes", value=24 * 2 ** 30,
                                                reserve_bytes=2 ** 30),
               scope=("rack1", "h3"), concurrency=2, holds=frozenset({"rack2"}), auto_hold=True,
               start_order="domain_round_robin", footprint="static", over_budget="restart_only",
               restart_cooldown_s=300.0, boot_timeout_s=120.0, run_id="r9")
    d = json.loads(json.dumps(intent_to_dict(i)))
    assert intent_from_dict(d) == i


@pytest.mark.parametrize("d,needle", [
    pytest.param([], "JSON object", id="not_object"),
    pytest.param({"mode": "sideways"}, "unknown mode", id="bad_mode"),
    pytest.param({"concurrency": "2"}, "concurrency", id="bad_concurrency"),
    pytest.param({"concurrency": True}, "boolean", id="bool_concurrency"),
    pytest.param({"holds": [1]}, "bucket names", id="bad_holds"),
    pytest.param({"budget": {"value": "80%"}}, "value", id="bad_budget"),
])
def test_intent_from_dict_rejects_bad_input(d, needle):
    with pytest.raises(ValueError, match=needle):
        intent_from_dict(d)


def test_run_phase_is_an_enum_that_reads_as_its_value_everywhere():
    p = Progress(run_id="r", phase=PHASE_PAUSED)
    assert isinstance(p.phase, RunPhase) and p.phase == "paused"
    assert "%s|{}|%r" % (p.phase, "x") == "paused|{}|'x'"
    assert "{}".format(p.phase) == "{0:>8}".format(p.phase).strip() == "paused"
    back = progress_from_dict(json.loads(json.dumps(progress_to_dict(p))))
    assert back.phase is RunPhase.PAUSED
    assert json.dumps({"phase": back.phase}) == '{"phase": "paused"}'
    with pytest.raises(ValueError, match="unknown phase"):
        progress_from_dict(dict(progress_to_dict(p), phase="sleeping"))
