"""CLI: inject one network fault into a --netns lab, hold it, undo it on exit.

    python -m ceph_recovery_tools.netfault jumbo-drop --lab-dir D h1 h3 [--percent 20]
    python -m ceph_recovery_tools.netfault mtu --lab-dir D h2 [--mtu 1500]
    python -m ceph_recovery_tools.netfault cap --lab-dir D h2 [--rate 100mbit]
    python -m ceph_recovery_tools.netfault mon-delay --lab-dir D [--delay 1.5] [--port 7310]
    python -m ceph_recovery_tools.netfault listen --port P [--backlog 1]      (in a namespace)
    python -m ceph_recovery_tools.netfault flood ADDR --port P [--count 300]  (in a namespace)
    python -m ceph_recovery_tools.netfault proxy --listen IP:PORT --to IP:PORT --delay 1.5
    python -m ceph_recovery_tools.netfault watch --lab-dir D [--seconds 60] [--json]

Faults stay until SIGINT/SIGTERM or --duration seconds, then are removed.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Optional, Sequence

from . import faults, proxy, synflood
from ..common.version import add_version


def _hostport(text: str):
    host, port = text.rsplit(":", 1)
    return host, int(port)


def _hold(duration: float) -> None:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_a: stop.set())
    stop.wait(duration if duration > 0 else None)


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="netfault", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_version(ap, "ceph-recovery-netfault")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("jumbo-drop", "mtu", "cap", "mon-delay"):
        p = sub.add_parser(name)
        p.add_argument("--lab-dir", required=True)
        p.add_argument("--duration", type=float, default=0, help="seconds (0: until signal)")
    sub.choices["jumbo-drop"].add_argument("hosts", nargs=2)
    sub.choices["jumbo-drop"].add_argument("--percent", type=int, default=20)
    sub.choices["jumbo-drop"].add_argument("--min-len", type=int, default=1400)
    sub.choices["mtu"].add_argument("host")
    sub.choices["mtu"].add_argument("--mtu", type=int, default=1500)
    sub.choices["cap"].add_argument("host")
    sub.choices["cap"].add_argument("--rate", default="100mbit")
    sub.choices["mon-delay"].add_argument("--delay", type=float, default=1.5)
    sub.choices["mon-delay"].add_argument("--port", type=int, default=7310)
    li = sub.add_parser("listen")
    li.add_argument("--bind", default="0.0.0.0")
    li.add_argument("--port", type=int, required=True)
    li.add_argument("--backlog", type=int, default=1)
    li.add_argument("--duration", type=float, default=60.0)
    fl = sub.add_parser("flood")
    fl.add_argument("addr")
    fl.add_argument("--port", type=int, required=True)
    fl.add_argument("--count", type=int, default=300)
    fl.add_argument("--wait", type=float, default=3.0)
    wa = sub.add_parser("watch", help="probe every lab host, print findings as they change")
    wa.add_argument("--lab-dir", required=True)
    wa.add_argument("--seconds", type=float, default=60.0)
    wa.add_argument("--interval", type=float, default=2.0)
    wa.add_argument("--json", action="store_true", help="print the network view as JSON")
    px = sub.add_parser("proxy")
    px.add_argument("--listen", type=_hostport, required=True)
    px.add_argument("--to", type=_hostport, required=True)
    px.add_argument("--delay", type=float, default=1.5)
    px.add_argument("--delay-up", type=float, default=0.0)
    return ap


def _lab_fault(a) -> faults.Fault:
    lab = faults.LabNet.from_lab(a.lab_dir)
    if a.cmd == "jumbo-drop":
        return faults.inject_jumbo_drop(lab, a.hosts[0], a.hosts[1], a.percent, a.min_len)
    if a.cmd == "mtu":
        return faults.inject_mtu(lab, a.host, a.mtu)
    return faults.inject_cap(lab, a.host, a.rate)


def main(argv: Optional[Sequence[str]] = None) -> int:
    a = _parser().parse_args(argv)
    if a.cmd == "listen":
        print(json.dumps(synflood.listen(a.bind, a.port, a.backlog, duration_s=a.duration)))
        return 0
    if a.cmd == "flood":
        print(json.dumps(synflood.flood(a.addr, a.port, a.count, a.wait)))
        return 0
    if a.cmd == "watch":
        return _watch(a)
    if a.cmd == "proxy":
        proxy.run(a.listen, a.to, a.delay, a.delay_up,
                  ready=lambda: print(json.dumps({"listening": list(a.listen)}), flush=True))
        return 0
    try:
        if a.cmd == "mon-delay":
            return _mon_delay(a)
        fault = _lab_fault(a)
    except (faults.FaultError, OSError, ValueError) as exc:
        print("netfault: %s" % exc, file=sys.stderr)
        return 22
    print(json.dumps({"injected": fault.kind, "target": fault.target, **fault.detail}),
          flush=True)
    try:
        _hold(a.duration)
    finally:
        fault.undo()
    return 0


def _watch(a) -> int:
    """NetWatch on the lab: a line per change of the findings, the view at the end."""
    import time
    from ceph_recovery import netview, network
    from .watch import NetWatch
    last = None
    with NetWatch(a.lab_dir, interval_s=a.interval) as w:
        end = time.monotonic() + a.seconds
        while time.monotonic() < end:
            w.pump(min(end, time.monotonic() + 1.0))
            now = [(f.hosts, f.kind, round(f.value, 3)) for f in w.findings]
            if now != last:
                print(json.dumps({"time": time.time(), "findings": [
                    network.finding_dict(f) for f in w.findings]}), flush=True)
                last = now
        view = netview.build_view(w.latest, w.findings, time.time())
    print(json.dumps(view, sort_keys=True) if a.json else netview.render_text(view))
    return 0


def _mon_delay(a) -> int:
    """Delaying proxy on the bridge address + redirect of the lab hosts' mon connections."""
    import subprocess
    lab = faults.LabNet.from_lab(a.lab_dir)
    mon_ip, mon_port = _hostport(lab.mon_addr)
    px = subprocess.Popen([sys.executable, "-m", "ceph_recovery_tools.netfault", "proxy",
                           "--listen", "%s:%d" % (lab.bridge_addr, a.port),
                           "--to", "%s:%d" % (mon_ip, mon_port), "--delay", str(a.delay)],
                          stdout=subprocess.PIPE, text=True)
    try:
        px.stdout.readline()
        fault = faults.inject_mon_redirect(lab, a.port)
        print(json.dumps({"injected": "mon_delay", "delay": a.delay, "proxy_pid": px.pid}),
              flush=True)
        try:
            _hold(a.duration)
        finally:
            fault.undo()
    finally:
        px.terminate()
        px.wait(5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
