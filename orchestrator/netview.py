"""The `ceph recovery network` view of the probe results (host-pair matrix and findings), and
which hosts a finding may hold starts on (`own_side`).

Pure; reached through ceph_recovery.network.network_view / network_text.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Dict, Iterable, Mapping, Tuple

from .model import Finding
from .network import (HOST_KINDS, NETWORK_VERSION, PROBE_LABELS, Thresholds, _num, _pct,
                      _raw_findings, _throughput_results, finding_dict, fresh_results,
                      pair_stats)


def own_side(findings: Iterable[Finding], network_by_host: Mapping[str, Mapping], now: float,
             thresholds: Thresholds = Thresholds()) -> Tuple[Finding, ...]:
    """The findings as they may hold OSD starts: each names only the hosts whose OWN report
    shows it. A helper measures its own side (its probes of its peers, its own counters);
    a pair finding raised from host A's probes alone, or a host finding attributed to B from
    its peers' probes, must not hold B's starts: one host's report (a broken or hostile
    helper) could otherwise hold every other host. A host whose network is really broken
    sees it in its own probes too (or stops reporting: helper missing, held either way).
    A host-level kind (counters, mon round trip) comes from that host's report only, so it
    is its own for as long as the finding lasts."""
    fresh = fresh_results(network_by_host, now, thresholds)
    own = {h: {k for (hosts, k) in _raw_findings({h: net}, now, thresholds) if h in hosts}
           for h, net in fresh.items()}
    out = []
    for f in findings:
        keep = tuple(h for h in f.hosts if f.kind in own.get(h, ())
                     or (f.kind in HOST_KINDS and tuple(f.hosts) == (h,)))
        if keep == tuple(f.hosts):
            out.append(f)
        elif keep:
            out.append(replace(f, hosts=keep, detail="%s (%s, measured by %s)" % (
                f.detail, "<->".join(f.hosts), ", ".join(keep))))
    return tuple(out)


def _host_view(host: str, net: Mapping, now: float) -> Dict[str, Any]:
    t = net.get("time")
    keys = ("mtu", "mon", "deltas", "tcp", "cost", "errors")
    v = {k: net.get(k) for k in keys if k in net}
    v["reported_at"] = t
    v["age_s"] = (now - float(t)) if isinstance(t, (int, float)) else None
    return v


def build_view(network_by_host: Mapping[str, Mapping], findings: Iterable[Finding],
                 now: float) -> Dict[str, Any]:
    """JSON of `ceph recovery network -f json`: per-host data, host-pair matrix, findings."""
    stats = pair_stats(network_by_host)
    tput = _throughput_results(network_by_host, now, Thresholds(throughput_max_age_s=1e18))
    pairs = []
    for k in sorted(set(stats) | set(tput)):
        st = stats.get(k)
        row: Dict[str, Any] = {"hosts": list(k), "loss": {}, "sent": {}, "rtt_ms": None,
                               "throughput_bps": tput.get(k)}
        if st is not None:
            for lab in PROBE_LABELS:
                if st.sent.get(lab, 0) > 0:
                    size = str(st.sizes.get(lab, 0))
                    row["loss"][size] = st.loss(lab)
                    row["sent"][size] = st.sent[lab]
            row["rtt_ms"] = st.rtt_ms.get("small")
            row["unreachable"] = bool(st.sent) and all(
                st.loss(lab) == 1.0 for lab in st.sent if st.sent[lab] > 0)
        pairs.append(row)
    hosts = {h: _host_view(h, network_by_host[h], now) for h in sorted(network_by_host)
             if isinstance(network_by_host[h], Mapping)}
    return {"version": NETWORK_VERSION, "time": now, "hosts": hosts, "pairs": pairs,
            "findings": [finding_dict(f) for f in findings]}


def render_text(view: Mapping[str, Any]) -> str:
    """Plain-text rendering of network_view() for `ceph recovery network` without -f json."""
    lines = ["%-24s %-28s %9s %12s" % ("PAIR", "LOSS BY SIZE", "RTT ms", "Mbit/s")]
    for p in view.get("pairs", ()):
        loss = " ".join("%s:%s" % (s, _pct(v)) for s, v in sorted(
            p.get("loss", {}).items(), key=lambda kv: int(kv[0])))
        rtt = p.get("rtt_ms")
        bps = p.get("throughput_bps")
        lines.append("%-24s %-28s %9s %12s" % (
            "<->".join(p["hosts"]), loss or "-", "-" if rtt is None else "%.2f" % rtt,
            "-" if bps is None else "%.0f" % (bps / 1e6)))
    lines.append("")
    lines.append("%-12s %8s %10s %10s %10s %8s" % ("HOST", "MTU", "MON s", "COOKIES", "OVERFLOW",
                                                   "NO-SACK"))
    for h, v in sorted(view.get("hosts", {}).items()):
        d = v.get("deltas") or {}
        mon = v.get("mon") or {}
        tcp = v.get("tcp") or {}
        lines.append("%-12s %8s %10s %10s %10s %8s" % (
            h, v.get("mtu", "-"), "-" if "rtt_s" not in mon else "%.3f" % _num(mon, "rtt_s"),
            d.get("SyncookiesSent", "-"), d.get("ListenOverflows", "-"), tcp.get("no_sack", "-")))
    lines.append("")
    fs = view.get("findings", ())
    lines.append("findings: %d" % len(fs))
    for f in fs:
        lines.append("  %-16s %-16s value=%g since=%.0f  %s" % (
            "<->".join(f["hosts"]), f["kind"], f["value"], f["since"], f["detail"]))
    return "\n".join(lines)
