"""The helper's network probe, run once per cycle on a time budget: `probe_cycle(context)`.

Probes (bounded counts and time, only to the peer addresses of the cluster's own OSD map):
- DF-set ICMP echo at 84 B, 1,500 B and the interface MTU to every peer host (loss per size);
- the mon: a timed mon command (callable from the helper) and a TCP banner round trip to each
  mon address (connect, wait for the messenger's first bytes), on a thread of its own
  (netprobe_mon.py);
- kernel counters from /proc/net/netstat and /proc/net/snmp, as deltas since the last cycle;
- `ss -tinop` for the host's ceph-osd connections (SACK / window scaling negotiated, cwnd);
- on request (`{"throughput_to": ["h2"]}` from the mgr's instructions), a TCP send of at most
  2 s / 64 MiB to the peer's throughput sink.

The result is a JSON object: the helper puts it as `report["network"]`; the mgr feeds all
hosts' objects to `ceph_recovery.network.evaluate`. Shape: see that module's docstring.
"""
from __future__ import annotations

import collections
import ipaddress
import dataclasses
import json
import os
import subprocess
import threading
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from . import netprobe_icmp, netprobe_mon, netprobe_parse, netprobe_tput

NETWORK_VERSION = 1
PEER_RESULT_MAX_AGE_S = 60.0        # carried-forward peer results older than this are dropped
THROUGHPUT_KEEP_S = 600.0           # throughput results are carried forward this long
_LAST: Dict[str, Dict[str, Any]] = {}   # host -> last result (previous counters, rotation)


@dataclasses.dataclass
class ProbeContext:
    host: str                                        # this host's CRUSH name
    peers: Mapping[str, str] = dataclasses.field(default_factory=dict)   # peer host -> IP
    mtu: Optional[int] = None                        # None: the route MTU to each peer
    mon_addrs: Sequence[str] = ()                    # "ip:port" (v1/v2 forms accepted)
    mon_rtt: Optional[Callable[[], Any]] = None      # timed mon command; raise on failure
    budget_s: float = 1.0
    previous: Optional[Mapping[str, Any]] = None     # last result (default: kept in-process)
    throughput_to: Sequence[str] = ()
    throughput_port: int = netprobe_tput.DEFAULT_PORT
    throughput_max_s: float = netprobe_tput.MAX_SECONDS
    serve_sink: bool = False                         # answer peers' throughput probes
    count: int = 20
    interval_s: float = 0.01
    max_peers: int = 16                              # peers probed per cycle (rotating)
    proc_names: Sequence[str] = ("ceph-osd",)
    clock: Callable[[], float] = time.time

    @classmethod
    def from_osd_dump(cls, host: str, osd_dump: Mapping, osd_tree: Mapping,
                      **kw: Any) -> "ProbeContext":
        """Peers from the OSD map: each OSD's cluster address (else public) by CRUSH host."""
        return cls(host=host, peers=peers_from_osd_map(host, osd_dump, osd_tree), **kw)

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> "ProbeContext":
        """The helper daemon's context dict: host, budget_s, request, now, and any of
        osd_dump+osd_tree, peers, mon_addrs, mon_rtt, previous, lab_dir (lab.json fallback)."""
        host = d["host"]
        kw: Dict[str, Any] = {}
        names = {f.name for f in dataclasses.fields(cls)}
        for k in ("mtu", "mon_addrs", "mon_rtt", "previous", "throughput_port",
                  "throughput_max_s", "count",
                  "interval_s", "max_peers", "proc_names", "serve_sink"):
            if d.get(k) is not None and k in names:
                kw[k] = d[k]
        if d.get("budget_s"):
            kw["budget_s"] = float(d["budget_s"])
        req = d.get("request") or {}
        kw["throughput_to"] = tuple(req.get("throughput_to", ()) or ())
        peers = d.get("peers")
        if peers is None and d.get("osd_dump") and d.get("osd_tree"):
            peers = peers_from_osd_map(host, d["osd_dump"], d["osd_tree"])
        if d.get("lab_dir"):
            lab_peers, lab_mons = _from_lab(d["lab_dir"], host)
            peers = lab_peers if peers is None else peers
            kw.setdefault("mon_addrs", lab_mons)
            kw.setdefault("serve_sink", True)
        return cls(host=host, peers=dict(peers or {}), **kw)


def _osd_ip(osd: Mapping) -> Optional[str]:
    for vec_key, str_key in (("cluster_addrs", "cluster_addr"), ("public_addrs", "public_addr")):
        for a in (osd.get(vec_key) or {}).get("addrvec", ()) or ():
            ip = netprobe_parse.ip_of(str(a.get("addr", "")))
            if ip:
                return ip
        ip = netprobe_parse.ip_of(str(osd.get(str_key) or ""))
        if ip:
            return ip
    return None


def _is_loopback(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).is_loopback
    except ValueError:
        return False


def peers_from_osd_map(host: str, osd_dump: Mapping, osd_tree: Mapping) -> Dict[str, str]:
    """{peer host: IP} for every other CRUSH host holding an OSD with a known address.

    A peer that shares this host's address, or sits on loopback, is not the far end of a
    link (single-address labs put every "host" on 127.0.0.1): probing it would measure
    nothing but contention, so it is left out.
    """
    by_id = {int(o["osd"]): o for o in osd_dump.get("osds", ())}
    ip_by_host: Dict[str, str] = {}
    for node in osd_tree.get("nodes", ()):
        if node.get("type") != "host":
            continue
        ips = [ip for ip in (_osd_ip(by_id[c]) for c in node.get("children", ()) if c in by_id)
               if ip]
        if ips:
            ip_by_host[node["name"]] = collections.Counter(ips).most_common(1)[0][0]
    own = ip_by_host.get(host)
    out = {h: ip for h, ip in ip_by_host.items()
           if h != host and ip != own and not _is_loopback(ip)}
    return dict(sorted(out.items()))


def _from_lab(lab_dir: str, host: str) -> Tuple[Dict[str, str], List[str]]:
    with open(os.path.join(lab_dir, "lab.json")) as f:
        lab = json.load(f)
    peers = {h: i["addr"] for h, i in lab.get("hosts", {}).items() if h != host and i.get("addr")}
    return dict(sorted(peers.items())), [lab["mon_addr"]] if lab.get("mon_addr") else []


def read_counters() -> Dict[str, int]:
    tables = []
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        with open(path) as f:
            tables.append(netprobe_parse.parse_proc_net(f.read()))
    return netprobe_parse.select_counters(*tables)


def read_tcp(proc_names: Sequence[str], timeout: float = 2.0) -> Dict[str, Any]:
    try:
        out = subprocess.run(["ss", "-tinopH", "state", "established"], capture_output=True,
                             text=True, timeout=timeout, env=dict(os.environ, LC_ALL="C"))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": "ss: %s" % exc}
    return netprobe_parse.tcp_summary(netprobe_parse.parse_ss(out.stdout), proc_names)


def _pick_peers(ctx: ProbeContext, prev: Mapping[str, Any]) -> List[str]:
    """All peers, or `max_peers` of them rotating cycle by cycle."""
    names = sorted(ctx.peers)
    if len(names) <= ctx.max_peers:
        return names
    start = int(prev.get("rotation", 0)) % len(names)
    return [names[(start + i) % len(names)] for i in range(ctx.max_peers)]


def _probe_peers(ctx: ProbeContext, peers: List[str], wait_s: float,
                 now: float) -> Tuple[str, Dict[str, Any], Optional[int]]:
    mtus = {p: ctx.mtu or netprobe_icmp.route_mtu(ctx.peers[p]) for p in peers}
    targets = [(p, ctx.peers[p], size) for p in peers
               for size in netprobe_icmp.sizes_for(mtus[p]).values()]
    method, res = netprobe_icmp.probe(targets, ctx.count, ctx.interval_s, wait_s) \
        if targets else ("none", {})
    out: Dict[str, Any] = {}
    for p in peers:
        probes = {label: res[(p, size)] for label, size in
                  netprobe_icmp.sizes_for(mtus[p]).items() if (p, size) in res}
        out[p] = {"addr": ctx.peers[p], "mtu": mtus[p], "time": now, "probes": probes}
    mtu_vals = [m for m in mtus.values() if m]
    return method, out, (ctx.mtu or (max(mtu_vals) if mtu_vals else None))


def _throughput(ctx: ProbeContext, prev: Mapping[str, Any], deadline: float,
                now: float) -> Dict[str, Any]:
    out = {p: r for p, r in (prev.get("throughput") or {}).items()
           if p in ctx.peers and now - float(r.get("time", 0)) <= THROUGHPUT_KEEP_S}
    for p in ctx.throughput_to:
        left = min(ctx.throughput_max_s, deadline - time.monotonic() - 0.3)
        if p not in ctx.peers or left < 0.1:
            continue
        r = netprobe_tput.send(ctx.peers[p], ctx.throughput_port, left)
        r["time"] = now
        out[p] = r
    return out


def _cost(peers: Mapping[str, Any], tput_new: Sequence[Mapping[str, Any]],
          elapsed_ms: float, now: float) -> Dict[str, Any]:
    pk = by = 0
    for p in peers.values():
        if p.get("time") != now:
            continue                              # carried forward, not sent this cycle
        for pr in p.get("probes", {}).values():
            n = int(pr.get("sent", 0)) + int(pr.get("received", 0))
            pk += n
            by += n * int(pr.get("size", 0))
    tb = sum(int(r.get("bytes", 0)) for r in tput_new)
    return {"packets": pk, "bytes": by + tb, "icmp_bytes": by, "throughput_bytes": tb,
            "ms": round(elapsed_ms, 1)}


def _start_ss(ctx: ProbeContext) -> Tuple[threading.Thread, Dict[str, Any]]:
    box: Dict[str, Any] = {}
    t = threading.Thread(target=lambda: box.update(read_tcp(ctx.proc_names)),
                         name="netprobe-ss", daemon=True)
    t.start()
    return t, box


def probe_cycle(context: Any) -> Dict[str, Any]:
    """One bounded probe round; returns the JSON object for `report["network"]`.

    `context` is a ProbeContext or the helper's dict (see ProbeContext.from_mapping).
    """
    ctx = context if isinstance(context, ProbeContext) else ProbeContext.from_mapping(context)
    now = float(context.get("now") or ctx.clock()) if isinstance(context, Mapping) else ctx.clock()
    m0 = time.monotonic()
    deadline = m0 + max(0.2, ctx.budget_s * 0.9)
    prev = ctx.previous if ctx.previous is not None else _LAST.get(ctx.host, {})
    if ctx.serve_sink:
        netprobe_tput.ensure_sink(port=ctx.throughput_port)
    errors: List[str] = []
    try:
        counters = read_counters()
    except (OSError, ValueError) as exc:
        counters, errors = {}, errors + ["counters: %s" % exc]
    mon_thread, mon_out, mon_started = netprobe_mon.start(ctx)
    ss, tcp_box = _start_ss(ctx)              # /proc scan of `ss -p` overlaps the ICMP probes
    peers = _pick_peers(ctx, prev)
    send_s = ctx.count * ctx.interval_s
    wait_s = max(0.2, min(0.5, deadline - time.monotonic() - send_s - 0.05
                          - (0.6 if ctx.throughput_to else 0.0)))
    method, probed, mtu = _probe_peers(ctx, peers, wait_s, now)
    ss.join(max(0.05, deadline - time.monotonic()))
    tcp = dict(tcp_box) if not ss.is_alive() else {"error": "ss still running"}
    carried = {p: r for p, r in (prev.get("peers") or {}).items()
               if p in ctx.peers and p not in probed
               and now - float(r.get("time", 0)) <= PEER_RESULT_MAX_AGE_S}
    throughput = _throughput(ctx, prev, deadline, now)
    mon = netprobe_mon.result(mon_thread, mon_out, mon_started, deadline)
    elapsed_ms = (time.monotonic() - m0) * 1000.0
    all_peers = dict(sorted({**carried, **probed}.items()))
    result: Dict[str, Any] = {
        "version": NETWORK_VERSION, "host": ctx.host, "time": now, "mtu": mtu,
        "method": method, "peers": all_peers, "counters": counters,
        "deltas": netprobe_parse.counter_deltas(prev.get("counters"), counters),
        "interval_s": (now - float(prev["time"])) if prev.get("time") else None,
        "tcp": tcp, "throughput": throughput, "elapsed_ms": round(elapsed_ms, 1),
        "rotation": (int(prev.get("rotation", 0)) + len(peers)) % max(1, len(ctx.peers)),
        "cost": _cost(all_peers, [r for r in throughput.values() if r.get("time") == now],
                      elapsed_ms, now)}
    if mon is not None:
        result["mon"] = mon
    if errors:
        result["errors"] = errors
    _LAST[ctx.host] = result
    return result


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Debug: `python -m ceph_recovery_tools.helper.netprobe HOST --lab-dir D [--tput h2]`."""
    import argparse
    ap = argparse.ArgumentParser(prog="netprobe")
    ap.add_argument("host")
    ap.add_argument("--lab-dir")
    ap.add_argument("--peer", action="append", default=[], help="HOST=IP (repeatable)")
    ap.add_argument("--mon", action="append", default=[], help="mon IP:PORT (repeatable)")
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--tput", action="append", default=[], help="throughput probe to HOST")
    ap.add_argument("--tput-port", type=int, default=netprobe_tput.DEFAULT_PORT)
    ap.add_argument("--tput-seconds", type=float, default=netprobe_tput.MAX_SECONDS)
    ap.add_argument("--no-sink", action="store_true", help="do not serve throughput probes")
    ap.add_argument("--proc", action="append", default=[], help="process names for ss "
                    "(default ceph-osd)")
    ap.add_argument("--cycles", type=int, default=1)
    ap.add_argument("--interval", type=float, default=2.0)
    a = ap.parse_args(argv)
    d: Dict[str, Any] = {"host": a.host, "budget_s": a.budget, "lab_dir": a.lab_dir,
                         "request": {"throughput_to": a.tput}, "throughput_port": a.tput_port,
                         "throughput_max_s": a.tput_seconds, "serve_sink": not a.no_sink}
    if a.peer:
        d["peers"] = dict(p.split("=", 1) for p in a.peer)
    if a.mon:
        d["mon_addrs"] = a.mon
    if a.proc:
        d["proc_names"] = tuple(a.proc)
    for i in range(a.cycles):
        if i:
            time.sleep(a.interval)
        print(json.dumps(probe_cycle(dict(d, now=time.time())), sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
