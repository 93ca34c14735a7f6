"""CommandSender: every mon/OSD command leaves from the one sender thread, whichever thread
asks, and that thread outlives the replies still due (sender.py says why ceph-mgr needs it)."""
from __future__ import annotations

import threading

import pytest

from recovery.sender import CommandSender


class Result(object):
    """The shape of mgr_module.CommandResult that the sender relies on."""

    def __init__(self) -> None:
        self.ev = threading.Event()


class RecordingSend(object):
    """send_command: records the thread it runs on; `reply`: the reply comes at once."""

    def __init__(self, error: BaseException = None, reply: bool = True) -> None:
        self.calls = []
        self.error = error
        self.reply = reply

    def __call__(self, result, *args):
        self.calls.append((threading.get_ident(), result, args))
        if self.error is not None:
            raise self.error
        if self.reply:
            result.ev.set()


def test_commands_from_many_threads_all_leave_from_the_sender_thread():
    send = RecordingSend()
    sender = CommandSender(send)
    callers = []

    def ask(i):
        callers.append(threading.get_ident())
        sender.send(Result(), "mon", "", '{"prefix": "osd ok-to-stop", "ids": ["%d"]}' % i, "")

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    ask(9)                                   # and from this thread too
    sender.stop(join=10)
    assert len(send.calls) == 5
    assert {ident for ident, _r, _a in send.calls} == {sender.thread_ident()}
    assert sender.thread_ident() not in callers
    assert sorted(a[2] for _i, _r, a in send.calls) == sorted(
        '{"prefix": "osd ok-to-stop", "ids": ["%d"]}' % i for i in (0, 1, 2, 3, 9))


def test_send_returns_once_issued_and_the_caller_waits_on_the_result():
    send = RecordingSend(reply=False)
    sender = CommandSender(send)
    r = Result()
    sender.send(r, "osd", "3", '{"prefix": "heap"}', "")
    assert send.calls[0][1] is r and send.calls[0][2] == ("osd", "3", '{"prefix": "heap"}', "")
    assert not r.ev.is_set()                 # the reply is the caller's to wait for
    sender.stop(join=0)
    r.ev.set()


def test_the_thread_outlives_a_reply_its_caller_gave_up_on():
    sender = CommandSender(RecordingSend(reply=False), drain_s=60)
    late = Result()
    sender.send(late, "mon", "", "{}", "")   # its caller timed out and returned
    sender.stop(join=0.2)
    alive = [t for t in threading.enumerate() if t.ident == sender.thread_ident()]
    assert alive and alive[0].is_alive()     # still due: its completion holds the thread
    late.ev.set()                            # the reply comes
    alive[0].join(10)
    assert not alive[0].is_alive()


def test_a_send_error_is_raised_in_the_caller_and_the_sender_goes_on():
    send = RecordingSend(ValueError("invalid osd_id"))
    sender = CommandSender(send)
    with pytest.raises(ValueError, match="invalid osd_id"):
        sender.send(Result(), "osd", "x", "{}", "")
    send.error = None
    sender.send(Result(), "mon", "", "{}", "")
    assert len(send.calls) == 2
    sender.stop(join=10)


def test_no_send_after_stop():
    send = RecordingSend()
    sender = CommandSender(send)
    sender.stop(join=10)
    with pytest.raises(RuntimeError, match="stopped"):
        sender.send(Result(), "mon", "", "{}", "")
    assert send.calls == []
