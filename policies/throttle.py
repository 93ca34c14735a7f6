"""throttle policies: (osd) -> ((name, value), ...): the recovery settings the run sets on a
returning OSD that still recovers on a host near its budget (ceph_recovery.throttle decides
when, records the value before write-ahead and restores it). The settings depend on the OSD's
scheduler (OsdState.op_queue, ceph_recovery.scheduler):

  recovery_min        wpq: osd_recovery_max_active=1, osd_max_backfills=1: the fewest
                      recovery ops in flight that still make progress (0 would pause its
                      recovery, and with it the shrink of its history memory).
                      mClock: osd_mclock_override_recovery_settings=true first, then the same
                      two: mClock ignores them (and resets them to its own defaults) unless
                      the override is set on that OSD.
  recovery_min_sleep  wpq: recovery_min and osd_recovery_sleep=0.1 (Ceph's _hdd default):
                      its recovery ops are also spaced out. mClock forces every recovery
                      sleep to 0, so there: recovery_min and osd_mclock_profile=
                      high_client_ops, the smaller share of the OSD's IOPS for recovery.
  off                 no setting (the run never throttles)

An OSD whose scheduler is not known gets the wpq settings: an mClock OSD ignores them, and a
release without the mClock options (Pacific lacks the override) never sees one.

Defaults these are lowered from (ceph-conf --show-config-value): osd_recovery_max_active_hdd
3 / _ssd 10 on 16.2 (wpq), 18.2 and 20.2 (mclock_scheduler); osd_max_backfills 1.
osd_max_backfills also bounds the PGs an OSD accepts as a recovery target (the "Recovery
Reservation" of Ceph's osd_internals docs: log-based recovery takes the same local and
remote reservations as backfill).
"""
from __future__ import annotations

from typing import Tuple

from ceph_recovery.model import MCLOCK, OsdState

REC_ACTIVE = "osd_recovery_max_active"
BACKFILLS = "osd_max_backfills"
REC_SLEEP = "osd_recovery_sleep"
OVERRIDE = "osd_mclock_override_recovery_settings"
PROFILE = "osd_mclock_profile"
KEYS = (REC_ACTIVE, BACKFILLS, REC_SLEEP, OVERRIDE, PROFILE)


def recovery_min(osd: OsdState) -> Tuple[Tuple[str, str], ...]:
    """One recovery op and one reserved PG at a time on this OSD (under mClock, behind the
    override that makes mClock honour them)."""
    one = ((REC_ACTIVE, "1"), (BACKFILLS, "1"))
    return ((OVERRIDE, "true"),) + one if osd.op_queue == MCLOCK else one


def recovery_min_sleep(osd: OsdState) -> Tuple[Tuple[str, str], ...]:
    """recovery_min, and its recovery ops spaced out: 0.1 s apart (wpq, Ceph's _hdd default
    sleep), or the high_client_ops profile (mClock, where every sleep is 0)."""
    if osd.op_queue == MCLOCK:
        return recovery_min(osd) + ((PROFILE, "high_client_ops"),)
    return recovery_min(osd) + ((REC_SLEEP, "0.1"),)


def off(osd: OsdState) -> Tuple[Tuple[str, str], ...]:
    """Never throttle."""
    return ()


THROTTLE = {"recovery_min": recovery_min, "recovery_min_sleep": recovery_min_sleep, "off": off}
DEFAULT = "recovery_min"
