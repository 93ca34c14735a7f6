"""The arithmetic of `ceph-recovery-bench --crush-return`: crushtool's mappings into PG counts,
the per-k rows of one host whose OSDs return one at a time, and the page drawn from them.

A host down longer than mon_osd_down_out_interval has every OSD marked out: reweight 0, its
CRUSH weight unchanged, so CRUSH still picks the host and then rejects the out OSD. At boot each
OSD is marked in again; with a controlled start they return one at a time, so for a while only
k of the host's OSDs are in. Which of the host's PGs then land on those k OSDs, and which go to
other hosts only to move again when the rest return, depends on the tunables: with
chooseleaf_descend_once 0 and local retries, CRUSH retries inside the chosen host and the k in
OSDs take the whole host's share; with descend_once 1 a rejection goes back to the host choice.

The run itself (crushtool in the release's chroot) is crushreturn_run.py.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Dict, Iterable, List, Optional, Sequence

MAPPING = re.compile(r"^CRUSH rule (\d+) x (\d+) \[([0-9,\s]*)\]\s*$")
# crushtool prints an empty slot of an indep rule as this id; it holds no PG
ITEM_NONE = 0x7fffffff


def parse_mappings(text: str) -> Dict[int, List[int]]:
    """x -> the OSDs CRUSH chose, in order, from `crushtool --test --show-mappings`; other
    lines (the utilization or statistics blocks) are ignored."""
    out: Dict[int, List[int]] = {}
    for line in text.splitlines():
        m = MAPPING.match(line.strip())
        if m:
            osds = [int(v) for v in m.group(3).replace(" ", "").split(",") if v]
            out[int(m.group(2))] = [o for o in osds if o != ITEM_NONE]
    return out


def pg_counts(mappings: Dict[int, List[int]]) -> Counter:
    """PGs per OSD (each PG counts once on every OSD of its set, as the OSD's own count)."""
    c: Counter = Counter()
    for osds in mappings.values():
        c.update(set(osds))
    return c


def pg_num_for(osds: int, per_osd: int = 100, size: int = 3) -> int:
    """The pool's pg_num for `per_osd` PGs per OSD: osds * per_osd / size rounded to the
    nearest power of two the way the pg autoscaler rounds (ties go up)."""
    want = max(1, osds * per_osd // size)
    up = 1 << (want - 1).bit_length()
    down = up >> 1
    return down if down and want - down < up - want else up


def moves(host: Sequence[int], now: Dict[int, List[int]],
          final: Dict[int, List[int]]) -> Dict[str, int]:
    """PG replicas not yet where they end when the whole host is in (`final`):
      elsewhere      the host's final replicas now on another host (moved there, moved back)
      moved_in_host  the host's final replicas now on another in OSD of the host
      collateral     final replicas on other hosts that are not in place either
      foreign        replicas on the host now that are not the host's when all are in
    """
    hs = set(host)
    out = {"elsewhere": 0, "moved_in_host": 0, "collateral": 0, "foreign": 0}
    for x, fin in final.items():
        cur = set(now.get(x, ()))
        on_host = cur & hs
        for osd in fin:
            if osd in cur:
                continue
            if osd not in hs:
                out["collateral"] += 1
            elif on_host - set(fin):
                out["moved_in_host"] += 1
            else:
                out["elsewhere"] += 1
        out["foreign"] += len(on_host - set(fin))
    return out


def k_row(k: int, host: Sequence[int], now: Dict[int, List[int]],
          final: Dict[int, List[int]], hard_limit: float, soft_limit: float,
          size: int = 3) -> dict:
    """One k: the most PGs on one in OSD of the host against the normal share (the host's
    PGs per OSD with all in), against that OSD's own count with all in, and against the
    limits (the OSD accepts PGs up to the hard limit); what still has to move; and the PGs
    CRUSH found fewer than `size` OSDs for."""
    ins = list(host[:k])
    now_c, fin_c = pg_counts(now), pg_counts(final)
    share = sum(fin_c[o] for o in host) / float(len(host))
    top: Optional[int] = max(ins, key=lambda o: (now_c[o], -o)) if ins else None
    most = now_c[top] if top is not None else None
    own = [now_c[o] / float(fin_c[o]) for o in ins if fin_c[o]]
    row = {"k": k, "in_osds": ins, "max_pgs": most, "max_osd": top,
           "host_pgs": sum(now_c[o] for o in host), "share": round(share, 2),
           "ratio": None if most is None else round(most / share, 2),
           "max_own_ratio": round(max(own), 2) if own else None,
           "over_soft": most is not None and most > soft_limit,
           "over_hard": most is not None and most > hard_limit,
           "short_pgs": sum(1 for osds in now.values() if len(set(osds)) < size)}
    row["host_pgs_final"] = sum(fin_c[o] for o in host)
    row.update(moves(host, now, final))
    row["moves_to_final"] = row["elsewhere"] + row["moved_in_host"] + row["collateral"]
    return row


def first_osd_spread(host: Sequence[int], runs: Dict[int, Dict[int, List[int]]]) -> dict:
    """k = 1 with each OSD of the host as the one in: the least and most PGs it takes."""
    got = {o: pg_counts(runs[o])[o] for o in host if o in runs}
    return {"min": min(got.values()), "max": max(got.values()), "by_osd": got}


# ------------------------------------------------------------------------------------- page
COLUMNS = ("max PGs/OSD", "x share", "on other hosts", "to move later")


def _cell(r: dict) -> str:
    later = "%d | %d" % (r["elsewhere"], r["moves_to_final"])
    if r["max_pgs"] is None:
        return "- | - | " + later
    mark = " **over hard**" if r["over_hard"] else (" over soft" if r["over_soft"] else "")
    return "%d%s | %.2f | %s" % (r["max_pgs"], mark, r["ratio"], later)


def cluster_table(rows: Iterable[dict], profiles: Sequence[str]) -> str:
    """One cluster: per k and profile the max PGs on one in OSD, its ratio to the share, the
    host's final replicas on other hosts, and every replica not yet where it ends."""
    by = {(r["profile"], r["k"]): r for r in rows}
    ks = sorted({k for _, k in by})
    head = ["k in"] + ["%s: %s" % (p, c) for p in profiles for c in COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in ks:
        cells = [_cell(by[(p, k)]) if (p, k) in by else " | ".join("-" * len(COLUMNS))
                 for p in profiles]
        lines.append("| %d | %s |" % (k, " | ".join(cells)))
    return "\n".join(lines)


def _cluster_intro(c: dict, profiles: Sequence[str]) -> str:
    spread = "; ".join("%s %d-%d" % (p, c["first_osd"][p]["min"], c["first_osd"][p]["max"])
                       for p in profiles if p in c["first_osd"])
    return ("### %(name)s: %(hosts)d hosts x %(per_host)d OSDs in %(racks)d racks, "
            "pg_num %(pg_num)d\n\n" % c +
            "Host `%s` (osd.%d-%d), its OSDs back in id order; normal share %.2f PGs per "
            "OSD (all 12 in, optimal). PGs on the one in OSD at k = 1, over each of the 12 "
            "as the first: %s.\n" % (c["host"], c["host_osds"][0], c["host_osds"][-1],
                                    c["share"], spread))


def page(doc: dict, text: str) -> str:
    """DIR/crush-return.md: the tables, then `text` (what they show)."""
    profiles = [p["name"] for p in doc["profiles"]]
    out = ["# A host's OSDs returning one at a time, in `crushtool --test`", "",
           "Generated by `ceph-recovery-bench --crush-return --out DIR` from crush-return.json "
           "(Ceph %s, crushtool in the release's chroot; no daemons). Limits read with "
           "`ceph-conf --show-config-value`: mon_max_pg_per_osd %g (above it: `over soft`, "
           "the mon's warning) x osd_max_pg_per_osd_hard_ratio %g = %g PGs per OSD (above "
           "it, `over hard`: the OSD refuses more PGs, they stay activating)." % (
               doc["ceph_version"], doc["mon_max_pg_per_osd"],
               doc["osd_max_pg_per_osd_hard_ratio"], doc["hard_limit"]), "",
           "Tunables per profile (as crushtool dumps the map; the buckets stay straw2, so "
           "crushtool names the older ones `unknown`):", ""]
    for p in doc["profiles"]:
        out.append("- %s (`%s`): %s" % (p["name"], p["dumped_profile"], ", ".join(
            "%s %s" % kv for kv in sorted(p["tunables"].items()))))
    out += ["", "Columns per profile: the most PGs on one in OSD of the host (`-`: none in); "
            "that over the normal share; the host's final PG replicas on other hosts meanwhile "
            "(moved there, moved back); every PG replica not where it ends with all 12 in "
            "(those, the ones on the wrong OSD of the host, and other hosts' replicas moved "
            "by the retries).", ""]
    for c in doc["clusters"]:
        out += [_cluster_intro(c, profiles), cluster_table(
            [r for r in doc["rows"] if r["cluster"] == c["name"]], profiles), ""]
    return "\n".join(out + ["## What it shows", "", text, ""])


def _rows(doc: dict, profile: str, cluster: Optional[str] = None) -> List[dict]:
    return [r for r in doc["rows"] if r["profile"] == profile and cluster in (None, r["cluster"])]


def _returning(rows: List[dict]) -> List[dict]:
    """The rows while the host is partly back: 1 <= k < all."""
    top = max(r["k"] for r in rows)
    return [r for r in rows if 0 < r["k"] < top]


def _k1(rows: List[dict], cluster: str) -> dict:
    return next(r for r in rows if r["cluster"] == cluster and r["k"] == 1)


def _per_cluster(rows: List[dict], fmt: str) -> str:
    return ", ".join(fmt % r + " (%s)" % r["cluster"] for r in rows)


def findings(doc: dict) -> str:
    """What the tables show, in sentences whose numbers come from the rows."""
    hard, soft = doc["hard_limit"], doc["mon_max_pg_per_osd"]
    names = [c["name"] for c in doc["clusters"]]
    opt = _rows(doc, "optimal")
    w = max(_returning(opt), key=lambda r: (r["max_pgs"], r["ratio"]))
    full = next(r for r in opt if r["cluster"] == w["cluster"] and r["k"] == 12)
    own = max(r["max_own_ratio"] for r in _returning(opt))
    k1 = [_k1(opt, n) for n in names]
    out = ["With the release's optimal tunables no returning OSD takes far more than its "
           "share: the most at any k = 1..11 is %d PGs (%s, k = %d: %.2f x the normal share, "
           "where the fullest OSD with all 12 in has %d; at most %.2f x an OSD's own count "
           "with all in), far under the hard limit of %g, because a rejected out OSD sends "
           "CRUSH back to the host choice (chooseleaf_descend_once 1); the price is the data "
           "that moves twice: at k = 1, %s of the host's final PG replicas sit on other hosts "
           "and come back as the rest return." % (
               w["max_pgs"], w["cluster"], w["k"], w["ratio"], full["max_pgs"], own, hard,
               _per_cluster(k1, "%(elsewhere)d of %(host_pgs_final)d"))]
    leg = [dict(_k1(_rows(doc, "argonaut"), n), soft_k=min(
        r["k"] for r in _rows(doc, "argonaut", n) if r["max_pgs"] is not None
        and r["max_pgs"] <= soft), k2=_rows(doc, "argonaut", n)[2]["max_pgs"]) for n in names]
    out.append("The field report is the legacy (argonaut) tunables: CRUSH retries inside the "
               "chosen host (choose_local_tries 2, choose_local_fallback_tries 5, "
               "chooseleaf_descend_once 0), so the first OSD back takes the whole host's "
               "share, %s, over the hard limit of %g; k = 2 halves it (%s), and the fullest "
               "stays over mon_max_pg_per_osd %g until %s OSDs are in." % (
                   _per_cluster(leg, "%(max_pgs)d PGs = %(ratio).2f x"), hard,
                   " / ".join(str(r["k2"]) for r in leg), soft,
                   " / ".join(str(r["soft_k"]) for r in leg)))
    out.append("There nothing goes to other hosts meanwhile, but the %s replicas at k = 1 that "
               "belong to the host's other OSDs move again inside the host." %
               " / ".join(str(r["moved_in_host"]) for r in leg))
    mid = [_k1(_rows(doc, "bobtail"), n) for n in names] if _rows(doc, "bobtail") else []
    if mid:
        out.append("Bobtail's tunables (descend_once 1, vary_r 0, stable 0) keep the count "
                   "near the share as optimal does, but the retries move other replicas of "
                   "the host's PGs too: at k = 1, %s replicas on other hosts are not where "
                   "they end (optimal: %s)." % (
                       " / ".join(str(r["collateral"]) for r in mid),
                       " / ".join(str(r["collateral"]) for r in k1)))
    out.append("One pool at %s PGs per OSD (pg_num rounded to a power of two as the "
               "autoscaler rounds); PGs of other pools on the same OSDs add to every count." %
               " / ".join("%.0f" % c["share"] for c in doc["clusters"]))
    return " ".join(out)
