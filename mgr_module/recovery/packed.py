"""Per-PG values the module keeps across ticks, packed in arrays instead of one Python object
per PG: a tuple of 3 OSD ids costs some 64 bytes, and an int index or version 28, where an
array holds each id in 4 bytes and each version in 8.

- Packed: a sequence of int tuples (PG index -> its members) in two arrays;
- PackedMap: OSD id -> the indexes of its PGs, one array per OSD;
- ByPg: pgid -> a value, stored in the order of a read's PGs (`ids`): looked up by position
  where the PGs did not change since (the common case), else through an index built then.

Each reads back as the plain values it packs (tuples, ints), so the core and the shell read
them as they read tuples and dicts.

No `from __future__ import annotations`: this file is loaded by ceph-mgr (Python 3.9+).
"""
from array import array
from collections.abc import Mapping, Sequence
from typing import Any, Dict, Iterable, Iterator, Optional, Tuple


class Packed(Sequence):
    """Int tuples, packed: `append` a row, read it back as a tuple."""

    __hash__ = None  # type: ignore[assignment]

    def __init__(self, rows: Iterable[Iterable[int]] = ()) -> None:
        self._flat = array("i")     # every row's ints, one after the other (32-bit OSD ids)
        self._ends = array("I")     # per row: where it ends in _flat
        for row in rows:
            self.append(row)

    def append(self, row: Iterable[int]) -> None:
        self._flat.extend(row)
        self._ends.append(len(self._flat))

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self._ends)
        k = i + n if i < 0 else i
        if not 0 <= k < n:
            raise IndexError("row index out of range")
        return tuple(self._flat[self._ends[k - 1] if k else 0:self._ends[k]])

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == tuple(b) for a, b in zip(self, other))

    def __repr__(self) -> str:
        return "Packed(%r)" % (list(self),)


class PackedMap(Mapping):
    """OSD id -> the indexes of its PGs (read back as a tuple), one int array per OSD."""

    def __init__(self, by_key: Dict[int, "array[int]"]) -> None:
        self._by = by_key

    def __getitem__(self, key: int) -> Tuple[int, ...]:
        return tuple(self._by[key])

    def __iter__(self) -> Iterator[int]:
        return iter(self._by)

    def __len__(self) -> int:
        return len(self._by)

    def __contains__(self, key: object) -> bool:
        return key in self._by


class ByPg(Mapping):
    """pgid -> value for the PGs of one read, in its order (`ids`); `missing` marks a PG
    without a value (those are not keys)."""

    def __init__(self, ids: Sequence = (), values: Sequence = (), missing: Any = ()) -> None:
        self._ids, self._values, self._missing = ids, values, missing
        self._index: Optional[Dict[str, int]] = None

    @classmethod
    def of(cls, values: Mapping, missing: Any = ()) -> "ByPg":
        """From a plain pgid -> value mapping."""
        ids = list(values)
        return cls(ids, [values[p] for p in ids], missing)

    def at(self, i: int, pgid: str, default: Any = None) -> Any:
        """The value of `pgid`, looked up first at position `i` (its place in an unchanged
        read)."""
        if 0 <= i < len(self._ids) and self._ids[i] == pgid:
            v = self._values[i]
            return default if v == self._missing else v
        return self.get(pgid, default)

    def _position(self, pgid: Any) -> Optional[int]:
        if self._index is None:
            self._index = {p: i for i, p in enumerate(self._ids)}
        return self._index.get(pgid)

    def __getitem__(self, pgid: str) -> Any:
        i = self._position(pgid)
        if i is None or self._values[i] == self._missing:
            raise KeyError(pgid)
        return self._values[i]

    def items(self) -> Any:
        """(pgid, value) of the PGs with a value, in the read's order, without the index."""
        miss = self._missing
        return [(p, v) for p, v in zip(self._ids, self._values) if v != miss]

    def __iter__(self) -> Iterator[str]:
        miss = self._missing
        return (p for p, v in zip(self._ids, self._values) if v != miss)

    def __len__(self) -> int:
        miss = self._missing
        return sum(1 for v in self._values if v != miss)
