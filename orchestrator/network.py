"""Replication-network health: helper probe results -> per host / per host-pair findings.

Pure (no I/O, `now` is an argument). Input is `network_by_host`: host name -> the `network`
object of that host's latest helper report (built by
`ceph_recovery_tools.helper.netprobe.probe_cycle`), shape version 1:

  {"version": 1, "host": "h1", "time": T, "mtu": 9000, "elapsed_ms": 812.0,
   "peers": {"h2": {"addr": "10.0.0.2",
                    "probes": {"small": {"size": 84,   "sent": 20, "received": 20, "errors": 0,
                                         "too_big": false, "rtt_avg_ms": 0.05},
                               "std":   {"size": 1500, ...},     # 1,500-byte DF probes
                               "jumbo": {"size": 9000, ...}}}},  # interface-MTU DF probes
   "mon": {"rtt_s": 0.004, "ok": true, "error": ""},              # timed mon round trip
   "counters": {"SyncookiesSent": 0, ...}, "deltas": {"SyncookiesSent": 0, ...},
   "tcp": {"connections": 12, "no_sack": 0, "no_wscale": 0, "cwnd_min": 10, "cwnd_median": 10},
   "throughput": {"h2": {"bps": 9.1e9, "bytes": 67108864, "seconds": 0.06, "time": T}},
   "cost": {"packets": 240, "bytes": 1268160, "ms": 812.0}}

Every field is optional: what is missing is simply not judged.

Findings (kinds) and their documented default thresholds (`Thresholds`):
- `jumbo_loss` (pair): loss of large DF probes (1,500 bytes or the interface MTU) > 5 % while
  small probes lose < 1 % (both directions of the pair summed; at least 10 large probes).
  The field case: a faulty optic dropping only jumbo frames.
- `mtu_blackhole` (pair, or host): every interface-MTU DF probe lost (or refused locally with
  "message too long") while small and 1,500-byte probes mostly pass (< 50 % lost: a link
  flap while the MTU changes must not hide the black hole).
- `packet_loss` (pair): small probes lose >= 5 %. A pair where every probe of every size is
  lost is reported as unreachable in the view but is not a finding (host down: that is the
  memory side's business, and holding starts on the survivors for it would be wrong).
- `peer_latency` (pair): small-probe RTT > 0.2 s.
- `throughput_cap` (pair, or host): a requested throughput probe measured < 1 Gbit/s, or < 25 %
  of the median of the other measured pairs (results stay valid for 600 s).
- `syn_cookies` (host): SyncookiesSent rose in the last cycle.
- `listen_overflow` (host): ListenOverflows or ListenDrops rose in the last cycle.
- `tcp_options` (host): established ceph-osd connections without SACK or window scaling.
- `mon_latency` (host): the timed mon round trip took >= 1 s, or failed / timed out. The field
  says ~3 s means elections and an unstable cluster, ~6 s means commands fail.

Expiry: the shell stamps each host's results with `received_at` (its own clock, when the
report arrived); results older than `result_max_age_s` (60 s) are not judged, so a helper that
stopped reporting stops holding starts once its last findings pass `hold_s`.

Attribution: a pair kind flagged on EVERY measured pair of one host (at least two pairs) becomes
a single finding for that host (a capped host, a host whose veth has a smaller MTU).
Findings persist while their condition holds; a finding keeps the earliest `since`, and once
raised stays at least `hold_s` (15 s) so a one-cycle counter burst is not lost between ticks.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from .model import Finding, HealthCheck

NETWORK_VERSION = 1
HEALTH_CODE = "RECOVERY_NETWORK_DEGRADED"

KIND_JUMBO_LOSS = "jumbo_loss"
KIND_MTU_BLACKHOLE = "mtu_blackhole"
KIND_PACKET_LOSS = "packet_loss"
KIND_PEER_LATENCY = "peer_latency"
KIND_THROUGHPUT_CAP = "throughput_cap"
KIND_SYN_COOKIES = "syn_cookies"
KIND_LISTEN_OVERFLOW = "listen_overflow"
KIND_TCP_OPTIONS = "tcp_options"
KIND_MON_LATENCY = "mon_latency"
PAIR_KINDS = (KIND_JUMBO_LOSS, KIND_MTU_BLACKHOLE, KIND_PACKET_LOSS, KIND_PEER_LATENCY,
              KIND_THROUGHPUT_CAP)
HOST_KINDS = (KIND_SYN_COOKIES, KIND_LISTEN_OVERFLOW, KIND_TCP_OPTIONS, KIND_MON_LATENCY)
KINDS = PAIR_KINDS + HOST_KINDS
ATTRIBUTED_KINDS = (KIND_MTU_BLACKHOLE, KIND_THROUGHPUT_CAP, KIND_JUMBO_LOSS, KIND_PACKET_LOSS,
                    KIND_PEER_LATENCY)
PROBE_LABELS = ("small", "std", "jumbo")
LARGE_LABELS = ("std", "jumbo")


@dataclass(frozen=True)
class Thresholds:
    """Documented defaults; every one can be overridden by the caller."""

    large_loss: float = 0.05          # jumbo_loss: large-probe loss above this ...
    small_loss_max: float = 0.01      # ... while small-probe loss stays below this
    min_probes: int = 10              # probes of one size (pair, both directions) to judge loss
    blackhole_small_loss_max: float = 0.5   # mtu_blackhole: every MTU probe lost, small pass
    packet_loss: float = 0.05         # packet_loss: small-probe loss at or above this
    peer_rtt_s: float = 0.2           # peer_latency: small-probe RTT above this
    mon_rtt_s: float = 1.0            # mon_latency: mon round trip at or above this
    throughput_min_bps: float = 1e9   # throughput_cap: below 1 Gbit/s ...
    throughput_rel: float = 0.25      # ... or below this fraction of the other pairs' median
    throughput_max_age_s: float = 600.0  # throughput results older than this are not judged
    syncookies: int = 1               # SyncookiesSent delta per cycle at or above this
    listen_overflows: int = 1         # ListenOverflows/ListenDrops delta per cycle
    tcp_bad_connections: int = 1      # connections lacking SACK or wscale
    hold_s: float = 15.0              # a raised finding stays at least this long
    result_max_age_s: float = 60.0    # a host's results received longer ago are not judged


def pair_key(a: str, b: str) -> Tuple[str, str]:
    return (a, b) if a <= b else (b, a)


def _num(d: Any, key: str, default: float = 0.0) -> float:
    if not isinstance(d, Mapping):
        return default
    v = d.get(key)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return default
    return float(v)


def _probes(net: Mapping, peer: str) -> Mapping:
    peers = net.get("peers") if isinstance(net, Mapping) else None
    p = peers.get(peer) if isinstance(peers, Mapping) else None
    probes = p.get("probes") if isinstance(p, Mapping) else None
    return probes if isinstance(probes, Mapping) else {}


@dataclass(frozen=True)
class PairStats:
    """Both directions of one host pair, summed per probe label."""

    hosts: Tuple[str, str]
    sent: Mapping[str, int]
    received: Mapping[str, int]
    too_big: Mapping[str, bool]
    rtt_ms: Mapping[str, float]           # worst direction's average RTT per label
    sizes: Mapping[str, int]              # largest packet size per label

    def loss(self, label: str) -> Optional[float]:
        sent = self.sent.get(label, 0)
        if sent <= 0:
            return None
        return max(0.0, 1.0 - float(self.received.get(label, 0)) / sent)


def pair_stats(network_by_host: Mapping[str, Mapping]) -> Dict[Tuple[str, str], PairStats]:
    """Combine each host's probes of its peers into one record per unordered pair."""
    acc: Dict[Tuple[str, str], Dict[str, Dict[str, Any]]] = {}
    for host in sorted(network_by_host):
        net = network_by_host[host]
        peers = net.get("peers") if isinstance(net, Mapping) else None
        for peer in sorted(peers if isinstance(peers, Mapping) else ()):
            if peer == host:
                continue
            rec = acc.setdefault(pair_key(host, peer), {"sent": {}, "received": {}, "too_big": {},
                                                         "rtt_ms": {}, "sizes": {}})
            for label, pr in sorted(_probes(net, peer).items()):
                if not isinstance(pr, Mapping):
                    continue
                rec["sent"][label] = rec["sent"].get(label, 0) + int(_num(pr, "sent"))
                rec["received"][label] = rec["received"].get(label, 0) + int(_num(pr, "received"))
                rec["too_big"][label] = rec["too_big"].get(label, False) or bool(pr.get("too_big"))
                if "rtt_avg_ms" in pr and pr.get("rtt_avg_ms") is not None:
                    rec["rtt_ms"][label] = max(rec["rtt_ms"].get(label, 0.0), _num(pr, "rtt_avg_ms"))
                rec["sizes"][label] = max(rec["sizes"].get(label, 0), int(_num(pr, "size")))
    return {k: PairStats(hosts=k, **v) for k, v in sorted(acc.items())}


def _pct(x: Optional[float]) -> str:
    return "n/a" if x is None else "%.1f%%" % (100.0 * x)


def _pair_loss_findings(st: PairStats, th: Thresholds) -> List[Tuple[str, float, str]]:
    out = []
    small = st.loss("small")
    sent_small = st.sent.get("small", 0)
    losses = {lab: st.loss(lab) for lab in LARGE_LABELS if st.sent.get(lab, 0) >= th.min_probes}
    all_lost = all(v is not None and v >= 1.0 for v in (small,) + tuple(losses.values()))
    if small is None or sent_small < th.min_probes or all_lost:
        return out                                   # nothing to compare against / unreachable
    sizes = ", ".join("%d B %s" % (st.sizes.get(lab, 0), _pct(v)) for lab, v in
                      [("small", small)] + sorted(losses.items(), key=lambda kv: st.sizes.get(kv[0], 0)))
    jumbo = losses.get("jumbo")
    std = losses.get("std")
    blackhole = small < th.blackhole_small_loss_max and (
        (jumbo is not None and jumbo >= 1.0 and (std is None or std < 0.5))
        or st.too_big.get("jumbo", False))
    if blackhole:
        out.append((KIND_MTU_BLACKHOLE, 1.0 if jumbo is None else jumbo,
                    "MTU-size DF probes all lost while small ones pass (loss by size: %s)" % sizes))
    elif small < th.small_loss_max and losses:
        worst = max(losses.values())
        if worst > th.large_loss:
            out.append((KIND_JUMBO_LOSS, worst,
                        "large packets lost, small ones pass (loss by size: %s)" % sizes))
    if small >= th.packet_loss:
        out.append((KIND_PACKET_LOSS, small, "small packets lost (loss by size: %s)" % sizes))
    rtt = st.rtt_ms.get("small")
    if rtt is not None and rtt / 1000.0 > th.peer_rtt_s:
        out.append((KIND_PEER_LATENCY, rtt / 1000.0, "RTT %.0f ms > %.0f ms"
                    % (rtt, th.peer_rtt_s * 1000.0)))
    return out


def _throughput_results(network_by_host: Mapping[str, Mapping], now: float,
                        th: Thresholds) -> Dict[Tuple[str, str], float]:
    """Slowest fresh measurement per pair, bits per second."""
    out: Dict[Tuple[str, str], float] = {}
    for host in sorted(network_by_host):
        tp = network_by_host[host].get("throughput") if isinstance(network_by_host[host], Mapping) else None
        for peer in sorted(tp if isinstance(tp, Mapping) else ()):
            r = tp[peer]
            if not isinstance(r, Mapping) or "bps" not in r or peer == host:
                continue
            if now - _num(r, "time", now) > th.throughput_max_age_s:
                continue
            k = pair_key(host, peer)
            bps = _num(r, "bps")
            out[k] = min(out.get(k, bps), bps)
    return out


def _median(values: List[float]) -> float:
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2.0


def _throughput_findings(tput: Mapping[Tuple[str, str], float],
                         th: Thresholds) -> Dict[Tuple[str, str], Tuple[float, str]]:
    out = {}
    for k, bps in sorted(tput.items()):
        others = [v for kk, v in tput.items() if kk != k]
        med = _median(others) if len(others) >= 2 else None
        if bps < th.throughput_min_bps:
            out[k] = (bps, "%.0f Mbit/s < %.0f Mbit/s" % (bps / 1e6, th.throughput_min_bps / 1e6))
        elif med is not None and bps < th.throughput_rel * med:
            out[k] = (bps, "%.0f Mbit/s < %.0f%% of the median %.0f Mbit/s"
                      % (bps / 1e6, th.throughput_rel * 100, med / 1e6))
    return out


def _attribute(kind: str, flagged: Mapping[Tuple[str, str], Tuple[float, str]],
               measured: Iterable[Tuple[str, str]]) -> Dict[Tuple[str, ...], Tuple[float, str]]:
    """Collapse pair findings onto one host when every measured pair of that host is flagged."""
    measured = sorted(set(measured))
    bad = []
    for h in sorted({x for k in measured for x in k}):
        mine = [k for k in measured if h in k]
        if len(mine) >= 2 and all(k in flagged for k in mine):
            bad.append(h)
    out: Dict[Tuple[str, ...], Tuple[float, str]] = {}
    for k, (value, detail) in sorted(flagged.items()):
        owner = [h for h in k if h in bad]
        if len(owner) == 1:
            h = owner[0]
            prev = out.get((h,))
            worse = value < prev[0] if (prev and kind == KIND_THROUGHPUT_CAP) else \
                (prev is None or value > prev[0])
            if worse:
                out[(h,)] = (value, "every pair of %s: %s" % (h, detail))
        else:
            out[k] = (value, detail)
    return out


def _host_findings(host: str, net: Mapping, th: Thresholds) -> List[Tuple[str, float, str]]:
    out = []
    deltas = net.get("deltas") if isinstance(net.get("deltas"), Mapping) else {}
    cookies = _num(deltas, "SyncookiesSent")
    if cookies >= th.syncookies:
        out.append((KIND_SYN_COOKIES, cookies, "%d SYN cookies sent in the last cycle "
                    "(a listen queue overflowed; cookie connections may lose SACK/wscale)"
                    % cookies))
    over = max(_num(deltas, "ListenOverflows"), _num(deltas, "ListenDrops"))
    if over >= th.listen_overflows:
        out.append((KIND_LISTEN_OVERFLOW, over, "listen queue overflows %d, drops %d in the "
                    "last cycle" % (_num(deltas, "ListenOverflows"), _num(deltas, "ListenDrops"))))
    tcp = net.get("tcp") if isinstance(net.get("tcp"), Mapping) else {}
    bad = max(_num(tcp, "no_sack"), _num(tcp, "no_wscale"))
    if bad >= th.tcp_bad_connections:
        out.append((KIND_TCP_OPTIONS, bad, "%d of %d OSD connections without SACK, %d without "
                    "window scaling (min cwnd %s)" % (_num(tcp, "no_sack"), _num(tcp, "connections"),
                                                      _num(tcp, "no_wscale"), tcp.get("cwnd_min"))))
    mon = net.get("mon") if isinstance(net.get("mon"), Mapping) else None
    if mon is not None and ("rtt_s" in mon or mon.get("ok") is False):
        rtt = _num(mon, "rtt_s")
        if mon.get("ok") is False or rtt >= th.mon_rtt_s:
            level = ("commands fail" if rtt >= 6.0 else "elections / unstable" if rtt >= 3.0
                     else "slow")
            err = (" (%s)" % mon.get("error")) if mon.get("error") else ""
            what = ("mon round trip %.2f s >= %.2f s" % (rtt, th.mon_rtt_s) if rtt >= th.mon_rtt_s
                    else "no mon answer within %.2f s" % rtt)
            out.append((KIND_MON_LATENCY, rtt, "%s: %s%s" % (what, level, err)))
    return out


def _raw_findings(network_by_host: Mapping[str, Mapping], now: float,
                  th: Thresholds) -> Dict[Tuple[Tuple[str, ...], str], Tuple[float, str]]:
    raw: Dict[Tuple[Tuple[str, ...], str], Tuple[float, str]] = {}
    stats = pair_stats(network_by_host)
    per_kind: Dict[str, Dict[Tuple[str, str], Tuple[float, str]]] = {k: {} for k in PAIR_KINDS}
    for k, st in stats.items():
        for kind, value, detail in _pair_loss_findings(st, th):
            per_kind[kind][k] = (value, detail)
    tput = _throughput_results(network_by_host, now, th)
    per_kind[KIND_THROUGHPUT_CAP] = _throughput_findings(tput, th)
    for kind in PAIR_KINDS:
        measured = tput.keys() if kind == KIND_THROUGHPUT_CAP else stats.keys()
        for hosts, vd in _attribute(kind, per_kind[kind], measured).items():
            raw[(hosts, kind)] = vd
    for host in sorted(network_by_host):
        net = network_by_host[host]
        if isinstance(net, Mapping):
            for kind, value, detail in _host_findings(host, net, th):
                raw[((host,), kind)] = (value, detail)
    return raw


def fresh_results(network_by_host: Mapping[str, Mapping], now: float,
                  th: Thresholds = Thresholds()) -> Dict[str, Mapping]:
    """The hosts whose results were received within `result_max_age_s` of `now` (results
    without `received_at` are taken as fresh; one from the future beyond the age is not)."""
    out = {}
    for host, net in network_by_host.items():
        got = net.get("received_at") if isinstance(net, Mapping) else None
        if isinstance(got, (int, float)) and abs(now - float(got)) > th.result_max_age_s:
            continue
        out[host] = net
    return out


def evaluate(network_by_host: Mapping[str, Mapping], previous: Tuple[Finding, ...], now: float,
             thresholds: Thresholds = Thresholds()) -> Tuple[Finding, ...]:
    """Probe results of every host -> the active findings, sorted by (kind, hosts).

    Deterministic: the same input gives the same output. A finding that persists keeps the
    earliest `since` of `previous`; a previous finding whose condition no longer holds is kept
    (unchanged) until `since + hold_s`, then dropped, unless a current finding of the same kind
    names one of its hosts (it was re-attributed: pair -> host or host -> pair).
    """
    raw = _raw_findings(fresh_results(network_by_host, now, thresholds), now, thresholds)
    prev = {}
    for f in previous:
        key = (tuple(f.hosts), f.kind)
        if key not in prev or f.since < prev[key].since:
            prev[key] = f
    out = []
    for (hosts, kind), (value, detail) in raw.items():
        p = prev.get((hosts, kind))
        related = [f.since for (h, k), f in prev.items() if k == kind and set(h) & set(hosts)]
        since = min(p.since, now) if p is not None else min(related + [now])
        out.append(Finding(hosts=hosts, kind=kind, since=since, value=float(value), detail=detail))
    for key, f in prev.items():
        if key in raw or now >= f.since + thresholds.hold_s:
            continue
        superseded = any(k == f.kind and set(h) & set(f.hosts) for h, k in raw)
        if not superseded:                   # a pair finding now attributed to its host, or
            out.append(f)                    # the reverse, does not linger beside it
    return tuple(sorted(out, key=lambda f: (f.kind, f.hosts)))


def hosts_with_findings(findings: Iterable[Finding]) -> Tuple[str, ...]:
    """Every host named by an active finding (the core holds new starts there)."""
    return tuple(sorted({h for f in findings for h in f.hosts}))


def finding_dict(f: Finding) -> Dict[str, Any]:
    return {"hosts": list(f.hosts), "kind": f.kind, "since": f.since, "value": f.value,
            "detail": f.detail}


def network_health(findings: Iterable[Finding]) -> Optional[HealthCheck]:
    """The RECOVERY_NETWORK_DEGRADED health check naming each host/pair and symptom."""
    fs = list(findings)
    if not fs:
        return None
    detail = tuple("%s: %s (%s)" % ("<->".join(f.hosts), f.kind, f.detail) for f in fs)
    kinds = sorted({f.kind for f in fs})
    return HealthCheck(code=HEALTH_CODE, severity="warning",
                       summary="%d network finding(s) (%s); new OSD starts held on %s"
                       % (len(fs), ", ".join(kinds), ", ".join(hosts_with_findings(fs))),
                       detail=detail, count=len(fs))
