"""A small bounded retry: at most `attempts` calls, a wait between two of them, retrying only on
the exception types or the results named. ceph-mgr loads modules with the standard library
and its own modules only, so the module carries this instead of a retry library."""
from __future__ import annotations

import time
from typing import Any, Callable, Optional, Tuple, Type, TypeVar, Union

T = TypeVar("T")
Wait = Union[float, Callable[[int], float]]


def backoff(first: float, cap: float) -> Callable[[int], float]:
    """Waits doubling from `first` (after the first attempt) up to `cap` seconds."""
    return lambda attempt: min(cap, first * 2 ** (attempt - 1))


def bounded(fn: Callable[[], T], attempts: int, wait: Wait = 0.0,
            on: Tuple[Type[BaseException], ...] = (),
            again: Optional[Callable[[Any], bool]] = None,
            sleep: Callable[[float], None] = time.sleep) -> T:
    """fn() until it returns a result `again` does not want retried, or raises an exception
    not in `on`. After the last attempt: the last exception is raised, or the last result
    returned (a transient answer is still an answer)."""
    for attempt in range(1, max(1, attempts) + 1):
        last = attempt >= attempts
        try:
            result = fn()
        except on:
            if last:
                raise
        else:
            if last or again is None or not again(result):
                return result
        sleep(wait(attempt) if callable(wait) else wait)
    raise AssertionError("unreachable")  # pragma: no cover
