"""throttle policies: (osd) -> ((name, value), ...): the recovery settings the run sets on a
returning OSD that still recovers on a host near its budget (ceph_recovery.throttle decides
when, records the value before write-ahead and restores it).

  recovery_min        osd_recovery_max_active=1, osd_max_backfills=1: the fewest recovery ops
                      in flight that still make progress (0 would pause its recovery, and
                      with it the shrink of its history memory)
  recovery_min_sleep  the same plus osd_recovery_sleep=0.1 (Ceph's osd_recovery_sleep_hdd
                      default): its recovery ops are also spaced out
  off                 no setting (the run never throttles)

Ceph 16.2 (wpq) defaults these are lowered from: osd_recovery_max_active 0 -> _hdd 3 /
_ssd 10, osd_max_backfills 1 (ceph-conf --show-config-value). osd_max_backfills also bounds
the PGs an OSD accepts as a recovery target (the "Recovery Reservation" of Ceph's
osd_internals docs: log-based recovery takes the same local and remote reservations as
backfill). On mclock (Quincy and later) both are overridden unless
osd_mclock_override_recovery_settings is set; there the settings are recorded and restored
but change nothing.
"""
from __future__ import annotations

from typing import Tuple

from ceph_recovery.model import OsdState

REC_ACTIVE = "osd_recovery_max_active"
BACKFILLS = "osd_max_backfills"
REC_SLEEP = "osd_recovery_sleep"
KEYS = (REC_ACTIVE, BACKFILLS, REC_SLEEP)


def recovery_min(osd: OsdState) -> Tuple[Tuple[str, str], ...]:
    """One recovery op and one reserved PG at a time on this OSD."""
    return ((REC_ACTIVE, "1"), (BACKFILLS, "1"))


def recovery_min_sleep(osd: OsdState) -> Tuple[Tuple[str, str], ...]:
    """recovery_min, and 0.1 s between its recovery ops (Ceph's _hdd default sleep)."""
    return recovery_min(osd) + ((REC_SLEEP, "0.1"),)


def off(osd: OsdState) -> Tuple[Tuple[str, str], ...]:
    """Never throttle."""
    return ()


THROTTLE = {"recovery_min": recovery_min, "recovery_min_sleep": recovery_min_sleep, "off": off}
DEFAULT = "recovery_min"
