"""The helper sends its reports to the module's report endpoint once a command's reply named
it, and back by the command whenever the endpoint fails. The module is the real Module class
(mgrlab) serving its endpoint on 127.0.0.1; the helper's command path calls the module's
command handler directly, as ceph-mgr would dispatch it."""
from __future__ import annotations

import json

from ceph_recovery_tools.helper import daemon
from mgrlab import LabModule, valid_report  # see conftest.py


class Served(LabModule):
    def get_mgr_ip(self):
        return "127.0.0.1"


class Helper(daemon.Helper):
    def __init__(self, mod, *a, **kw):
        super().__init__(*a, **kw)
        self.mod, self.commands = mod, []

    def refresh_view(self, now, want_epoch=None):
        return {"osds": []}

    def build(self, now, osds):
        self.seq += 1
        return json.loads(valid_report("h1", seq=self.seq, instance=self.instance))

    def execute(self, ins, host_osds):
        pass

    def _mgr(self, prefix, **args):
        assert prefix == daemon.REPORT_PREFIX
        self.commands.append(json.loads(args["report"])["seq"])
        rc, out, err = self.mod.cmd_helper_report(args["report"], args["host"])
        return rc, (json.loads(out) if rc == 0 else None), err


def _helper(tmp_path, mod):
    opts = daemon.Options(host="h1", conf="/nonexistent.conf", name="client.recovery-helper.h1",
                          keyring=None, state_dir=str(tmp_path / "state"), probe_budget=0,
                          timeout=2.0)
    return Helper(mod, opts, launcher=None, read_memory=lambda: {})


def test_reports_go_to_the_endpoint_and_back_to_the_command_when_it_moves(tmp_path):
    mod = Served()
    assert mod._guard() is None
    mod._endpoint()
    h = _helper(tmp_path, mod)
    try:
        assert h.run_cycle(0.0) is not None and h.commands == [1]
        assert h.endpoint is not None and h.endpoint[0] == mod._reports.url
        assert h.run_cycle(2.0) is not None and h.run_cycle(4.0) is not None
        assert h.commands == [1]
        assert mod.engine.reports["h1"][0].seq == 3
        assert mod.meter.doc()["handlers"]["report-endpoint"]["count"] == 2
        mod._reports.stop()              # a failover: no endpoint at that address any more
        assert h.run_cycle(6.0) is not None
        # seq 4 may have reached the old endpoint: the command carries seq 5; its reply names
        # no endpoint while the module serves none
        assert h.commands == [1, 5] and mod.engine.reports["h1"][0].seq == 5
        assert h.endpoint is None
        mod._endpoint()                  # the new active mgr's endpoint
        assert h.run_cycle(8.0) is not None and h.commands == [1, 5, 6]
        assert h.endpoint[0] == mod._reports.url
        assert h.run_cycle(10.0) is not None and h.commands == [1, 5, 6]
        assert mod.engine.reports["h1"][0].seq == 7
    finally:
        mod._reports.stop()


def test_without_an_endpoint_every_report_goes_by_command(tmp_path):
    mod = Served()
    assert mod._guard() is None
    mod.options["report_endpoint"] = False
    mod._endpoint()
    h = _helper(tmp_path, mod)
    for t in (0.0, 2.0, 4.0):
        assert h.run_cycle(t) is not None
    assert h.commands == [1, 2, 3] and h.endpoint is None
