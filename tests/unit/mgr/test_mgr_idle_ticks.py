"""An idle module plans only when something could change the plan: a new OSD map, a command,
an action of its last plan, or every IDLE_REPLAN_S. The Module class runs over the recorded
lab (mgrlab)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from recovery import tickreads

from mgrlab import LabModule  # see conftest.py


def planned(m, woken=False):
    before = m.engine.plan_out
    m._tick(woken)
    return m.engine.plan_out is not before


def test_an_idle_tick_on_the_same_map_does_not_plan_again():
    m = LabModule()
    assert planned(m, woken=True)
    assert not m.engine.plan_out.actions
    assert not planned(m) and not planned(m)


def test_a_new_osd_map_epoch_a_command_or_the_replan_interval_plans(monkeypatch):
    # the PG stats are re-read at once on the new epoch (no read is deferred for its cost)
    monkeypatch.setattr(tickreads, "BUSY_PG_READ_SHARE", float("inf"))
    m = LabModule()
    assert planned(m, woken=True)
    m.world["osd_map"] = dict(m.world["osd_map"], epoch=m.world["osd_map"]["epoch"] + 1)
    assert planned(m)
    assert not planned(m)
    assert planned(m, woken=True)        # serve() passes whether a command woke it
    monkeypatch.setattr(tickreads, "IDLE_REPLAN_S", 0.0)
    assert planned(m)


def test_a_plan_that_acted_is_followed_by_another():
    m = LabModule()
    m.options["auto_hold"] = True        # h3's OSDs are all down: the plan holds h3
    assert planned(m, woken=True)
    assert m.engine.plan_out.actions
    assert planned(m)


def test_a_run_plans_every_tick():
    m = LabModule()
    assert m.cmd_start(scope=["h3"])[0] == 0
    assert planned(m, woken=True)
    assert planned(m) and planned(m)


def test_a_pg_read_deferred_for_its_cost_comes_on_a_later_tick(monkeypatch):
    m = LabModule()
    assert planned(m, woken=True)
    first = m._reads["pgs"]
    m._reads["pgs_cost"] = 3600.0         # as if reading the PG stats took an hour
    m.world["osd_map"] = dict(m.world["osd_map"], epoch=m.world["osd_map"]["epoch"] + 1)
    assert planned(m)                     # the new map is planned on the last PG view
    assert m._reads["pgs"] is first and m._reads["pgs_epoch"] != m._reads["epoch"]
    m._reads["pgs_cost"] = 0.0
    m.engine.view_cost = 0.0
    assert planned(m)                     # now the read is due: new PG stats, a new plan
    assert m._reads["pgs"] is not first and m._reads["pgs_epoch"] == m._reads["epoch"]


def test_a_large_pg_read_gives_the_freed_heap_back(monkeypatch):
    trims = []
    monkeypatch.setattr(tickreads, "_release_heap", lambda: trims.append(1))
    m = LabModule()
    assert planned(m, woken=True) and trims == []      # the recorded lab: 33 PGs
    monkeypatch.setattr(tickreads, "TRIM_AFTER_PGS", 33)
    for name in ("IDLE_PG_READ_SHARE", "BUSY_PG_READ_SHARE"):    # read again at once
        monkeypatch.setattr(tickreads, name, float("inf"))
    monkeypatch.setattr(tickreads, "IDLE_PG_REFRESH_S", 0.0)
    # once the full dump is dropped, once the pgids are made anew, then once the tick's views
    # are built
    assert planned(m) and trims == [1, 1, 1]
    from recovery.pgcolumns import PgRows
    from recovery.pgtrack import slim_pg_dump
    slim, kept = slim_pg_dump(m.world["pg_dump"]), m._reads["pgs"]
    assert isinstance(kept["pg_stats"], PgRows) and list(kept["pg_stats"]) == slim["pg_stats"]
    assert dict(kept, pg_stats=slim["pg_stats"]) == slim


def test_the_heap_release_is_found_here():
    tickreads._ALLOCATOR.clear()
    tickreads._release_heap()
    assert tickreads._ALLOCATOR["release"] is not None      # glibc, as on every Ceph image


TCMALLOC = "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"
# a child under tcmalloc (as ceph-mgr; no psutil: it also runs in the releases' chroots):
# 400 MB of large strings freed, then the module's release; prints which entry point it
# took and the RSS before and after, in MiB
CHILD = """
import os, sys, types
pkg = types.ModuleType("recovery"); pkg.__path__ = [sys.argv[1]]; sys.modules["recovery"] = pkg
from recovery import tickreads
rss = lambda: int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20
junk = [bytes(4096) * 25 for _ in range(4000)]
del junk
before = rss()
tickreads._release_heap()
print(getattr(tickreads._ALLOCATOR["release"], "__name__", "?"), before, rss())
"""


@pytest.mark.skipif(not os.path.exists(TCMALLOC), reason="libtcmalloc (libgoogle-perftools4, "
                    "a dependency of Debian's ceph-osd) is not installed")
def test_under_tcmalloc_the_freed_heap_goes_back_through_its_own_entry_point():
    out = subprocess.run([sys.executable, "-c", CHILD, os.path.dirname(tickreads.__file__)],
                         env=dict(os.environ, LD_PRELOAD=TCMALLOC), capture_output=True,
                         text=True, check=True).stdout.split()
    name, before, after = out[0], int(out[1]), int(out[2])
    assert name == "MallocExtension_ReleaseFreeMemory"
    assert before - after > 300, (before, after)     # glibc's malloc_trim frees nothing here
