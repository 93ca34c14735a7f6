"""Run this project's clients (helper, drill, librados code) against a lab with the lab's release.

A Ceph client must be of the cluster's release: Tentacle's monmap allows only `aes256k` cephx
keys, which the host's Pacific librados cannot read. On the host's Pacific everything here runs
in the calling process (or the host venv's tools), as before; on a chroot release (Reef,
Tentacle) it runs under the chroot's Python and librados, with the code the lab copied into
D/pylib (release.install_core). Files those clients read or write must then live in the lab
directory, the one path seen the same inside the chroot and out (scratch()).
"""
from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import fields
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import release

# drill CLI flags whose names are not "--" + the DrillOptions field with dashes
_DRILL_FLAGS = {"lab_dir": "--dir", "json_out": "--json"}


class ReleaseCallError(RuntimeError):
    """Code run under the release's Python failed (its stderr is in the message)."""


def in_chroot(state: Dict[str, Any]) -> bool:
    """True when the lab's clients must run in the release chroot (not the host's Pacific)."""
    return bool(release.prefix(state))


def run_tool(state: Dict[str, Any], name: str, *args: Any, timeout: float = 120,
             conf: Optional[str] = None) -> subprocess.CompletedProcess:
    """One of this project's commands (ceph-recovery-helper, ...) run to completion for the
    lab's release; `conf` sets CEPH_CONF in its environment."""
    env = release.tool_env(state)
    if conf is not None:
        env["CEPH_CONF"] = conf
    return subprocess.run(release.tool_argv(state, name) + [str(a) for a in args], env=env,
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def popen_tool(state: Dict[str, Any], name: str, *args: Any, conf: Optional[str] = None,
               **kw: Any) -> subprocess.Popen:
    """run_tool without waiting (a long-running helper); kw go to Popen."""
    env = release.tool_env(state)
    if conf is not None:
        env["CEPH_CONF"] = conf
    return subprocess.Popen(release.tool_argv(state, name) + [str(a) for a in args], env=env,
                            **kw)


def scratch(state: Dict[str, Any], fallback: str) -> str:
    """A directory for files the lab's clients read or write (keyrings, state dirs, confs):
    `fallback` on the host's release; on a chroot release a new one inside the lab directory
    (removed with the lab)."""
    if not in_chroot(state):
        return fallback
    base = os.path.join(state["dir"], "scratch")
    os.makedirs(base, exist_ok=True)
    return tempfile.mkdtemp(dir=base)


def call(state: Dict[str, Any], fn: Callable[..., Any], *args: Any, timeout: float = 300) -> Any:
    """fn(*args) under the lab release's Python: in this process on the host's release; on a
    chroot release, fn's source is run by the chroot's python3 (so fn must be a module-level
    function that imports what it uses inside its body). Arguments and result are JSON; the
    arguments go through stdin, since one argv string is limited to 128 KiB (MAX_ARG_STRLEN)
    and the checksums of a few thousand objects exceed it."""
    if not in_chroot(state):
        return json.loads(json.dumps(fn(*args)))
    # fn's annotations name this file's typing imports: left unevaluated, as here
    code = ("from __future__ import annotations\n%s\nimport json, sys\n"
            "print('\\n' + json.dumps(%s(*json.load(sys.stdin))))\n") % (
        textwrap.dedent(inspect.getsource(fn)), fn.__name__)
    proc = subprocess.run(release.prefix(state) + ["python3", "-c", code],
                          env=release.tool_env(state), capture_output=True, text=True,
                          timeout=timeout, input=json.dumps(args))
    if proc.returncode != 0:
        raise ReleaseCallError("%s under the %s chroot's python3: rc %d: %s" % (
            fn.__name__, state.get("ceph"), proc.returncode, proc.stderr.strip()[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def drill_argv(out: str, **kw: Any) -> List[str]:
    """ceph-recovery-drill's arguments for DrillOptions fields `kw` (None/False: omitted)."""
    from ceph_recovery_tools.drill.runner import DrillOptions
    known = {f.name for f in fields(DrillOptions)} - {"tune"}
    argv = ["--json", out]
    for k, v in kw.items():
        if k not in known:
            raise ValueError("drill option %r has no ceph-recovery-drill flag" % k)
        if v is None or v is False:
            continue
        flag = _DRILL_FLAGS.get(k, "--" + k.replace("_", "-"))
        argv += [flag] if v is True else [flag, str(v)]
    return argv


def report_inside(state: Dict[str, Any], out: str) -> str:
    """Where a release's drill writes the report meant for `out`: the lab's log/, the one
    directory the chroot sees too."""
    return os.path.join(state["dir"], "log", os.path.basename(out))


def copy_report(inside: str, out: str) -> bool:
    """The report written at `inside` copied to `out` (True when there was one to copy)."""
    if not os.path.exists(inside):
        return False
    if os.path.abspath(inside) != os.path.abspath(out):
        shutil.copy(inside, out)
    return True


def run_drill(state: Dict[str, Any], out: str, **kw: Any) -> Dict[str, Any]:
    """One drill of the lab (kw: DrillOptions fields), its report written to `out` and returned:
    Drill(...).run() in this process on the host's release; on a chroot release the release's
    ceph-recovery-drill, its report (and timeline) in D/log, the report then copied to `out`.
    A drill that fails outright raises; rc 3 (objects bad or timed out) returns the report."""
    if not in_chroot(state):
        from ceph_recovery_tools.drill.runner import Drill, DrillOptions
        return Drill(DrillOptions(lab_dir=state["dir"], json_out=out, **kw)).run()
    inside = report_inside(state, out)
    proc = run_tool(state, "ceph-recovery-drill", *drill_argv(inside, lab_dir=state["dir"], **kw),
                    timeout=float(kw.get("timeout") or 600) + 900)
    if proc.returncode not in (0, 3):
        raise ReleaseCallError("ceph-recovery-drill rc %d: %s" % (proc.returncode,
                                                                   proc.stderr[-3000:]))
    copy_report(inside, out)
    with open(out) as f:
        return json.load(f)


def _write_objects(conf: str, keyring: str, pool: str, prefix: str, count: int,
                   size: int) -> Dict[str, str]:
    import rados
    from ceph_recovery_tools.drill.objects import ObjectSet
    cluster = rados.Rados(conffile=conf, conf={"keyring": keyring})
    cluster.connect(timeout=30)
    try:
        objs = ObjectSet(cluster.open_ioctx(pool), size)
        objs.write_aio(prefix, count)
        objs.ioctx.close()
        return objs.sums
    finally:
        cluster.shutdown()


def _remove_objects(conf: str, keyring: str, pool: str, names: Optional[List[str]]) -> int:
    """`names` removed from the pool; None: every object the pool lists."""
    import rados
    from ceph_recovery_tools.drill.objects import ObjectSet
    cluster = rados.Rados(conffile=conf, conf={"keyring": keyring})
    cluster.connect(timeout=30)
    try:
        objs = ObjectSet(cluster.open_ioctx(pool))
        if names is None:
            names = [o.key for o in objs.ioctx.list_objects()]
        objs.sums = dict.fromkeys(names, "")
        n = objs.remove()
        objs.ioctx.close()
        return n
    finally:
        cluster.shutdown()


def _verify_objects(conf: str, keyring: str, pool: str, sums: Dict[str, str],
                    size: int) -> Tuple[int, List[str]]:
    import rados
    from ceph_recovery_tools.drill.objects import ObjectSet
    cluster = rados.Rados(conffile=conf, conf={"keyring": keyring})
    cluster.connect(timeout=30)
    try:
        objs = ObjectSet(cluster.open_ioctx(pool), size)
        objs.sums = dict(sums)
        result = objs.verify()
        objs.ioctx.close()
        return result
    finally:
        cluster.shutdown()


class LabObjects(object):
    """Checksummed objects in the lab's pool (drill.objects.ObjectSet's write_aio/verify/sums),
    written and read by the lab release's librados through call(): one connection per call."""

    def __init__(self, state: Dict[str, Any], size: int = 4096) -> None:
        self.state = state
        self.size = size
        self.sums: Dict[str, str] = {}

    def _where(self) -> Tuple[str, str, str]:
        return self.state["conf"], self.state["admin_keyring"], self.state.get("pool", "lab")

    def write_aio(self, prefix: str, count: int) -> int:
        self.sums.update(call(self.state, _write_objects, *self._where(), prefix, count,
                              self.size))
        return count

    def verify(self) -> Tuple[int, List[str]]:
        ok, bad = call(self.state, _verify_objects, *self._where(), self.sums, self.size)
        return ok, list(bad)

    def remove(self) -> int:
        """Every object written removed from the pool (ObjectSet.remove); how many."""
        n = call(self.state, _remove_objects, *self._where(), sorted(self.sums))
        self.sums = {}
        return n

    def purge(self) -> int:
        """Every object in the pool removed, whoever wrote it (this set forgets its own);
        how many."""
        n = call(self.state, _remove_objects, *self._where(), None)
        self.sums = {}
        return n
