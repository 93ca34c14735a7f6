"""What the Module reads for each tick (TickReads, a mixin, so that module.py stays the Ceph
API shell): its options into the engine, the OSD map's epoch, the cluster's dumps, each read
only as often as it changes, and each OSD's own settings from `config dump`.

No `from __future__ import annotations` and no mgr_module import: module.py mixes this in.
"""
import ctypes
import ctypes.util
import json
import time
from typing import Any, Dict, Tuple

from .pgreader import BACKGROUND_READ_S

try:
    from .executor import memory_targets, op_queues, recovery_configs
    from .cluster import slim_osd_map, slim_tree
    from .pgcolumns import PgRows
    from .pgtrack import slim_pg_dump
except ImportError:  # pragma: no cover - the core is missing: module.py's _guard says so
    memory_targets = op_queues = recovery_configs = slim_pg_dump = PgRows = None  # type: ignore
    slim_osd_map = slim_tree = None  # type: ignore

# an idle module re-reads the PG stats at least this often (a dry run's view of them), and
# at most at IDLE_PG_READ_SHARE of the time (100,000 PGs take seconds to read: ~200 s)
IDLE_PG_REFRESH_S = 60.0
IDLE_PG_READ_SHARE = 0.01
# during a run, window or drill the PG stats are read every tick where that is cheap, and
# never more often than at BUSY_PG_READ_SHARE of the time: the read and the views built from
# it (engine.build_views) hold the mgr's interpreter for seconds at 100,000 PGs, and the
# ticks in between decide on the last view
BUSY_PG_READ_SHARE = 0.25
# get("pg_dump") builds some 4 KB of Python objects per PG. Slimmed, the values kept are
# scattered over the whole dump's memory, which therefore stays resident: measured at
# 100,000 PGs, 461 MiB after the drop, 240 MiB after malloc_trim. So a read of at least
# TRIM_AFTER_PGS PGs is kept in columns of new objects (pgcolumns.py), and the freed heap
# given back
TRIM_AFTER_PGS = 10000
# likewise a map of at least TRIM_AFTER_OSDS OSDs: slimmed (cluster.slim_osd_map), then made
# of new objects once the full map is freed, and the freed heap given back
TRIM_AFTER_OSDS = 1000

# the CRUSH tunables (ceph_recovery.tunables) change by an operator's command only
TUNABLES_REFRESH_S = 300.0
# an idle module plans again at least this often on unchanged dumps (what the helpers'
# reports change while idle: network findings, refused protocols)
IDLE_REPLAN_S = 30.0


_ALLOCATOR: Dict[str, Any] = {}     # "release": the heap release found, or None


def _large(slim: Dict[str, Any]) -> bool:
    """Whether reading these PG stats left enough freed heap to give back (TRIM_AFTER_PGS)."""
    return len(slim["pg_stats"]) >= TRIM_AFTER_PGS


def _compact(slim: Dict[str, Any], previous: Any = None) -> Dict[str, Any]:
    """A large slim dump with its PGs in columns (pgcolumns.PgRows), the full dump's memory
    then given back (TRIM_AFTER_PGS); the caller holds no other reference to it by now.
    `previous`: the last read kept, whose pgid strings are reused where they are the same."""
    if not _large(slim):
        return slim
    rows = PgRows(slim["pg_stats"])
    slim = dict(slim, pg_stats=rows, osd_stats=json.loads(json.dumps(slim["osd_stats"])))
    _release_heap()
    before = (previous or {}).get("pg_stats")
    rows.own_strings(before if isinstance(before, PgRows) else None)
    _release_heap()
    return slim


def _release_heap() -> None:
    """The freed heap given back to the system: ceph-mgr links tcmalloc, which keeps what
    was freed until told (MallocExtension_ReleaseFreeMemory, its C entry point); under
    glibc's malloc, malloc_trim(0). Nothing where neither is found."""
    if "release" not in _ALLOCATOR:
        _ALLOCATOR["release"] = _find_release()
    if _ALLOCATOR["release"] is not None:
        _ALLOCATOR["release"]()


def _find_release() -> Any:
    try:
        return ctypes.CDLL(None).MallocExtension_ReleaseFreeMemory
    except (OSError, AttributeError):
        pass
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    return lambda: trim(0)


class TickReads(object):
    _reads: Dict[str, Any]      # module.py: what the last reads returned, and when
    _pg_reader: Any             # module.py: a pgreader.PgReader over _pg_stats

    def _epoch_now(self) -> int:
        return int(self.get_osdmap().get_epoch())

    def _read_options(self) -> None:
        eng = self.engine
        for name in ("helper_stale_timeout", "restart_cooldown", "boot_timeout", "instruction_ttl",
                     "auto_hold", "budget_default", "network_holds_starts", "stall_limit"):
            eng.options[name] = self.get_module_option(name)
        eng.run.resize_journal(int(self.get_module_option("journal_length")))

    def _osd_config(self) -> Tuple[Any, Any, Any]:
        """Each OSD's own osd_memory_target and recovery throttle settings (the core records
        them before it changes one, and restores exactly that), and its scheduler; (None,
        None, None) when `config dump` does not answer (then no OSD's setting is known, and
        the core changes none: ceph_recovery.settings, ceph_recovery.throttle)."""
        rc, out, _err = self.mon_command({"prefix": "config dump", "format": "json"})
        if rc != 0:
            return None, None, None
        try:
            dump = json.loads(out or "[]")
        except ValueError:
            return None, None, None
        return memory_targets(dump), recovery_configs(dump), op_queues(
            dump, [e.get("osd") for e in self._reads["osd_map"].get("osds", ())],
            self._reads["versions"])

    def _tunables(self) -> Any:
        """`osd crush show-tunables` (its numbers), re-read every TUNABLES_REFRESH_S; None
        when the mon does not answer (the core then says nothing of them)."""
        c, t = self._reads, time.monotonic()
        if t - c.get("tunables_t", -TUNABLES_REFRESH_S) >= TUNABLES_REFRESH_S:
            rc, out, _err = self.mon_command({"prefix": "osd crush show-tunables",
                                              "format": "json"})
            try:
                got = json.loads(out or "{}") if rc == 0 else None
            except ValueError:
                got = None
            c.update(tunables_t=t, tunables=None if not isinstance(got, dict) else {
                k: v for k, v in got.items() if isinstance(v, int)})
        return c.get("tunables")

    def _plan_needed(self, awake: bool, dumps: Tuple[Any, Any, Any]) -> bool:
        """Whether this tick plans. An idle module (no run, window, drill or pending restore,
        no command since the last tick) whose dumps are the very objects of its last plan,
        which emitted no action, would plan the same again: it skips, except every
        IDLE_REPLAN_S. So idle, a tick costs the epoch check and nothing that grows with
        the cluster."""
        last, t = self._reads.get("planned"), time.monotonic()
        if (awake or last is None or last[2] or t - last[1] >= IDLE_REPLAN_S
                or any(a is not b for a, b in zip(last[0], dumps))):
            self._reads["planning"] = (dumps, t)
            return True
        return False

    def _planned(self, acted: bool) -> None:
        dumps, t = self._reads.pop("planning")
        last = self._reads.get("planned")
        self._reads["planned"] = (dumps, t, acted)
        # the views built from fresh large PG stats (new ones are always planned on) leave
        # their temporaries freed but kept by the allocator: given back once the tick is done
        if (last is None or last[0][2] is not dumps[2]) and _large(dumps[2]):
            _release_heap()

    def _read(self, what: str) -> Any:
        t0 = time.monotonic()
        try:
            return self.get(what)
        finally:
            self.meter.read(what, time.monotonic() - t0)

    def _pg_stats(self) -> Dict[str, Any]:
        """get("pg_dump") slimmed to what the shell reads, compacted when large; the time
        from the answer to the kept stats (the full dump freed with it) is the tick's
        `pg_slim` phase."""
        answered = []

        def read() -> Any:
            try:
                return self._read("pg_dump")
            finally:
                answered.append(time.monotonic())
        # no name holds the full dump or the list slimmed from it: each is freed as soon
        # as what is built from it stands, before _compact gives the memory back
        slim = _compact(slim_pg_dump(read()), self._reads.get("pgs"))
        self.meter.phase("pg_slim", time.monotonic() - answered[0])
        return slim

    def _maps(self) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """get("osd_map") and get("osd_map_tree") reduced to what the shell reads
        (cluster.slim_osd_map, slim_tree); a large map (TRIM_AFTER_OSDS) made anew once
        the full ones are freed, their memory given back."""
        maps = (slim_osd_map(self._read("osd_map")), slim_tree(self._read("osd_map_tree")))
        if len(maps[0].get("osds") or ()) < TRIM_AFTER_OSDS:
            return maps
        blob = json.dumps(maps)
        del maps
        _release_heap()
        osd_map, tree = json.loads(blob)
        return osd_map, tree

    def _cluster(self, busy: bool) -> Tuple[Any, Any, Any]:
        """This tick's (osd map, CRUSH tree, PG stats), each read only as often as it changes:
        the map and tree when the map's epoch moved; the PG stats (slimmed at once to what the
        shell reads) every tick while a run, a window or a drill needs them, else when the
        epoch moved (what an OSD's PGs were when it went down) and every IDLE_PG_REFRESH_S
        or, where reading them is slow, at IDLE_PG_READ_SHARE of the time; never more often
        than at BUSY_PG_READ_SHARE of the time. A slow read (pgreader.BACKGROUND_READ_S) runs
        on its own thread: this tick goes on with the last PG stats, a later one takes the
        new ones. An
        unchanged read is handed over as the same object (the engine reuses what it built
        from it)."""
        c = self._reads
        epoch = self._epoch_now()
        if c.get("epoch") != epoch:
            c["osd_map"], c["tree"] = self._maps()
            c["epoch"] = epoch
            t0 = time.monotonic()
            c["versions"] = self._versions(c["osd_map"])
            self.meter.phase("osd_versions", time.monotonic() - t0)
        done = self._pg_reader.take()
        if done is not None:
            c.update(zip(("pgs", "pgs_epoch", "pgs_t", "pgs_cost"), done))
        t = time.monotonic()
        cost = c.get("pgs_cost", 0.0) + self.engine.view_cost
        idle_every = max(IDLE_PG_REFRESH_S, cost / IDLE_PG_READ_SHARE)
        wanted = busy or c.get("pgs_epoch") != epoch or t - c["pgs_t"] >= idle_every
        if wanted and t - c["pgs_t"] >= cost / BUSY_PG_READ_SHARE \
                and not self._pg_reader.busy():
            if "pgs" in c and c["pgs_cost"] >= BACKGROUND_READ_S:
                self._pg_reader.start(epoch, t)
            else:
                c.update(pgs=self._pg_stats(), pgs_epoch=epoch, pgs_t=t,
                         pgs_cost=time.monotonic() - t)
        return c["osd_map"], c["tree"], c["pgs"]
