"""DF-set ICMP echo probes to many peers at several sizes, from one raw socket.

One socket, one loop: round r sends probe r to every (peer, size), then waits `interval_s`;
after the last round it waits up to `wait_s` for the replies still out (or until every reply
is in). Loss per (peer, size) is exact: a late reply within the window counts, nothing else.
IPv4 raw sockets need CAP_NET_RAW (the helper runs as root); without it, or for IPv6 peers,
`ping_probe` falls back to iputils `ping -M do` and parses its summary.
"""
from __future__ import annotations

import os
import random
import select
import signal
import socket
import struct
import subprocess
import time
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .netprobe_parse import parse_ping

IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = getattr(socket, "IP_PMTUDISC_DO", 2)
IP_MTU = getattr(socket, "IP_MTU", 14)
ICMP_ECHO, ICMP_ECHOREPLY = 8, 0
IPV4_ICMP_OVERHEAD = 28
Target = Tuple[str, str, int]          # (peer host, address, IP packet size in bytes)


def checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def echo_packet(ident: int, seq: int, size: int) -> bytes:
    """ICMP echo request whose IPv4 packet is `size` bytes long."""
    payload = (b"ceph-recovery-netprobe" * (size // 16 + 1))[:max(0, size - IPV4_ICMP_OVERHEAD)]
    head = struct.pack("!BBHHH", ICMP_ECHO, 0, 0, ident, seq)
    return struct.pack("!BBHHH", ICMP_ECHO, 0, checksum(head + payload), ident, seq) + payload


def route_mtu(addr: str) -> Optional[int]:
    """MTU of the route to `addr` (interface MTU or cached path MTU), None if unknown."""
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        s.connect((addr, 9))
        level = socket.IPPROTO_IPV6 if fam == socket.AF_INET6 else socket.IPPROTO_IP
        opt = getattr(socket, "IPV6_MTU", 24) if fam == socket.AF_INET6 else IP_MTU
        return int(s.getsockopt(level, opt))
    except OSError:
        return None
    finally:
        s.close()


class _Stat:
    __slots__ = ("sent", "received", "errors", "too_big", "rtts")

    def __init__(self) -> None:
        self.sent = self.received = self.errors = 0
        self.too_big = False
        self.rtts: List[float] = []

    def as_dict(self, size: int) -> Dict[str, object]:
        return {"size": size, "sent": self.sent, "received": self.received,
                "errors": self.errors, "too_big": self.too_big,
                "rtt_avg_ms": (sum(self.rtts) / len(self.rtts) * 1000.0) if self.rtts else None,
                "rtt_max_ms": max(self.rtts) * 1000.0 if self.rtts else None}


def raw_probe(targets: Sequence[Target], count: int, interval_s: float,
              wait_s: float) -> Dict[Tuple[str, int], Dict[str, object]]:
    """Send `count` DF echo requests to every target; {(peer, size): stats}. Raises OSError
    (EPERM) if a raw socket is not allowed."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    try:
        sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.setblocking(False)
        ident = (os.getpid() ^ random.getrandbits(16)) & 0xFFFF
        stats = {(p, size): _Stat() for p, _a, size in targets}
        # seq encodes (target index, round): target index * count + round, < 65536
        index = {i: t for i, t in enumerate(targets)}
        if len(targets) * count > 0xFFFF:
            raise ValueError("too many probes for one socket: %d" % (len(targets) * count))
        addr_of = {a: p for p, a, _s in targets}
        sent_at: Dict[int, float] = {}
        for r in range(count):
            for i, (peer, addr, size) in index.items():
                seq = i * count + r
                st = stats[(peer, size)]
                st.sent += 1
                try:
                    sock.sendto(echo_packet(ident, seq, size), (addr, 0))
                    sent_at[seq] = time.monotonic()
                except OSError as exc:
                    st.errors += 1
                    st.too_big = st.too_big or exc.errno == 90   # EMSGSIZE
            _receive(sock, ident, count, index, addr_of, stats, sent_at,
                     time.monotonic() + interval_s)
        deadline = time.monotonic() + wait_s
        while sent_at and time.monotonic() < deadline:   # stops as soon as all are in
            _receive(sock, ident, count, index, addr_of, stats, sent_at, deadline)
        return {k: v.as_dict(k[1]) for k, v in stats.items()}
    finally:
        sock.close()


def _receive(sock, ident, count, index, addr_of, stats, sent_at, until: float) -> None:
    while True:
        left = until - time.monotonic()
        if left <= 0:
            return
        if not sent_at:                      # every reply is in: keep the pacing
            time.sleep(left)
            return
        ready, _w, _x = select.select([sock], [], [], left)
        if not ready:
            return
        try:
            data, (src, _port) = sock.recvfrom(65535)
        except BlockingIOError:
            continue
        now = time.monotonic()
        ihl = (data[0] & 0x0F) * 4
        if len(data) < ihl + 8:
            continue
        typ, _code, _ck, rid, seq = struct.unpack("!BBHHH", data[ihl:ihl + 8])
        if typ != ICMP_ECHOREPLY or rid != ident or seq not in sent_at:
            continue
        peer, addr, size = index.get(seq // count, (None, None, None))
        if peer is None or src != addr or addr_of.get(src) != peer:
            continue
        st = stats[(peer, size)]
        st.received += 1
        st.rtts.append(now - sent_at.pop(seq))


def ping_probe(targets: Sequence[Target], count: int, interval_s: float,
               wait_s: float) -> Dict[Tuple[str, int], Dict[str, object]]:
    """Fallback: one iputils `ping -q -M do` per target, all at once, bounded in time."""
    procs = []
    for peer, addr, size in targets:
        six = ":" in addr
        payload = size - (48 if six else IPV4_ICMP_OVERHEAD)
        argv = ["ping", "-6" if six else "-4", "-n", "-M", "do", "-s", str(payload),
                "-c", str(count), "-i", "%.3f" % interval_s, "-W", "%.3f" % max(wait_s, 0.1),
                addr]
        procs.append(((peer, size), subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=dict(os.environ, LC_ALL="C"))))
    deadline = time.monotonic() + count * interval_s + wait_s + 0.5
    out: Dict[Tuple[str, int], Dict[str, object]] = {}
    for key, proc in procs:
        try:
            text, _ = proc.communicate(timeout=max(0.05, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)          # ping prints its summary on SIGINT
            try:
                text, _ = proc.communicate(timeout=1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                text, _ = proc.communicate()
        try:
            res = parse_ping(text)
        except ValueError:
            res = {"sent": count, "received": 0, "errors": count, "too_big": False,
                   "rtt_avg_ms": None, "rtt_max_ms": None}
        res["size"] = key[1]
        out[key] = res
    return out


def probe(targets: Sequence[Target], count: int, interval_s: float,
          wait_s: float) -> Tuple[str, Dict[Tuple[str, int], Dict[str, object]]]:
    """Raw-socket probe for IPv4 targets, iputils ping for the rest or without CAP_NET_RAW."""
    v4 = [t for t in targets if ":" not in t[1]]
    rest = [t for t in targets if ":" in t[1]]
    method = "raw"
    out: Dict[Tuple[str, int], Dict[str, object]] = {}
    if v4:
        try:
            out.update(raw_probe(v4, count, interval_s, wait_s))
        except PermissionError:
            method, rest = "ping", list(targets)
    if rest:
        out.update(ping_probe(rest, count, interval_s, wait_s))
        method = "ping" if not v4 or method == "ping" else "raw+ping"
    return method, out


def sizes_for(mtu: Optional[int]) -> Mapping[str, int]:
    """Probe labels -> IP packet size: small (84), std (1500), jumbo (interface MTU > 1500)."""
    sizes = {"small": 84, "std": 1500}
    if mtu and mtu > 1500:
        sizes["jumbo"] = int(mtu)
    elif mtu and mtu < 1500:
        sizes["std"] = int(mtu)
    return sizes
