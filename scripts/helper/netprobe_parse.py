"""Pure parsers for the network probes: ping summaries, /proc/net/{netstat,snmp}, `ss -tinop`,
Ceph addresses.

Text in, plain values out; tested against fixture files captured on the lab
(tests/unit/network/fixtures/). No I/O here.
"""
from __future__ import annotations

import re
import statistics
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

# counters worth a delta per cycle: (section, name) as in /proc/net/netstat and /proc/net/snmp
COUNTERS = (
    ("TcpExt", "SyncookiesSent"), ("TcpExt", "SyncookiesRecv"), ("TcpExt", "SyncookiesFailed"),
    ("TcpExt", "ListenOverflows"), ("TcpExt", "ListenDrops"), ("TcpExt", "TCPTimeouts"),
    ("TcpExt", "TCPLostRetransmit"), ("TcpExt", "TCPSackFailures"), ("TcpExt", "TCPReqQFullDrop"),
    ("TcpExt", "TCPReqQFullDoCookies"), ("TcpExt", "TCPAbortOnTimeout"),
    ("Tcp", "RetransSegs"), ("Tcp", "OutSegs"), ("Tcp", "InSegs"), ("Tcp", "InErrs"),
    ("Tcp", "AttemptFails"), ("Tcp", "EstabResets"), ("Ip", "FragFails"), ("Ip", "ReasmFails"),
    ("Icmp", "InDestUnreachs"), ("Icmp", "OutDestUnreachs"),
)

_PING_TX = re.compile(r"(\d+) packets transmitted, (\d+) (?:packets )?received"
                      r"(?:, \+(\d+) duplicates)?(?:, \+(\d+) errors)?")
_PING_RTT = re.compile(r"(?:rtt|round-trip) min/avg/max/(?:mdev|stddev) = "
                       r"([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")
_TOO_BIG = re.compile(r"message too long|Frag needed|frag needed", re.I)


def parse_ping(text: str) -> Dict[str, object]:
    """iputils `ping -q` output -> {sent, received, errors, too_big, rtt_avg_ms, rtt_max_ms}.

    ValueError if there is no statistics line (ping did not run or was killed by SIGKILL).
    "local error: message too long" (a DF probe larger than the path MTU) sets too_big.
    """
    m = _PING_TX.search(text)
    if not m:
        raise ValueError("no ping statistics in output: %r" % text[-200:])
    out: Dict[str, object] = {"sent": int(m.group(1)), "received": int(m.group(2)),
                              "errors": int(m.group(4) or 0),
                              "too_big": bool(_TOO_BIG.search(text)),
                              "rtt_avg_ms": None, "rtt_max_ms": None}
    r = _PING_RTT.search(text)
    if r:
        out["rtt_avg_ms"] = float(r.group(2))
        out["rtt_max_ms"] = float(r.group(3))
    return out


def parse_proc_net(text: str) -> Dict[str, Dict[str, int]]:
    """/proc/net/netstat or /proc/net/snmp -> {section: {counter: value}}.

    Both files pair a header line `Sect: A B C` with a value line `Sect: 1 2 3`.
    """
    out: Dict[str, Dict[str, int]] = {}
    lines = [ln for ln in text.splitlines() if ":" in ln]
    for head, vals in zip(lines[::2], lines[1::2]):
        sect, names = head.split(":", 1)
        sect2, values = vals.split(":", 1)
        if sect != sect2:
            raise ValueError("unpaired /proc/net line: %r / %r" % (head, vals))
        names_l, values_l = names.split(), values.split()
        if len(names_l) != len(values_l):
            raise ValueError("section %s: %d names, %d values" % (sect, len(names_l), len(values_l)))
        try:
            out.setdefault(sect.strip(), {}).update(
                {n: int(v) for n, v in zip(names_l, values_l)})
        except ValueError:
            raise ValueError("section %s: non-integer value" % sect)
    return out


def select_counters(*tables: Mapping[str, Mapping[str, int]]) -> Dict[str, int]:
    """The COUNTERS of interest, flat {name: value}; names absent on this kernel are skipped."""
    out: Dict[str, int] = {}
    for sect, name in COUNTERS:
        for t in tables:
            if name in t.get(sect, {}):
                out[name] = int(t[sect][name])
                break
    return out


def counter_deltas(previous: Optional[Mapping[str, int]], current: Mapping[str, int]) -> Dict[str, int]:
    """Per-cycle increase of each counter; {} without a previous sample. A counter that went
    backwards (namespace recreated, reboot) counts from zero."""
    if not previous:
        return {}
    out = {}
    for k, v in current.items():
        p = previous.get(k)
        if isinstance(p, int) and not isinstance(p, bool):
            out[k] = v - p if v >= p else v
    return out


_SS_HEAD = re.compile(r"^(?:(?P<state>[A-Z][A-Z0-9-]+)\s+)?(?P<recvq>\d+)\s+(?P<sendq>\d+)\s+"
                      r"(?P<local>\S+)\s+(?P<peer>\S+)(?P<rest>.*)$")
_SS_USERS = re.compile(r'\("([^"]+)",pid=(\d+),fd=(\d+)\)')
_SS_CWND = re.compile(r"\bcwnd:(\d+)")
_SS_WSCALE = re.compile(r"\bwscale:(\d+),(\d+)")
_SS_RTT = re.compile(r"\brtt:([\d.]+)/([\d.]+)")
_SS_RETRANS = re.compile(r"\bretrans:(\d+)/(\d+)")


def parse_ss(text: str) -> List[Dict[str, object]]:
    """`ss -tinop` (with or without -H / state filter) -> one dict per connection.

    Needs `-o`: iproute2 prints the `ts`/`sack` option flags only with -o (or -e).
    Each: local, peer, procs [(name, pid)], sack, ts, wscale (snd, rcv) or None, cwnd, rtt_ms,
    retrans_total.
    """
    conns: List[Dict[str, object]] = []
    cur: Optional[Dict[str, object]] = None
    for line in text.splitlines():
        if not line.strip() or line.startswith("State ") or line.lstrip().startswith("Recv-Q"):
            continue
        if line[:1] in (" ", "\t"):
            if cur is not None:
                _ss_detail(cur, line)
            continue
        m = _SS_HEAD.match(line.strip())
        if not m:
            cur = None
            continue
        cur = {"state": m.group("state") or "ESTAB", "local": m.group("local"),
               "peer": m.group("peer"),
               "procs": [(n, int(p)) for n, p, _fd in _SS_USERS.findall(m.group("rest"))],
               "sack": False, "ts": False, "wscale": None, "cwnd": None, "rtt_ms": None,
               "retrans_total": 0, "has_info": False}
        conns.append(cur)
    return conns


def _ss_detail(cur: Dict[str, object], line: str) -> None:
    words = line.split()
    cur["has_info"] = True
    cur["sack"] = cur["sack"] or "sack" in words
    cur["ts"] = cur["ts"] or "ts" in words
    w = _SS_WSCALE.search(line)
    if w:
        cur["wscale"] = (int(w.group(1)), int(w.group(2)))
    c = _SS_CWND.search(line)
    if c:
        cur["cwnd"] = int(c.group(1))
    r = _SS_RTT.search(line)
    if r:
        cur["rtt_ms"] = float(r.group(1))
    t = _SS_RETRANS.search(line)
    if t:
        cur["retrans_total"] = int(t.group(2))


def tcp_summary(conns: Iterable[Mapping[str, object]], proc_names: Sequence[str],
                local_ports: Optional[Sequence[int]] = None) -> Dict[str, object]:
    """Summary of the established connections owned by `proc_names` (e.g. ceph-osd):
    how many, how many without SACK / without window scaling, cwnd min and median."""
    mine = []
    for c in conns:
        if c.get("state") not in ("ESTAB", None) or not c.get("has_info"):
            continue
        names = {n for n, _pid in c.get("procs", ())}
        if not names & set(proc_names):
            continue
        if local_ports is not None and _port(str(c.get("local"))) not in set(local_ports):
            continue
        mine.append(c)
    cwnds = [int(c["cwnd"]) for c in mine if c.get("cwnd") is not None]
    return {"connections": len(mine),
            "no_sack": sum(1 for c in mine if not c.get("sack")),
            "no_wscale": sum(1 for c in mine if c.get("wscale") is None),
            "no_ts": sum(1 for c in mine if not c.get("ts")),
            "cwnd_min": min(cwnds) if cwnds else None,
            "cwnd_median": statistics.median(cwnds) if cwnds else None,
            "retrans_total": sum(int(c.get("retrans_total") or 0) for c in mine)}


def _port(addr: str) -> int:
    try:
        return int(addr.rsplit(":", 1)[1])
    except (IndexError, ValueError):
        return -1


def ip_of(addr: str) -> Optional[str]:
    """'v2:10.0.0.1:6800/123', '10.0.0.1:6800/0', '[::1]:6800' -> the IP; None if unset."""
    a = addr.split("/", 1)[0]
    for pre in ("v1:", "v2:", "any:"):
        if a.startswith(pre):
            a = a[len(pre):]
    if a.startswith("["):
        ip = a[1:a.find("]")]
    else:
        ip = a.rsplit(":", 1)[0] if ":" in a else a
    return None if ip in ("", "-", "0.0.0.0", "::") else ip
