"""The fault matrix's shared parts (tests/integration/test_fault_matrix.py and
test_fault_netns.py): a row's outage, its objects, its poller of OSD processes and module
command latency, and the checks every row ends with (Row.finish), after the fault clears:
- every object written so far (before the outage and during it, by every row) reads back with
  its checksum (scripts/drill/objects.py);
- no OSD process started outside the plan or twice: an OSD outside the row's outage keeps its
  process; each row OSD has no more new processes than start instructions the helper carried
  out for it (journal `helper_done`), and exactly one where the fault does not kill starts;
- every flag the run changed is restored (no noout/norebalance, no per-OSD noup, no group
  noup), every OSD setting is as before the row (`config dump`) with no restore pending in
  the stored progress, and the cluster is HEALTH_OK; a row that leaves something on purpose
  checks the health check that names it first;
- no `ceph recovery status` call, polled every few seconds through the row, took longer than
  the module's mon_command_timeout (calls while no mgr is active are not the module's).
Loaded by file path (not a test module)."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from ceph_recovery.inflight import MAX_START_FAILURES  # noqa: F401 (the rows' bound)
from ceph_recovery_tools.common import cgroup
from ceph_recovery_tools.lab import inrelease, launch
from ceph_recovery_tools.lab.launch import CephError

RESULTS: Dict[str, Any] = {}
COMMAND_TIMEOUT = 30.0        # mgr/recovery/mon_command_timeout (default)
RUN_FLAGS = ("noout", "norebalance")
BALLOON = ("import sys, time\n"
           "b = b'\\x01' * int(sys.argv[1])\n"      # written: resident, charged to the group
           "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
           "time.sleep(900)\n")


@contextlib.contextmanager
def objects(state):
    """The rows' objects in the lab's pool (state["_objects"]), written and read back by the
    lab release's librados (inrelease.LabObjects): a Pacific client cannot authenticate to a
    Tentacle cluster. The pool is emptied first, and the rows' objects removed once they
    passed."""
    state["_objects"] = inrelease.LabObjects(state)
    # a session's lab serves many files: a row's recoveries and backfills move only what its
    # own rows write (each row verifies only its own objects)
    state["_objects"].purge()
    try:
        yield state["_objects"]
        state["_objects"].remove()
    finally:
        state.pop("_objects", None)


@contextlib.contextmanager
def serving(state, lab_factory, out: str, name: str, t0: float):
    """A module's lab for fault rows: its set-up times recorded as RESULTS[name], served with
    the rows' objects; then the results merged into `out` and the lab taken down."""
    RESULTS[name] = {"up_seconds": state.get("up_seconds"),
                     "setup_seconds": round(time.monotonic() - t0, 1)}
    try:
        with objects(state):
            yield state
    finally:
        save_results(out)
        print("fault matrix results: %s" % out)
        lab_factory.down()


def balloon(state, host: str, nbytes: int) -> subprocess.Popen:
    """A process in `host`'s memory cgroup holding `nbytes`, once it printed ready: puts the
    host over a budget without any OSD growing."""
    procs = os.path.join(state["hosts"][host]["cgroup"]["path"], "cgroup.procs")

    def join():
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    p = subprocess.Popen([sys.executable, "-c", BALLOON, str(nbytes)], preexec_fn=join,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


def limit_empty_group(cg, limit) -> None:
    """Limit a memory cgroup that has no process left; on v1 its leftover page cache is
    dropped first (memory.force_empty), or a limit below that charge is refused (EBUSY)."""
    if cg["version"] == 1:
        with open(os.path.join(cg["path"], "memory.force_empty"), "w") as f:
            f.write("0")
    cgroup.set_limit(cg["path"], cg["version"], limit)


def save_results(path: str) -> None:
    """Merge this file's RESULTS into the JSON at `path` (several files share it)."""
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError):
        old = {}
    old.update(RESULTS)
    with open(path, "w") as f:
        json.dump(old, f, indent=1, sort_keys=True)


def status(state, timeout=60) -> Dict[str, Any]:
    return launch.ceph(state, "recovery", "status", timeout=timeout)


def osd_dump(state) -> Dict[str, Any]:
    return launch.ceph(state, "osd", "dump")


def wait_for(pred, timeout, what, every=1.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = pred()
        except CephError:            # a mgr failover or mon outage: try again
            last = None
        if last:
            return last
        time.sleep(every)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))


def active_mgr(state) -> Optional[str]:
    d = launch.ceph(state, "mgr", "dump", timeout=30)
    return d.get("active_name") if d.get("available") else None


def journal(state, since: float) -> List[Dict[str, Any]]:
    return [j for j in status(state)["journal"] if j["time"] >= since - 1]


def kinds(entries, kind, osd=None):
    """The journal entries of `kind` (and `osd`) that were carried out: a tick journals each
    acting step "in progress" before its write-ahead state write, and one the mgr died on
    before acting was never sent (the processes each row counts say what really started)."""
    return [j for j in entries if j["action"].get("kind") == kind
            and (osd is None or j["action"].get("osd") == osd)
            and j.get("result") != "in progress"]


def excerpt(entries, n=12) -> List[str]:
    """Short journal lines for the table: kind, osd, result (waits and repeats left out)."""
    out = []
    for j in entries:
        a = j["action"]
        if a.get("kind") in ("wait", "query_ok_to_stop", "heap_release"):
            continue
        osd = " osd.%s" % a["osd"] if "osd" in a else ""
        flag = " %s" % a["flag"] if "flag" in a else ""
        out.append("%s%s%s: %s" % (a.get("kind"), osd, flag, str(j.get("result"))[:60]))
    return out[-n:] if len(out) > n else out


# ------------------------------------------------------------------ faults
STATE_KEY = "mgr/recovery/run_state"


def stored_header(state) -> Tuple[Dict[str, Any], str]:
    """The stored run state's header and, for a state written inline (it fits one entry:
    the header's line, then the text), its text; a chunked state's text is "" here."""
    entry = launch.ceph(state, "config-key", "get", STATE_KEY, json_out=False, timeout=30)
    first, _sep, text = entry.partition("\n")
    head = json.loads(first)
    return head, text if head.get("format") == "inline-v1" else ""


def corrupt_state(state) -> str:
    """Garbage where the stored state's text is: its inline text, else its first chunk."""
    head, text = stored_header(state)
    if text:
        launch.ceph(state, "config-key", "set", STATE_KEY, json.dumps(head) + "\ncorrupt{",
                    json_out=False)
        return STATE_KEY
    key = "%s.%s.0" % (STATE_KEY, head["slot"])
    launch.ceph(state, "config-key", "set", key, "corrupt{", json_out=False)
    return key


def report(host: str, **over) -> str:
    rep = {"version": 1, "host": host, "time": time.time(), "seq": 1,
           "memory": {"total": 8 << 30, "used": 1 << 20, "available": 6 << 30, "limit": None,
                      "source": "host"}, "osds": [], "done": []}
    rep.update(over)
    return json.dumps(rep)


def osd_config(state) -> List[Any]:
    """Each OSD's own settings in the monitors' config database (`config dump`, sections
    osd.N): what a run lowers (osd_memory_target, the recovery throttle) and must put back.
    The lab tools' tuning of the whole `osd` section is not a run's."""
    return sorted((x.get("section"), x.get("name"), x.get("value"))
                  for x in launch.ceph(state, "config", "dump", timeout=30)
                  if str(x.get("section", "")).startswith("osd."))


def stored_progress(state) -> Dict[str, Any]:
    """The run's progress as the module stored it (config-key mgr/recovery/run_state):
    what a standby would resume, e.g. `failures` (failed starts per OSD in this run)."""
    head, text = stored_header(state)
    if not text:
        text = "".join(launch.ceph(state, "config-key", "get", "%s.%s.%d" % (
            STATE_KEY, head["slot"], i), json_out=False, timeout=30)
            for i in range(head["chunks"]))
    return json.loads(text)["progress"]


def named(state, code: str, what: str) -> List[str]:
    """The detail lines of health check `code` (`ceph health detail`) that name `what`."""
    check = launch.health(state).get("checks", {}).get(code) or {}
    return [d.get("message", "") for d in check.get("detail", []) if what in d.get("message", "")]


def pause_and_second_run(state) -> Dict[str, Any]:
    """Mid-fault: `pause` (RECOVERY_PAUSED raised) and a second `start-controlled`, which must
    be refused with EBUSY and change nothing. The caller resumes once its fault is cleared."""
    launch.ceph(state, "recovery", "pause", json_out=False)
    wait_for(lambda: "RECOVERY_PAUSED" in launch.health(state).get("checks", {}), 30,
             "RECOVERY_PAUSED")
    try:
        launch.ceph(state, "recovery", "start-controlled", json_out=False, timeout=60)
    except CephError as e:
        assert e.rc == errno.EBUSY, (e.rc, e.stderr[-300:])
        refused = e.stderr.strip()[-160:]
    else:
        raise AssertionError("a second start-controlled was accepted during a run")
    s = status(state)
    assert s["active"] and s["mode"] == "paused", (s["active"], s["mode"])
    return {"second_run": "EBUSY: " + refused}


def resume(state) -> None:
    launch.ceph(state, "recovery", "resume", json_out=False)
    wait_for(lambda: "RECOVERY_PAUSED" not in launch.health(state).get("checks", {}), 30,
             "RECOVERY_PAUSED cleared")


# ------------------------------------------------------------------ one row
class Row(object):
    """A fault row: outage of `osds`, objects written before and during it, a poller for
    process pids and module command latency, and the common checks at the end."""

    def __init__(self, state, name: str, osds: List[int]) -> None:
        self.state, self.name, self.osds = state, name, sorted(osds)
        self.t0 = time.time()
        self.objs: inrelease.LabObjects = state["_objects"]
        self.pids: Dict[int, set] = {int(o): set() for o in state["osds"]}
        self.calls: List[Dict[str, float]] = []
        self.no_mgr: List[List[float]] = []      # windows without an active mgr (planned)
        self.stop = threading.Event()
        self.result: Dict[str, Any] = {"osds": self.osds}
        self.remembered: Dict[str, Dict[str, Any]] = {}   # journal entries seen so far
        self.before = {o: launch.osd_pid(state, o) for o in self.pids}
        self.config_before = osd_config(state)
        self.poller = threading.Thread(target=self._poll, daemon=True)
        self.poller.start()

    def _poll(self) -> None:
        n = 0
        while not self.stop.is_set():
            for o in self.pids:
                pid = launch.osd_pid(self.state, o)
                if pid is not None:
                    self.pids[o].add(pid)
            if n % 3 == 0:
                t = time.time()
                try:
                    launch.ceph(self.state, "recovery", "status", timeout=120)
                    ok = True
                except CephError:
                    ok = False
                self.calls.append({"t": t, "s": time.time() - t, "ok": ok})
            n += 1
            self.stop.wait(1.0)

    def remember(self) -> List[Dict[str, Any]]:
        """The journal since the row began, merged with what was seen earlier: a state lost
        with a mgr keeps no journal, but what it did still counts."""
        for j in journal(self.state, self.t0):
            key = json.dumps([j["time"], j["action"]], sort_keys=True)
            seen = self.remembered.get(key)
            # a state written before the entry's result (the write-ahead) and loaded by a
            # new mgr shows it "in progress": the result seen earlier stands
            if seen is None or j.get("result") != "in progress":
                self.remembered[key] = j
        return sorted(self.remembered.values(), key=lambda j: j["time"])

    def write(self, prefix: str, n: int = 150) -> None:
        self.objs.write_aio("%s-%s" % (self.name, prefix), n)

    def outage(self) -> None:
        self.write("before")
        for o in self.osds:
            launch.stop_osd(self.state, o, signal.SIGKILL, 10)
        wait_for(lambda: all(not x["up"] for x in osd_dump(self.state)["osds"]
                             if x["osd"] in self.osds), 90, "the row's OSDs down")
        self.write("during")

    def fail_over(self, timeout: float):
        """SIGKILL the active mgr; once a standby is active and the module answers, the
        window without a mgr is recorded (its calls are not the module's): (old, new)."""
        self.remember()
        old = active_mgr(self.state)
        t_kill = time.time()
        os.kill(launch.mgr_pid(self.state, old), signal.SIGKILL)
        new = wait_for(lambda: (lambda n: n if n and n != old else None)(
            active_mgr(self.state)), timeout, "a standby mgr active")
        wait_for(lambda: status(self.state, timeout=30), 60, "the module answering")
        self.no_mgr.append([t_kill, time.time()])
        return old, new

    def start_run(self) -> None:
        launch.ceph(self.state, "recovery", "start-controlled", json_out=False, timeout=60)
        self.t_run = time.time()

    def wait_done(self, timeout: float = 240) -> Dict[str, Any]:
        s = wait_for(lambda: (lambda x: x if x["phase"] in ("done", "aborted") and
                              not x["active"] else None)(status(self.state)),
                     timeout, "the run to end", every=2.0)
        assert s["phase"] == "done", s["phase"]
        return s

    def finish(self, t_fault: float, single_start: bool = True) -> Dict[str, Any]:
        st = self.state
        launch.wait_all_up(st, 180)
        launch.wait_pgs_clean(st, 240)
        health = launch.wait_health_ok(st, 180)
        t_ok = time.time()
        self.stop.set()
        self.poller.join(10)
        entries = self.remember()
        # data
        ok, bad = self.objs.verify()
        assert not bad and ok == len(self.objs.sums), bad[:5]
        # starts: nothing outside the plan, none twice
        for o, seen in self.pids.items():
            new = seen - {self.before[o]}
            if o not in self.osds:
                assert not new, "osd.%d restarted outside the plan: %s; its journal: %s" % (
                    o, sorted(new), [j for j in entries if j["action"].get("osd") == o][-8:])
                continue
            done = [j for j in kinds(entries, "helper_done", o) if j["action"].get("op")
                    in ("start", "restart")]
            assert len(new) <= len(done), (o, sorted(new), len(done))
            if single_start:
                assert len(done) == 1 and len(new) == 1, (o, len(done), sorted(new))
        # flags restored
        m = osd_dump(st)
        assert not set(RUN_FLAGS) & set(m["flags"].split(",")), m["flags"]
        assert not [x["osd"] for x in m["osds"] if "noup" in x["state"]]
        assert not {b: f for b, f in (m.get("crush_node_flags") or {}).items() if f}
        assert health["status"] == "HEALTH_OK", health
        # every setting a run changed is back (the OSDs' own config, as before the row)
        assert osd_config(st) == self.config_before, (osd_config(st), self.config_before)
        assert not stored_progress(st).get("restoring"), stored_progress(st)
        # module commands bounded by their timeout
        # a call in flight when the mgr died waits for the next one: not the module's
        mine = [c for c in self.calls if not any(a - 5 <= c["t"] <= b for a, b in self.no_mgr)]
        slow = [c for c in mine if c["s"] > COMMAND_TIMEOUT]
        assert not slow, slow
        self.result.update({
            "recover_s": round(t_ok - t_fault, 1), "objects_verified": ok,
            "objects_total": len(self.objs.sums), "status_calls": len(mine),
            "status_max_s": round(max([c["s"] for c in mine] or [0]), 2),
            "journal": excerpt(entries), "wall_s": round(time.time() - self.t0, 1)})
        RESULTS[self.name] = self.result
        return self.result

    def close(self) -> None:
        self.stop.set()


@contextlib.contextmanager
def rows(state, name: str):
    """A test's row maker (make(osds) -> Row); its rows closed and the lab restored after, so
    that a failed row does not break the next one, with every lab helper running again."""
    from ceph_recovery_tools.lab import procs
    from ceph_recovery_tools.lab.restore import restore
    made: List[Row] = []

    def make(osds):
        r = Row(state, name, osds)
        made.append(r)
        return r
    try:
        yield make
    finally:
        for r in made:
            r.close()
        restore(state, 300)
        for h in state["hosts"]:
            if not procs.alive(state.get("pids", {}).get("helper.%s" % h),
                               ("ceph-recovery-helper", state["dir"])):
                launch.start_helper(state, h)
