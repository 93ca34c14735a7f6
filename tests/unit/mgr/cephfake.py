"""The recording stand-in for the Ceph side of the mgr module's tests (registered by
conftest.py as `cephfake`): mon_command / osd_command are recorded in `calls` (a tell as
dict(cmd, osd=id)); the flag commands are applied to an OSD map dict like the mon would
(per-OSD noup, cluster flags, crush_node_flags; epoch + 1 per change); `osd ok-to-stop` is
answered with `verdict`; `answers` scripts replies per prefix ("tell" for osd_command)."""
from __future__ import annotations

import errno
import json

OK = (0, "", "")
READS = ("osd ok-to-stop", "osd pool availability-status")


class FakeCeph(object):
    """FakeCeph(osd_map=None, verdict=None, answers=None). A scripted prefix answers its
    replies in turn (the last one repeats) and changes no map; without an osd_map the
    commands are only recorded."""

    def __init__(self, osd_map=None, verdict=None, answers=None):
        self.map, self.verdict, self.answers = osd_map, verdict, answers or {}
        self.calls = []
        self._tells = []

    def mon_command(self, cmd, timeout=None):
        self.calls.append(cmd)
        p = cmd["prefix"]
        if p in self.answers:
            return self._scripted(p)
        if p == "osd ok-to-stop" and self.verdict is not None:
            ok = self.verdict["ok_to_stop"]
            return (0 if ok else -errno.EBUSY), json.dumps(self.verdict), ""
        if self.map is not None and self._apply(cmd):
            self.map["epoch"] += 1
        return OK

    def osd_command(self, osd, cmd, timeout=None):
        call = dict(cmd, osd=osd)
        self.calls.append(call)
        self._tells.append(call)
        return self._scripted("tell") if "tell" in self.answers else OK

    def mutations(self):
        """The mon commands that may change the cluster (not the reads ok-to-stop and
        availability-status, not tells)."""
        return [c for c in self.calls if c["prefix"] not in READS
                and not any(c is t for t in self._tells)]

    def _scripted(self, key):
        seq = self.answers[key]
        return seq.pop(0) if len(seq) > 1 else seq[0]

    def _apply(self, cmd):
        m, p = self.map, cmd["prefix"]
        if p in ("osd add-noup", "osd rm-noup"):
            for name in cmd["ids"]:
                o = next(x for x in m["osds"] if x["osd"] == int(name.split(".")[1]))
                o["state"] = [s for s in o["state"] if s != "noup"] + (
                    ["noup"] if p == "osd add-noup" else [])
        elif p in ("osd set", "osd unset"):
            fl = set(m["flags_set"]) - {cmd["key"]} | ({cmd["key"]} if p == "osd set" else set())
            m["flags_set"] = sorted(fl)
        elif p in ("osd set-group", "osd unset-group"):
            for b in cmd["who"]:
                fl = set(m["crush_node_flags"].get(b, [])) - {cmd["flags"]}
                fl |= {cmd["flags"]} if p == "osd set-group" else set()
                m["crush_node_flags"][b] = sorted(fl)
                if not fl:
                    del m["crush_node_flags"][b]
        else:
            return False
        return True
