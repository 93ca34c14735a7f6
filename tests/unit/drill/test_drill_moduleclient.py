"""`ceph-recovery-drill`, the module drill's thin client: the commands it sends the module, in
order, for a recorded sequence of the module's answers (no lab: a recording mgr), and what it
derives from its samples."""
from __future__ import annotations

import errno
import json

import pytest

from ceph_recovery_tools.drill import cgroup_limit, moduledrill, sampler
from ceph_recovery_tools.drill.runner import Drill, DrillOptions


class Mgr(object):
    """Answers mgr commands from a script: prefix -> list of (rc, body) used in turn (the
    last one repeats); records every command and every cgroup limit in one log."""

    def __init__(self, script, log):
        self.script, self.log = {k: list(v) for k, v in script.items()}, log

    def mgr_command(self, text, _inbuf, timeout=0):
        cmd = json.loads(text)
        self.log.append(("mgr", cmd["prefix"]) + tuple(
            "%s=%s" % (k, cmd[k]) for k in sorted(cmd) if k not in ("prefix", "format")))
        answers = self.script[cmd["prefix"]]
        rc, body = answers.pop(0) if len(answers) > 1 else answers[0]
        return rc, json.dumps(body).encode() if body is not None else b"", \
            "" if rc == 0 else "recovery: drill d1 aborted: operator abort"


class RecObjects(object):
    """Stands in for the lab pool's ObjectSet: records each batch of writes in the log."""

    def __init__(self, log):
        self.log = log

    def write_aio(self, prefix, count):
        self.log.append(("objects", prefix, count))
        return count


class FakeDrill(object):
    def __init__(self, opts, script, log):
        self.o, self.state, self.result = opts, {"hosts": {"h2": {}}}, {}
        self.cluster = Mgr(script, log)

    def ensure_helpers(self):
        pass


class RecSystemd(object):
    """Stands in for the lab's systemd emulation (naive.Systemd): records its rounds."""

    def __init__(self, log):
        self.log = log

    def __call__(self, d, osds):
        self.log.append(("systemd", tuple(osds)))
        return self

    def tick(self):
        self.log.append(("systemd tick",))

    def settle(self, deadline):
        self.log.append(("systemd settle",))


def opts(**kw):
    base = dict(lab_dir="/L", fail="host:h2", downtime=30.0, budget="80%", json_out="/x")
    base.update(kw)
    return DrillOptions(**base)


PLANNED = {"order": [{"osd": 3, "host": "h2", "predicted_bytes": 300 << 20},
                     {"osd": 2, "host": "h2", "predicted_bytes": 280 << 20}]}
DRY_RUN = ("mgr", "recovery start-controlled", "budget=80%", "dry_run=True", "scope=['h2']")
SCRIPT = {
    "recovery drill start": [(0, {"id": "d1", "bucket": "h2", "osds": [2, 3]})],
    "recovery start-controlled": [(0, PLANNED)],
    # a drill is requested until the module's next tick asked ok-to-stop for it
    "recovery drill report": [(0, {"phase": "requested"}), (0, {"phase": "entering"}),
                              (0, {"phase": "down"})],
    "recovery drill abort": [(0, {"id": "d1", "aborting": True})],
    "recovery wait": [(-errno.ETIMEDOUT, None), (-errno.ETIMEDOUT, None),
                      (-errno.ECANCELED, None)],
}


@pytest.fixture
def log(monkeypatch):
    out = []
    monkeypatch.setattr(cgroup_limit, "set_limit",
                        lambda state, host, limit: out.append(("limit", host, limit)))
    # the watermark is taken right after the limit is set (its peak counts from there)
    monkeypatch.setattr(cgroup_limit, "watermark",
                        lambda state, host: out.append(("watermark", host)) or "wm-" + host)
    monkeypatch.setattr(moduledrill, "POLL_S", 0.0)
    return out


def test_naive_with_a_limit_limits_before_its_writes_then_aborts_then_restarts_as_systemd(
        log, monkeypatch):
    monkeypatch.setattr(moduledrill.naive, "Systemd", RecSystemd(log))
    d = FakeDrill(opts(naive=True, host_mem_limit=3 << 30, write_load=5, concurrency="1"),
                  SCRIPT, log)
    limited = {}
    _t_down, wait = moduledrill._drive(d, ["h2"], [2, 3], limited, RecObjects(log))
    assert log == [
        ("mgr", "recovery drill start", "budget=80%", "concurrency=1", "downtime=30s",
         "fail=h2", "write_load=5"),
        ("mgr", "recovery drill report", "drill_id=d1"),
        ("mgr", "recovery drill report", "drill_id=d1"),
        ("mgr", "recovery drill report", "drill_id=d1"),
        ("limit", "h2", 3 << 30), ("watermark", "h2"),
        ("objects", "during", 2000),
        DRY_RUN,
        ("mgr", "recovery drill abort"),
        ("systemd", (2, 3)),
        ("systemd tick",), ("mgr", "recovery wait"),
        ("systemd tick",), ("mgr", "recovery wait"),
        ("systemd tick",), ("mgr", "recovery wait"),
        ("systemd settle",)]
    assert limited == {"h2": "wm-h2"} and d.result["drill_id"] == "d1"
    assert d.result["planned_order"] == PLANNED["order"]
    assert wait == (-errno.ECANCELED, "recovery: drill d1 aborted: operator abort")


def test_controlled_neither_limits_nor_aborts(log):
    d = FakeDrill(opts(fail="rack:r1"), dict(SCRIPT, **{"recovery wait": [(0, None)]}), log)
    _t, wait = moduledrill._drive(d, ["h1", "h2"], [0, 1, 2, 3], [], RecObjects(log))
    assert [e[1] for e in log] == ["recovery drill start"] + ["recovery drill report"] * 3 + [
        "during", "recovery start-controlled", "recovery wait"]
    assert log[0] == ("mgr", "recovery drill start", "budget=80%", "downtime=30s", "fail=r1")
    assert wait == (0, "")


def fitted_drive(log, **fit):
    """A drill of h2 through the module client whose budget --fit-first/--fit-restart (`fit`)
    sets once down: the drill, and the hosts whose cgroups it limited."""
    script = dict(SCRIPT, **{"recovery drill budget": [(0, {"id": "d1"})],
                             "recovery wait": [(0, None)]})
    d = FakeDrill(opts(concurrency="1", **fit), script, log)
    limited = {}
    moduledrill._drive(d, ["h2"], [2, 3], limited, RecObjects(log))
    return d, limited


def test_fit_first_once_down_and_written_dry_runs_the_exit_sets_its_budget_then_the_limit(log):
    MiB = 1 << 20
    d, limited = fitted_drive(log, fit_first=1.05)
    budget = int(1.05 * 300 * MiB)
    assert log == [
        ("mgr", "recovery drill start", "budget=80%", "concurrency=1", "downtime=30s",
         "fail=h2"),
        ("mgr", "recovery drill report", "drill_id=d1"),
        ("mgr", "recovery drill report", "drill_id=d1"),
        ("mgr", "recovery drill report", "drill_id=d1"),
        ("objects", "during", 2000),
        DRY_RUN,
        ("mgr", "recovery drill budget", "budget=%d" % budget),
        ("mgr", "recovery start-controlled", "budget=%d" % budget, "dry_run=True",
         "scope=['h2']"),
        ("limit", "h2", int(budget / 0.9)), ("watermark", "h2"),
        ("mgr", "recovery wait")]
    assert limited == {"h2": "wm-h2"} and d.result["budget"] == str(budget)
    assert d.result["fit_first"]["predicted_first_bytes"] == 300 * MiB


def test_fit_restart_budget_is_the_second_planned_start_plus_a_share_of_the_first(log):
    MiB = 1 << 20
    d, limited = fitted_drive(log, fit_restart=0.6)
    budget = int(280 * MiB + 0.6 * 300 * MiB)
    assert ("mgr", "recovery drill budget", "budget=%d" % budget) in log
    assert ("limit", "h2", int(budget / 0.9)) in log
    assert limited == {"h2": "wm-h2"} and d.result["budget"] == str(budget)
    assert d.result["fit_first"]["predicted_second_bytes"] == 280 * MiB


def test_fit_first_without_a_planned_start_aborts_the_drill_and_sets_no_limit(log):
    script = dict(SCRIPT, **{"recovery start-controlled": [(0, {"order": []})]})
    d = FakeDrill(opts(fit_first=1.05), script, log)
    limited = {}
    with pytest.raises(RuntimeError) as e:
        moduledrill._drive(d, ["h2"], [2, 3], limited, RecObjects(log))
    assert "plans no start on h2" in str(e.value)
    assert limited == {} and not [x for x in log if x[0] == "limit"]
    assert log[-2:] == [("mgr", "recovery start-controlled", "budget=80%", "dry_run=True",
                         "scope=['h2']"), ("mgr", "recovery drill abort")]


def test_a_drill_that_never_ends_is_aborted_once_past_the_timeout_and_still_returns(log):
    """Not ended even after its abort: the tool returns (its report is still written)."""
    script = dict(SCRIPT, **{"recovery wait": [(-errno.ETIMEDOUT, None)]})
    d = FakeDrill(opts(timeout=0.0, downtime=0.0), script, log)
    rc, why = moduledrill.until_end(d, "d1", 0.0)
    assert rc == -errno.ETIMEDOUT and why == "drill d1 not ended 0.0s after its abort"
    assert [e[1] for e in log] == ["recovery wait", "recovery drill abort", "recovery wait"]
    assert d.result["timed_out"] is True and d.result["not_ended_after_abort"] is True


@pytest.mark.parametrize("kw,word", [({"write_load": 501}, "--write-load"),
                                     ({"stop": "unplug"}, "--stop"),
                                     ({"stall_limit": 5.0}, "--stall-limit")])
def test_bad_options_are_refused_before_any_lab(kw, word):
    with pytest.raises(ValueError) as e:
        Drill(opts(**kw)).run()
    assert word in str(e.value)


def test_stop_kill_and_inactive_grace_go_to_drill_start_and_the_defaults_are_the_modules():
    cmd = moduledrill.start_command(opts(fail="host:h2", stop="kill", inactive_grace=120.0))
    assert (cmd["stop"], cmd["inactive_grace"]) == ("kill", "120s")
    cmd = moduledrill.start_command(opts(fail="host:h2"))
    assert "stop" not in cmd and "inactive_grace" not in cmd


def test_fail_must_name_a_host_or_rack():
    with pytest.raises(ValueError):
        moduledrill.start_command(opts(fail="osd:2"))


def test_restart_mgr_after_restarts_it_once_while_waiting(log, monkeypatch):
    monkeypatch.setattr(moduledrill.launch, "restart_mgr",
                        lambda state: log.append(("restart_mgr",)))
    d = FakeDrill(opts(restart_mgr_after=6.0), SCRIPT, log)
    rc, _text = moduledrill.until_end(d, "d1", 60.0, restart_at=0.0)
    assert rc == -errno.ECANCELED
    assert [e[1] if e[0] == "mgr" else e[0] for e in log] == [
        "restart_mgr", "recovery wait", "recovery wait", "recovery wait"]
    assert d.result["mgr_restarted_at_s"] >= 6.0


def test_the_options_a_drill_overrides_are_the_pool_delete_for_its_load_and_the_stall_limit():
    assert moduledrill.overrides(opts()) == []
    assert moduledrill.overrides(opts(write_load=5, stall_limit=90.0)) == [
        ("mon", "mon_allow_pool_delete", "true"), ("mgr", "mgr/recovery/stall_limit", "90")]


def sample(t, stall=None):
    return {"time": t, "module": {"phase": "running", "stall": stall}}


def test_stalled_is_the_last_unbroken_stall_the_samples_saw():
    too_small = {"checks": ["RECOVERY_BUDGET_TOO_SMALL"], "reasons": ["h2: osd.3 needs 1G"]}
    boot = {"checks": ["RECOVERY_BOOT_TIMEOUT"], "reasons": ["osd.2 not up"]}
    assert sampler.stalled([sample(0.0), sample(1.0)]) is None
    got = sampler.stalled([sample(0.0, boot), sample(1.0), sample(2.0, too_small),
                           sample(3.0, too_small), sample(7.5, too_small), sample(8.0)])
    assert got == dict(too_small, for_s=5.5)
    # the run's end (RECOVERY_INCOMPLETE) follows the stall that caused it: the cause is kept
    incomplete = {"checks": ["RECOVERY_INCOMPLETE"], "reasons": ["h2: osd.2,3 still down"]}
    got = sampler.stalled([sample(0.0, too_small), sample(90.0, too_small),
                           sample(91.0, incomplete), sample(95.0, incomplete)])
    assert got == dict(too_small, for_s=90.0)
    assert sampler.stalled([sample(1.0, incomplete)]) == dict(incomplete, for_s=0.0)
    both = {"checks": too_small["checks"] + incomplete["checks"], "reasons": ["both"]}
    got = sampler.stalled([sample(0.0, too_small), sample(90.0, too_small),
                           sample(91.0, both), sample(93.0, incomplete)])
    assert got == dict(too_small, for_s=90.0)
    assert sampler.stalled([sample(0.0, both), sample(3.0, incomplete)]) == \
        dict(both, for_s=0.0)


def test_times_are_the_modules_and_the_samples_only_where_it_measured_none():
    rep = {"time_to_all_up_s": 4.0, "time_to_all_active_s": 5.0, "time_to_clean_s": None}
    c = {"osds": 2, "pgs": 8}
    samples = [{"time": 100.0 + t, "cluster": dict(c, up=up, pgs_active=a, pgs_clean=cl)}
               for t, up, a, cl in ((0, [0], 4, 0), (3, [0, 1], 8, 2), (9, [0, 1], 8, 8),
                                    (10, [0, 1], 8, 8))]
    assert moduledrill.times(rep, samples, 100.0) == {
        "time_to_all_up_s": 4.0, "time_to_all_pgs_active_s": 5.0,
        "time_to_all_pgs_clean_s": 9.0}


def test_a_naive_runs_times_are_the_samples_until_the_pgs_stay_active():
    """The module's abort ends with every OSD up; the kernel kills one after: the naive run's
    time to all PGs active is when they stay active, from the tool's samples."""
    rep = {"time_to_all_up_s": 2.0, "time_to_all_active_s": 2.0, "time_to_clean_s": None}
    c = {"osds": 2, "pgs": 8}
    samples = [{"time": 100.0 + t, "cluster": dict(c, up=up, pgs_active=a, pgs_clean=cl)}
               for t, up, a, cl in ((0, [0], 4, 0), (2, [0, 1], 8, 2), (6, [0], 5, 0),
                                    (20, [0, 1], 8, 4), (30, [0, 1], 8, 8))]
    assert moduledrill.times(rep, samples, 100.0, naive=True) == {
        "time_to_all_up_s": 20.0, "time_to_all_pgs_active_s": 20.0,
        "time_to_all_pgs_clean_s": 30.0}
