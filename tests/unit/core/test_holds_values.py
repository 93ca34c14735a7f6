"""The noup-hold stages (ceph_recovery.holds) as functions over values: a Context and the
records they are given in, a StageOut out, no Decision. On plancases' cluster: osd.3-5 of h1
down."""
from __future__ import annotations

from ceph_recovery.actions import HoldBucket, HoldOsd, ReleaseBucket
from ceph_recovery.context import context
from ceph_recovery.holds import Buckets, bucket_holds, held_report, hold_osds
from ceph_recovery.model import Intent, Progress
from ceph_recovery.stageout import StageOut
from plancases import HELD, NOUP, NOW, POL, RUN, RUNNING, snap  # conftest.py

NONE = Buckets(frozenset(), frozenset())


def test_auto_hold_returns_its_hold_and_the_new_bucket_records():
    ctx = context(snap(), Intent(auto_hold=True), Progress(), POL, NOW, None)
    out = bucket_holds(ctx, NONE)
    assert out.actions == (("hold_buckets", HoldBucket(
        bucket="h1", reason="auto-hold: all 3 OSDs under h1 are down")),)
    assert out.records == (("buckets", Buckets(frozenset({"h1"}), frozenset({"h1"}))),)
    # the same call on its own result holds nothing again
    again = context(snap(bucket_flags={"h1": NOUP}), Intent(auto_hold=True), Progress(), POL,
                    NOW, None)
    assert bucket_holds(again, out.records[0][1]).actions == ()


def test_an_operator_release_is_a_release_and_a_released_record():
    ctx = context(snap(*HELD, bucket_flags={"h1": NOUP}), RUN, RUNNING, POL, NOW, "running")
    out = bucket_holds(ctx, Buckets(frozenset({"h1"}), frozenset()))
    assert out.actions == (("releases", ReleaseBucket(bucket="h1",
                                                      reason="operator released the hold")),)
    assert out.records == (("buckets", Buckets(frozenset(), frozenset(), frozenset({"h1"}))),)
    assert held_report(ctx, out.records[0][1]) == StageOut()


def test_per_osd_holds_skip_the_held_and_the_booting():
    ctx = context(snap(HELD[0]), RUN, RUNNING, POL, NOW, "running")
    out = hold_osds(ctx, {5: NOW - 10}, frozenset({3}))
    assert out.actions == (("hold_osds", HoldOsd(osd=4, reason="held until its start is "
                                                 "granted")),)
    assert out.records == (("held_osds", frozenset({3, 4})),)
