"""The three-rack cluster of the maintenance and drill core cases (registered as module
`rackcases` by conftest.py): racks r1-r3 of two hosts each (h1 h2, h3 h4, h5 h6), two OSDs a
host (h2 holds osd.2 and osd.3). Snapshots in, exact ordered action lists out.
"""
from __future__ import annotations

from ceph_recovery.model import HostMem, OsdState, Snapshot

GIB = 2 ** 30


def snap(down=(), flags=None, epoch=10, running=(), mem=False, total=None, active=None,
         clean=None):
    """The cluster with the OSDs in `down` down, stopped unless also in `running`; `flags`
    the bucket flags (bucket -> names). With `mem`, hosts of 16 GiB using 2 GiB + 1 GiB per OSD
    of theirs not in `down`; with `total`, that many PGs, all active and clean unless `active`
    or `clean` says fewer. Without them the snapshot carries no hosts and no PG counts."""
    osds, hosts = [], []
    for h in range(6):
        name = "h%d" % (h + 1)
        for k in range(2):
            i = 2 * h + k
            dn = i in down
            osds.append(OsdState(id=i, host=name, crush_path=("default", "r%d" % (h // 2 + 1),
                                                               name), up=not dn,
                                 process="running" if (not dn or i in running) else "stopped"))
        if mem:
            used = 2 * GIB + GIB * sum(1 for k in range(2) if 2 * h + k not in down)
            hosts.append(HostMem(name=name, mem_total=16 * GIB, mem_used=used,
                                 mem_available=16 * GIB - used))
    pgs = {} if total is None else dict(
        pgs_total=total, pgs_active=total if active is None else active,
        pgs_clean=total if clean is None else clean)
    return Snapshot(epoch=epoch, osds=tuple(osds), hosts=tuple(hosts),
                    bucket_flags={k: frozenset(v) for k, v in (flags or {}).items()}, **pgs)
