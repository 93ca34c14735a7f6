"""The module's mon and OSD commands are all sent from one Python thread that lives as long
as the module (CommandSender), whichever thread asks.

Why: ceph-mgr's `send_command` stores the calling thread's PyThreadState
(`PyThreadState_Get()` in `ceph_send_command`, BaseMgrModule.cc) in the command's completion,
and the reply, on a Ceph thread, runs `Gil gil(that_state, true)`: restore that state, swap to
a new one, call `CommandResult.complete`, swap back to the stored state (`Gil::~Gil`, Gil.cc).
A command handler's state is made for the call and deleted when the handler returns
(`Gil gil(pMyThreadState, true)` in `ActivePyModule::handle_command`). From Python 3.12,
`PyThreadState_Swap` releases the GIL between leaving one state and entering the other: the
handler, woken by `complete`, can take the GIL there, return, and have its state deleted
before the swap back enters it (ceph-mgr 18.2.7 with Python 3.13 segfaults in
`PyThreadState_Swap` from `Gil::~Gil` in `MonCommandCompletion::finish`). Up to 3.11 the swap
kept the GIL, so the handler could not run in between.
A state stored here is the sender thread's, which outlives every reply it waits for: at
stop() the thread first waits (bounded) for the replies still due.

No mgr_module import: `send` is the module's bound `send_command`.
"""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Callable, List, Optional

# A reply later than this after stop() is given up on (the mgr is going away anyway).
DRAIN_S = 30.0


class _Job(object):
    __slots__ = ("args", "done", "error")

    def __init__(self, args: tuple) -> None:
        self.args = args
        self.done = threading.Event()
        self.error: Optional[BaseException] = None


class CommandSender(object):
    """`send(result, svc_type, svc_id, command, tag)` runs the module's `send_command` on the
    sender thread and returns once the command is issued (re-raising what it raised); the
    caller then waits on `result.ev` as usual, and may give up on it (a timeout)."""

    def __init__(self, send: Callable[..., Any], name: str = "recovery-send",
                 drain_s: float = DRAIN_S) -> None:
        self._send = send
        self._name = name
        self._drain_s = drain_s
        self._jobs: "queue.Queue[Optional[_Job]]" = queue.Queue()
        self._pending: List[Any] = []      # results whose reply is still due
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._stopped = False

    def send(self, result: Any, *args: Any) -> None:
        if threading.current_thread() is self._thread:
            self._issue(result, args)
            return
        job = _Job((result,) + args)
        with self._lock:
            if self._stopped:
                raise RuntimeError("%s: stopped, command not sent" % self._name)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name,
                                                daemon=True)
                self._thread.start()
            self._jobs.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error

    def thread_ident(self) -> Optional[int]:
        return self._thread.ident if self._thread is not None else None

    def stop(self, join: Optional[float] = None) -> None:
        """No more sends; the thread ends once the replies still due have come (at most
        drain_s later). `join`: also wait that long for it to end (None: do not wait)."""
        with self._lock:
            self._stopped = True
            thread = self._thread
            self._jobs.put(None)
        if join is not None and thread is not None and thread is not threading.current_thread():
            thread.join(join)

    def _issue(self, result: Any, args: tuple) -> None:
        self._send(result, *args)
        self._pending = [r for r in self._pending if not r.ev.is_set()] + [result]

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                break
            try:
                self._issue(job.args[0], job.args[1:])
            except BaseException as e:  # handed to the caller, who raises it
                job.error = e
            job.done.set()
        deadline = time.monotonic() + self._drain_s
        for r in self._pending:      # their completions hold this thread's state
            r.ev.wait(max(0.0, deadline - time.monotonic()))
