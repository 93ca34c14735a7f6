"""The module's own bounded retry (retry.py) and JSON event logger (logs.py), which stand in for
tenacity and structlog inside ceph-mgr: the attempts, waits and log lines they promise."""
from __future__ import annotations

import errno
import json
import logging

import pytest

from recovery import logs, retry
from recovery.executor import Executor


class Flaky(Exception):
    pass


def _calls(answers):
    seen = []

    def fn():
        seen.append(1)
        a = answers[len(seen) - 1]
        if isinstance(a, Exception):
            raise a
        return a
    return fn, seen


def test_retries_an_exception_named_then_returns():
    fn, seen = _calls([Flaky(), Flaky(), "ok"])
    waits = []
    assert retry.bounded(fn, 3, wait=0.5, on=(Flaky,), sleep=waits.append) == "ok"
    assert len(seen) == 3 and waits == [0.5, 0.5]


def test_raises_the_last_exception_after_the_last_attempt_and_others_at_once():
    fn, seen = _calls([Flaky("1"), Flaky("2"), Flaky("3"), "late"])
    with pytest.raises(Flaky, match="3"):
        retry.bounded(fn, 3, wait=0.5, on=(Flaky,), sleep=lambda s: None)
    assert len(seen) == 3
    fn, seen = _calls([ValueError("x"), "never"])
    with pytest.raises(ValueError):
        retry.bounded(fn, 3, on=(Flaky,), sleep=lambda s: None)
    assert len(seen) == 1


def test_a_result_is_retried_while_wanted_and_the_last_one_handed_back():
    fn, seen = _calls([1, 1, 1, 1, 0])
    waits = []
    assert retry.bounded(fn, 4, wait=retry.backoff(0.2, 2.0), again=lambda r: r == 1,
                         sleep=waits.append) == 1
    assert len(seen) == 4 and waits == [0.2, 0.4, 0.8]
    assert [retry.backoff(0.2, 2.0)(n) for n in (4, 5, 6)] == [1.6, 2.0, 2.0]


def test_mon_commands_retry_transient_errors_four_times_and_keep_definite_answers(monkeypatch):
    monkeypatch.setattr(retry.time, "sleep", lambda s: None)

    class Ceph:
        def __init__(self, answers):
            self.answers, self.calls = list(answers), 0

        def mon_command(self, cmd):
            self.calls += 1
            return self.answers.pop(0)
    busy = Ceph([(-errno.EAGAIN, "", "again")] * 5)
    assert Executor(busy).mon({"prefix": "osd set"}) == (-errno.EAGAIN, "", "again")
    assert busy.calls == 4
    late = Ceph([(-errno.ETIMEDOUT, "", ""), (0, "done", "")])
    assert Executor(late).mon({"prefix": "osd set"}) == (0, "done", "")
    refused = Ceph([(-errno.EINVAL, "", "no"), (0, "", "")])
    assert Executor(refused).mon({"prefix": "osd set"})[0] == -errno.EINVAL
    assert refused.calls == 1


def test_events_are_one_sorted_json_line_on_the_mgr_logger(caplog):
    log = logging.getLogger("mgr.test-recovery")
    with caplog.at_level(logging.INFO, logger=log.name):
        logs.make_logger(log).info("state_loaded", run_id="r1", obj=object)
        logs.make_logger(log).debug("hidden")
    (rec,) = caplog.records
    assert rec.levelno == logging.INFO
    doc = json.loads(rec.getMessage())
    assert list(doc) == sorted(doc)
    assert doc["event"] == "state_loaded" and doc["run_id"] == "r1"
    assert doc["level"] == "info" and doc["module"] == "recovery"
    assert doc["timestamp"].endswith("Z") and doc["obj"] == repr(object)
