"""Validation of operator input for the `recovery` mgr module (budgets, buckets, counts).

Pure functions; each raises InputError(errno, message) so the command handler can answer
with -errno and change nothing. No mgr_module import: unit-tested outside ceph-mgr.
"""
from __future__ import annotations

import errno
import math
import re
from typing import Any, Iterable, Mapping, Sequence, Tuple

from ceph_recovery.model import AUTO_RAISED_FRACTION, BUDGET_AUTO, Budget

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kmgtp]?)(i?b)?\s*$", re.IGNORECASE)
_PCT_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")
MAX_ARG_LEN = 64              # a budget or count argument: longer is never a valid one
MAX_BUDGET_BYTES = 1 << 60    # 1 EiB per host: a larger size is a typo (and must stay finite)


class InputError(Exception):
    """Bad operator input: carries the errno the command must answer with."""

    def __init__(self, err: int, message: str) -> None:
        super().__init__(message)
        self.errno = err
        self.message = message


def parse_budget(text: str) -> Budget:
    """'auto' -> Budget() (90 %, raised to 95 % once the run's starts peak within their
    predictions); '80%' -> fraction 0.8; '24G', '24GiB', '512M', '1073741824' -> bytes.
    Else EINVAL."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(errno.EINVAL, "budget must not be empty (use auto, 80% or 24G)")
    if len(text) > MAX_ARG_LEN:
        raise InputError(errno.EINVAL, "budget %r... is longer than %d characters"
                         % (text[:16], MAX_ARG_LEN))
    if text.strip().lower() == BUDGET_AUTO:
        return Budget()
    m = _PCT_RE.match(text)
    if m:
        pct = float(m.group(1))
        if not (0 < pct <= 100) or not math.isfinite(pct):
            raise InputError(errno.EINVAL, "budget %r out of range: a percentage must be in "
                                           "(0%%, 100%%]" % text)
        return Budget(kind="fraction", value=pct / 100.0)
    m = _SIZE_RE.match(text)
    if not m:
        raise InputError(errno.EINVAL, "invalid budget %r: use auto, a percentage of each "
                                       "host's memory (80%%) or a size per host (24G, 512MiB, "
                                       "bytes)"
                         % text)
    unit = m.group(2).lower()
    if m.group(3) and m.group(3).lower() == "b" and not unit:
        unit = ""
    value = float(m.group(1)) * _UNITS[unit]
    if value < 1:
        raise InputError(errno.EINVAL, "budget %r must be greater than zero" % text)
    if not value <= MAX_BUDGET_BYTES:      # also inf: float() of a very long digit string
        raise InputError(errno.EINVAL, "budget %r is larger than 1 EiB per host" % text)
    return Budget(kind="bytes", value=float(int(value)))


def budget_text(b: Budget) -> str:
    if b.kind == BUDGET_AUTO:
        return "auto (%g%%, %g%% once starts peak within their predictions)" % (
            b.value * 100, AUTO_RAISED_FRACTION * 100)
    if b.kind == "fraction":
        return "%g%%" % (b.value * 100)
    return "%d bytes" % int(b.value)


def check_concurrency(n: Any) -> int:
    """`--concurrency`: an integer 1..64 (starts in flight per host), or "auto" (0: as many as
    the memory budget admits, each still gated by the observed load of the ones before)."""
    if isinstance(n, str) and n.strip().lower() == "auto":
        return 0
    if isinstance(n, str) and n.strip().isdigit() and len(n) <= MAX_ARG_LEN:
        n = int(n.strip())
    if not isinstance(n, int) or isinstance(n, bool) or n < 1 or n > 64:
        raise InputError(errno.EINVAL, "concurrency must be an integer between 1 and 64 or "
                         "'auto', got %.64r" % (n,))
    return n


def check_start_order(name: Any) -> str:
    """`--start-order`: a start_order policy of the registry plan() resolves it from (EINVAL
    naming the known ones)."""
    from ceph_recovery.policies.registry import pick
    name = name.strip() if isinstance(name, str) else str(name)
    try:
        pick("start_order", name)
    except ValueError as e:
        raise InputError(errno.EINVAL, "--start-order: %s" % e)
    return name


def check_buckets(names: Iterable[str], known: Mapping[str, str]) -> Tuple[str, ...]:
    """Every name must be a CRUSH bucket (not an OSD) of the current map, else ENOENT."""
    out = []
    for name in names or ():
        if not isinstance(name, str) or not name:
            raise InputError(errno.EINVAL, "empty CRUSH bucket name")
        btype = known.get(name)
        if btype is None:
            raise InputError(errno.ENOENT, "unknown CRUSH bucket %r (see `ceph osd tree`)" % name)
        if btype == "osd":
            raise InputError(errno.EINVAL, "%r is an OSD, not a CRUSH bucket" % name)
        if name not in out:
            out.append(name)
    return tuple(out)


def split_scope(scope: Sequence[str]) -> Tuple[str, ...]:
    """Accept both `--scope a b` and `--scope a,b`; EINVAL unless names (strings)."""
    if isinstance(scope, str):
        scope = [scope]
    if not isinstance(scope, (list, tuple)) or not all(isinstance(x, str) for x in scope):
        raise InputError(errno.EINVAL, "--scope must be CRUSH bucket names")
    out = []
    for item in scope or ():
        out.extend(x.strip() for x in item.split(",") if x.strip())
    return tuple(out)
