"""The Module class itself (module.py and its mixins) on a stand-in `mgr_module`: no command
handler sends a mon or OSD command, writes the store or blocks (ceph-mgr runs a module's
commands one at a time, helper-report included); shutdown() logs each leftover with the
command that clears it; a module loaded on a state with a run going raises
RECOVERY_LEFTOVERS until that run ends."""
from __future__ import annotations

import collections
import importlib
import json
import logging
import sys
import time
import types

import pytest

import maintcases as ME  # noqa: E402  (registered by conftest.py)

world = ME.world


class HandlerIO(AssertionError):
    pass


def _fake_mgr_module():
    mod = types.ModuleType("mgr_module")
    mod.HandleCommandResult = collections.namedtuple("HandleCommandResult", "retval stdout stderr")

    class CommandResult(object):
        def __init__(self, tag=""):
            import threading
            self.ev, self.r, self.outb, self.outs = threading.Event(), 0, "", ""
    mod.CommandResult = CommandResult
    mod.Option = lambda name, **kw: dict(kw, name=name)
    mod.CLIReadCommand = mod.CLIWriteCommand = lambda prefix: (lambda fn: fn)

    class MgrModule(object):
        def __init__(self, *a, **kw):
            self.log = logging.getLogger("test-recovery")
            self.kv = {}

        def get_module_option(self, name):
            return next(o.get("default") for o in type(self).MODULE_OPTIONS if o["name"] == name)

        def get_store(self, key):
            return self.kv.get(key)

        def set_store(self, key, value):
            self.kv[key] = value

        def send_command(self, *a):
            raise HandlerIO("no mon in these tests: send_command%r" % (a[1:4],))
    mod.MgrModule = MgrModule
    return mod


@pytest.fixture
def Module():
    saved = {k: sys.modules.get(k) for k in ("mgr_module", "recovery.module",
                                             "recovery.compat", "recovery.maintcli",
                                             "recovery.lifecycle")}
    sys.modules["mgr_module"] = _fake_mgr_module()
    for k in list(saved)[1:]:
        sys.modules.pop(k, None)
    try:
        yield importlib.import_module("recovery.module").Module
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def _boom(name):
    def f(*a, **kw):
        raise HandlerIO("a command handler called %s%r" % (name, a[:2]))
    return f


def make_module(Module, world):
    m = Module()
    maps = {"osd_map": world["map"], "osd_map_tree": world["tree"], "pg_dump": world["pgs"]}
    m.get = lambda what: maps[what]
    m._epoch_now = lambda: world["map"]["epoch"]
    return m


def forbid_io(m):
    for name in ("mon_command", "osd_command", "send_command", "check_mon_command",
                 "set_store", "tell_command"):
        setattr(m, name, _boom(name))
    m.rados = types.SimpleNamespace(pool_exists=_boom("rados.pool_exists"))


def test_no_command_handler_sends_a_mon_command_writes_the_store_or_blocks(Module, world):
    m = make_module(Module, world)
    m.engine.observe(world["map"], world["tree"], world["pgs"], time.time())
    forbid_io(m)
    rep = json.dumps({"version": 1, "host": "h1", "time": time.time(), "seq": 1,
                      "memory": {"total": 8 << 30, "used": 1 << 28, "available": 6 << 30,
                                 "limit": None, "source": "host"},
                      "osds": [{"id": 0, "process": "running", "rss": 1 << 26},
                               {"id": 1, "process": "running", "rss": 1 << 26}],
                      "done": []})
    calls = [
        ("status", m.cmd_status, ()), ("helper-report", m.cmd_helper_report, (rep, "h1")),
        ("maintenance enter", m.cmd_maint_enter, ("h2", "disk", "1h")),
        ("wait", m.cmd_wait, (2.0,)), ("maintenance ls", m.cmd_maint_ls, ()),
        ("maintenance exit", m.cmd_maint_exit, ("h2",)),
        ("drill start", m.cmd_drill_start, ("h2", "30s", "80%", None, 10)),
        ("drill budget", m.cmd_drill_budget, ("70%",)),
        ("drill report", m.cmd_drill_report, ()), ("wait", m.cmd_wait, ()),
        ("drill abort", m.cmd_drill_abort, ()),
        ("start-controlled --dry-run", m.cmd_start, (None, None, None, True)),
        ("start-controlled", m.cmd_start, ("80%",)), ("pause", m.cmd_pause, ()),
        ("resume", m.cmd_resume, ()), ("hold", m.cmd_hold, ("h1",)),
        ("release", m.cmd_release, ("h1",)), ("abort", m.cmd_abort, ()),
        ("network probe", m.cmd_network_probe, ()), ("network", m.cmd_network, ()),
        ("wait", m.cmd_wait, ()), ("version", m.cmd_version, ())]
    slow = []
    for name, fn, args in calls:
        t0 = time.monotonic()
        res = fn(*args)
        took = time.monotonic() - t0
        if took > 0.5:
            slow.append((name, round(took, 2)))
        assert res.retval in (0, -110), (name, res)
    assert slow == []
    # the requests were recorded, not decided: the tick asks the mons
    kinds = [e["action"].get("reason", "") for e in m.engine.run.journal]
    assert any("maintenance enter h2 (disk): requested" in k for k in kinds), kinds
    assert any("drill start d" in k and "requested" in k for k in kinds), kinds


def running_run(Module, world):
    """A module whose run over h3 (both OSDs down) set its flags, on a recording mon."""
    ME.set_up(world, 4, False)
    ME.set_up(world, 5, False)
    m = make_module(Module, world)
    mon = ME.Mon(world["map"])
    m.mon_command = lambda cmd, inbuf=None, timeout=None: mon.mon_command(cmd)
    eng = m.engine
    eng.ceph = eng.executor.ceph = m
    eng.observe(world["map"], world["tree"], world["pgs"], 1000.0)
    ME.helper(eng, "h1", {0: True, 1: True}, 1000.0)
    ME.helper(eng, "h2", {2: True, 3: True}, 1000.0)
    ME.helper(eng, "h3", {4: False, 5: False}, 1000.0)
    eng.begin(eng.start("80%", ["h3"], 1, 1000.0), 1000.0)
    ME.tick(eng, world, 1001.0)
    assert {"noout", "norebalance"} <= set(world["map"]["flags_set"]), list(eng.run.journal)
    return m, mon


def test_shutdown_logs_each_leftover_with_its_command_and_restores_nothing(Module, world,
                                                                             caplog):
    m, mon = running_run(Module, world)
    mon.calls.clear()
    from recovery import leftovers
    with m._lock:
        assert leftovers.left_on_cluster(m.engine), (m.engine.active, m.engine.run.progress)
    with caplog.at_level(logging.WARNING, logger="test-recovery"):
        m.shutdown()
    text = caplog.text
    assert "stopping during run r1000" in text
    assert "cluster flag noout (run r1000): `ceph osd unset noout`" in text
    assert "cluster flag norebalance (run r1000): `ceph osd unset norebalance`" in text
    assert mon.calls == []                  # restores nothing itself


def test_a_load_after_a_stop_mid_run_raises_leftovers_until_the_run_ends(Module, world):
    m, mon = running_run(Module, world)
    m._persist()
    # the mgr re-executes itself (module disabled and enabled again): a new Module loads
    m2 = make_module(Module, world)
    m2.kv = m.kv
    m2.mon_command = m.mon_command
    m2.engine.ceph = m2.engine.executor.ceph = m2
    m2._load()
    from recovery import leftovers
    with m2._lock:
        leftovers.update_check(m2.engine)
    summary, detail = m2.engine.shell_checks["RECOVERY_LEFTOVERS"]
    assert "stopped during run r1000" in summary
    assert "cluster flag noout (run r1000): `ceph osd unset noout`" in detail
    assert m2.engine.shell_health()["RECOVERY_LEFTOVERS"]["severity"] == "warning"
    # the run ends (aborted): its flags restored, the check goes
    with m2._lock:
        m2.engine.set_mode("abort", 1010.0)
    for k in range(6):
        ME.tick(m2.engine, world, 1011.0 + k)
    assert not m2.engine.active and "noout" not in world["map"]["flags_set"]
    with m2._lock:
        leftovers.update_check(m2.engine)
    assert "RECOVERY_LEFTOVERS" not in m2.engine.shell_checks


def test_a_load_without_a_run_going_raises_nothing(Module, world):
    m = make_module(Module, world)
    m._load()
    from recovery import leftovers
    leftovers.update_check(m.engine)
    assert "RECOVERY_LEFTOVERS" not in m.engine.shell_checks


def _report(version, seq=1, helper_version="9.9.9"):
    return json.dumps({"version": version, "helper_version": helper_version, "host": "h1",
                       "time": time.time(), "seq": seq,
                       "memory": {"total": 8 << 30, "used": 1 << 28, "available": 6 << 30,
                                  "limit": None, "source": "host"},
                       "osds": [{"id": 0, "process": "running", "rss": 1 << 26}], "done": []})


def test_a_helper_of_another_protocol_is_refused_and_named_until_it_speaks_ours(Module, world):
    import errno
    from ceph_recovery import __version__
    m = make_module(Module, world)
    mon = ME.Mon(world["map"])
    m.mon_command = lambda cmd, inbuf=None, timeout=None: mon.mon_command(cmd)
    m.get = lambda what, _g=m.get: {"health": {"checks": {}}}[what] if what == "health" \
        else _g(what)
    raised = []
    m.set_health_checks = raised.append
    res = m.cmd_helper_report(_report(2), "h1")
    assert res.retval == -errno.EPROTONOSUPPORT
    assert "h1" in res.stderr and "protocol 2" in res.stderr and "9.9.9" in res.stderr
    assert "h1" not in m.engine.reports                     # refused: nothing taken
    m._tick()
    check = raised[-1]["RECOVERY_HELPER_PROTOCOL"]
    assert check["count"] == 1 and check["detail"][0].startswith("host h1: helper "
                                                                 "ceph-recovery 9.9.9")
    doc = json.loads(m.cmd_version("json").stdout)
    assert doc["module"] == __version__ and doc["protocol"] == 1 and doc["protocols"] == [1]
    assert doc["helpers"]["h1"]["refused"] is True and doc["helpers"]["h1"]["protocol"] == 2
    assert "h1 9.9.9 REFUSED (protocol 2)" in m.cmd_version().stdout
    assert m.cmd_helper_report(_report(1, seq=2, helper_version=__version__), "h1").retval == 0
    m._tick()
    assert "RECOVERY_HELPER_PROTOCOL" not in raised[-1]
    assert json.loads(m.cmd_version("json").stdout)["helpers"]["h1"] == {
        "version": __version__, "protocol": 1, "refused": False,
        "seen_s_ago": pytest.approx(0, abs=5)}
    status = json.loads(m.cmd_status("json").stdout)
    assert status["version"] == {"module": __version__, "protocol": 1, "protocols": [1]}


def test_version_answers_before_the_module_has_a_cluster_view(Module, world):
    m = make_module(Module, world)
    forbid_io(m)
    m.get = _boom("get")
    res = m.cmd_version()
    assert res.retval == 0 and res.stdout.startswith("recovery ") and "none reporting" \
        in res.stdout


def test_json_pretty_is_indented_and_json_is_one_line():
    from recovery import maint, text     # noqa: E402  (conftest.py)
    doc = {"b": [1, 2], "a": {"c": None}}
    one, pretty = text.dump_json(doc, "json"), text.dump_json(doc, "json-pretty")
    assert "\n" not in one and pretty.startswith('{\n  "a"')
    assert json.loads(one) == json.loads(pretty) == doc
    assert maint._answer(doc, "line", "json-pretty")[1] == pretty
