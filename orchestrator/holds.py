"""The run's noup holds, as stages over values: each reads the call's Context and the records
it names, and returns a StageOut (its actions, health lines and new record values).

Rules:
- a new run sets RUN_CLUSTER_FLAGS the cluster lacks (while there is anything to start) and
  replaces the bucket noup over its scope by per-OSD holds: the bucket is released in stage
  "releases", after the stage "hold_osds" that holds each of its down OSDs (plan.py I5);
- an operator hold (intent.holds) sets noup on its bucket; an operator release lifts a noup
  this run or the operator set, never one the run found (a bucket noup it did not set);
- auto-hold (intent.auto_hold) holds the topmost bucket whose OSDs are all down, unless a
  running run holds that bucket's in-scope OSDs per OSD already;
- every down candidate not yet allowed to boot carries a per-OSD noup;
- RECOVERY_DOMAIN_HELD names every held bucket, who holds it, and how many down OSDs wait.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Dict, FrozenSet, List, Mapping, Set, Tuple

from .actions import HoldBucket, HoldOsd, ReleaseBucket, SetFlag
from .context import Context
from .model import RUN_CLUSTER_FLAGS
from .stageout import Health, Staged, StageOut
from .view import osd_path


@dataclass(frozen=True)
class Buckets:
    """The run's bucket records: buckets it holds by noup (`held`; `auto_held` of them by
    auto-hold) and buckets released in this call (`released`, never persisted)."""
    held: FrozenSet[str]
    auto_held: FrozenSet[str]
    released: FrozenSet[str] = field(default_factory=frozenset)


def start_run(ctx: Context, b: Buckets) -> StageOut:
    """First call of a run: set cluster flags, convert bucket noup to per-OSD holds."""
    acts: List[Staged] = []
    run = ctx.intent.run_id or "-"
    for f in RUN_CLUSTER_FLAGS:
        if f not in ctx.snapshot.cluster_flags and (ctx.view.candidates or
                                                     ctx.progress.osd_map("granted")):
            acts.append(("flags", SetFlag(flag=f, reason="run %s: keep data in place while "
                                          "OSDs return" % run)))
    scope, holds, convert = set(ctx.intent.scope), ctx.intent.holds, set()
    for o in ctx.view.candidates:
        below = not scope
        for bucket in osd_path(o):
            below = below or bucket in scope
            if below and bucket in ctx.view.noup_buckets and bucket not in holds:
                convert.add(bucket)
    for bucket in sorted(convert):
        acts.append(("releases", ReleaseBucket(bucket=bucket, reason="run %s: bucket noup "
                                               "replaced by per-OSD holds" % run)))
    return StageOut(actions=tuple(acts), records=(("buckets", Buckets(
        b.held - convert, b.auto_held - convert, b.released | convert)),))


def bucket_holds(ctx: Context, b: Buckets) -> StageOut:
    """Operator holds and releases, and auto-hold of buckets whose OSDs are all down."""
    noup, holds = ctx.view.noup_buckets, ctx.intent.holds
    held, auto, released = set(b.held), set(b.auto_held), set(b.released)
    acts: List[Staged] = []
    for bucket in sorted(holds):
        if bucket not in noup:
            acts.append(("hold_buckets", HoldBucket(bucket=bucket, reason="operator hold")))
        held.add(bucket)
        auto.discard(bucket)
    if ctx.intent.auto_hold:
        for bucket, n in _auto_holds(ctx, held):
            acts.append(("hold_buckets", HoldBucket(bucket=bucket, reason="auto-hold: all %d "
                                                    "OSDs under %s are down" % (n, bucket))))
            held.add(bucket)
            auto.add(bucket)
    for bucket in sorted(held - set(holds) - auto):
        if bucket in noup:
            acts.append(("releases", ReleaseBucket(bucket=bucket,
                                                   reason="operator released the hold")))
            released.add(bucket)
        held.discard(bucket)
    return StageOut(actions=tuple(acts), records=(("buckets", Buckets(
        frozenset(held), frozenset(auto), frozenset(released))),))


def _auto_holds(ctx: Context, held: AbstractSet[str]) -> List[Tuple[str, int]]:
    """(bucket, its OSD count) for each topmost bucket, not held yet, whose OSDs are all
    down; a running run's scope buckets are left to its per-OSD holds."""
    total: Dict[str, int] = {}
    down: Dict[str, int] = {}
    parent: Dict[str, str] = {}
    scoped: Set[str] = set()
    for o in ctx.snapshot.osds:
        path = osd_path(o)
        for k, bucket in enumerate(path):
            total[bucket] = total.get(bucket, 0) + 1
            if not o.up:
                down[bucket] = down.get(bucket, 0) + 1
            if k:
                parent[bucket] = path[k - 1]
            if o.id in ctx.view.in_scope:
                scoped.add(bucket)
    full = {bucket for bucket, n in total.items() if down.get(bucket, 0) == n}
    active = ctx.state is not None and ctx.state != "abort"
    out = []
    for bucket in sorted(full):
        if parent.get(bucket) in full or bucket in ctx.view.noup_buckets or bucket in held:
            continue
        if active and bucket in scoped:
            continue      # the running run holds its scope per OSD
        out.append((bucket, total[bucket]))
    return out


def hold_osds(ctx: Context, booting: Mapping[int, float],
              held_osds: AbstractSet[int]) -> StageOut:
    """Every down candidate not yet allowed to boot carries a per-OSD noup."""
    acts: List[Staged] = []
    for o in sorted(ctx.view.candidates, key=lambda x: x.id):
        if "noup" in o.flags or o.id in booting:
            continue
        acts.append(("hold_osds", HoldOsd(osd=o.id, reason="held until its start is granted")))
    if not acts:
        return StageOut()
    return StageOut(actions=tuple(acts), records=(
        ("held_osds", frozenset(held_osds) | {a.osd for _, a in acts}),))


def held_report(ctx: Context, b: Buckets) -> StageOut:
    """RECOVERY_DOMAIN_HELD: every held bucket and how many down OSDs wait under it."""
    held = set(ctx.intent.holds) | b.held | (ctx.view.noup_buckets if ctx.state else set())
    held -= b.released
    if not held:
        return StageOut()
    waiting: Dict[str, int] = {}
    for o in ctx.snapshot.osds:
        if not o.up:
            for bucket in osd_path(o):
                if bucket in held:
                    waiting[bucket] = waiting.get(bucket, 0) + 1
    lines: List[Health] = []
    for bucket in sorted(held):
        who = ("operator" if bucket in ctx.intent.holds else "auto-hold"
               if bucket in b.auto_held else "this run" if bucket in b.held else "bucket noup")
        lines.append(("RECOVERY_DOMAIN_HELD", "%s: held (%s), %d down OSD(s) wait" % (
            bucket, who, waiting.get(bucket, 0)), 1))
    return StageOut(health=tuple(lines))
