"""Carry out plan() actions: mon commands, OSD tells, and helper instructions.

`Ceph` is whatever offers mon_command(dict) -> (rc, outb, outs) and
osd_command(osd_id, dict, timeout) -> (rc, outb, outs): the mgr module in production, a
recording fake in unit tests. Mon commands are retried (retry.py: 4 attempts, waits doubling
from 0.2 s) on transient errors (EAGAIN/ETIMEDOUT/EINTR/ENOTCONN); a definite answer (rc 0 or
another errno) is never retried.
"""
from __future__ import annotations

import errno
import json
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ceph_recovery import actions as A
from ceph_recovery.scheduler import scheduler_of

from .retry import backoff, bounded

TRANSIENT = (-errno.EAGAIN, -errno.ETIMEDOUT, -errno.EINTR, -errno.ENOTCONN)
# answers of `tell osd.N heap ...` on a ceph-osd that is not linked with tcmalloc
NO_TCMALLOC = "not using tcmalloc"


def mon_cmd_for(action: A.Action) -> Optional[Dict[str, Any]]:
    """The mon command an action maps to, or None for actions that are not mon commands."""
    if isinstance(action, A.HoldOsd):
        return {"prefix": "osd add-noup", "ids": ["osd.%d" % action.osd]}
    if isinstance(action, A.AllowBoot):
        return {"prefix": "osd rm-noup", "ids": ["osd.%d" % action.osd]}
    if isinstance(action, A.HoldBucket):
        return {"prefix": "osd set-group", "flags": "noup", "who": [action.bucket]}
    if isinstance(action, A.ReleaseBucket):
        return {"prefix": "osd unset-group", "flags": "noup", "who": [action.bucket]}
    if isinstance(action, A.SetGroupFlag):
        return {"prefix": "osd set-group", "flags": action.flag, "who": [action.bucket]}
    if isinstance(action, A.UnsetGroupFlag):
        return {"prefix": "osd unset-group", "flags": action.flag, "who": [action.bucket]}
    if isinstance(action, A.SetFlag):
        return {"prefix": "osd set", "key": action.flag}
    if isinstance(action, A.UnsetFlag):
        return {"prefix": "osd unset", "key": action.flag}
    if isinstance(action, A.QueryOkToStop):
        return {"prefix": "osd ok-to-stop", "ids": [str(action.osd)], "format": "json"}
    if isinstance(action, A.SetConfig) or (isinstance(action, A.RestoreConfig)
                                           and action.value is not None):
        return {"prefix": "config set", "who": action.who, "name": action.name,
                "value": action.value}
    if isinstance(action, A.RestoreConfig):
        return {"prefix": "config rm", "who": action.who, "name": action.name}
    if isinstance(action, A.MarkOut):
        return {"prefix": "osd out", "ids": [str(action.osd)]}
    return None


def memory_targets(config_dump: Any) -> Dict[int, int]:
    """osd id -> its own osd_memory_target setting, from `config dump -f json` (sections
    `osd.N` only: a class-wide or global value is what the OSD inherits, not its own)."""
    out: Dict[int, int] = {}
    for e in config_dump if isinstance(config_dump, list) else ():
        sec = str(e.get("section", "")) if isinstance(e, dict) else ""
        if e.get("name") == "osd_memory_target" and sec.startswith("osd.") and \
                sec[4:].isdigit():
            try:
                out[int(sec[4:])] = int(float(e.get("value")))
            except (TypeError, ValueError):
                continue
    return out


RECOVERY_SETTINGS = ("osd_recovery_max_active", "osd_max_backfills", "osd_recovery_sleep",
                     "osd_mclock_override_recovery_settings", "osd_mclock_profile")


def recovery_configs(config_dump: Any) -> Dict[int, Tuple[Tuple[str, str], ...]]:
    """osd id -> its own recovery throttle settings ((name, value), ...) from `config dump -f
    json` (sections `osd.N` only, as memory_targets; the core throttles, and restores exactly
    these, ceph_recovery.throttle)."""
    out: Dict[int, List[Tuple[str, str]]] = {}
    for e in config_dump if isinstance(config_dump, list) else ():
        sec = str(e.get("section", "")) if isinstance(e, dict) else ""
        if e.get("name") in RECOVERY_SETTINGS and sec.startswith("osd.") and sec[4:].isdigit() \
                and isinstance(e.get("value"), str):
            out.setdefault(int(sec[4:]), []).append((e["name"], e["value"]))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def op_queues(config_dump: Any, osds: Iterable[int], versions: Mapping[int, str]
              ) -> Dict[int, Optional[str]]:
    """osd id -> its scheduler (ceph_recovery.scheduler.scheduler_of) for each of `osds`:
    osd_op_queue from `config dump` (section osd.N, else osd, else global; masked entries
    are not resolved), else the default of its release (`versions`: osd -> ceph_version)."""
    own: Dict[str, str] = {}
    for e in config_dump if isinstance(config_dump, list) else ():
        if isinstance(e, dict) and e.get("name") == "osd_op_queue" and \
                isinstance(e.get("value"), str) and not e.get("mask"):
            own[str(e.get("section", ""))] = e["value"]
    inherited = own.get("osd") or own.get("global")
    return {o: scheduler_of(own.get("osd.%d" % o), inherited, versions.get(o)) for o in osds}


class OsdVersions(object):
    """osd id -> ceph_version of its metadata (`get_metadata("osd", id)`), for every OSD of
    the map whose metadata names one, read again only when the OSD booted (its up_from in
    the OSD map moved): the metadata changes only then (a down OSD's is that of its last
    boot). An OSD whose metadata cannot be read has no release, not a guess."""

    def __init__(self, get_metadata: Any) -> None:
        self.get_metadata = get_metadata
        self.cache: Dict[int, Tuple[Any, str]] = {}

    def _read(self, osd: int) -> str:
        try:
            meta = self.get_metadata("osd", str(osd))
        except Exception:   # noqa: BLE001 - a missing daemon's metadata: no release known
            meta = None
        return osd_versions({osd: meta}).get(osd, "") if meta else ""

    def __call__(self, osd_map: Mapping[str, Any]) -> Dict[int, str]:
        seen = set()
        for e in osd_map.get("osds", ()) or ():
            o, up_from = e.get("osd"), e.get("up_from")
            if not isinstance(o, int):
                continue
            seen.add(o)
            if o not in self.cache or self.cache[o][0] != up_from:
                self.cache[o] = (up_from, self._read(o))
        for o in [x for x in self.cache if x not in seen]:   # removed from the map
            del self.cache[o]
        return {o: v for o, (_u, v) in self.cache.items() if v}


class Executor(object):
    def __init__(self, ceph: Any, attempts: int = 4, tell_timeout: float = 15.0) -> None:
        self.ceph = ceph
        self.attempts = attempts
        self.tell_timeout = tell_timeout

    def mon(self, cmd: Mapping[str, Any]) -> Tuple[int, str, str]:
        # all attempts transient: the last answer is handed back
        return bounded(lambda: self.ceph.mon_command(dict(cmd)), self.attempts,
                       wait=backoff(0.2, 2.0), again=lambda r: r[0] in TRANSIENT)

    def ok_to_stop(self, osd: int) -> Tuple[bool, str]:
        """`ceph osd ok-to-stop N`: rc 0 = safe; rc EBUSY still carries the JSON verdict."""
        rc, out, err = self.mon(mon_cmd_for(A.QueryOkToStop(reason="", osd=osd)))
        verdict = None
        try:
            verdict = json.loads(out) if out.strip() else None
        except ValueError:
            verdict = None
        if isinstance(verdict, dict) and "ok_to_stop" in verdict:
            ok = bool(verdict["ok_to_stop"]) and rc == 0
            bad = verdict.get("bad_become_inactive") or []
            return ok, "ok_to_stop=%s%s" % (ok, " bad_become_inactive=%s" % bad if bad else "")
        return rc == 0, "rc=%d %s" % (rc, (err or out).strip()[:200])

    def heap_release(self, osd: int) -> Tuple[Optional[bool], str]:
        """(supported?, message). None when the OSD did not answer (unknown)."""
        rc, out, err = self.ceph.osd_command(osd, {"prefix": "heap", "heapcmd": "release"},
                                             self.tell_timeout)
        text = ("%s %s" % (out, err)).strip()
        if NO_TCMALLOC in text:
            return False, "heap release unsupported (ceph-osd not using tcmalloc)"
        if rc == 0:
            return True, "heap released"
        return None, "heap release failed rc=%d %s" % (rc, text[:200])

    def run_mon_action(self, action: A.Action) -> Tuple[bool, str]:
        cmd = mon_cmd_for(action)
        assert cmd is not None
        rc, out, err = self.mon(cmd)
        if rc == 0:
            return True, "ok"
        return False, "%s failed rc=%d %s" % (cmd["prefix"], rc, (err or out).strip()[:200])


def journal_facts(action: A.Action, answer: Any, snap: Any, progress: Any) -> Dict[str, Any]:
    """Structured journal fields (tests and operators read these, not the reason text):
    `answer` of a query / heap release, what the snapshot showed of the OSD acted on, and the
    load footprint plan() let an OSD boot on."""
    facts: Dict[str, Any] = {}
    if isinstance(action, A.QueryOkToStop):
        facts["answer"] = {"ok_to_stop": bool(answer)}
    elif isinstance(action, A.HeapRelease):
        facts["answer"] = {"heap_supported": answer}
    osd = getattr(action, "osd", None)
    o = snap.osd(osd) if osd is not None else None
    if o is not None:
        facts["observed"] = {"up": bool(o.up), "process": o.process,
                             "rss_bytes": int(o.rss_bytes or 0), "pgs": int(o.pgs or 0)}
        if o.missed_entries is not None:    # what its PGs logged while it was down
            facts["observed"]["missed_entries"] = int(o.missed_entries)
    if isinstance(action, A.AllowBoot):
        facts["load_rss_bytes"] = progress.osd_map("load_rss").get(action.osd)
    return facts


def osd_versions(metadata: Mapping[Any, Any]) -> Dict[int, str]:
    """osd -> its `ceph_version` ("ceph version 16.2.10 (...) pacific (stable)") from the
    per-OSD metadata (`ceph osd metadata`, the mgr's get_metadata("osd", id)); an OSD without
    a readable one is left out (the core then knows no release for it: ceph_recovery.dups)."""
    out: Dict[int, str] = {}
    for key, meta in (metadata or {}).items():
        try:
            osd = int(key)
        except (TypeError, ValueError):
            continue
        text = meta.get("ceph_version") if isinstance(meta, Mapping) else None
        if isinstance(text, str) and text and osd >= 0:
            out[osd] = text[:256]
    return out
