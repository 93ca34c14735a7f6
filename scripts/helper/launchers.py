"""How the helper starts and stops OSD daemons.

- `systemd`: ceph-osd@N units through systemctl. The unit's ExecCondition= drop-in runs the
  boot gate, so systemd itself refuses a held OSD; the helper only asks.
- `cephadm`: the same through cephadm's units `ceph-<fsid>@osd.<N>.service`; the gate drop-in
  sits at the template level (`ceph-<fsid>@.service.d/`): cephadm rewrites only the per-daemon
  `ceph-<fsid>@osd.N.service.d/99-cephadm.conf`.
- `process` (the lab): plain processes through ceph_recovery_tools.lab.launch, spawned inside
  the lab host's cgroup/netns. It consults the same boot gate before spawning, exactly as
  systemd's ExecCondition would: a held OSD without a grant is refused and logged.

`start()` returns "started", "already-running" or "held"; `stop()` True if the OSD is gone;
`kill()` the same after SIGKILL (a drill's power loss: no clean shutdown; systemd's
Restart= then meets the boot gate, which holds the OSD like any start).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
from typing import Callable, List, Optional, Tuple

import structlog

from ..common.wait import wait_until

log = structlog.get_logger("ceph-recovery-helper")

SYSTEMCTL = "systemctl"


def osd_unit(osd_id: int) -> str:
    return "ceph-osd@%d.service" % int(osd_id)


_FSID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def cephadm_unit_fn(fsid: str) -> Callable[[int], str]:
    """osd id -> cephadm's unit name `ceph-<fsid>@osd.<id>.service`; ValueError on a bad fsid."""
    if not _FSID.match(fsid or ""):
        raise ValueError("not a cluster fsid (lowercase UUID): %r" % fsid)
    return lambda osd_id: "ceph-%s@osd.%d.service" % (fsid, int(osd_id))


UnitFn = Callable[[int], str]


def systemctl_start(osd_id: int, unit: UnitFn = osd_unit) -> List[str]:
    return [SYSTEMCTL, "start", unit(osd_id)]


def systemctl_stop(osd_id: int, unit: UnitFn = osd_unit) -> List[str]:
    return [SYSTEMCTL, "stop", unit(osd_id)]


def systemctl_kill(osd_id: int, unit: UnitFn = osd_unit) -> List[str]:
    return [SYSTEMCTL, "kill", "--signal=SIGKILL", "--kill-whom=main", unit(osd_id)]


def systemctl_main_pid(osd_id: int, unit: UnitFn = osd_unit) -> List[str]:
    return [SYSTEMCTL, "show", "--property=MainPID", "--value", unit(osd_id)]


def parse_main_pid(out: str) -> Optional[int]:
    """`systemctl show --property=MainPID --value` prints 0 when the unit has no process."""
    text = out.strip()
    if not text.isdigit():
        return None
    pid = int(text)
    return pid or None


class SystemdLauncher:
    name = "systemd"
    asok_dir = "/var/run/ceph"       # Ceph's default admin_socket: $run_dir/$cluster-$name.asok
    log_dir = "/var/log/ceph"        # Ceph's default log_file: /var/log/ceph/$cluster-$name.log

    def __init__(self, timeout: float = 120.0, unit: UnitFn = osd_unit) -> None:
        self.timeout = timeout
        self.unit = unit

    log_dir = "/var/log/ceph"        # Ceph's default log_file: /var/log/ceph/$cluster-$name.log

    def asok_path(self, osd_id: int) -> str:
        return os.path.join(self.asok_dir, "ceph-osd.%d.asok" % int(osd_id))

    def log_path(self, osd_id: int) -> str:
        """The OSD's own log file (dupscan.py reads its dups warnings, osdlog.py its start
        phases)."""
        return os.path.join(self.log_dir, "ceph-osd.%d.log" % int(osd_id))

    def _run(self, argv: List[str]) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout,
                              stdin=subprocess.DEVNULL, check=False)

    def _must(self, argv: List[str]) -> None:
        """Run a systemctl command; RuntimeError with its stderr when it fails."""
        res = self._run(argv)
        if res.returncode != 0:
            raise RuntimeError("%s -> rc %d: %s" % (" ".join(argv), res.returncode,
                                                    res.stderr.strip()))

    def pid(self, osd_id: int) -> Optional[int]:
        res = self._run(systemctl_main_pid(osd_id, self.unit))
        return parse_main_pid(res.stdout) if res.returncode == 0 else None

    def start(self, osd_id: int) -> str:
        if self.pid(osd_id):
            return "already-running"
        self._must(systemctl_start(osd_id, self.unit))
        # ExecCondition= failing (the gate said held) skips the start without an error
        return "started" if self.pid(osd_id) else "held"

    def stop(self, osd_id: int, timeout: float = 60.0) -> bool:
        self._must(systemctl_stop(osd_id, self.unit))
        return self.pid(osd_id) is None

    def kill(self, osd_id: int, timeout: float = 60.0) -> bool:
        pid = self.pid(osd_id)
        if pid is None:
            return True
        self._must(systemctl_kill(osd_id, self.unit))
        # gone once systemd reaped it: no MainPID, or a new one (Restart= passed the gate)
        return wait_until(lambda: self.pid(osd_id) != pid, timeout, 0.2) is True


class CephadmLauncher(SystemdLauncher):
    """cephadm's per-daemon units; the template-level drop-in gates their starts."""

    name = "cephadm"

    def __init__(self, fsid: str, timeout: float = 120.0) -> None:
        super().__init__(timeout, cephadm_unit_fn(fsid))
        self.fsid = fsid
        self.asok_dir = "/var/run/ceph/%s" % fsid    # cephadm mounts its run dir per fsid
        # only with `log_to_file` true: cephadm's daemons log to journald by default, and then
        # neither the dups warnings nor the allocator rebuild are seen (docs/helper.md)
        self.log_dir = "/var/log/ceph/%s" % fsid


def unit_launcher(kind: str, fsid: Optional[str] = None) -> SystemdLauncher:
    """`--launcher systemd` or `--launcher cephadm --fsid F`; ValueError with the reason."""
    if kind == "systemd":
        return SystemdLauncher()
    if kind == "cephadm":
        if not fsid:
            raise ValueError("--launcher cephadm needs --fsid (the cluster fsid, `ceph fsid`)")
        return CephadmLauncher(fsid)
    raise ValueError("unknown launcher %r: systemd, cephadm or process" % kind)


GateFn = Callable[[int], Tuple[bool, str, str]]


class ProcessLauncher:
    """The lab's stand-in for systemd: gate first, then spawn in the host's cgroup/netns."""

    name = "process"

    def __init__(self, lab_dir: str, gate: GateFn) -> None:
        from ceph_recovery_tools.lab import launch, state   # the lab is optional in production
        self._launch, self._state = launch, state
        self.lab_dir = lab_dir
        self.gate = gate

    def lab_state(self):
        return self._state.load_state(self.lab_dir)

    def pid(self, osd_id: int) -> Optional[int]:
        return self._launch.osd_pid(self.lab_state(), osd_id)

    def asok_path(self, osd_id: int) -> str:
        return self._launch.admin_socket(self.lab_dir, "osd.%d" % int(osd_id))

    def log_path(self, osd_id: int) -> Optional[str]:
        """The lab's OSD log (conf.py: D/log/$name.log), None for an OSD not in the lab."""
        info = self.lab_state().get("osds", {}).get(str(int(osd_id)))
        return info.get("log_file") if info else None

    def start(self, osd_id: int) -> str:
        st = self.lab_state()
        if self._launch.osd_pid(st, osd_id):
            return "already-running"
        allowed, reason, source = self.gate(osd_id)
        if not allowed:
            log.warning("start_refused", osd=osd_id, reason=reason, source=source)
            return "held"
        pid = self._launch.start_osd(st, osd_id)
        log.info("osd_spawned", osd=osd_id, pid=pid, gate=reason, source=source)
        return "started"

    def stop(self, osd_id: int, timeout: float = 60.0) -> bool:
        return bool(self._launch.stop_osd(self.lab_state(), osd_id, timeout=timeout))

    def kill(self, osd_id: int, timeout: float = 60.0) -> bool:
        return bool(self._launch.stop_osd(self.lab_state(), osd_id, sig=signal.SIGKILL,
                                          timeout=timeout))
