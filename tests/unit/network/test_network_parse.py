"""Pure parsers of the network probe against outputs captured on the netns lab."""
from __future__ import annotations

import json
import os

import pytest

from ceph_recovery_tools.helper import netprobe, netprobe_icmp, netprobe_parse as P

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def fixture(name: str) -> str:
    with open(os.path.join(FIX, name)) as f:
        return f.read()


def test_ping_clean():
    r = P.parse_ping(fixture("ping_clean.txt"))
    assert (r["sent"], r["received"], r["errors"], r["too_big"]) == (20, 20, 0, False)
    assert r["rtt_avg_ms"] == 0.043 and r["rtt_max_ms"] == 0.057


def test_ping_jumbo_loss_counts_lost_replies():
    r = P.parse_ping(fixture("ping_jumbo_loss.txt"))
    assert (r["sent"], r["received"], r["too_big"]) == (20, 13, False)


def test_ping_local_message_too_long_is_too_big_with_errors():
    r = P.parse_ping(fixture("ping_too_big.txt"))
    assert (r["sent"], r["received"], r["errors"], r["too_big"]) == (5, 0, 5, True)
    assert r["rtt_avg_ms"] is None


def test_ping_blackhole_all_lost_silently():
    r = P.parse_ping(fixture("ping_blackhole.txt"))
    assert (r["sent"], r["received"], r["errors"], r["too_big"]) == (20, 0, 0, False)


def test_ping_without_summary_is_an_error():
    with pytest.raises(ValueError, match="no ping statistics"):
        P.parse_ping("ping: connect: Network is unreachable\n")


def test_proc_net_netstat_and_snmp_sections():
    netstat = P.parse_proc_net(fixture("netstat_clean.txt"))
    snmp = P.parse_proc_net(fixture("snmp_clean.txt"))
    assert set(netstat) >= {"TcpExt", "IpExt"}
    assert set(snmp) >= {"Ip", "Icmp", "Tcp", "Udp"}
    flat = P.select_counters(netstat, snmp)
    assert {"SyncookiesSent", "ListenOverflows", "ListenDrops", "RetransSegs",
            "TCPTimeouts"} <= set(flat)
    assert all(isinstance(v, int) for v in flat.values())


def test_proc_net_rejects_mismatched_lines():
    with pytest.raises(ValueError, match="2 names, 1 values"):
        P.parse_proc_net("TcpExt: A B\nTcpExt: 1\n")
    with pytest.raises(ValueError, match="unpaired"):
        P.parse_proc_net("TcpExt: A\nIpExt: 1\n")


def test_counter_deltas():
    assert P.counter_deltas(None, {"SyncookiesSent": 5}) == {}
    assert P.counter_deltas({"SyncookiesSent": 5, "ListenDrops": 9},
                            {"SyncookiesSent": 301, "ListenDrops": 2}) == \
        {"SyncookiesSent": 296, "ListenDrops": 2}       # went backwards: counts from zero


def test_ss_ceph_osd_connections_negotiated_sack_and_wscale():
    conns = P.parse_ss(fixture("ss_ceph_osd.txt"))
    osd = [c for c in conns if any(n == "ceph-osd" for n, _ in c["procs"])]
    assert len(osd) == 13 and all(c["has_info"] for c in osd)
    first = osd[0]
    assert (first["local"], first["peer"]) == ("10.74.122.11:6802", "10.74.122.12:58242")
    assert first["sack"] and first["ts"] and first["wscale"] == (10, 10) and first["cwnd"] == 24
    s = P.tcp_summary(conns, ("ceph-osd",))
    assert (s["connections"], s["no_sack"], s["no_wscale"]) == (13, 0, 0)


def test_ss_connection_without_sack_or_wscale():
    conns = P.parse_ss(fixture("ss_no_sack.txt"))
    assert [(c["peer"], c["sack"], c["wscale"]) for c in conns] == [
        ("10.250.77.11:59542", False, None), ("10.250.77.13:55254", True, (10, 10))]
    by_peer = {c["peer"].split(":")[0]: c for c in conns}
    assert by_peer["10.250.77.11"]["sack"] is False and by_peer["10.250.77.11"]["wscale"] is None
    assert by_peer["10.250.77.13"]["sack"] is True
    s = P.tcp_summary(conns, ("python",))
    assert (s["connections"], s["no_sack"], s["no_wscale"], s["cwnd_min"]) == (2, 1, 1, 10)
    assert P.tcp_summary(conns, ("ceph-osd",))["connections"] == 0


def test_ss_with_header_and_state_column_parses_the_same():
    with_header = P.parse_ss(fixture("ss_no_sack_header.txt"))
    plain = P.parse_ss(fixture("ss_no_sack.txt"))
    assert [(c["peer"], c["sack"]) for c in with_header] == [(c["peer"], c["sack"]) for c in plain]


def test_peers_from_the_osd_map_by_crush_host():
    dump = json.loads(fixture("osd_dump.json"))
    tree = json.loads(fixture("osd_tree.json"))
    assert netprobe.peers_from_osd_map("h1", dump, tree) == {"h2": "10.74.122.12",
                                                            "h3": "10.74.122.13"}
    ctx = netprobe.ProbeContext.from_osd_dump("h2", dump, tree, budget_s=2.0)
    assert ctx.peers == {"h1": "10.74.122.11", "h3": "10.74.122.13"} and ctx.budget_s == 2.0


def test_addr_forms():
    assert P.ip_of("v2:10.0.0.1:6800/123") == "10.0.0.1"
    assert P.ip_of("10.0.0.1:6801/0") == "10.0.0.1"
    assert P.ip_of("[fd00::1]:6800/0") == "fd00::1"
    assert P.ip_of("-") is None and P.ip_of("0.0.0.0:0/0") is None


def test_probe_sizes_and_echo_packet():
    assert netprobe_icmp.sizes_for(9000) == {"small": 84, "std": 1500, "jumbo": 9000}
    assert netprobe_icmp.sizes_for(1500) == {"small": 84, "std": 1500}
    pkt = netprobe_icmp.echo_packet(0x1234, 7, 9000)
    assert len(pkt) == 9000 - 20 and netprobe_icmp.checksum(pkt) == 0
