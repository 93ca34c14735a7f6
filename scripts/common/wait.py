"""One way to poll until a condition holds, on tenacity."""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, Type

from tenacity import (RetryError, Retrying, retry_if_exception_type, retry_if_result,
                      stop_after_delay, wait_fixed)

_NOTHING = object()


def wait_until(probe: Callable[[], Any], timeout: float, interval: float = 1.0, *,
               done: Callable[[Any], bool] = bool,
               ignore: Tuple[Type[BaseException], ...] = (),
               what: Optional[str] = None,
               detail: Optional[Callable[[Any], str]] = None) -> Any:
    """Call `probe()` every `interval` seconds until `done(value)` holds; return that value.

    An exception of a type in `ignore` counts as "not yet"; any other propagates at once.
    At `timeout`: with `what`, raise TimeoutError("<what> after <timeout>s[: detail(last)]"),
    where `last` is the last value returned (or the last ignored exception); without `what`,
    return the last value (None if every call raised), so the caller decides.
    """
    retry = retry_if_result(lambda value: not done(value))
    if ignore:
        retry = retry | retry_if_exception_type(ignore)
    retrying = Retrying(stop=stop_after_delay(timeout), wait=wait_fixed(interval),
                        retry=retry)
    try:
        return retrying(probe)
    except RetryError as err:
        last = _last(err)
    if what is None:
        return None if isinstance(last, BaseException) else last
    suffix = "" if detail is None else ": " + detail(last)
    raise TimeoutError(f"{what} after {timeout:g}s{suffix}") from None


def _last(err: RetryError) -> Any:
    attempt = err.last_attempt
    exc = attempt.exception()
    return exc if exc is not None else attempt.result()
