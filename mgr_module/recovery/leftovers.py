"""What the module's state says it set on the cluster, each with the `ceph` command that
clears it: logged by shutdown(), and raised as RECOVERY_LEFTOVERS after a load that found a
run (or a drill) going on.

Ceph 16.2.15 and 20 never call a module's shutdown() on `ceph mgr module disable`, `ceph mgr
fail` or SIGTERM: the mgr re-executes itself (MgrStandby::respawn, execv) when the set of
enabled modules changes or it stops being active, and its SIGTERM handler calls _exit(0)
(docs/recovery-module.md, "Disable and restart"). A state loaded with a run or drill going
therefore always follows a stop that restored nothing. The run resumes from that state on
load and restores what it set at its end; until it ends the check names each leftover, so an
operator who wants the module gone knows exactly what to clear.

No mgr_module import. Every function here is called under the engine's lock.
"""
from __future__ import annotations

from typing import Any, List, Tuple

from ceph_recovery import drill as D
from ceph_recovery import maintenance as M
from ceph_recovery.model import RUN_CLUSTER_FLAGS

from . import maint

CHECK = "RECOVERY_LEFTOVERS"


def _run_items(engine: Any) -> List[Tuple[str, str]]:
    p, out = engine.run.progress, []
    if engine.active and p.saved_flags is not None:
        for f in RUN_CLUSTER_FLAGS:
            if f not in p.saved_flags:
                out.append(("cluster flag %s (run %s)" % (f, p.run_id), "ceph osd unset %s" % f))
    left = engine.run.leftovers or {}
    for f in left.get("flags") or ():
        out.append(("cluster flag %s (lost run %s)" % (f, left.get("run_id")),
                    "ceph osd unset %s" % f))
    held = sorted(set(p.held_osds if engine.active else ()) |
                  {int(i) for i in left.get("noup") or ()})
    if held:
        out.append(("per-OSD noup on %s" % ", ".join("osd.%d" % i for i in held),
                    "ceph osd rm-noup %s" % " ".join("osd.%d" % i for i in held)))
    for key, before in sorted(p.saved_config.items()) if engine.active else ():
        who, _, name = key.partition(" ")
        cmd = ("ceph config rm %s %s" % (who, name) if before is None else
               "ceph config set %s %s %s" % (who, name, before))
        out.append(("%s %s changed by run %s (before: %s)" % (
            who, name, p.run_id, "not set" if before is None else before), cmd))
    return out


def _bucket_items(engine: Any) -> List[Tuple[str, str]]:
    p, out = engine.run.progress, []
    held = set(maint.holds(engine)) | (set(p.held_buckets) if engine.active else set())
    for b in sorted(held):
        out.append(("bucket noup on %s" % b, "ceph osd unset-group noup %s" % b))
    noout = {w.bucket for w in engine.run.windows
             if w.phase != M.REQUESTED and not w.noout_before}
    noout |= {d.bucket for d in getattr(engine.run, "drills", [])
              if d.phase == D.ABORTING and not d.noout_before}
    for b in sorted(noout):
        out.append(("bucket noout on %s" % b, "ceph osd unset-group noout %s" % b))
    return out


def left_on_cluster(engine: Any) -> List[str]:
    """One line per leftover: what it is and the command that clears it. Read from the
    state, not from the last snapshot: a snapshot is taken before its tick's actions, and a
    command for a flag that is already gone changes nothing."""
    return ["%s: `%s`" % (what, cmd) for what, cmd in _run_items(engine) + _bucket_items(engine)]


def going(engine: Any) -> str:
    """The run or drill going on ("" for none): what a stop leaves unfinished."""
    if engine.active:
        return "run %s (%s)" % (engine.run.progress.run_id, engine.run.progress.phase)
    for d in getattr(engine.run, "drills", []):
        if d.phase not in D.FINAL:
            return "drill %s on %s (%s)" % (d.id, d.bucket, d.phase)
    return ""


def note_load(engine: Any) -> None:
    """After the state is loaded: a run or drill going on means the module was stopped in
    the middle of it (see the module docstring)."""
    engine.stopped_mid = going(engine)


def update_check(engine: Any) -> None:
    """RECOVERY_LEFTOVERS while the run or drill the load found goes on (lines re-derived
    from the state each tick, so what it restored drops out); gone when it ended."""
    was = getattr(engine, "stopped_mid", "")
    lines = left_on_cluster(engine) if was and going(engine) else []
    if not lines:
        engine.stopped_mid = was if going(engine) else ""
        engine.shell_checks.pop(CHECK, None)
        return
    engine.shell_checks[CHECK] = (
        "recovery module was stopped during %s without restoring what it set (resumed now; "
        "restored when it ends)" % was,
        lines + ["to stop for good: `ceph recovery abort` (or `drill abort`) and `ceph "
                 "recovery wait` until 0 before `ceph mgr module disable recovery`; or clear "
                 "each of the above by hand"])
