"""A power-loss drill on a host whose OSD rebuilds its allocator: `ceph recovery status` shows
the phase, and nothing the run does stops that OSD while it lasts. Lab of 3 hosts x 2 OSDs, on a
release with `bluestore_allocation_from_file` (Reef, Tentacle: the tier's release).

- BlueStore keeps its allocator in a file, and rebuilds it after an unclean stop by scanning
  every onode, only on a non-rotational device; the lab's block files sit on a rotational disk.
  So h2's first OSD is served through a loop device marked not rotational (loop_block).
- Objects are written, before the switch: the restart on the loop device replays the OSD's WAL
  into its DB's tables, where a large OSD keeps nearly all its onodes (left in the WAL, they
  are replayed into memory before the scan, which then reads nothing). Then both of h2's OSDs
  are SIGKILLed (a power loss, as the drill's `--stop kill`).
- The scan of a lab OSD's few thousand onodes lasts well under a second, shorter than a helper
  cycle and a module tick, so the loop device's reads are throttled (cgroup v1 blkio,
  SlowRebuild): BASE_BPS from the OSD's start (its mount and scan then last a few s), STALL_BPS
  for STALL_S from its own rebuild start line on, then no limit. The OSD really rebuilds: the
  phase is read from its own log lines, by the helper as by this test, and the duration
  checked is the one its end line reports.
- A controlled start of everything down (`ceph recovery start-controlled`) brings h2 back.
  `ceph recovery status -f json` must list the OSD under `hosts.h2.rebuilding` for several
  ticks; the run ends done; the OSD kept the process it was rebuilding in (same pid) and the run
  sent no stop or restart for it (neither in its journal nor carried out by the helper); plus
  the checks every fault row ends with (fault_row.Row.finish): every object verified, one start
  per OSD of h2 and no other OSD restarted, flags and settings as before, HEALTH_OK."""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time

import pytest

from ceph_recovery_tools.lab import launch
import fault_row as fr  # see conftest.py

pytestmark = pytest.mark.integration

HOST = "h2"
OBJECTS = 20000            # a few thousand onodes on the rebuilding OSD
BLKIO_BPS = "/sys/fs/cgroup/blkio/blkio.throttle.read_bps_device"
BASE_BPS = 1 << 20         # read bytes/s from the OSD's start: its mount (~1.5 MiB) ~2 s, and
                           # its scan (~1.4 MiB) lasts past the log watcher's 0.1 s poll
STALL_BPS = 4096           # read bytes/s once its start line is logged: the scan's next read
STALL_S = 20.0             # (~110 KiB) waits until the limit goes, after this long
SEEN_MIN = 3               # status must show the phase in at least this many polls ...
SEEN_SPAN_S = 10.0         # ... spanning at least this long
REBUILD_MIN_S = 15.0       # the rebuild's own duration (its end line)
START = b"NCB::restore_allocator() failed! Run Full Recovery from ONodes"
END = re.compile(rb"Allocation Recovery was completed in ([0-9.]+) seconds")


def _osd_up(lab, osd):
    return any(x["up"] for x in fr.osd_dump(lab)["osds"] if x["osd"] == osd)


@contextlib.contextmanager
def loop_block(lab, osd):
    """`osd`'s block file served through a loop device marked not rotational (its path a
    symlink to the device), from a clean restart on; undone by another clean restart (a clean
    stop writes the allocator file first). Yields the device's ("major:minor", path)."""
    block = os.path.join(lab["osds"][str(osd)]["data"], "block")
    assert launch.stop_osd(lab, osd, timeout=60)
    dev = subprocess.run(["losetup", "--find", "--show", block], capture_output=True,
                         text=True, check=True).stdout.strip()
    try:
        with open("/sys/block/%s/queue/rotational" % os.path.basename(dev), "w") as f:
            f.write("0")
        os.rename(block, block + ".file")
        os.symlink(dev, block)
        launch.start_osd(lab, osd)
        fr.wait_for(lambda: _osd_up(lab, osd), 120, "osd.%d up on %s" % (osd, dev))
        rdev = os.stat(dev).st_rdev
        yield "%d:%d" % (os.major(rdev), os.minor(rdev)), dev
    finally:
        if not launch.stop_osd(lab, osd, timeout=60):
            launch.stop_osd(lab, osd, signal.SIGKILL, 30)
        if os.path.islink(block):
            os.remove(block)
            os.rename(block + ".file", block)
        subprocess.run(["losetup", "-d", dev], check=False)
        if launch.osd_pid(lab, osd) is None:
            launch.start_osd(lab, osd)
        fr.wait_for(lambda: _osd_up(lab, osd), 120, "osd.%d up on its file again" % osd)


def _limit(devno, bps):
    """The device's read limit (bytes/s; 0: none) in the root blkio group. The loop device
    serves this OSD alone, so a limit on it slows no other process."""
    assert os.path.exists(BLKIO_BPS), "needs cgroup v1's blkio controller (%s)" % BLKIO_BPS
    with open(BLKIO_BPS, "w") as f:
        f.write("%s %d" % (devno, bps))


class SlowRebuild(object):
    """The throttle of the module docstring, driven by the OSD's log from `offset` on: the
    times (epoch s) the start and end lines were seen, the end line, the limits set."""

    def __init__(self, log, offset, devno, dev):
        self.log, self.offset, self.devno = log, offset, devno
        self.started = self.ended = None
        self.end_line = None
        self.steps = []
        self.stop = threading.Event()
        # the killed process's blocks in the device's page cache would spare the new one its
        # reads (BlueFS reads buffered): dropped, so the scan reads the device
        subprocess.run(["blockdev", "--flushbufs", dev], check=True)
        self._set(BASE_BPS)
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _set(self, bps):
        _limit(self.devno, bps)
        self.steps.append((round(time.time(), 1), bps))

    def _watch(self):
        while not self.stop.wait(0.1):
            with open(self.log, "rb") as f:
                f.seek(self.offset)
                text = f.read()
            if self.started is None and START in text:
                self.started = time.time()
                self._set(STALL_BPS)
            m = END.search(text)
            if m:
                self.ended, self.end_line = time.time(), m.group(0).decode()
                break
            if self.started is not None and time.time() - self.started > STALL_S \
                    and self.steps[-1][1]:
                self._set(0)
        self._set(0)

    def close(self):
        self.stop.set()
        self.thread.join(10)
        _limit(self.devno, 0)

    def seconds(self):
        """The rebuild's duration its end line reports."""
        return float(END.search(self.end_line.encode()).group(1)) if self.end_line else None


def _watch_run(lab, osd, timeout=240.0):
    """Poll `ceph recovery status -f json` every 0.5 s until the run ends: the polls that
    listed `osd` under its host's `rebuilding` ([(time, pid, in_flight, open instructions)]),
    the first such document and the plain status at that moment, and the last document."""
    seen, first, plain = [], None, None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        s = fr.status(lab)
        h = s["hosts"].get(HOST) or {}
        if osd in (h.get("rebuilding") or []):
            seen.append((time.time(), launch.osd_pid(lab, osd), list(h.get("in_flight") or []),
                         [i for i in s.get("open_instructions") or [] if i.get("osd") == osd]))
            if first is None:
                first = s
                plain = launch.ceph(lab, "recovery", "status", json_out=False)
        if s["phase"] in ("done", "aborted") and not s["active"]:
            return seen, first, plain, s
        time.sleep(0.5)
    raise AssertionError("the run did not end in %ss (rebuilding seen %d times)"
                         % (timeout, len(seen)))


@pytest.fixture(scope="module")
def rlab(lab_factory):
    """A lab of its own, taken down after: an OSD taken through a loop device and back can
    hang in its next clean stop on Tentacle (after `freelist shutdown`), so it is never
    handed to the session lab's later files."""
    yield lab_factory()
    lab_factory.down()


def test_a_power_loss_drill_shows_the_allocator_rebuild_and_never_stops_the_osd(rlab):
    lab = rlab
    assert lab["ceph"] in ("reef", "tentacle"), \
        "the allocator rebuild needs bluestore_allocation_from_file (Reef, Tentacle): " \
        "CEPH_RECOVERY_FULL_RELEASE=%s" % lab["ceph"]
    osds = sorted(int(o) for o in lab["hosts"][HOST]["osds"])
    osd = osds[0]
    with fr.objects(lab) as objs:
        # written before the switch to the loop device: the restart on it replays the OSD's
        # WAL into its DB's tables, where a large OSD keeps nearly all its onodes (a lab OSD's
        # recent ones would sit in its WAL, replayed into memory before the scan, which then
        # reads nothing)
        objs.write_aio("rebuild-phase-before", OBJECTS)
        with loop_block(lab, osd) as (devno, dev):
            row(lab, osds, osd, devno, dev)


def row(lab, osds, osd, devno, dev):
    """The SIGKILL, the controlled start and its checks (module docstring)."""
    log = lab["osds"][str(osd)]["log_file"]
    r = fr.Row(lab, "rebuild-phase", osds)
    slow = None
    try:
        offset = os.path.getsize(log)
        for o in osds:
            launch.stop_osd(lab, o, signal.SIGKILL, 10)
        t_fault = time.time()
        fr.wait_for(lambda: not any(_osd_up(lab, o) for o in osds), 90, "h2's OSDs down")
        slow = SlowRebuild(log, offset, devno, dev)
        r.start_run()
        seen, first, plain, last = _watch_run(lab, osd)
        slow.close()
        assert last["phase"] == "done", last["phase"]
        entries = r.remember()
        res = r.finish(t_fault)
        check(lab, osd, seen, slow, entries)
        span = seen[-1][0] - seen[0][0]
        res.update({"rebuild_logged_s": slow.seconds(), "end_line": slow.end_line,
                    "status_rebuilding_polls": len(seen),
                    "status_rebuilding_span_s": round(span, 1),
                    "first_seen_after_start_line_s": round(seen[0][0] - slow.started, 1),
                    "throttle_steps": slow.steps,
                    "status_hosts_h2": first["hosts"][HOST], "status_plain": plain})
        print("rebuild-phase row: %s" % res)
        print(plain)
    finally:
        if slow is not None:
            slow.close()
        r.close()


def check(lab, osd, seen, slow, entries):
    """The phase was seen in status for long enough, in one process the run never stopped."""
    assert slow.started is not None and slow.end_line, "no rebuild in osd.%d's log" % osd
    assert slow.seconds() >= REBUILD_MIN_S, slow.end_line
    assert len(seen) >= SEEN_MIN and seen[-1][0] - seen[0][0] >= SEEN_SPAN_S, \
        [round(t - slow.started, 1) for t, *_ in seen]
    pids = {pid for _, pid, _, _ in seen}
    assert len(pids) == 1 and None not in pids, pids          # one process all along
    assert pids == {launch.osd_pid(lab, osd)}, (pids, launch.osd_pid(lab, osd))
    assert all(osd in in_flight for _, _, in_flight, _ in seen), seen   # the run's own start
    assert not [i for *_, ins in seen for i in ins if i.get("op") != "start"], seen
    for kind in ("stop_osd", "restart_osd"):
        assert not fr.kinds(entries, kind, osd), fr.kinds(entries, kind, osd)
    ops = [j["action"].get("op") for j in fr.kinds(entries, "helper_done", osd)]
    assert ops == ["start"], ops
    waits = [j for j in fr.kinds(entries, "wait")
             if "osd.%d rebuilds its allocator" % osd in j["action"].get("reason", "")]
    assert waits, fr.excerpt(entries)
