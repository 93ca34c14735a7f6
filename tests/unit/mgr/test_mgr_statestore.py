"""The run state is written in chunks below the mon's 64 KiB entry limit, survives a write cut
short, reports corruption, never silently drops a state too large to write (defect 1, 9), and
instruction ids are never reused after a failover to an older state."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from recovery import engine as engine_mod, state as state_mod, statestore  # see conftest.py

LIMIT = 65536


def big_state():
    """The measured worst case: a 200-entry journal, kept done instructions, and pgs_seen /
    down_seen of 6,000 OSDs."""
    st_ = state_mod.RunState(200)
    st_.progress = st_.progress.__class__(run_id="r1700000000")
    for i in range(300):
        st_.record(1000.0 + i, 10 + i, {"kind": "grant_start", "osd": i % 6000,
                                        "reason": "because " * 60}, "instruction queued " * 10)
        ins = st_.add_instruction("host%03d" % (i % 100), "start", i, "why " * 40,
                                  1000.0 + i, 10 + i)
        st_.mark_done(ins["host"], (ins["id"],), 1001.0 + i)
    st_.prune_instructions()
    st_.pgs_seen = {i: 100 + i % 50 for i in range(6000)}
    st_.down_seen = {i: 1000.5 + i for i in range(6000)}
    return st_


class Store(object):
    def __init__(self):
        self.kv = {}

    def apply(self, writes, upto=None):
        for k, v in writes[:upto]:
            if v is None:
                self.kv.pop(k, None)
            else:
                self.kv[k] = v


def test_every_entry_fits_the_mon_limit_and_reads_back():
    text = big_state().dumps()
    assert len(text) > LIMIT                      # the case the single entry could not hold
    cs, kv = statestore.ChunkedStore("run_state"), Store()
    writes = cs.writes(text)
    kv.apply(writes)
    cs.done(writes)
    assert all(len(v.encode()) <= LIMIT for v in kv.kv.values())
    back = statestore.ChunkedStore("run_state").read(kv.kv.get)
    assert back == text
    assert state_mod.RunState.loads(back).pgs_seen == big_state().pgs_seen


def test_journal_and_kept_instructions_are_bounded():
    st_ = big_state()
    assert len(st_.journal) == 200
    assert len(st_.instructions) == state_mod.KEEP_DONE
    assert all(len(e["action"]["reason"]) <= state_mod.MAX_TEXT for e in st_.journal)
    assert all(len(e["result"]) <= state_mod.MAX_TEXT for e in st_.journal)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=3000), min_size=1, max_size=6), st.data())
def test_a_write_cut_short_leaves_the_previous_state(texts, data):
    cs, kv = statestore.ChunkedStore("k", chunk_bytes=1000, max_chunks=64), Store()
    last = None
    for text in texts:
        writes = cs.writes(text)
        cut = data.draw(st.integers(0, len(writes)))
        kv.apply(writes, cut)
        got = statestore.ChunkedStore("k", chunk_bytes=1000, max_chunks=64).read(kv.kv.get)
        header_written = any(k == "k" for k, _v in writes[:cut])
        assert got == (text if header_written else last)
        if not header_written:
            kv.apply(writes)                      # the next tick writes it again
        cs.done(writes)
        last = text


def test_too_large_state_is_refused_and_raises_a_health_check():
    cs = statestore.ChunkedStore("k", chunk_bytes=100, max_chunks=3)
    with pytest.raises(statestore.StateTooLarge):
        cs.writes("x" * 301)


def test_corrupt_chunks_are_detected():
    cs, kv = statestore.ChunkedStore("k", chunk_bytes=10), Store()
    writes = cs.writes("0123456789abcdefghij")
    kv.apply(writes)
    kv.kv["k.a.1"] = "ABCDEFGHIJ"
    with pytest.raises(statestore.StateCorrupt):
        statestore.ChunkedStore("k", chunk_bytes=10).read(kv.kv.get)
    del kv.kv["k.a.1"]
    with pytest.raises(statestore.StateCorrupt):
        statestore.ChunkedStore("k", chunk_bytes=10).read(kv.kv.get)


def test_an_older_single_entry_state_still_loads():
    text = state_mod.RunState().dumps()
    assert statestore.ChunkedStore("run_state").read({"run_state": text}.get) == text


def test_instruction_ids_never_reused_after_failover_to_an_older_state():
    st_ = state_mod.RunState()
    st_.progress = st_.progress.__class__(run_id="r1")
    old = st_.dumps()                              # the last write that reached the mon
    issued = {st_.add_instruction("h1", "start", i, "", 1000.0, 1)["id"] for i in range(3)}
    resumed = state_mod.RunState.loads(old)        # the new mgr resumes the older state
    resumed.reseed(1010.0)
    again = {resumed.add_instruction("h1", "start", i, "", 1010.0, 1)["id"] for i in range(3)}
    assert not issued & again


def test_unreadable_state_raises_a_health_check_until_a_new_run():
    eng = engine_mod.Engine(None, lambda *a, **k: None)
    eng.state_unreadable("run state chunks do not match the header's digest", 5.0)
    checks = eng.shell_health()
    assert "RECOVERY_STATE_UNREADABLE" in checks
    assert "digest" in checks["RECOVERY_STATE_UNREADABLE"]["detail"][0]
    assert json.dumps(checks)


def test_chunks_follow_the_mons_current_entry_limit():
    """mon_config_key_max_entry_size below the default: every entry fits the mon's limit (a
    larger one would be dropped by the mon while set_store only logs it) and reads back."""
    text = big_state().dumps()
    cs, kv = statestore.ChunkedStore("run_state", marks=lambda t: "m" * 100,
                                     max_chunks=1000), Store()
    writes = cs.writes(text, entry_limit=4096)
    kv.apply(writes)
    cs.done(writes)
    assert max(len(v.encode()) for v in kv.kv.values()) <= 4096
    assert statestore.ChunkedStore("run_state", max_chunks=1000).read(kv.kv.get) == text


def test_a_state_or_marks_over_the_mons_entry_limit_is_refused_not_dropped():
    with pytest.raises(statestore.StateTooLarge, match="mon_config_key_max_entry_size 512"):
        statestore.ChunkedStore("k").writes("x" * (33 * 512), entry_limit=512)
    marks = statestore.ChunkedStore("k", marks=lambda t: "m" * 600)
    with pytest.raises(statestore.StateTooLarge, match="marks"):
        marks.writes("x" * 100, entry_limit=512)


def test_a_state_that_fits_one_entry_is_one_write_per_change():
    cs, kv = statestore.ChunkedStore("run_state"), Store()
    st_ = state_mod.RunState()
    for i in range(5):
        st_.record(1000.0 + i, 10 + i, {"kind": "grant_start", "osd": i}, "queued")
        writes = cs.writes(st_.dumps())
        assert [k for k, _v in writes] == ["run_state"]
        kv.apply(writes)
        cs.done(writes)
        assert statestore.ChunkedStore("run_state").read(kv.kv.get) == st_.dumps()
    assert list(kv.kv) == ["run_state"]


def test_growing_past_one_entry_and_back_leaves_no_stale_chunk():
    cs, kv = statestore.ChunkedStore("k", chunk_bytes=1000), Store()
    for text in ("s" * 100, "l" * 2500, "m" * 3500, "t" * 200):
        writes = cs.writes(text)
        kv.apply(writes)
        cs.done(writes)
        assert statestore.ChunkedStore("k", chunk_bytes=1000).read(kv.kv.get) == text
    assert list(kv.kv) == ["k"]                   # the chunks of both slots deleted


def test_a_corrupt_inline_state_is_detected():
    cs, kv = statestore.ChunkedStore("k"), Store()
    kv.apply(cs.writes("0123456789"))
    kv.kv["k"] = kv.kv["k"].replace("0123", "x123")
    with pytest.raises(statestore.StateCorrupt, match="digest"):
        statestore.ChunkedStore("k").read(kv.kv.get)
