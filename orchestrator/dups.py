"""The PG log dups pre-flight: OSDs that may load millions of PG log dup entries at start.

The bug (Ceph tracker 53729): on 15.2.x, 16.2.0-16.2.10 and 17.2.0-17.2.3, after a PG split
or merge, the OSD stops trimming its PG log "dups"; an OSD can carry millions of them and needs
tens of GB to load them. Since the fix (16.2.11, 17.2.4) the OSD trims them online, and while
it loads a PG with more than 2 x osd_pg_log_dups_tracked (6000 by default) it logs
"read_log_and_missing WARN num of dups exceeded 6000. You can be hit by THE DUPS BUG ...".
The fix for an OSD that carries them is offline: with the OSD stopped,
`ceph-objectstore-tool --data-path <its data path> --op trim-pg-log-dups --pgid <pgid>`
(`--pgid` is mandatory: one PG at a time, those of `--op list-pgs`).

Rules:
- Suspect: an OSD whose release (`ceph osd metadata`: ceph_version) is in AFFECTED, or whose
  helper saw the dups warning in its log since its last start (OsdState.pglog_dups > 0). A
  release the shell cannot read or parse makes no suspect: the pre-flight must not hold a
  cluster back on a guess (the warning still counts).
- A suspect starts alone on its host: it is granted only while nothing else is in flight
  there (granted and not finished, or restarting), and no other start is granted on its host
  while it is in flight (admission._host_gate). Reason: its dups are loaded in init(), before
  the boot gate (noup) can hold it, in an amount no prediction knows (the warning says only
  "more than 6000" in one PG; the field's cases took tens of GB). Beside other starts it
  takes their room and the host's OOM killer may take any of them; alone, its load shows in
  preboot (gate 2 re-predicts its peak from it, dups included) and the memory brake acts on
  it alone.
- Its grant is charged the whole room of its host (budget - used - reserved), at least its
  plain prediction: the most any prediction could give it. It is granted only where its plain
  prediction fits, as any other start (else it waits, or the run makes room), and never as a
  probe start (admission._probe_fits): a probe rests on the load being a fraction of the
  predicted peak, which inflated dups break.
- A warned suspect (its log showed the warning) whose start failed once in the run is held
  (not granted again: WARNED_MAX_FAILURES): its dups did not fit this host, and only the
  offline trim shrinks them. Others keep inflight.MAX_START_FAILURES.
- RECOVERY_PGLOG_DUPS names every suspect waiting in the run's scope, with the offline
  command (trim for a warned one, the dups count for a release-only one).
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from .model import OsdState
from .stageout import Health, StageOut

Release = Tuple[int, int, int]
# inclusive ranges of releases that do not trim dups after a split or merge (tracker 53729;
# fixed in 16.2.11 and 17.2.4, never in Octopus)
AFFECTED: Tuple[Tuple[Release, Release], ...] = (
    ((15, 0, 0), (15, 99999, 99999)),
    ((16, 0, 0), (16, 2, 10)),
    ((17, 0, 0), (17, 2, 3)),
)
WARNED_MAX_FAILURES = 1
CHECK = "RECOVERY_PGLOG_DUPS"
DATA_PATH = "/var/lib/ceph/osd/ceph-%d"     # Ceph's default osd_data ($cluster-$id)
_VERSION_RE = re.compile(r"(?:^|\s)(?:ceph version\s+)?v?(\d+)\.(\d+)\.(\d+)(?=[\s.\-+(~]|$)")
MAX_VERSION_LEN = 256


def parse_release(text: Optional[str]) -> Optional[Release]:
    """'ceph version 16.2.10 (45fa1a08...) pacific (stable)' -> (16, 2, 10); also a bare
    '17.2.3' or a build suffix ('16.2.10-1-gabc'). None for anything else (no guess)."""
    if not isinstance(text, str) or len(text) > MAX_VERSION_LEN:
        return None
    m = _VERSION_RE.search(text.strip())
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def release_affected(text: Optional[str]) -> Optional[bool]:
    """True when the release is in AFFECTED, False outside it, None when unreadable."""
    rel = parse_release(text)
    if rel is None:
        return None
    return any(lo <= rel <= hi for lo, hi in AFFECTED)


def why_suspect(o: OsdState) -> Optional[str]:
    """Why `o` may carry inflated PG log dups (None: no sign of it)."""
    signs = []
    if o.pglog_dups > 0:
        signs.append("its log showed %d 'num of dups exceeded' warning(s) since its last "
                     "start" % o.pglog_dups)
    if release_affected(o.ceph_version):
        rel = parse_release(o.ceph_version)
        signs.append("release %d.%d.%d does not trim dups after a PG split or merge" % rel)
    return "; ".join(signs) or None


def find_suspects(osds: Iterable[OsdState]) -> Dict[int, str]:
    """Every OSD with a sign of inflated dups -> why (Context.dups_suspects keeps it per call)."""
    out: Dict[int, str] = {}
    for o in osds:
        why = why_suspect(o)
        if why is not None:
            out[o.id] = why
    return out


def alone_gate(suspects: Mapping[int, str], in_flight) -> Optional[str]:
    """The host gate while a suspect is in flight on it: nothing else starts beside it."""
    mine = [x for x in in_flight if x in suspects]
    if not mine:
        return None
    return "osd.%d starts alone (PG log dups)" % mine[0]


def max_failures(o: OsdState, default: int) -> int:
    """Failed starts after which `o` is no longer granted (WARNED_MAX_FAILURES if warned)."""
    return WARNED_MAX_FAILURES if o.pglog_dups > 0 else default


def trim_command(osd: int) -> str:
    return ("ceph-objectstore-tool --data-path %s --op trim-pg-log-dups --pgid <pgid>"
            % (DATA_PATH % osd))


def report(candidates: Iterable[OsdState], suspects: Mapping[int, str],
           failures: Mapping[int, int], default_failures: int) -> StageOut:
    """RECOVERY_PGLOG_DUPS for every suspect (find_suspects) among the run's down candidates
    (`failures`: each OSD's failed starts in the run)."""
    why = suspects
    lines: List[Health] = []
    for o in sorted(candidates, key=lambda x: x.id):
        if o.id not in why:
            continue
        held = failures.get(o.id, 0) >= max_failures(o, default_failures)
        if o.pglog_dups > 0:
            todo = ("trim them offline, the OSD stopped: %s, for each PG of --op list-pgs"
                    % trim_command(o.id))
        else:
            todo = ("count them offline, the OSD stopped: ceph-objectstore-tool --data-path "
                    "%s --op log --pgid <pgid> (pg_log_t.dups); trim with %s"
                    % (DATA_PATH % o.id, trim_command(o.id)))
        lines.append((CHECK, "osd.%d on %s: %s: %s; %s" % (
            o.id, o.host, why[o.id], "held after a failed start" if held else
            "it starts alone on its host", todo), 1))
    return StageOut(health=tuple(lines))
