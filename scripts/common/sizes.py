"""Sizes in binary units: one parser for command lines, one formatter for tables and plots."""
from __future__ import annotations

import re

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(i?[bB])?\s*$")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MiB = 1 << 20
GiB = 1 << 30


def parse_bytes(text: str) -> int:
    """'600M' -> 629145600, '1G', '1.5GiB', '4096' -> bytes (binary units). ValueError if bad."""
    match = _SIZE_RE.match(str(text))
    if not match:
        raise ValueError(f"not a size: {text!r} (use e.g. 600M, 1G, 1073741824)")
    value = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if value < 1:
        raise ValueError(f"size must be positive: {text!r}")
    return int(value)


def size_arg(text: str) -> int:
    """parse_bytes for argparse: a bad size is a usage error naming the value."""
    import argparse
    try:
        return parse_bytes(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def format_bytes(n, unit: str = "") -> str:
    """Bytes as text in binary units: '-' for None; `unit` "MiB"/"GiB" fixes the unit (a bare
    number of it, for table columns), else the largest unit that keeps the number >= 1."""
    if n is None:
        return "-"
    if unit:
        return f"{n / _UNITS[unit[0].lower()]:.0f}"
    for name, scale in (("TiB", 1 << 40), ("GiB", GiB), ("MiB", MiB), ("KiB", 1 << 10)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {name}"
    return f"{int(n)} B"
