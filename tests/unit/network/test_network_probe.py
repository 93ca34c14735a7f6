"""The probe's shell parts that need no root: mon round trip (late results), throughput
sink/sender, context from the helper's dict. Traffic only on loopback."""
from __future__ import annotations

import json
import os
import socket
import threading
import time

from ceph_recovery_tools.helper import netprobe, netprobe_tput

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


class SlowBanner:
    """A loopback 'mon' that sends its banner `delay` seconds after accepting."""

    def __init__(self, delay: float):
        self.delay = delay
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.addr = "v2:127.0.0.1:%d/0" % self.sock.getsockname()[1]
        threading.Thread(target=self._loop, daemon=True).start()

    def _loop(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        time.sleep(self.delay)
        try:
            c.sendall(b"ceph v2\n")
        finally:
            c.close()

    def close(self):
        self.sock.close()


def ctx(host, mon, budget, previous=None):
    return netprobe.ProbeContext(host=host, mon_addrs=[mon], budget_s=budget,
                                 previous=previous if previous is not None else {},
                                 proc_names=("none",))


def test_fast_mon_banner_round_trip():
    mon = SlowBanner(0.0)
    try:
        r = netprobe.probe_cycle(ctx("u-fast", mon.addr, 1.0))
    finally:
        mon.close()
    assert r["mon"]["ok"] is True and r["mon"]["rtt_s"] < 0.5
    assert r["peers"] == {} and r["cost"]["packets"] == 0 and r["deltas"] == {}
    assert {"SyncookiesSent", "ListenOverflows"} <= set(r["counters"])
    json.dumps(r)


def test_slow_mon_is_reported_while_running_then_with_its_real_duration():
    mon = SlowBanner(0.8)
    try:
        first = netprobe.probe_cycle(ctx("u-slow", mon.addr, 0.4))
        time.sleep(0.8)                       # the abandoned round trip completes meanwhile
        second = netprobe.probe_cycle(ctx("u-slow", mon.addr, 0.4, previous=first))
    finally:
        mon.close()
    assert first["mon"]["ok"] is False and "still running" in first["mon"]["error"]
    assert 0.3 <= first["mon"]["rtt_s"] < 0.8
    assert second["mon"]["ok"] is False and second["mon"]["rtt_s"] >= 0.8
    assert second["interval_s"] is not None and second["deltas"] != {}


def test_unreachable_mon_is_not_ok():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                                  # nothing listens there now
    r = netprobe.probe_cycle(ctx("u-down", "127.0.0.1:%d" % port, 1.0))
    assert r["mon"]["ok"] is False and r["mon"]["rtt_s"] is None
    assert "refused" in r["mon"]["error"].lower()


def test_throughput_sink_and_sender_on_loopback():
    sink = netprobe_tput.Sink("127.0.0.1", 0)
    try:
        r = netprobe_tput.send("127.0.0.1", sink.port, max_s=0.3, max_bytes=8 << 20)
    finally:
        sink.close()
    assert r["bytes"] == 8 << 20 and r["bps"] > 0 and r["seconds"] > 0


def test_throughput_sink_serves_a_sender_while_another_peer_holds_a_connection():
    sink = netprobe_tput.Sink("127.0.0.1", 0)
    slow = socket.create_connection(("127.0.0.1", sink.port))   # a peer mid-probe, sending nothing
    try:
        r = netprobe_tput.send("127.0.0.1", sink.port, max_s=0.3, max_bytes=4 << 20)
    finally:
        slow.close()
        sink.close()
    assert r.get("bytes") == 4 << 20, r
    assert r["seconds"] < 2.0                  # not queued behind the idle peer (idle_s 5 s)


def test_throughput_to_a_closed_port_is_an_error_not_a_number():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    r = netprobe_tput.send("127.0.0.1", port, max_s=0.2)
    assert "error" in r and "bps" not in r


def test_context_from_the_helpers_dict():
    with open(os.path.join(FIX, "osd_dump.json")) as f:
        dump = json.load(f)
    with open(os.path.join(FIX, "osd_tree.json")) as f:
        tree = json.load(f)
    c = netprobe.ProbeContext.from_mapping({
        "host": "h3", "budget_s": 1.5, "now": 5.0, "request": {"throughput_to": ["h1"]},
        "osd_dump": dump, "osd_tree": tree, "mon_addrs": ["v2:10.0.0.1:3300"]})
    assert c.peers == {"h1": "10.74.122.11", "h2": "10.74.122.12"}
    assert c.throughput_to == ("h1",) and c.budget_s == 1.5 and not c.serve_sink
    assert list(c.mon_addrs) == ["v2:10.0.0.1:3300"]


def _loopback_map(addrs):
    """An OSD dump/tree pair: one OSD per host with the given public address."""
    osds, nodes = [], []
    for i, (host, ip) in enumerate(sorted(addrs.items())):
        osds.append({"osd": i, "public_addrs": {"addrvec": [
            {"type": "v2", "addr": "%s:%d" % (ip, 6800 + i), "nonce": 1}]}})
        nodes.append({"id": -(i + 2), "name": host, "type": "host", "children": [i]})
    return {"osds": osds}, {"nodes": nodes}


def test_single_address_lab_has_no_peers_to_probe():
    # every lab "host" on 127.0.0.1: no link between them, so no pair may be probed
    dump, tree = _loopback_map({"h1": "127.0.0.1", "h2": "127.0.0.1", "h3": "127.0.0.1"})
    assert netprobe.peers_from_osd_map("h1", dump, tree) == {}


def test_peer_sharing_this_hosts_address_is_skipped_others_kept():
    dump, tree = _loopback_map({"h1": "10.9.0.2", "h2": "10.9.0.2", "h3": "10.9.0.4"})
    assert netprobe.peers_from_osd_map("h1", dump, tree) == {"h3": "10.9.0.4"}
