"""An OSD that comes back out (marked out by the monitor, its PGs clean without it) returns by
a backfill: the writes it missed cost it no memory, so its prediction leaves them out
(ceph_recovery.outreturn). An out OSD whose PGs are still degraded, and an in OSD, carry
their missed history as before. Snapshots in, exact ordered actions out, on the lab h2
(labh2cases) as test_plan_first_prediction replays it (h2 budget 200 MiB, largest running OSD
140 MiB), with only osd.2 down."""
from __future__ import annotations

from functools import partial

from ceph_recovery.actions import GrantStart, Wait
from ceph_recovery.model import Budget, Intent, OsdState, Progress
from ceph_recovery.outreturn import as_returning, returns_by_backfill
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policies import resolve
from ceph_recovery.policies.footprint import HISTORY_BYTES_PER_ENTRY, PEERING_PEAK
import labh2cases  # see conftest.py

MiB = 1 << 20
NOW = 50000.0
MISSED = 20000          # 156 MiB of history at HISTORY_BYTES_PER_ENTRY
RSS = {0: 120 * MiB, 1: 140 * MiB, 4: 130 * MiB, 5: 125 * MiB}
INTENT = Intent(mode="controlled", run_id="r1", scope=("h2",),
                budget=Budget(kind="bytes", value=200 * MiB))
RUNNING = Progress(run_id="r1", phase="running", epoch=149, saved_flags=frozenset(),
                   held_osds=frozenset({2}), started_at=NOW - 5)


# the lab h2 of labh2cases with only osd.2 down, for 1 h (held by noup), and 222 MiB hosts
SHAPE = dict(down=(2,), down_s=3600.0, rss=RSS)
osd = partial(labh2cases.osd, **SHAPE)


def run(changed: OsdState):
    """plan() with `changed` as osd.2, h2 using 2 MiB."""
    s = labh2cases.snap(changed, used=2 * MiB, host_bytes=222 * MiB, **SHAPE)
    res = plan(s, INTENT, RUNNING, resolve(INTENT), NOW)
    assert check_invariants(s, INTENT, RUNNING, res) == []
    return res


def own_size(missed: int) -> int:
    """The first prediction with missed entries known: (largest running rss + history) x
    (1 + PEERING_PEAK) (policies/footprint.prior, capped by the cluster's own size)."""
    return int((140 * MiB + missed * HISTORY_BYTES_PER_ENTRY) * (1 + PEERING_PEAK))


def grant(predicted: int) -> GrantStart:
    return GrantStart(osd=2, host="h2", predicted_bytes=predicted, reason=(
        "used 2 MiB + reserved 0 MiB + predicted %.0f MiB <= budget 200 MiB"
        % (predicted / MiB)))


def wait(predicted: int) -> Wait:
    return Wait(reason=(
        "0 in flight, 0 settling, 1 waiting; h2 waits for memory to be freed (nothing settles "
        "or can be released) to fit osd.2 (needs %.0f MiB more): no ETA"
        % ((predicted - 198 * MiB) / MiB)))


def test_an_out_osd_whose_pgs_are_clean_elsewhere_is_granted_without_its_missed_history():
    back = osd(2, in_=False, pgs_degraded=0, missed_entries=MISSED)
    res = run(back)
    assert res.actions == (grant(own_size(0)),)


def test_the_same_osd_in_or_with_degraded_pgs_carries_its_history_and_waits():
    """Same missed entries: in (a log recovery), or out before its data was re-replicated
    (marked in at boot, it recovers from the log)."""
    want = own_size(MISSED)
    assert want > 200 * MiB
    for kept in (osd(2, missed_entries=MISSED, pgs_degraded=0),
                 osd(2, in_=False, missed_entries=MISSED, pgs_degraded=16)):
        res = run(kept)
        assert res.actions == (wait(want),), kept


def test_the_rule_reads_only_up_in_and_degraded():
    down_out = OsdState(id=1, host="h", crush_path=("r", "h"), up=False, in_=False,
                        missed_entries=7)
    assert returns_by_backfill(down_out) and as_returning(down_out).missed_entries == 0
    assert not returns_by_backfill(OsdState(id=1, host="h", crush_path=("r", "h"), up=False))
    assert not returns_by_backfill(OsdState(id=1, host="h", crush_path=("r", "h"), up=True,
                                            in_=False))
    degraded = OsdState(id=1, host="h", crush_path=("r", "h"), up=False, in_=False,
                        pgs_degraded=1, missed_entries=7)
    assert as_returning(degraded) is degraded
    unknown = OsdState(id=1, host="h", crush_path=("r", "h"), up=False, in_=False)
    assert as_returning(unknown) is unknown          # nothing to leave out
