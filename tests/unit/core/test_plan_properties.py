"""Hypothesis properties of plan() over random small clusters driven by the stepper model.

Every tick: check_invariants holds (budget admission, no grant under a held domain or on a
host without helper/with a network finding, restart only with ok-to-stop True, prefix safety),
at most `concurrency` OSDs in flight per host (an OSD kept in preboot lends its slot to the
restart that makes room for it, and boots only where that leaves the host within them), no
GrantStart under an operator hold, and the model itself refuses a RestartOsd without a True
ok-to-stop answer. At the end: all OSDs up and Done, or a health check that says why not.
"""
from __future__ import annotations

from hypothesis import HealthCheck as HC
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ceph_recovery.model import Budget, Intent, Progress
from ceph_recovery.inflight import SETTLE_MAX_S
from ceph_recovery.predict import PROBE_LOAD_FRACTION
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.policies import REGISTRY, resolve
from ceph_recovery.policies.footprint import prior
from stepper import make_model
from ceph_recovery.view import View

MiB = 1 << 20
DT = 5.0
TICKS = 160
# model time for any run to end: SETTLE_MAX_S + stall_limit after a last progress late in it
LIVENESS_TICKS = 480
DUPS_RELEASE = "ceph version 16.2.10 (45fa1a083152e41a408d15505f594ec5f1b4fe17) pacific (stable)"


@st.composite
def clusters(draw):
    hosts = draw(st.integers(1, 4))
    per_host = draw(st.integers(1, 4))
    down = draw(st.sets(st.integers(0, hosts - 1), min_size=1))
    model = make_model(hosts=hosts, per_host=per_host, down_hosts=tuple(sorted(down)),
                       racks=draw(st.integers(1, 2)), ram=draw(st.integers(1, 6)) * 512 * MiB)
    for o in model.osds.values():
        o.peak = draw(st.integers(150, 900)) * MiB
        o.ok_to_stop = draw(st.booleans())
        o.heap_release = draw(st.sampled_from([None, True, False]))
        # a few OSDs may load inflated PG log dups (ceph_recovery.dups): they start alone
        o.ceph_version = draw(st.sampled_from([None, None, None, DUPS_RELEASE]))
        o.pglog_dups = draw(st.sampled_from([0, 0, 0, 0, 1]))
    names = ["h%d" % h for h in range(hosts)]
    if draw(st.booleans()):
        model.dead_helpers.add(draw(st.sampled_from(names)))
    intent = Intent(
        mode="controlled", run_id="p", concurrency=draw(st.integers(1, 3)),
        budget=Budget(kind="fraction", value=draw(st.sampled_from([0.6, 0.8, 0.95]))),
        holds=frozenset(draw(st.sets(st.sampled_from(names), max_size=1))),
        start_order=draw(st.sampled_from(sorted(REGISTRY["start_order"]))),
        footprint=draw(st.sampled_from(sorted(REGISTRY["footprint"]))),
        over_budget=draw(st.sampled_from(sorted(REGISTRY["over_budget"]))),
        restart_cooldown_s=draw(st.sampled_from([60.0, 600.0])), boot_timeout_s=120.0,
        stall_limit_s=60.0)
    return model, intent


def run(model, intent, ticks=TICKS):
    pol = resolve(intent)
    progress, res = Progress(), None
    model.last_progress = model.now
    lent = {}       # restarting OSD -> the OSD kept in preboot whose slot it shares
    for k in range(ticks):
        snap = model.snapshot()
        res = plan(snap, intent, progress, pol, model.now)
        errs = check_invariants(snap, intent, progress, res, pol, now=model.now)
        assert errs == [], (k, errs, model.log[-12:])
        lent.update((a.osd, a.room_for) for a in res.actions
                    if a.kind == "restart_osd" and a.room_for is not None)
        flight = View(snap, intent, res.progress, model.now).in_flight(
            res.progress.osd_map("granted"))
        lent = {r: x for r, x in lent.items() if r in flight.get(model.osds[r].host, ())}
        booted = {a.osd for a in res.actions if a.kind == "allow_boot"}
        for r, x in lent.items():     # a lender boots only within the host's slots
            v = flight.get(model.osds[x].host, ())
            assert x not in booted or len(v) <= intent.concurrency, (k, lent, booted, v)
        assert all(len(v) - sum(r in v and x in v for r, x in lent.items())
                   <= intent.concurrency for v in flight.values()), (flight, lent)
        for a in res.actions:
            if a.kind == "grant_start":
                assert not set(model.osds[a.osd].path) & intent.holds
        if any(a.kind in ("grant_start", "allow_boot") for a in res.actions) or \
                set(res.progress.osd_map("settling")) - set(progress.osd_map("settling")):
            model.last_progress = model.now        # a grant, a boot, an OSD finished
        progress = res.progress
        model.apply(res.actions)       # raises on a restart without a True ok-to-stop
        if progress.phase == "done":
            return progress, res
        model.step(DT)
    return progress, res


@settings(max_examples=120, deadline=None, suppress_health_check=[HC.too_slow])
@given(clusters())
def test_every_run_ends_all_up_or_names_what_it_left_within_its_bound(case):
    """Whatever the helpers (one may be dead), holds and memory: the run ends, at most
    max(boot_timeout, SETTLE_MAX_S) + stall_limit after its last progress, all up with its
    flags restored, or incomplete naming every OSD it left down, held and stopped, and no
    grant left behind."""
    model, intent = case
    progress, res = run(model, intent, ticks=LIVENESS_TICKS)
    assert progress.phase == "done", ("the run did not end", res.summary, model.log[-12:])
    assert model.now - model.last_progress <= max(intent.boot_timeout_s, SETTLE_MAX_S) + \
        intent.stall_limit_s + DT, (model.now, model.last_progress)
    assert not progress.osd_map("granted") and not model.cluster_flags
    down = sorted(i for i, o in model.osds.items() if not o.up)
    if progress.stalled_since is None:
        assert not down
        return
    named = " ".join(d for h in res.health if h.code == "RECOVERY_INCOMPLETE" for d in h.detail)
    assert down and all(("%d" % i) in named for i in down), (down, named)
    assert all(model.osds[i].noup for i in down)
    # stopped, or its stop still asked for (its host's helper is dead)
    assert all(not model.osds[i].running or i in progress.osd_map("stopped") for i in down)


@settings(max_examples=80, deadline=None, suppress_health_check=[HC.too_slow])
@given(clusters())
def test_budget_never_exceeded_when_predictions_hold(case):
    """With the static prior, every real peak below it (as the cluster's own size caps it) and every load within the probe's
    share of it (PROBE_LOAD_FRACTION: a probe start admits the load alone), no host that
    started within its budget ever goes over it, and nothing is OOM-killed."""
    model, intent = case
    assume(all(model.used(h) <= ram for h, ram in model.host_ram.items()))
    model.load_fraction = PROBE_LOAD_FRACTION
    intent = intent.__class__(**{**intent.__dict__, "footprint": "static"})
    # the prior is capped by the largest rss of the running OSDs (policies/footprint.py): a
    # survivor's rss never falls below the model's idle_bytes (a heap release halves it, down
    # to that), so peaks under the prior capped at idle_bytes stay under every prediction
    for o in model.osds.values():
        o.peak = min(o.peak, prior(o.pgs, 0, 0.0, running_rss=model.idle_bytes))
    pol = resolve(intent)
    budgets = {h.name: pol.budget(h, intent.budget) for h in model.snapshot().hosts}
    start = {h: model.used(h) for h in budgets}
    progress = Progress()
    for _ in range(TICKS):
        res = plan(model.snapshot(), intent, progress, pol, model.now)
        progress = res.progress
        model.apply(res.actions)
        if progress.phase == "done":
            break
        model.step(DT)
        for h, b in budgets.items():
            assert model.used(h) <= max(b, start[h]), (h, model.used(h), b)
    assert model.oom_kills == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HC.too_slow])
@given(st.integers(1, 40), st.integers(1, 20), st.sampled_from(["paused", "abort", "idle"]))
def test_pause_or_abort_mid_run_then_resume_converges(at, length, mode):
    """Switch the intent to pause/abort/idle at tick `at` for `length` ticks, then start again
    (same run for pause, a new run id otherwise): invariants hold on every tick, nothing is
    granted or booted while not controlled, and the run still ends all up with flags restored."""
    model = make_model(hosts=3, per_host=3, down_hosts=(1, 2), racks=2, ram=3072 * MiB)
    base = Intent(mode="controlled", run_id="a", concurrency=2)
    pol = resolve(base)
    progress = Progress()
    for k in range(TICKS):
        if k < at:
            intent = base
        elif k < at + length:
            intent = Intent(mode=mode, run_id="a", concurrency=2)
        else:
            intent = base if mode == "paused" else Intent(mode="controlled", run_id="b",
                                                          concurrency=2)
        snap = model.snapshot()
        res = plan(snap, intent, progress, pol, model.now)
        assert check_invariants(snap, intent, progress, res, pol, now=model.now) == []
        if intent.mode != "controlled":
            assert not {a.kind for a in res.actions} & {"grant_start", "allow_boot",
                                                         "restart_osd"}
        progress = res.progress
        if k >= at + length:        # resumed: the run says so from the first tick on
            assert progress.phase in ("running", "done"), (k, progress.phase)
        model.apply(res.actions)
        if progress.phase == "done" and k >= at + length:
            break
        model.step(DT)
    assert progress.phase == "done" and model.all_up()
    assert not model.cluster_flags and not any(o.noup for o in model.osds.values())
