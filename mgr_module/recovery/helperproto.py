"""The engine's side of the helper protocol: take a validated report, answer with the
host's instructions, and end instructions (done, failed, expired, withdrawn).

A mixin of Engine (engine.py): it uses the engine's run state, snapshot and options.
"""
from __future__ import annotations

import errno
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from ceph_recovery.model import MODE_ABORT
from ceph_recovery.protocol import Instruction, Instructions, Report

from . import drillcli, versions
from .inputs import InputError
from .reportcheck import RETIRED_KEPT, check_fresh, check_new_host, check_report


class HelperProtocol(object):
    run: Any
    snapshot: Any
    crush: Any
    options: Dict[str, Any]
    reports: Dict[str, Any]
    retired_instances: Dict[str, Tuple[str, ...]]   # host -> helper instances replaced
    refused_protocols: versions.Refused               # host -> its refused protocol
    tput_requests: Dict[str, List[str]]
    persist: Any
    wake: Any
    _by_host: Optional[Tuple[Any, Dict[str, List[Any]]]]

    def _expire(self, now: float, epoch: int) -> None:
        """Open instructions past their TTL are closed (a helper killed mid-instruction
        never answers); start instructions are withdrawn once no run is active."""
        for ins in self.run.expire(now, float(self.options["instruction_ttl"])):
            self.run.record(now, epoch, {"kind": "instruction_expired", "osd": ins["osd"],
                                         "op": ins["op"], "id": ins["id"],
                                         "reason": ins["error"]}, "expired")
        if not self.active or self.run.intent.mode == MODE_ABORT:
            # an aborting drill brings its bucket back without a run: its starts stay
            self._withdraw_starts(now, epoch, "the run is %s" % (
                "aborted" if self.run.intent.mode == MODE_ABORT else "over"),
                drillcli.starting(self))

    def _withdraw_starts(self, now: float, epoch: int, why: str,
                         keep: FrozenSet[int] = frozenset()) -> None:
        for ins in self.run.withdraw("start", now, why, keep):
            self.run.record(now, epoch, {"kind": "instruction_withdrawn", "osd": ins["osd"],
                                         "op": ins["op"], "id": ins["id"], "reason": why},
                            "withdrawn")

    def crush_hosts(self) -> Optional[frozenset]:
        return None if self.crush is None else self.crush.hosts

    def handle_report(self, text: Any, host_arg: Optional[str], now: float) -> Instructions:
        """The `helper-report` command: validate strictly (InputError, nothing changed),
        then take the report."""
        try:
            report, failed = check_report(text, host_arg)
        except versions.ProtocolRefused as e:
            versions.note_refused(self.refused_protocols, e, now)
            raise
        check_new_host(report.host, self.reports, self.crush_hosts())
        last = self.reports.get(report.host)
        retired = self.retired_instances.get(report.host, ())
        check_fresh(report, last[0] if last else None, retired)
        if last is not None and last[0].instance != report.instance:
            self.retired_instances[report.host] = (
                tuple(retired) + (last[0].instance,))[-RETIRED_KEPT:]
        return self.helper_report(report, now, failed)

    def helper_report(self, report: Report, now: float,
                      failed: Optional[List[Dict[str, str]]] = None) -> Instructions:
        self.reports[report.host] = (report, now)
        versions.accepted(self.refused_protocols, report.host)
        done = self.run.mark_done(report.host, report.done, now)
        epoch = self.snapshot.epoch if self.snapshot else 0
        for ins in done:
            self.run.record(now, epoch, {"kind": "helper_done", "osd": ins["osd"],
                                         "op": ins["op"], "id": ins["id"],
                                         "reason": "helper on %s carried out %s"
                                         % (report.host, ins["id"])}, "done")
        failed_now = self.run.mark_failed(report.host, list(failed or ()), now)
        for ins in failed_now:
            self.run.record(now, epoch, {"kind": "helper_failed", "osd": ins["osd"],
                                         "op": ins["op"], "id": ins["id"],
                                         "error": ins["error"],
                                         "reason": "helper on %s could not carry out %s"
                                         % (report.host, ins["id"])}, "failed")
        if done or failed_now:
            self.wake()              # the tick persists it (no mon I/O in a command)
        return self.instructions_for(report.host)

    def instructions_for(self, host: str) -> Instructions:
        snap = self.snapshot
        items = tuple(Instruction(id=i["id"], op=i["op"], osd=i["osd"], reason=i["reason"],
                                  signal=i.get("signal", "TERM"))
                      for i in sorted(self.run.sent_instructions(host),
                                      key=lambda i: i["issued_at"]))
        host_osds = self.osds_of(host)
        p = self.run.progress
        grants = sorted({o.id for o in host_osds if o.id in p.osd_map("granted")}
                        | {i.osd for i in items})
        held = sorted(o.id for o in host_osds if o.id not in grants and self._held(o, snap))
        probe = {"throughput_to": self.tput_requests.pop(host)} if host in self.tput_requests \
            else {}
        return Instructions(host=host, epoch=snap.epoch if snap else 0, instructions=items,
                            grants=tuple(grants), held=tuple(held), probe=probe)

    def osds_of(self, host: str) -> List[Any]:
        """The last snapshot's OSDs of `host` (indexed once per snapshot: a report's
        answer does not scan the whole map)."""
        snap = self.snapshot
        if snap is None:
            return []
        if self._by_host is None or self._by_host[0] is not snap:
            by: Dict[str, List[Any]] = {}
            for o in snap.osds:
                by.setdefault(o.host, []).append(o)
            self._by_host = (snap, by)
        return self._by_host[1].get(host, [])

    def request_throughput(self, hosts: List[str]) -> Dict[str, List[str]]:
        """Ask helpers for a bounded throughput probe to every other reporting host, carried
        by each one's next reply. KeyError names hosts without a helper report; InputError
        (EINVAL) when `hosts` is not a list of host names."""
        if not isinstance(hosts, (list, tuple)) or not all(isinstance(h, str) for h in hosts):
            raise InputError(errno.EINVAL, "network probe: hosts must be host names")
        hosts = list(hosts)
        known = sorted(self.reports)
        unknown = sorted(set(hosts) - set(known))
        if unknown:
            raise KeyError("no helper report from host(s) %s (known: %s)"
                           % (", ".join(unknown), ", ".join(known) or "none"))
        for h in hosts or known:
            self.tput_requests[h] = [p for p in known if p != h]
        return {h: self.tput_requests[h] for h in hosts or known}

    def _held(self, o, snap: Snapshot) -> bool:
        """Autostart held: noup on the OSD, a parent bucket or the cluster (last snapshot),
        or held by this run / an operator hold since (not yet in that snapshot)."""
        if "noup" in o.flags or "noup" in snap.cluster_flags:
            return True
        if o.id in self.run.progress.held_osds:
            return True
        holds = set(self.run.intent.holds) | set(self.run.progress.held_buckets)
        return any("noup" in snap.bucket_flags.get(b, ()) or b in holds
                   for b in tuple(o.crush_path) + (o.host,))

