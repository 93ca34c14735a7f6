"""Parameters of the simulator's memory, time and failure model.

Every number is documented, with where it comes from, in docs/memory-model.md.
Sources: [F] field numbers (docs/design.md), [C] Ceph defaults, [L] measured on the lab cluster
(docs/design.md table), [A] assumed for a production-scale model (reasoning in the doc).
Units: bytes, seconds.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace

KiB, MiB, GiB = 1024, 1024 ** 2, 1024 ** 3


@dataclass(frozen=True)
class Params:
    # --- Ceph defaults [C]
    size: int = 3                             # pool size (from osdmaptool's default pool)
    min_size: int = 2
    pg_log_target_per_osd: int = 300000       # osd_target_pg_log_entries_per_osd
    pg_log_min: int = 250                     # osd_min_pg_log_entries
    pg_log_max: int = 10000                   # osd_max_pg_log_entries (degraded PGs)
    pg_log_dups: int = 3000                   # osd_pg_log_dups_tracked
    osd_memory_target: int = 4 * GiB
    osd_memory_target_min: int = 896 * MiB    # [C] the option's minimum (16.2.15 refuses less)
    # --- memory per OSD
    steady_frac_of_target: float = 0.875      # [A] healthy long-running RSS = 3.5 GiB
    start_base: int = 1 * GiB                 # [A] RSS of a fresh process before caches fill
    log_entry_bytes: int = 512                # [A] in-memory pg_log_entry_t incl. hobject
    dup_entry_bytes: int = 128                # [A] pg_log_dup_t
    bytes_per_missed_write: int = 8 * KiB     # [L] (401-71 MiB)/~39k writes, (370-68)/~39k
    peering_peak_frac: float = 0.2            # [F] peak about +20 % during peering
    restart_hist_frac: float = 0.3            # [L] history a restart reloads without re-peering
    restart_hist_frac_no_tcmalloc: float = 0.5   # [L] the same on a build without tcmalloc
    retain_frac: float = 0.25                 # [F]/[A] part of the history memory kept after clean
    survivor_growth: float = 0.2              # [F]/[C] survivors grow, RSS up to 20 % over target
    cache_fill_s: float = 900.0               # [A] a fresh process's caches refill to steady
    heap_release_frac: float = 0.5            # [A] share of the retained heap a release frees
    heap_release: bool = True                 # tcmalloc builds support it; Debian's does not
    # --- hosts
    host_ram_per_osd: float = 16 * GiB / 3    # [A] 64 GiB for a 12-OSD host, no swap
    host_system_bytes: int = 2 * GiB          # [A] kernel, page tables, other daemons
    # --- workload and times
    write_rate_per_pg: float = 1.5            # [A] client writes/s per PG while active
    write_jitter: float = 0.2                 # [A] per-OSD load spread: rate x U(1-j, 1+j), seeded
    distinct_object_frac: float = 0.1         # [A] distinct 4 MiB objects per missed write
    pg_objects: int = 6500                    # [A] objects per PG (~26 GiB: 60 % of 4 TiB / 96)
    object_bytes: int = 4 * MiB               # [F] RBD/RGW 4 MiB objects
    host_objects_per_s: float = 300.0         # [F] 10 Gbit/s ~ 300 4 MiB objects/s per server
    load_s: float = 5.0                       # [L] returning OSDs jump within 3-6 s of start
    boot_s: float = 2.0                       # [L] up ~2 s after its noup goes
    peer_base_s: float = 3.0                  # [A] peering round trips, small history
    peer_entries_per_s: float = 15000.0       # [A] log entries merged+persisted per s per host
    markdown_s: float = 1.3                   # [L] kill -9 seen by the mon after ~1.3 s
    # --- recovery throttles (per-OSD `ceph config set`), ceph 16.2 wpq defaults [C]
    recovery_max_active_default: int = 3      # osd_recovery_max_active 0 -> _hdd 3
    max_backfills_default: int = 1            # osd_max_backfills
    op_queue: str = "wpq"                     # [C] 16.2's scheduler; "mclock_scheduler" models
                                              # 17+ (levers.py: what mClock honours)
    mclock_client_profile_rate: float = 0.79  # [L] recovery rate under osd_mclock_profile=
                                              # high_client_ops over balanced, no client I/O
                                              # (docs/data/lever: 57.2 / 72.6 objects/s)
    recovery_weight_exp: float = 0.17         # [L] a throttled OSD's recovery rate is
                                              # (setting / default) ** this of its rate:
                                              # the lab's 1-of-3 gave 0.855 x, 1-of-8 with
                                              # backfills 4 -> 1 gave 0.652 x (docs/data/lever)
    recovery_op_bytes: int = 4 * MiB          # [F]/[C] data one recovery op in flight holds: a
                                              # 4 MiB object fits one push (osd_recovery_max_chunk
                                              # 8 MiB); see Params.recovery_ops
    # --- the monitor's out-marking (OSDMonitor::tick) [C]
    down_out_interval_s: float = 600.0        # mon_osd_down_out_interval (0: never)
    down_out_subtree_limit: str = "rack"      # mon_osd_down_out_subtree_limit: a whole rack
                                              # down is not marked out ("": no exemption)
    min_in_ratio: float = 0.75                # mon_osd_min_in_ratio: no out below it
    auto_mark_in: bool = True                 # mon_osd_auto_mark_auto_out_in: in at boot
    # --- an out OSD's return: backfill (see Params.backfill_objects)
    rereplicate_share: float = 1.0            # [A] share of a receiving host's recovery rate
                                              # (host_objects_per_s) its re-replication gets
    backfill_scan_cost: float = 0.005         # [A] an unchanged object a backfill compares, in
                                              # pushes of one object (versions from both
                                              # listings, osd_backfill_scan_max 512 a round)
    backfill_whole_pg: bool = False           # [A] True: every object is copied (the stray
                                              # copy was purged, as for an OSD up with noin)
    out_return: str = "boot"                  # how out OSDs come back (outreturn.py): "boot",
                                              # the monitor marks each in at its boot;
                                              # "together", noin while they start, then one
                                              # `osd in` of them all once every one is up
    # --- ok-to-stop answers
    ok_to_stop_ceph: bool = False             # [C] True: mgr's _check_offlines_pgs rule
    # --- systemd (ceph-osd@.service) [C]
    restart_sec: float = 10.0                 # RestartSec=10
    start_limit_burst: int = 3                # StartLimitBurst=3
    start_limit_interval_s: float = 1800.0    # StartLimitInterval=30min

    @property
    def steady_rss(self) -> int:
        return int(self.osd_memory_target * self.steady_frac_of_target)

    def steady_for_target(self, target: int) -> int:
        """Healthy RSS of an OSD whose osd_memory_target is `target`."""
        return int(target * self.steady_frac_of_target)

    def recovery_ops(self, max_active: float, max_backfills: float) -> float:
        """Recovery ops in flight on a recovering OSD: its own osd_recovery_max_active (as its
        PGs' primary) plus, as a recovery target, osd_max_backfills PGs (the remote
        reservation log-based recovery takes too, Ceph "Recovery Reservation" [C]) times the
        primaries' osd_recovery_max_active (the cluster's value)."""
        return max_active + max_backfills * self.recovery_max_active_default

    def log_entries_per_pg(self, pgs_on_osd: int) -> int:
        """osd_target_pg_log_entries_per_osd / PGs on the OSD, clamped to [min, max]."""
        per = self.pg_log_target_per_osd // max(1, pgs_on_osd)
        return max(self.pg_log_min, min(self.pg_log_max, per))

    def load_bytes(self, pgs_on_osd: int) -> int:
        """RSS after load_pgs(): fresh process + every PG's log and dups, before boot."""
        entries = self.log_entries_per_pg(pgs_on_osd) * pgs_on_osd
        return (self.start_base + entries * self.log_entry_bytes
                + pgs_on_osd * self.pg_log_dups * self.dup_entry_bytes)

    def reload_bytes(self, merged: float) -> float:
        """History memory a process loads at start for `merged` entries an earlier process of
        the same OSD peered and did not recover (its PG log and missing set, on disk).
        Lab: Reef (tcmalloc) 0.28-0.48, Pacific (Debian's build, no tcmalloc) 0.41-0.52 of
        the first return's growth (docs/data/restart-while-recovering)."""
        frac = self.restart_hist_frac if self.heap_release else self.restart_hist_frac_no_tcmalloc
        return frac * self.bytes_per_missed_write * merged

    def backfill_objects(self, changed: float, pgs_on_osd: int) -> float:
        """Work of an out OSD's backfill when it is marked in again, in object pushes: its PGs
        map back to it, its log no longer overlaps theirs (backfill, not log recovery), and
        the primary compares both object listings (PrimaryLogPG::recover_backfill): objects
        changed while it was down are pushed, unchanged ones cost a comparison only. With
        backfill_whole_pg every object of its PGs is pushed."""
        whole = float(self.pg_objects * pgs_on_osd)
        changed = min(changed, whole)
        if self.backfill_whole_pg:
            return whole
        return changed + self.backfill_scan_cost * (whole - changed)

    def history_cap_per_pg(self, pgs_on_osd: int) -> int:
        """Missed writes that still fit the log (beyond: backfill, no more log memory)."""
        return max(0, self.pg_log_max - self.log_entries_per_pg(pgs_on_osd))


def with_overrides(p: Params, **kw) -> Params:
    known = {f.name for f in fields(Params)}
    bad = sorted(k for k in kw if k not in known)
    if bad:
        raise ValueError("unknown model parameter(s): %s" % ", ".join(bad))
    return replace(p, **kw)
