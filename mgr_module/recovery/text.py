"""Plain-text renderings for the commands' default (non -f json) output. Pure: dict in, str out.
`-f json` / `-f json-pretty` always return the full JSON document instead."""
from __future__ import annotations

import json
import time
from typing import Any, Dict, List, Mapping, Optional

JOURNAL_LINES = 15
JSON_FORMATS = ("json", "json-pretty")


def dump_json(obj: Any, fmt: str) -> str:
    """The JSON document of a command: one line for `-f json`, indented for json-pretty."""
    return json.dumps(obj, sort_keys=True, default=str,
                      indent=2 if fmt == "json-pretty" else None)


def _mib(n: Optional[float]) -> str:
    return "-" if n is None else "%.0f MiB" % (n / 1048576.0)


def _in_flight(h: Mapping[str, Any]) -> str:
    """IN FLIGHT: the host's OSDs in flight, a staged one (waiting in preboot for its turn to
    peer) and one rebuilding its allocator (after an unclean stop) marked so."""
    staged = set(h.get("staged") or ())
    rebuilding = set(h.get("rebuilding") or ())
    xs = h.get("in_flight") or []
    return ",".join("osd.%s%s%s" % (x, " (staged)" if x in staged else "",
                                    " (rebuilding)" if x in rebuilding else "")
                    for x in xs) or "-"


def _down(h: Mapping[str, Any]) -> str:
    """DOWN: the host's down OSDs, one rebuilding its allocator outside the run's starts
    marked so (those in flight are marked in IN FLIGHT)."""
    rebuilding = set(h.get("rebuilding") or ()) - set(h.get("in_flight") or ())
    xs = h.get("down") or []
    return ",".join("osd.%s%s" % (x, " (rebuilding)" if x in rebuilding else "")
                    for x in xs) or "-"


def _table(rows: List[List[str]]) -> List[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def _budget(b: Mapping[str, Any]) -> str:
    """The run's budget and its state: an auto budget's raise, a fixed one's "validated" or
    "held" (the evidence that ends concurrency auto's warm-up; the value stays)."""
    if b.get("kind") == "auto":
        state = b.get("state") or "not raised"
        return "auto at %g%% (%s)" % (100.0 * float(b.get("now", b.get("value", 0))), state)
    if b.get("kind") == "fraction":
        value = "%g%%" % (100.0 * float(b.get("value", 0)))
    else:
        value = _mib(b.get("value"))
    return value + (" (%s)" % b["state"] if b.get("state") else "")


def _journal_line(j: Mapping[str, Any]) -> str:
    a = dict(j.get("action") or {})
    kind = a.pop("kind", "?")
    reason = a.pop("reason", "")
    args = " ".join("%s=%s" % (k, a[k]) for k in sorted(a) if a[k] not in (None, ""))
    when = time.strftime("%H:%M:%S", time.gmtime(float(j.get("time", 0))))
    what = " ".join(x for x in (kind, args) if x)
    return "  %s e%s %s: %s -> %s" % (when, j.get("epoch"), what, reason, j.get("result"))


def _when(t: Any) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(float(t)))


def service_line(st: Mapping[str, Any]) -> Optional[str]:
    """"service restored at" (every PG active, from the PG states) apart from "all up"
    (every in-scope OSD up again): service usually comes first, and a run that ends short
    of memory can restore service with OSDs still down."""
    summ = st.get("summary") or {}
    if not st.get("run_id") or not summ:
        return None
    pgs = st.get("pgs") or {}
    svc = summ.get("service_restored_at")
    service = ("service restored at %s (every PG active)" % _when(svc) if svc is not None
               else "service not restored (%s of %s PGs not active)" % (
                   pgs.get("total", 0) - pgs.get("active", 0), pgs.get("total", 0)))
    lost = summ.get("inactive_pg_s")
    if lost:
        service += "; %s PG-seconds without client I/O since the run began" % format(
            int(round(lost)), ",")
    down = (summ.get("counts") or {}).get("candidates", 0)
    if down:
        up = "all up: no, %d OSD(s) in scope still down" % down
    elif summ.get("finished_at") is not None:
        up = "all up at %s" % _when(summ["finished_at"])
    else:
        up = "all up"
    if summ.get("ends_by") is not None:
        up += "; ends by %s at the latest if nothing progresses" % _when(summ["ends_by"])
    return "%s; %s" % (service, up)


def _waiting(h: Mapping[str, Any]) -> str:
    """WAITING ON: the gate or "memory", and for a memory wait the ETA the core measured."""
    what = h.get("waiting_on") or h.get("gate") or "-"
    if h.get("eta_s") is not None:
        what += " (ETA %.0f s)" % h["eta_s"]
    return what


def status_text(st: Mapping[str, Any]) -> str:
    """`ceph recovery status`: phase line, per-host table, health, the last journal lines."""
    pgs = st.get("pgs") or {}
    lines = ["run %s: %s (%s), budget %s, concurrency %s, scope %s" % (
        st.get("run_id") or "-", st.get("phase"), st.get("mode"),
        _budget(st.get("budget") or {}), st.get("concurrency"),
        ",".join(st.get("scope") or []) or "all"),
        "osdmap e%s (decided on e%s), PGs %s/%s active, %s clean" % (
            st.get("epoch"), st.get("decided_epoch"), pgs.get("active", 0),
            pgs.get("total", 0), pgs.get("clean", 0))]
    svc = service_line(st)
    if svc:
        lines.append(svc)
    hosts: Dict[str, Any] = st.get("hosts") or {}
    if hosts:
        rows = [["HOST", "USED", "BUDGET", "DOWN", "IN FLIGHT", "NEXT", "PREDICTED", "WAITING ON"]]
        for name in sorted(hosts):
            h = hosts[name]
            rows.append([name, _mib(h.get("used")), _mib(h.get("budget")), _down(h),
                         _in_flight(h),
                         "osd.%s" % h["next_osd"] if h.get("next_osd") is not None else "-",
                         _mib(h.get("predicted_next_bytes")),
                         _waiting(h)])
        lines += [""] + _table(rows)
    detail = st.get("health_detail") or {}
    if detail:
        lines += ["", "health:"]
        for code in sorted(detail):
            lines += ["  %s" % code] + ["    %s" % d for d in detail[code]]
    if st.get("error"):
        lines += ["", "error: %s" % st["error"]]
    journal = list(st.get("journal") or [])
    if journal:
        lines += ["", "journal (last %d of %d, -f json for all):" % (
            min(JOURNAL_LINES, len(journal)), len(journal))]
        lines += [_journal_line(j) for j in journal[-JOURNAL_LINES:]]
    return "\n".join(lines) + "\n"
