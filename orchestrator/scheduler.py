"""Which recovery scheduler an OSD runs (osd_op_queue): the throttle's settings differ by it.

Rules:
- The OSD's own setting (config section osd.N) wins, then the one it inherits (section osd,
  else global), then its release's default: wpq up to Pacific (16), mclock_scheduler from
  Quincy (17) on (`ceph-conf --show-config-value osd_op_queue` in the lab's 16.2, 18.2 and
  20.2). The value is read when the OSD starts, so a running OSD keeps the one it started
  with; the config database is what the mgr sees of it.
- Masked sections (osd/host:h1, osd/class:ssd) are not resolved: an OSD under such a mask is
  given the unmasked value, which is what an operator who sets the scheduler cluster-wide has.
- Unknown (no setting, no release): None. The throttle then uses the wpq settings, which an
  mClock OSD ignores, so an unknown scheduler never sets an mClock-only option on a release
  that lacks it (the mon refuses an option it does not know).
"""
from __future__ import annotations

import re
from typing import Optional

from .model import MCLOCK, WPQ

MCLOCK_FROM_MAJOR = 17
SCHEDULERS = (WPQ, MCLOCK)
_VERSION = re.compile(r"(?:ceph version\s+)?v?(\d+)\.(\d+)\.(\d+)")


def release_major(version: Optional[str]) -> Optional[int]:
    """`ceph version 20.2.0 (sha) tentacle (stable)` (osd metadata ceph_version) -> 20."""
    m = _VERSION.match((version or "").strip())
    return int(m.group(1)) if m else None


def scheduler_of(own: Optional[str], inherited: Optional[str],
                 version: Optional[str]) -> Optional[str]:
    """The OSD's scheduler: WPQ, MCLOCK, or None when not known (see the module's rules).
    A setting that is neither (debug_random, a future queue) is not known either."""
    for value in (own, inherited):
        if value:
            return value if value in SCHEDULERS else None
    major = release_major(version)
    if major is None:
        return None
    return MCLOCK if major >= MCLOCK_FROM_MAJOR else WPQ
