"""Network faults on ONE link or host of a lab made of namespaces + veths on a bridge.

Each `inject_*` returns a `Fault` whose `undo()` removes exactly what it added. Everything
touches only the lab's own objects: its bridge's nft table (named after the lab, so
`ceph-recovery-lab down` removes leftovers), its namespaces' veths and qdiscs.

- jumbo_drop: nft (bridge family, forward hook) drops `percent` % of packets longer than
  `min_len` bytes between two hosts, both directions: a faulty optic on one path.
- mtu: one veth (inside the host's namespace, and its bridge-side peer) at a smaller MTU.
- cap: tc tbf on both ends of one host's veth pair: that host's throughput is capped.
- link_down: one host's veth pair down (bridge side): that host is cut off the network.
- mon_redirect: nft nat in the root namespace sends the lab hosts' new connections to the mon
  through a local port (the delaying proxy).
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from typing import Callable, Dict, List, Mapping, Optional, Sequence


class FaultError(RuntimeError):
    pass


def run(argv: Sequence[str], stdin: Optional[str] = None, check: bool = True) -> str:
    p = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=30)
    if check and p.returncode != 0:
        raise FaultError("%s: %s" % (" ".join(argv), (p.stderr or p.stdout).strip()))
    return p.stdout


@dataclasses.dataclass
class Fault:
    kind: str
    target: str
    undo_fn: Callable[[], None]
    detail: Dict[str, object] = dataclasses.field(default_factory=dict)
    active: bool = True

    def undo(self) -> None:
        if self.active:
            self.undo_fn()
            self.active = False

    def __enter__(self) -> "Fault":
        return self

    def __exit__(self, *exc) -> None:
        self.undo()


@dataclasses.dataclass(frozen=True)
class LabNet:
    """What the faults need to know about a netns lab (from D/lab.json)."""

    table: str                                 # nft table name owned by the lab
    bridge: str
    bridge_addr: str
    mon_addr: str                              # "ip:port"
    hosts: Mapping[str, Mapping[str, str]]     # host -> {netns, veth_host, veth_root, addr}

    @classmethod
    def from_lab(cls, lab_dir: str) -> "LabNet":
        with open(os.path.join(lab_dir, "lab.json")) as f:
            st = json.load(f)
        if not st.get("netns"):
            raise FaultError("%s: lab was not built with --netns" % lab_dir)
        n = st["names"]
        hosts = {h: {"netns": n["netns"][h], "veth_host": n["veth_host"][h],
                     "veth_root": n["veth_root"][h], "addr": i["addr"]}
                 for h, i in st["hosts"].items()}
        return cls(table=n["nft_table"], bridge=n["bridge"], bridge_addr=st["bridge_addr"],
                   mon_addr=st["mon_addr"], hosts=hosts)

    def host(self, name: str) -> Mapping[str, str]:
        if name not in self.hosts:
            raise FaultError("no lab host %r (have %s)" % (name, ", ".join(sorted(self.hosts))))
        return self.hosts[name]


def _nft_table_exists(family: str, table: str) -> bool:
    return subprocess.run(["nft", "list", "table", family, table], capture_output=True,
                          timeout=30).returncode == 0


def inject_jumbo_drop(lab: LabNet, a: str, b: str, percent: int = 20,
                      min_len: int = 1400) -> Fault:
    """Drop `percent` % of packets longer than `min_len` between hosts a and b (both ways)."""
    if not 0 < percent <= 100:
        raise FaultError("percent must be in 1..100")
    ia, ib = lab.host(a)["addr"], lab.host(b)["addr"]
    chain = "jumbo_%s_%s" % (a, b)
    rule = "ip saddr %s ip daddr %s meta length > %d numgen random mod 100 < %d counter drop"
    script = "\n".join([
        "table bridge %s {" % lab.table,
        "  chain %s {" % chain,
        "    type filter hook forward priority 0; policy accept;",
        "    " + rule % (ia, ib, min_len, percent),
        "    " + rule % (ib, ia, min_len, percent),
        "  }", "}"])
    run(["nft", "-f", "-"], stdin=script)

    def undo() -> None:
        if _nft_table_exists("bridge", lab.table):
            run(["nft", "delete", "chain", "bridge", lab.table, chain], check=False)
    return Fault("jumbo_drop", "%s<->%s" % (a, b), undo,
                 {"percent": percent, "min_len": min_len, "chain": chain})


def nft_drop_counts(lab: LabNet, fault: Fault) -> List[int]:
    """Packets dropped so far by a jumbo_drop fault's two rules."""
    out = run(["nft", "-j", "list", "chain", "bridge", lab.table, str(fault.detail["chain"])])
    counts = []
    for item in json.loads(out).get("nftables", []):
        for expr in item.get("rule", {}).get("expr", []):
            if "counter" in expr:
                counts.append(int(expr["counter"]["packets"]))
    return counts


def _link_mtu(netns: Optional[str], dev: str) -> int:
    pre = ["ip", "-n", netns] if netns else ["ip"]
    return int(json.loads(run(pre + ["-j", "link", "show", "dev", dev]))[0]["mtu"])


def _set_mtu(netns: Optional[str], dev: str, mtu: int) -> None:
    pre = ["ip", "-n", netns] if netns else ["ip"]
    run(pre + ["link", "set", "dev", dev, "mtu", str(mtu)])


def inject_mtu(lab: LabNet, host: str, mtu: int = 1500, both_ends: bool = False) -> Fault:
    """Set the host's veth (inside its namespace) to `mtu`; with both_ends also the bridge
    port. Larger frames towards that host are then silently dropped (a black hole)."""
    h = lab.host(host)
    old_in = _link_mtu(h["netns"], h["veth_host"])
    old_root = _link_mtu(None, h["veth_root"])
    _set_mtu(h["netns"], h["veth_host"], mtu)
    if both_ends:
        _set_mtu(None, h["veth_root"], mtu)

    def undo() -> None:
        _set_mtu(h["netns"], h["veth_host"], old_in)
        if both_ends:
            _set_mtu(None, h["veth_root"], old_root)
    return Fault("mtu", host, undo, {"mtu": mtu, "previous": old_in})


def inject_cap(lab: LabNet, host: str, rate: str = "100mbit", burst: str = "256kb",
               latency: str = "50ms") -> Fault:
    """tc tbf on both ends of the host's veth pair: its sends and its receives are capped."""
    h = lab.host(host)
    tbf = ["tbf", "rate", rate, "burst", burst, "latency", latency]
    run(["tc", "-n", h["netns"], "qdisc", "replace", "dev", h["veth_host"], "root"] + tbf)
    run(["tc", "qdisc", "replace", "dev", h["veth_root"], "root"] + tbf)

    def undo() -> None:
        run(["tc", "-n", h["netns"], "qdisc", "del", "dev", h["veth_host"], "root"], check=False)
        run(["tc", "qdisc", "del", "dev", h["veth_root"], "root"], check=False)
    return Fault("cap", host, undo, {"rate": rate})


def inject_link_down(lab: LabNet, host: str) -> Fault:
    """The bridge-side end of the host's veth down: no packet in or out of that host (its
    namespace keeps its own end and address), as a pulled cable or a dead switch port."""
    h = lab.host(host)
    run(["ip", "link", "set", "dev", h["veth_root"], "down"])

    def undo() -> None:
        run(["ip", "link", "set", "dev", h["veth_root"], "up"])
    return Fault("link_down", host, undo, {"veth": h["veth_root"]})


def inject_mon_redirect(lab: LabNet, proxy_port: int, hosts: Optional[Sequence[str]] = None,
                        chain: str = "mon_proxy") -> Fault:
    """New TCP connections from the lab hosts to the mon go to `proxy_port` on the bridge
    address (root namespace nat prerouting). Established sessions are not affected."""
    mon_ip, mon_port = lab.mon_addr.rsplit(":", 1)
    srcs = ", ".join(lab.host(h)["addr"] for h in (hosts or sorted(lab.hosts)))
    script = "\n".join([
        "table ip %s {" % lab.table,
        "  chain %s {" % chain,
        "    type nat hook prerouting priority -100; policy accept;",
        "    ip saddr { %s } ip daddr %s tcp dport %s counter redirect to :%d"
        % (srcs, mon_ip, mon_port, proxy_port),
        "  }", "}"])
    run(["nft", "-f", "-"], stdin=script)

    def undo() -> None:
        if _nft_table_exists("ip", lab.table):
            run(["nft", "delete", "chain", "ip", lab.table, chain], check=False)
    return Fault("mon_redirect", lab.mon_addr, undo, {"proxy_port": proxy_port})
