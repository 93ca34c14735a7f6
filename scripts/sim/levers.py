"""The run's memory levers in the model: per-OSD config, recovery pause flags, stopping an OSD.

What each lever does to the model (sources in docs/memory-model.md, "Levers"):

  osd_memory_target (SetConfig / RestoreConfig on osd.N)
      the OSD's steady RSS becomes steady_frac_of_target x value. With tcmalloc
      (Params.heap_release) a running OSD whose cache part (nonhist) is above the new steady
      shrinks to it at once (the autotuner resizes caches every
      osd_memory_cache_resize_interval = 1 s [C], within one tick), never below its load (PG
      logs are not cache); below the new steady its caches refill towards it as usual.
      Without tcmalloc a running OSD keeps its caches, and the value sizes the caches of its
      next start (lifecycle.start): [L] on Debian's 16.2.15 build the bluestore-pricache
      cache_bytes stayed 2,845,415,833 (0.85 x 4 GiB - 768 MiB) after `config set` to
      1.2 GB at runtime, and read 214,693,632 after a restart at 1.2 GB (BlueStore's
      MempoolThread runs tune_memory only with tcmalloc).
  osd_recovery_max_active / osd_max_backfills (osd.N)
      [L] the OSD's weight in its host's shared recovery rate: min(1, value / default) over
      both, to the power Params.recovery_weight_exp (fit to the lab: a returning OSD's own
      settings bound only its part of the ops, the primaries' pushes run at theirs); 0
      pauses its recovery. Raising them above the default gains nothing (the host's
      link is the bound). [C] They also bound the recovery ops in flight on it, whose data it
      holds while it recovers: Params.recovery_ops(max_active, max_backfills) x
      recovery_op_bytes (at the defaults 3 + 1 x 3 ops = 24 MiB; at 1 and 1, 16 MiB).
  osd_recovery_sleep (osd.N)
      [A] recovery ops serialised by the sleep: the OSD recovers at most 1 / sleep objects/s.
  under mClock (Params.op_queue = mclock_scheduler)
      [C] the two settings above count only on an OSD whose
      osd_mclock_override_recovery_settings is true, else it runs mClock's own (the same
      defaults, Params.*_default); every recovery sleep is 0. osd_mclock_profile=
      high_client_ops weights its recovery rate by Params.mclock_client_profile_rate [L].
  norecover / nobackfill (SetFlag / UnsetFlag)
      [A] either flag pauses all recovery, log recovery and backfill alike.
  norebalance (SetFlag / UnsetFlag)
      [C] pauses the backfill of an out OSD marked in again (its PGs are misplaced, not
      degraded: their substitutes serve), monitor.py.
  noout / noin (SetFlag / UnsetFlag)
      [C] the monitor marks no down OSD out / no booting out OSD in (monitor.py).
  StopOsd
      the process ends like a restart's stop; it stays down (the boot gate holds it) until
      plan() grants it again.
"""
from __future__ import annotations

from typing import Optional

from .cluster import Osd

MEMORY_TARGET = "osd_memory_target"
REC_ACTIVE = "osd_recovery_max_active"
BACKFILLS = "osd_max_backfills"
REC_SLEEP = "osd_recovery_sleep"
OVERRIDE = "osd_mclock_override_recovery_settings"
PROFILE = "osd_mclock_profile"
KNOWN = (MEMORY_TARGET, REC_ACTIVE, BACKFILLS, REC_SLEEP, OVERRIDE, PROFILE)
CHOICES = {OVERRIDE: ("true", "false"),
           PROFILE: ("balanced", "high_client_ops", "high_recovery_ops")}
MCLOCK = "mclock_scheduler"
PAUSE_FLAGS = ("norecover", "nobackfill")
MON_FLAGS = ("noout", "noin")


def target_osd(sim, who: str) -> Osd:
    """`osd.N` -> the model's OSD; ValueError for anything else (a global `osd` section is not
    a per-OSD lever)."""
    kind, _, num = who.partition(".")
    if kind != "osd" or not num.isdigit() or int(num) >= len(sim.cl.osds):
        raise ValueError("config lever wants who=osd.N of this cluster, got %r" % who)
    return sim.cl.osds[int(num)]


def set_config(sim, who: str, name: str, value: Optional[str]) -> None:
    """`ceph config set who name value` (value None: `ceph config rm`, the default again)."""
    if name not in KNOWN:
        raise ValueError("the model has no lever %r (known: %s)" % (name, ", ".join(KNOWN)))
    o = target_osd(sim, who)
    key = (who, name)
    if value is None:
        sim.cl.config.pop(key, None)
    else:
        if name in CHOICES and value not in CHOICES[name]:
            raise ValueError("%s wants one of %s, got %r" % (name, CHOICES[name], value))
        if name not in CHOICES:
            float(value)                               # ValueError on a non-number
        sim.cl.config[key] = str(value)
    if name == MEMORY_TARGET:
        _memory_target(sim, o, value)
    else:
        _throttle(sim, o, who)


def _memory_target(sim, o: Osd, value: Optional[str]) -> None:
    p, cl = sim.p, sim.cl
    if not p.heap_release:
        return
    target = p.osd_memory_target if value is None else int(float(value))
    o.steady = float(p.steady_for_target(target))
    if o.running and o.nonhist > o.steady:
        shrink = o.nonhist - max(o.steady, float(o.load_bytes))
        if shrink > 0:
            o.nonhist -= shrink
            cl.set_rss(o, max(0.0, o.rss - shrink))
    elif o.running and o.nonhist < o.steady:
        sim.lc.dyn.add(o.id)                           # caches refill towards the new steady
    cl.dirty_osds.add(o.id)


def _throttle(sim, o: Osd, who: str) -> None:
    p, cfg = sim.p, sim.cl.config
    mclock = p.op_queue == MCLOCK
    honoured = not mclock or cfg.get((who, OVERRIDE)) == "true"
    own = cfg if honoured else {}
    active = float(own.get((who, REC_ACTIVE), p.recovery_max_active_default))
    backfills = float(own.get((who, BACKFILLS), p.max_backfills_default))
    share = p.mclock_client_profile_rate if mclock and \
        cfg.get((who, PROFILE)) == "high_client_ops" else 1.0
    frac = max(0.0, min(1.0, active / p.recovery_max_active_default,
                        backfills / p.max_backfills_default))
    o.rec_w = share * frac ** p.recovery_weight_exp
    sleep = 0.0 if mclock else float(cfg.get((who, REC_SLEEP), 0.0))
    o.rec_cap = 1.0 / sleep if sleep > 0 else 0.0
    o.rec_ops = p.recovery_ops(active, backfills)
    sim.cl.dirty_osds.add(o.id)


def set_flags(sim, flags) -> None:
    """Cluster flags changed: noup holds every boot, norecover/nobackfill pause recovery,
    norebalance an out OSD's backfill, noout / noin stop the monitor's out and in marking."""
    sim.lc.cluster_noup = "noup" in flags
    sim.lc.recovery_paused = any(f in flags for f in PAUSE_FLAGS)
    sim.lc.norebalance = "norebalance" in flags
    sim.lc.mon.cluster_flags = {f for f in flags if f in MON_FLAGS}
    sim.cl.epoch += 1


def stop_osd(sim, o: Osd) -> None:
    """StopOsd: the process ends and the OSD stays down until granted again."""
    sim.m.stops += 1
    if o.running:
        sim.lc.stop(o, sim.now)


__all__ = ["set_config", "set_flags", "stop_osd", "KNOWN", "PAUSE_FLAGS"]
