"""The mgr module's Module class run outside ceph-mgr, over the recorded lab (h3 down): a
minimal stand-in for ceph-mgr's `mgr_module` (command decorators, HandleCommandResult,
MgrModule) is installed only while module.py is imported, and cephfake.FakeCeph answers every
mon command. Shared by the tests that drive the module's own methods."""
from __future__ import annotations

import collections
import importlib
import json
import logging
import sys
import threading
import types

from cephfake import FakeCeph
from mgrcases import load


def _fake_mgr_module() -> types.ModuleType:
    mod = types.ModuleType("mgr_module")

    class HandleCommandResult(collections.namedtuple("HandleCommandResult",
                                                     "retval stdout stderr")):
        def __new__(cls, retval=0, stdout="", stderr=""):
            return super().__new__(cls, retval, stdout, stderr)

    class CommandResult(object):
        def __init__(self, tag=""):
            self.ev = threading.Event()
            self.r, self.outb, self.outs = 0, "", ""

    class MgrModule(object):
        def __init__(self, *args, **kwargs):
            self.log = logging.getLogger("recovery-test")

        def send_command(self, *args):
            raise AssertionError("the test module answers mon commands itself")

    mod.HandleCommandResult = HandleCommandResult
    mod.CommandResult = CommandResult
    mod.MgrModule = MgrModule
    mod.Option = lambda name, **kw: dict(kw, name=name)
    mod.CLIReadCommand = mod.CLIWriteCommand = lambda prefix, **kw: (lambda f: f)
    return mod


def _import_module():
    """recovery.module with the stand-in mgr_module, which is removed again afterwards."""
    saved = {n: sys.modules.pop(n) for n in ("mgr_module", "recovery.compat",
                                             "recovery.maintcli", "recovery.module")
             if n in sys.modules}
    sys.modules["mgr_module"] = _fake_mgr_module()
    try:
        return importlib.import_module("recovery.module")
    finally:
        for n in ("mgr_module", "recovery.compat", "recovery.maintcli", "recovery.module"):
            sys.modules.pop(n, None)
        sys.modules.update(saved)


module = _import_module()


class _Rados(object):
    def pool_exists(self, name):
        return False


class _OsdMap(object):
    def __init__(self, m):
        self.m = m

    def get_epoch(self):
        return self.m["epoch"]


class LabModule(module.Module):
    """The module over the recorded lab (h3 down), every mon command answered by FakeCeph."""

    def __init__(self):
        super().__init__()
        self.world = {"osd_map": load("osdmap_h3down.json"), "osd_map_tree":
                      load("tree_h3down.json"), "pg_dump": load("pgdump_h3down.json"),
                      "health": {"json": json.dumps({"status": "HEALTH_WARN"})}}
        self.ceph = FakeCeph(self.world["osd_map"], verdict={"ok_to_stop": True, "osds": [],
                                                             "bad_become_inactive": []})
        self.rados = _Rados()
        self.store = {}
        self.options = {o["name"]: o.get("default") for o in self.MODULE_OPTIONS}

    def get(self, what):
        return self.world[what]

    def get_osdmap(self):
        return _OsdMap(self.world["osd_map"])

    def get_module_option(self, name):
        return self.options[name]

    def get_foreign_ceph_option(self, who, name):
        return 65536

    def get_metadata(self, kind, ident):     # the recorded lab ran Debian's Pacific
        return {"ceph_version": "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e"
                                "60516) pacific (stable)"}

    def get_store(self, key):
        return self.store.get(key)

    def set_store(self, key, value):
        self.store[key] = value

    def set_health_checks(self, checks):
        self.checks = checks

    def remote(self, *args, **kwargs):
        return None

    def mon_command(self, cmd, inbuf=None, timeout=None):
        return self.ceph.mon_command(cmd, timeout)

    def osd_command(self, osd, cmd, timeout):
        return self.ceph.osd_command(osd, cmd, timeout)


def valid_report(host="h1", seq=1, instance="i1"):
    osds = {"h1": (0, 1), "h2": (2, 3), "h3": (4, 5)}.get(host, ())
    return json.dumps({"version": 1, "host": host, "time": 1000.0, "seq": seq,
                       "instance": instance,
                       "memory": {"total": 8 << 30, "used": 1 << 30, "available": 7 << 30,
                                  "limit": None, "source": "host"},
                       "osds": [{"id": i, "process": "running", "rss": 1 << 26}
                                for i in osds], "done": [], "network": {}})
