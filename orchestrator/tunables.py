"""CRUSH tunables that retry inside a host: the first of a host's out OSDs marked in takes the
whole host's share of its PGs.

An out OSD comes back by a mark-in at its boot (outreturn.py), so a host's out OSDs come in
one at a time as the run starts them. With the legacy (argonaut) tunables, CRUSH retries a
rejected (out) OSD inside the host it chose (choose_local_tries, choose_local_fallback_tries,
chooseleaf_descend_once 0) instead of choosing the host again: every PG of the host then maps
to its OSDs that are in. Measured with `crushtool --test` (`ceph-recovery-bench
--crush-return`, docs/data/outmark/crush-return.md): a host of 12 OSDs marked in one at a time,
the first took 12.00 x its share (840 PGs on 30 hosts x 12 OSDs, pg_num 8192; 945 on 100 x 12),
over mon_max_pg_per_osd 250 x osd_max_pg_per_osd_hard_ratio 3 = 750, where an OSD refuses new
PGs (they stay activating); the fullest stayed over 250 until 4-5 were in. Bobtail and later
tunables (chooseleaf_descend_once 1, no local retries) kept every count within 1.39 x.

Rules:
- legacy: the snapshot's tunables (`osd crush show-tunables`) have choose_local_tries > 0,
  choose_local_fallback_tries > 0 or chooseleaf_descend_once 0. Tunables the shell did not
  read (None) or that lack these keys say nothing: no check on a guess.
- RECOVERY_CRUSH_TUNABLES names each host of the run's scope with two or more down OSDs that
  are out (one alone takes only its own share), with what to do: `ceph osd crush tunables
  optimal` before the run (it moves data), or `noin` on those OSDs and one `ceph osd in` of
  them all once they are up. It is a warning: the run still starts them, as Ceph would.
"""
from __future__ import annotations

from typing import Dict, List, Mapping, Optional

from .context import Context
from .stageout import Health, StageOut

CHECK = "RECOVERY_CRUSH_TUNABLES"
LOCAL_RETRIES = ("choose_local_tries", "choose_local_fallback_tries")


def legacy(tunables: Optional[Mapping[str, object]]) -> Optional[str]:
    """What makes these tunables retry inside a host ("" / None: they do not, or unknown)."""
    if not tunables:
        return None
    why = ["%s %s" % (k, tunables[k]) for k in LOCAL_RETRIES
           if isinstance(tunables.get(k), int) and int(tunables[k]) > 0]
    if tunables.get("chooseleaf_descend_once") == 0:
        why.append("chooseleaf_descend_once 0")
    return ", ".join(why) or None


def report(ctx: Context) -> StageOut:
    """RECOVERY_CRUSH_TUNABLES for each scope host with two or more down OSDs that are out."""
    why = legacy(ctx.snapshot.crush_tunables)
    if not why:
        return StageOut()
    out: Dict[str, List[int]] = {}
    for o in ctx.view.candidates:
        if not o.in_:
            out.setdefault(o.host, []).append(o.id)
    lines: List[Health] = [(CHECK, _line(host, ids, why), 1)
                           for host, ids in sorted(out.items()) if len(ids) >= 2]
    return StageOut(health=tuple(lines))


def _line(host: str, ids: List[int], why: str) -> str:
    return ("%s: %d out OSDs (%s) are marked in one at a time as they start, and CRUSH "
            "retries inside a host (%s): the first in can take the whole host's PG share, "
            "past mon_max_pg_per_osd x osd_max_pg_per_osd_hard_ratio (its PGs stay "
            "activating); before the run: ceph osd crush tunables optimal (moves data), or "
            "ceph osd add-noin on them and one ceph osd in of them all once they are up"
            % (host, len(ids), ", ".join("osd.%d" % i for i in sorted(ids)), why))
