"""One contract test over every registered policy: pinned signature, determinism, return
type, no mutation of inputs, sane bounds. Inputs are real snapshots and progress states taken
from a controlled run of the stepper model (not hand-made mocks)."""
from __future__ import annotations

from dataclasses import replace

import copy
import inspect

import pytest

from ceph_recovery.actions import Action, HeapRelease, QueryOkToStop, RestartOsd, Wait
from ceph_recovery.model import Budget, HostMem, Intent, Observation, OsdState, Progress
from ceph_recovery.plan import plan
from ceph_recovery.policies import REGISTRY, resolve
from stepper import make_model

MiB, GiB = 1 << 20, 1 << 30
ARITY = {"start_order": 2, "budget": 2, "footprint": 3, "over_budget": 6, "throttle": 1}
RECOVERY_KEYS = ("osd_recovery_max_active", "osd_max_backfills", "osd_recovery_sleep")
MCLOCK_KEYS = {"osd_mclock_override_recovery_settings": ("true",),
               "osd_mclock_profile": ("high_client_ops", "balanced", "high_recovery_ops")}
ENTRIES = [pytest.param(kind, name, id="%s-%s" % (kind, name))
           for kind in sorted(REGISTRY) for name in sorted(REGISTRY[kind])]


def samples():
    """(snapshot, progress, now) at every tick of a run with restarts and holds."""
    model = make_model(hosts=3, per_host=3, down_hosts=(1, 2), racks=2, ram=2 * GiB)
    model.osds[0].heap_release = True
    intent = Intent(mode="controlled", run_id="c", concurrency=2)
    pol, progress, out = resolve(intent), Progress(), []
    for _ in range(40):
        snap = model.snapshot()
        out.append((snap, progress, model.now))
        res = plan(snap, intent, progress, pol, model.now)
        progress = res.progress
        model.apply(res.actions)
        model.step(5.0)
    return out


SAMPLES = samples()
BUDGETS = [Budget(), Budget(kind="fraction", value=0.5, reserve_bytes=256 * MiB),
           Budget(kind="bytes", value=3 * GiB), Budget(kind="bytes", value=GiB,
                                                       reserve_bytes=2 * GiB)]
HOSTS = [HostMem(name="a", mem_total=64 * GiB, mem_used=10 * GiB, mem_available=50 * GiB),
         HostMem(name="b", mem_total=64 * GiB, mem_used=GiB, mem_available=GiB,
                 mem_limit=2 * GiB, source="cgroup")]
OBS = [(), (Observation(osd=1, pgs=16, downtime_s=60.0, pg_log_entries=0,
                        peak_bytes=400 * MiB),) * 4,
       (Observation(osd=2, pgs=100, downtime_s=3600.0, pg_log_entries=600000,
                    peak_bytes=3 * GiB),)]


def calls(kind, fn):
    """(args, check) pairs for one policy over the samples."""
    if kind == "start_order":
        for snap, _, _ in SAMPLES[::5]:
            cands = [o for o in snap.osds if not o.up]
            yield (cands, snap)
    elif kind == "budget":
        for h in HOSTS:
            for b in BUDGETS:
                if b.kind == fn.__name__ or (fn.__name__ == "absolute" and b.kind == "bytes"):
                    yield (h, b)
    elif kind == "footprint":
        for snap, _, now in SAMPLES[::10]:
            for o in snap.osds:
                for obs in OBS:
                    yield (o, list(obs), now)
    elif kind == "throttle":      # each OSD under each scheduler, and not known
        for snap, _, _ in SAMPLES[::10]:
            for o in snap.osds:
                for q in ("wpq", "mclock_scheduler", None):
                    yield (replace(o, op_queue=q),)
    else:
        intent = Intent(mode="controlled", run_id="c", restart_cooldown_s=60.0)
        for snap, progress, now in SAMPLES[::2]:
            for h in snap.hosts:
                yield (h, [o for o in snap.osds if o.host == h.name], snap, progress, intent,
                       now)


def check_result(kind, args, out):
    if kind == "start_order":
        assert isinstance(out, list) and all(isinstance(o, OsdState) for o in out)
        assert sorted(o.id for o in out) == sorted(o.id for o in args[0])
    elif kind == "budget":
        host, budget = args
        cap = host.mem_limit if host.source == "cgroup" and host.mem_limit else host.mem_total
        assert isinstance(out, int) and 0 <= out <= cap
    elif kind == "footprint":
        assert isinstance(out, int) and 64 * MiB <= out <= 1 << 40
    elif kind == "throttle":     # recovery settings only, each lowered to a valid number
        assert isinstance(out, tuple)
        for name, value in out:   # an mClock option only where the OSD runs mClock
            if name in MCLOCK_KEYS:
                assert args[0].op_queue == "mclock_scheduler" and value in MCLOCK_KEYS[name]
            else:
                assert name in RECOVERY_KEYS and isinstance(value, str) and float(value) >= 0
    else:
        assert out is None or isinstance(out, (HeapRelease, QueryOkToStop, RestartOsd, Wait))
        if isinstance(out, Action) and not isinstance(out, Wait):
            assert out.osd in {o.id for o in args[1]} and out.reason
        if isinstance(out, RestartOsd):
            assert args[2].ok_to_stop.get(out.osd) is True
            assert out.osd not in args[3].granted


@pytest.mark.parametrize("kind,name", ENTRIES)
def test_policy_contract(kind, name):
    fn = REGISTRY[kind][name]
    params = [p for p in inspect.signature(fn).parameters.values()
              if p.default is inspect.Parameter.empty]      # optional keywords may follow
    assert len(params) == ARITY[kind], (name, params)
    assert fn.__doc__, "every policy says what it does"
    n = 0
    for args in calls(kind, fn):
        before = copy.deepcopy(args)
        out = fn(*args)
        assert args == before, "%s mutated its inputs" % name
        assert fn(*copy.deepcopy(args)) == out, "%s is not deterministic" % name
        check_result(kind, args, out)
        n += 1
    assert n > 0


def test_registry_has_the_five_kinds():
    assert sorted(REGISTRY) == sorted(ARITY)
    assert all(REGISTRY[k] for k in REGISTRY)


@pytest.mark.parametrize("field,value", [("start_order", "fastest"), ("footprint", "guess"),
                                         ("over_budget", "reboot")])
def test_resolve_unknown_name_lists_known(field, value):
    intent = Intent(**{field: value})
    with pytest.raises(ValueError, match="known: .*%s" % sorted(REGISTRY[field])[0]):
        resolve(intent)


def test_resolve_unknown_budget_kind():
    with pytest.raises(ValueError, match="unknown budget policy 'percent'.*bytes, fraction"):
        resolve(Intent(budget=Budget(kind="percent")))


def test_resolve_names_the_policies():
    pol = resolve(Intent(start_order="domain_round_robin", footprint="static"))
    assert pol.names == ("domain_round_robin", "auto", "static", "heap_then_restart")
    assert pol.start_order is REGISTRY["start_order"]["domain_round_robin"]
