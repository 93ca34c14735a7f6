"""Synthetic node helpers for a scale lab, run inside the release's chroot (its python3-rados):
each plays one OSD host with its own key (`client.recovery-helper.<host>`, per-host caps) and
sends the real helper protocol (`recovery helper-report`, protocol.py: seq, instance, memory,
per-OSD processes, done ids) every interval, and carries out its instructions on pretend
processes:

- `start`/`restart`: the process runs; its first report shows it `initializing` at
  INIT_RSS, the next ones `preboot` at LOAD_RSS (its PG logs loaded, waiting for noup to go).
  It never boots: no daemon exists, the OSD stays down in the map.
- `stop`: the process is stopped.
Hosts named in `down` start with their OSDs stopped (a rack whose power came back); every
other host's OSDs run at RUN_RSS.

    python3 -m ceph_recovery_tools.lab.scaleload --conf C --keyring K --spec S --out O
spec (JSON): {"hosts": {host: [osd ids]}, "down": [hosts], "steps": [[seconds, interval]],
"start_at": when the first step begins (epoch s), "transport": "command" | "endpoint"}; or,
instead of "start_at", "ready" and "go" files: the worker writes "ready" once its hosts are
enrolled and begins its first step at the time the bench writes to "go" (start_time()).
"command" sends every report as the command on the host's own session; "endpoint" sends one
report by command (its reply names the module's report endpoint and the host's token), closes
the session, and posts the others to the endpoint, as the helper does.
Each step sends every host's report once per `interval` seconds (spread evenly) for `seconds`;
a step of interval 0 sends none (a pause).
out (JSON): per step {"interval", "sent", "failed", "rtt_ms": [...], "errors": {...}}, and the
instructions seen per host.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional, Tuple

GiB = 1 << 30
HOST_RAM = 128 * GiB
BASE_USED = 4 * GiB
RUN_RSS = 3 * GiB
INIT_RSS = 300 << 20
LOAD_RSS = 1200 << 20
PREFIX = "recovery helper-report"
# a report unanswered by then counts as failed (the helper's own cycle would give up on it)
CALL_TIMEOUT_S = 30
# hosts enrolled at once (a session, one report by command, the session closed)
ENROLL_THREADS = 16
# how long a worker waits for the bench's start time once its hosts are enrolled
GO_WAIT_S = 900


class Host(object):
    """One synthetic helper: its OSDs' pretend processes and its report sequence."""

    def __init__(self, name: str, osds: List[int], down: bool) -> None:
        self.name = name
        self.instance = "%d-%s" % (os.getpid(), uuid.uuid4().hex[:12])
        self.seq = 0
        self.procs: Dict[int, Dict[str, Any]] = {}
        for o in osds:
            self.procs[o] = self._stopped(o) if down else self._running(o, "active", RUN_RSS)
        self.done: List[str] = []
        self.seen: set = set()
        self.ops: List[Dict[str, Any]] = []   # instructions carried out: (id, op, osd, time)

    @staticmethod
    def _stopped(o: int) -> Dict[str, Any]:
        return {"id": o, "process": "stopped", "pid": None, "rss": 0, "started_at": None}

    def _running(self, o: int, state: str, rss: int) -> Dict[str, Any]:
        return {"id": o, "process": "running", "pid": 100000 + o, "rss": rss,
                "started_at": time.time(), "state": state}

    def report(self) -> str:
        self.seq += 1
        for p in self.procs.values():     # a started process has loaded its PGs by now
            if p["process"] == "running" and p.get("state") == "initializing":
                p["state"], p["rss"] = "preboot", LOAD_RSS
        used = BASE_USED + sum(p["rss"] for p in self.procs.values())
        rep = {"version": 1, "host": self.name, "time": time.time(), "seq": self.seq,
               "instance": self.instance,
               "memory": {"total": HOST_RAM, "used": used, "available": HOST_RAM - used,
                          "limit": None, "swap_total": 0, "source": "host"},
               "osds": [dict(p) for _o, p in sorted(self.procs.items())],
               "done": list(self.done), "network": {}}
        return json.dumps(rep)

    def take(self, reply: Dict[str, Any], now: float) -> None:
        """Carry out the reply's instructions not seen before; acknowledge them next time."""
        ids = {x.get("id") for x in reply.get("instructions", ())}
        self.done = [i for i in self.done if i in ids]   # the others are closed
        for ins in reply.get("instructions", ()):
            iid, op, osd = ins.get("id"), ins.get("op"), ins.get("osd")
            if iid in self.seen or osd not in self.procs:
                continue
            self.seen.add(iid)
            self.procs[osd] = self._stopped(osd) if op == "stop" else \
                self._running(osd, "initializing", INIT_RSS)
            self.ops.append({"id": iid, "op": op, "osd": osd, "t": round(now, 3)})
            self.done.append(iid)


def connect(conf: str, keyring: str, host: str):
    import rados
    cluster = rados.Rados(conffile=conf, name="client.recovery-helper.%s" % host,
                          conf={"keyring": keyring, "admin_socket": "", "log_file": "",
                                "log_to_stderr": "false", "ms_async_op_threads": "1",
                                "rados_mon_op_timeout": "0"})
    cluster.connect(timeout=60)
    return cluster


class Step(object):
    def __init__(self, interval: float, seconds: float) -> None:
        self.interval, self.seconds = interval, seconds
        self.sent = self.failed = 0
        self.rtt_ms: List[float] = []
        self.errors: Dict[str, int] = {}
        self.lock = threading.Lock()

    def add(self, rtt: float, rc: Optional[int], err: str = "") -> None:
        with self.lock:
            self.sent += 1
            self.rtt_ms.append(round(rtt * 1000.0, 2))
            if rc != 0:
                self.failed += 1
                key = ("rc %s %s" % (rc, err))[:120]
                self.errors[key] = self.errors.get(key, 0) + 1

    def doc(self) -> Dict[str, Any]:
        return {"interval": self.interval, "seconds": self.seconds, "sent": self.sent, "failed": self.failed,
                "rtt_ms": self.rtt_ms, "errors": self.errors}


def command_sender(cluster) -> Callable[[Host, str], Tuple[int, Any, str]]:
    """Reports by the `helper-report` command on the host's own cephx session."""
    def send(host: Host, text: str) -> Tuple[int, Any, str]:
        cmd = json.dumps({"prefix": PREFIX, "report": text, "host": host.name,
                          "format": "json"})
        rc, outb, outs = cluster.mgr_command(cmd, b"", timeout=CALL_TIMEOUT_S)
        return rc, (json.loads(outb) if rc == 0 and outb else None), outs
    return send


def endpoint_sender(url: str, token: str) -> Callable[[Host, str], Tuple[int, Any, str]]:
    """Reports to the module's endpoint, as the helper sends them once it knows it."""
    from ceph_recovery_tools.helper import endpoint

    def send(host: Host, text: str) -> Tuple[int, Any, str]:
        return endpoint.post_report(url, token, host.name, text, CALL_TIMEOUT_S)
    return send


def enroll(conf: str, keyring: str, host: Host) -> Callable[[Host, str], Tuple[int, Any, str]]:
    """The endpoint transport: one report by command on the host's key (its reply names the
    endpoint and the host's token), then the session is closed."""
    from ceph_recovery import reportauth
    cluster = connect(conf, keyring, host.name)
    try:
        rc, reply, outs = command_sender(cluster)(host, host.report())
    finally:
        cluster.shutdown()
    found = reportauth.parse_endpoint((reply or {}).get("endpoint")) if rc == 0 else None
    if found is None:
        raise RuntimeError("%s: no report endpoint in the reply (rc %s %s)" % (host.name, rc,
                                                                            outs))
    host.take(reply, time.time())
    return endpoint_sender(*found)


def play(send: Callable[[Host, str], Tuple[int, Any, str]], host: Host,
         steps: List[List[float]], out: List[Step], offset: float, t0: float) -> None:
    """One helper's loop: a report every step's interval, first at `offset` into it."""
    start = t0
    for (seconds, interval), rec in zip(steps, out):
        end = start + seconds
        if interval <= 0:            # a silent step: no report in it
            start = end
            continue
        nxt = start + offset * interval
        while nxt < end:
            time.sleep(max(0.0, nxt - time.time()))
            t = time.time()
            try:
                rc, reply, outs = send(host, host.report())
            except Exception as e:  # noqa: BLE001 - counted as a failed report
                rc, reply, outs = -1, None, str(e)
            now = time.time()
            rec.add(now - t, rc, outs if rc != 0 else "")
            if rc == 0 and isinstance(reply, dict):
                host.take(reply, now)
            nxt += interval
        start = end


def senders(conf: str, keyring: str, hosts: List[Host], transport: str) -> Tuple[list, list]:
    """(one send function per host, the rados sessions to close after)."""
    if transport == "endpoint":
        with ThreadPoolExecutor(ENROLL_THREADS) as pool:
            return list(pool.map(lambda h: enroll(conf, keyring, h), hosts)), []
    clusters = [connect(conf, keyring, h.name) for h in hosts]
    return [command_sender(c) for c in clusters], clusters


def start_time(spec: Dict[str, Any]) -> float:
    """When the first step begins. With "ready" and "go" files in the spec, this worker says
    it has enrolled its hosts (writes "ready") and waits (at most GO_WAIT_S) for the time
    written to "go", which the bench writes once every worker is ready; else "start_at".
    The wait is a plain poll: this runs in the release's chroot, which has no tenacity."""
    if spec.get("ready"):
        with open(spec["ready"], "w") as f:
            f.write("%.3f" % time.time())
    go = spec.get("go")
    if not go:
        return float(spec.get("start_at") or time.time() + 1.0)
    deadline = time.time() + GO_WAIT_S
    while not os.path.exists(go):
        if time.time() > deadline:
            raise RuntimeError("no start time in %s after %d s" % (go, GO_WAIT_S))
        time.sleep(0.2)
    with open(go) as f:
        return float(f.read())


def run(conf: str, keyring: str, spec: Dict[str, Any]) -> Dict[str, Any]:
    down = set(spec.get("down", ()))
    names = sorted(spec["hosts"])
    hosts = [Host(h, list(spec["hosts"][h]), h in down) for h in names]
    sends, clusters = senders(conf, keyring, hosts, spec.get("transport", "command"))
    steps = spec["steps"]
    recs = [Step(float(i), float(sec)) for sec, i in steps]
    t0 = start_time(spec)
    n = max(1, len(hosts))
    threads = [threading.Thread(target=play, args=(s, h, steps, recs, (k + 0.5) / n, t0),
                                daemon=True)
               for k, (s, h) in enumerate(zip(sends, hosts))]
    for t in threads:
        t.start()
    end = t0 + sum(float(sec) for sec, _i in steps) + CALL_TIMEOUT_S + 10
    for t in threads:
        t.join(max(0.1, end - time.time()))
    stuck = sum(1 for t in threads if t.is_alive())
    if not stuck:
        for c in clusters:
            c.shutdown()
    return {"stuck_threads": stuck, "steps": [r.doc() for r in recs],
            "ops": {h.name: h.ops for h in hosts if h.ops}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="scaleload")
    p.add_argument("--conf", required=True)
    p.add_argument("--keyring", required=True)
    p.add_argument("--spec", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    with open(a.spec) as f:
        spec = json.load(f)
    doc = run(a.conf, a.keyring, spec)
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.rename(tmp, a.out)
    sys.stdout.flush()
    os._exit(0)      # helper threads still blocked in a call are not waited for


if __name__ == "__main__":
    sys.exit(main())
