"""The slimmed PG stats (pgtrack.PG_FIELDS) held in columns while the module keeps them.

A dict per PG costs some 750 bytes of Python objects (the dict, its strings, its lists and
their ints), 75 MiB at 100,000 PGs, held between reads for as long as the module is loaded.
In columns, the same values cost some 150 bytes per PG: the pgid strings, interned state
strings, the OSD ids of `up`, `acting` and `blocked_by` in one 32-bit array, the versions
("E'V") as pairs of integers, `log_size` as an integer.

PgRows is a read-only sequence: each PG reads back (by index or iteration) as a new dict
equal to the one slim_pg_dump made of it. A PG whose values do not fit those types (an OSD
id beyond 32 bits, a version not in "E'V" form, a field slim_pg_dump does not keep) is kept
as its own dict, so nothing is lost or changed.

No `from __future__ import annotations`: this file is loaded by ceph-mgr (Python 3.9+).
"""
import sys
from array import array
from collections.abc import Sequence
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

from .pgtrack import PG_FIELDS

LISTS = ("up", "acting", "blocked_by")
VERSIONS = ("version", "last_update")
BIT = {k: 1 << n for n, k in enumerate(PG_FIELDS)}
KNOWN = frozenset(PG_FIELDS)
OSD_ID_MAX = (1 << 31) - 1      # the array's type code "i": 32 bits (CRUSH's NONE fits)
LIST_MAX = 255                  # the array's type code "B" for each list's length
INT64 = (1 << 63) - 1


def _osd_list(value: Any) -> Optional[List[int]]:
    if type(value) is not list or len(value) > LIST_MAX:
        return None
    if all(type(o) is int and -OSD_ID_MAX <= o <= OSD_ID_MAX for o in value):
        return value
    return None


def _version(value: Any) -> Optional[Tuple[int, int]]:
    """ "45'1234" -> (45, 1234); None unless it reads back as the very same text."""
    if type(value) is not str or not value.isascii() or value.count("'") != 1:
        return None
    e, v = value.split("'")
    if not (e.isdigit() and v.isdigit()):
        return None
    pair = (int(e), int(v))
    return pair if "%d'%d" % pair == value and max(pair) <= INT64 else None


def _encoded(pg: Mapping[str, Any]) -> Optional[Tuple[int, List[List[int]], List[int], int]]:
    """(presence bits, the three OSD lists, the four version integers, log_size), or None
    where some value does not fit the columns."""
    if type(pg) is not dict or not pg.keys() <= KNOWN:
        return None
    if type(pg.get("pgid")) is not str or "\n" in pg["pgid"] \
            or type(pg.get("state", "")) is not str:
        return None
    has = sum(BIT[k] for k in pg)
    lists = [_osd_list(pg.get(k, [])) for k in LISTS]
    pairs = [_version(pg[k]) if k in pg else (0, 0) for k in VERSIONS]
    log = pg.get("log_size", 0)
    if any(x is None for x in lists + pairs) or type(log) is not int or abs(log) > INT64:
        return None
    return has, lists, [n for p in pairs for n in p], log


class PgRows(Sequence):
    """A slimmed dump's `pg_stats`, in columns (see the module docstring)."""

    def __init__(self, stats: Iterable[Mapping[str, Any]]) -> None:
        self._pgids: Any = []           # one string per PG; own_strings() makes them ours
        self._states: List[str] = []    # interned: a few distinct values
        self._has = array("B")          # per PG: which PG_FIELDS it holds (BIT)
        self._lens = array("B")         # per PG: len(up), len(acting), len(blocked_by)
        self._start = array("q", [0])   # per PG: where its OSD ids begin in _osds
        self._osds = array("i")
        self._versions = array("q")     # per PG: version's E, V, last_update's E, V
        self._logs = array("q")
        self._odd: Dict[int, Dict[str, Any]] = {}
        for pg in stats:
            self._append(pg)

    def _append(self, pg: Mapping[str, Any]) -> None:
        enc = _encoded(pg)
        if enc is None:
            self._odd[len(self._has)] = dict(pg)
            enc = (0, [[], [], []], [0, 0, 0, 0], 0)
            pgid, state = "", ""
        else:
            pgid, state = pg["pgid"], sys.intern(pg.get("state", ""))
        has, lists, versions, log = enc
        self._pgids.append(pgid)
        self._states.append(state)
        self._has.append(has)
        for values in lists:
            self._lens.append(len(values))
            self._osds.extend(values)
        self._start.append(len(self._osds))
        self._versions.extend(versions)
        self._logs.append(log)

    def own_strings(self, previous: Optional["PgRows"] = None) -> None:
        """The pgid strings made anew, in one go: those taken from the mgr's dump sit on
        its memory pages and would keep them resident once that dump is freed. Where they
        are those of the `previous` read (the PGs did not change), that read's strings are
        taken instead: what the module keeps across reads (members, versions: pgtrack.py)
        then shares one string per PG instead of one per read."""
        if previous is not None and previous._pgids == self._pgids:
            self._pgids = previous._pgids
            return
        self._pgids = "\n".join(self._pgids).split("\n") if self._pgids else []

    def __len__(self) -> int:
        return len(self._has)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        k = i + n if i < 0 else i
        if not 0 <= k < n:
            raise IndexError("PG index out of range")
        return self._row(k)

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        for k in range(len(self)):
            yield self._row(k)

    def _row(self, k: int) -> Dict[str, Any]:
        """PG k's dict, its keys in PG_FIELDS order (straight-line: a pass over 100,000
        PGs is some 0.15 s)."""
        if self._odd and k in self._odd:
            return self._odd[k]
        has, row = self._has[k], {}
        if has & BIT["pgid"]:
            row["pgid"] = self._pgids[k]
        if has & BIT["state"]:
            row["state"] = self._states[k]
        at, lens, osds = self._start[k], self._lens, self._osds
        for n, name in enumerate(LISTS):
            end = at + lens[3 * k + n]
            if has & BIT[name]:
                row[name] = osds[at:end].tolist()
            at = end
        v = self._versions
        if has & BIT["version"]:
            row["version"] = "%d'%d" % (v[4 * k], v[4 * k + 1])
        if has & BIT["last_update"]:
            row["last_update"] = "%d'%d" % (v[4 * k + 2], v[4 * k + 3])
        if has & BIT["log_size"]:
            row["log_size"] = self._logs[k]
        return row
