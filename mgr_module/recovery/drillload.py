"""A drill's write load in the mgr shell: one writer thread per drill that carries out the
core's orders (ceph_recovery.drillload.order): create the drill's pool, write test objects at
a bounded rate, read every object back and compare checksums, remove the pool.

The thread does the pool's mon commands and the object I/O, never under the engine's lock;
the tick hands it an order and takes its counters (`take()`) for the drill's timeline. Object
data is a function of the pool's name and the object's number, so a verify pass needs no
stored checksums and a writer restarted after an mgr failover goes on where the persisted
count stood. A write to a PG that is not active blocks until the PG is active again: the
latency it then reports is what a client saw.
"""
from __future__ import annotations

import hashlib
import threading
import time
import zlib
from typing import Any, Callable, Dict, List, Optional

from ceph_recovery import drillload as L

from .retry import bounded

OBJ = "obj-%08d"
IDLE_WAIT_S = 0.2
APP = "recovery-drill"


def payload(pool: str, seq: int) -> bytes:
    """Object `seq`'s data (L.OBJECT_SIZE bytes)."""
    block = hashlib.sha256(("%s:%d" % (pool, seq)).encode()).digest()
    return (block * (L.OBJECT_SIZE // len(block) + 1))[:L.OBJECT_SIZE]


def checksum(data: bytes) -> int:
    return zlib.crc32(data) & 0xffffffff


class RadosTransient(Exception):
    """A librados error worth one more try (the wrapped exception is kept as its cause)."""


class Writer(threading.Thread):
    """Carries out one drill's load orders. `rados`: a connected librados handle (the mgr
    module's `self.rados`); `mon`: mon_command(dict) -> (rc, outb, outs)."""

    def __init__(self, rados: Any, mon: Callable[[Dict[str, Any]], Any], load: L.Load,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(name="recovery-drill-load", daemon=True)
        self.rados, self.mon, self.load, self.clock = rados, mon, load, clock
        self.order = L.IDLE
        self.stop = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._lat: List[float] = []
        self._seen: Dict[str, Any] = {"pool_ready": False, "written": load.written,
                                      "errors": load.errors, "verified": None, "bad": 0,
                                      "removed": False, "error": ""}
        self._ioctx: Any = None
        self._next = 0.0
        self._remove_failed = False

    # ------------------------------------------------------------ tick side
    def set_order(self, order: str) -> None:
        self.order = order
        self._wake.set()

    def take(self) -> L.Seen:
        """Counters so far and the latencies completed since the last take."""
        with self._lock:
            lat, self._lat = tuple(self._lat), []
            s = dict(self._seen)
        return L.Seen(pool_ready=s["pool_ready"], written=s["written"], errors=s["errors"],
                      latencies_ms=lat, verified=s["verified"], bad=s["bad"],
                      removed=s["removed"], error=s["error"])

    # ------------------------------------------------------------ thread side
    def run(self) -> None:
        step = {L.CREATE: self._create, L.WRITE: self._write_one, L.VERIFY: self._verify,
                L.REMOVE: self._remove}
        while not self.stop.is_set():
            fn = step.get(self.order)
            try:
                busy = fn is not None and fn()
            except Exception as e:  # a create/remove failure is reported (the core decides);
                if self.order in (L.CREATE, L.REMOVE):     # write/verify ones are retried
                    self._remove_failed = self.order == L.REMOVE
                    self._note(error="%s: %s: %s" % (self.order, type(e).__name__, e))
                busy = False
            if not busy:
                self._wake.wait(IDLE_WAIT_S)
                self._wake.clear()
        self._close()

    def _note(self, **kw: Any) -> None:
        with self._lock:
            self._seen.update(kw)

    def _cmd(self, cmd: Dict[str, Any]) -> Optional[str]:
        rc, _out, err = self.mon(cmd)
        return None if rc == 0 else "%s: rc %d %s" % (cmd["prefix"], rc, err)

    def _create(self) -> bool:
        """Create (or, after a failover, adopt) the drill's own pool; False: nothing done."""
        if self._seen["pool_ready"]:
            return False
        p = self.load.pool
        for cmd in ({"prefix": "osd pool create", "pool": p, "pg_num": 8},
                    {"prefix": "osd pool set", "pool": p, "var": "size",
                     "val": str(self.load.size)},
                    {"prefix": "osd pool set", "pool": p, "var": "min_size",
                     "val": str(self.load.min_size)},
                    {"prefix": "osd pool application enable", "pool": p, "app": APP}):
            bad = self._cmd(cmd)
            if bad:
                self._note(error=bad)
                return False
        self._ioctx = self.rados.open_ioctx(p)
        self._note(pool_ready=True, error="")
        return True

    def _write_one(self) -> bool:
        """One object, at most `rate` a second (no catch-up burst after a stall)."""
        now = self.clock()
        if now < self._next:
            self.stop.wait(self._next - now)
            return True
        self._next = max(self._next, now) + 1.0 / self.load.rate
        seq = self._seen["written"] + self._seen["errors"]
        t0 = self.clock()
        try:
            self._put(OBJ % seq, payload(self.load.pool, seq))
        except Exception:   # after the retries: counted, the drill goes on
            self._note(errors=self._seen["errors"] + 1)
            return True
        with self._lock:
            self._lat.append(round((self.clock() - t0) * 1000.0, 2))
            self._seen["written"] += 1
        return True

    def _put(self, name: str, data: bytes) -> None:
        """write_full, up to 3 attempts 0.5 s apart; the last error is raised."""
        bounded(lambda: self._put_once(name, data), 3, wait=0.5, on=(RadosTransient,))

    def _put_once(self, name: str, data: bytes) -> None:
        try:
            self._io().write_full(name, data)
        except Exception as e:
            raise RadosTransient(str(e)) from e

    def _io(self) -> Any:
        if self._ioctx is None:
            self._ioctx = self.rados.open_ioctx(self.load.pool)
        return self._ioctx

    def _verify(self) -> bool:
        """Every object listed must be one the drill wrote, with the right checksum; and
        there must be at least as many good objects as acknowledged writes (each writes a
        distinct object): a shortfall counts as lost, with the bad ones."""
        if self._seen["verified"] is not None:
            return False
        ok, bad = 0, 0
        try:
            names = [obj.key for obj in self._io().list_objects()]
        except Exception:   # the pool cannot be listed: nothing the drill wrote verifies
            names = []
        for name in names:
            try:
                seq = int(name[len("obj-"):])
                good = checksum(self._io().read(name, L.OBJECT_SIZE)) == checksum(
                    payload(self.load.pool, seq))
            except Exception:
                good = False
            ok, bad = ok + int(good), bad + int(not good)
        lost = max(0, self._seen["written"] - ok - bad)
        self._note(verified=ok, bad=bad + lost)
        return True

    def _remove(self) -> bool:
        if self._seen["removed"] or self._remove_failed:
            return False
        self._close()
        p = self.load.pool
        bad = self._cmd({"prefix": "osd pool rm", "pool": p, "pool2": p,
                         "yes_i_really_really_mean_it": True})
        self._remove_failed = bool(bad)
        self._note(**({"error": bad} if bad else {"removed": True}))
        return True

    def _close(self) -> None:
        if self._ioctx is not None:
            try:
                self._ioctx.close()
            except Exception:
                pass
            self._ioctx = None


# ------------------------------------------------------------------ the tick's side
def seen(engine: Any) -> Optional[L.Seen]:
    """The going drill's writer's counters (None without one)."""
    w = getattr(engine, "drill_writer", None)
    return w.take() if w is not None else None


def apply(engine: Any, drill_id: str, load: Optional[L.Load], order: Optional[str]) -> None:
    """Hand the order to the drill's writer, starting one (also after an mgr failover) when
    there is work; stop it once the load is finished."""
    w = getattr(engine, "drill_writer", None)
    if w is not None and (w.load.pool != getattr(load, "pool", None) or not order
                          or not w.is_alive()):
        w.stop.set()
        w.set_order(L.NONE)
        engine.drill_writer = w = None
    if load is None or not order:
        return
    if w is None:
        w = engine.drill_writer = Writer(engine.ceph.rados, engine.executor.mon, load)
        if load.state != L.CREATING:
            w._note(pool_ready=load.state == L.CREATED)
        w.start()
    w.set_order(order)
