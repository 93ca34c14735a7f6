"""A drill's write load in the mgr shell (recovery.drillload.Writer and `drill start
--write-load`): a fake librados and a recording mon; exact mon commands out, counters and
checksum verdicts in."""
from __future__ import annotations

import errno

from recovery import drillcli, drillload, maint  # see conftest.py

from ceph_recovery import drillload as L

import maintcases as ME  # noqa: E402  (registered by conftest.py)
world = ME.world


class Obj(object):
    def __init__(self, key):
        self.key = key


class Ioctx(object):
    def __init__(self, store, fail_writes=0):
        self.store, self.fail_writes, self.closed = store, fail_writes, False

    def write_full(self, name, data):
        if self.fail_writes:
            self.fail_writes -= 1
            raise IOError("EAGAIN")
        self.store[name] = bytes(data)

    def read(self, name, length):
        return self.store[name][:length]

    def list_objects(self):
        return [Obj(k) for k in sorted(self.store)]

    def close(self):
        self.closed = True


class Rados(object):
    def __init__(self, fail_writes=0, pools=()):
        self.store, self.fail_writes, self.pools = {}, fail_writes, set(pools)

    def open_ioctx(self, pool):
        return Ioctx(self.store, self.fail_writes)

    def pool_exists(self, name):
        return name in self.pools


class Clock(object):
    """Each read moves 0.01 s on; a rate wait moves it to the wake-up time."""

    def __init__(self):
        self.t = 100.0

    def __call__(self):
        self.t += 0.01
        return self.t


def writer(rados, calls, rc=0, rate=50, state=L.CREATING):
    def mon(cmd):
        calls.append(cmd)
        return (rc, "", "" if rc == 0 else "EPERM: pool deletion is disabled")
    load = L.Load(rate=rate, pool="recovery-drill-d1", size=3, min_size=2, state=state)
    return drillload.Writer(rados, mon, load, clock=Clock())


def test_create_write_verify_remove_in_order_and_only_the_drills_pool():
    rados, calls = Rados(), []
    w = writer(rados, calls)
    assert w._create() and not w._create()          # once
    assert [(c["prefix"], c.get("var"), c.get("val")) for c in calls] == [
        ("osd pool create", None, None), ("osd pool set", "size", "3"),
        ("osd pool set", "min_size", "2"), ("osd pool application enable", None, None)]
    assert {c["pool"] for c in calls} == {"recovery-drill-d1"}
    for _ in range(40):
        w._next = 0.0                               # the rate wait itself: next test
        w._write_one()
    s = w.take()
    assert (s.pool_ready, s.written, s.errors, len(s.latencies_ms)) == (True, 40, 0, 40)
    assert w.take().latencies_ms == ()              # handed over once
    assert w._verify() and w.take().verified == 40 and w.take().bad == 0
    calls.clear()
    assert w._remove() and not w._remove()
    assert calls == [{"prefix": "osd pool rm", "pool": "recovery-drill-d1",
                      "pool2": "recovery-drill-d1", "yes_i_really_really_mean_it": True}]
    assert w.take().removed


def test_a_corrupt_or_lost_object_fails_verification():
    rados, calls = Rados(), []
    w = writer(rados, calls)
    w._create()
    for _ in range(5):
        w._next = 0.0
        w._write_one()
    rados.store["obj-00000001"] = b"x" * L.OBJECT_SIZE     # corrupt
    del rados.store["obj-00000003"]                        # lost
    w._verify()
    s = w.take()
    assert (s.verified, s.bad) == (3, 2)


def test_transient_write_errors_are_retried_then_counted():
    w = writer(Rados(fail_writes=2), [])
    w._create()
    w._write_one()
    assert (w.take().written, w.take().errors) == (1, 0)        # third try went through
    w2 = writer(Rados(fail_writes=5), [])
    w2._create()
    w2._next = 0.0
    w2._write_one()
    assert (w2.take().written, w2.take().errors) == (0, 1)


def test_the_rate_is_bounded():
    w = writer(Rados(), [], rate=10)
    w._create()
    w._write_one()
    assert w._next > w.clock.t                       # the next slot is 1/rate later
    before = w.take().written
    w.stop.set()                                     # no real sleep: stop's wait returns
    w._write_one()
    assert w.take().written == before


def test_a_refused_removal_is_reported_not_retried():
    calls = []
    w = writer(Rados(), calls, rc=-errno.EPERM, state=L.VERIFIED)
    assert w._remove() and "EPERM" in w.take().error
    assert not w._remove() and len(calls) == 1


def test_write_load_refused_without_mon_allow_pool_delete(world):
    eng, mon = ME.make(world)
    eng.ceph.rados = Rados()
    rc, out, err = drillcli.start(eng, "h2", "30s", None, None, "plain", 1000.0, 10)
    assert rc == 0 and mon.calls == []        # the handler asks no mon: the tick does
    ME.tick(eng, world, 1001.0)
    assert {"prefix": "config get", "who": "mon", "key": "mon_allow_pool_delete"} in mon.calls
    (d,) = eng.run.drills
    assert d.phase == "aborted" and "mon_allow_pool_delete" in d.reason
    assert eng.run.windows == [] and [c for c in mon.mutations()
                                      if c["prefix"] != "config get"] == []
    rc, _o, err = maint.wait(eng, None, "plain")
    assert rc == -errno.EINVAL and "mon_allow_pool_delete" in err
    rc, _o, err = drillcli.start(eng, "h2", "30s", None, None, "plain", 1002.0, 0)
    assert rc == -errno.EINVAL and "1 to 500" in err


def test_write_load_accepted_names_its_pool(world):
    eng, mon = ME.make(world)
    eng.ceph.rados = Rados()
    real = mon.mon_command
    mon.mon_command = lambda cmd: (0, "true\n", "") if cmd["prefix"] == "config get" \
        else real(cmd)
    rc, out, err = drillcli.start(eng, "h2", "30s", None, None, "plain", 1000.0, 10)
    assert rc == 0 and "writing 10 objects/s to pool recovery-drill-d1000 " \
        "(created first)" in out, out
    ME.tick(eng, world, 1001.0)
    (d,) = eng.run.drills
    assert d.phase == "preparing", d.reason
    assert d.load.pool == "recovery-drill-d1000" and d.load.state == L.CREATING
    assert eng.run.windows == []          # opened once the pool is ready
    eng.run.drills = []
    eng.run.windows = []
    eng.ceph.rados = Rados(pools={"recovery-drill-d1001"})
    assert drillcli.start(eng, "h2", "30s", None, None, "plain", 1001.0, 10)[0] == 0
    ME.tick(eng, world, 1002.0)
    rc, _o, err = maint.wait(eng, None, "plain")
    assert rc == -errno.EEXIST and "recovery-drill-d1001" in err
    assert eng.run.drills[-1].phase == "aborted" and eng.run.windows == []


class FakeEngine(object):
    def __init__(self, rados, calls):
        self.ceph = type("C", (), {"rados": rados})()
        self.executor = type("X", (), {"mon": staticmethod(
            lambda cmd: calls.append(cmd) or (0, "", ""))})()


def test_apply_starts_one_writer_per_pool_and_stops_it_when_the_load_is_done():
    calls, rados = [], Rados()
    eng = FakeEngine(rados, calls)
    load = L.Load(rate=10, pool="recovery-drill-d1", size=3, min_size=2)
    drillload.apply(eng, "d1", load, L.CREATE)
    w = eng.drill_writer
    assert w.is_alive() and w.order == L.CREATE
    for _ in range(100):                                     # the thread creates the pool
        if w.take().pool_ready:
            break
        w.join(0.05)
    assert [c["prefix"] for c in calls][:1] == ["osd pool create"]
    drillload.apply(eng, "d1", load, L.IDLE)
    assert eng.drill_writer is w and w.order == L.IDLE       # the same writer
    drillload.apply(eng, "d1", load, None)                   # load finished: stopped
    w.join(2.0)
    assert eng.drill_writer is None and not w.is_alive()
    # after a failover: a writer for a created pool adopts it, no create command
    calls.clear()
    drillload.apply(eng, "d1", L.Load(rate=10, pool="recovery-drill-d1", size=3, min_size=2,
                                      state=L.CREATED, written=7), L.IDLE)
    w2 = eng.drill_writer
    assert w2.take().pool_ready and w2.take().written == 7
    drillload.apply(eng, "", None, None)
    w2.join(2.0)
    assert not w2.is_alive() and calls == []


def test_a_failing_create_is_reported_and_a_stale_error_does_not_block_the_removal():
    class Broken(Rados):
        def open_ioctx(self, pool):
            raise IOError("ENOENT")
    calls = []
    w = writer(Broken(), calls)
    w.set_order(L.CREATE)
    w.start()
    for _ in range(100):
        if w.take().error:
            break
        w.join(0.05)
    assert "create: OSError: ENOENT" in w.take().error and not w.take().pool_ready
    w.set_order(L.REMOVE)                 # the core aborts: the pool goes all the same
    for _ in range(100):
        if w.take().removed:
            break
        w.join(0.05)
    w.stop.set()
    w.join(2.0)
    assert w.take().removed and calls[-1]["prefix"] == "osd pool rm"
