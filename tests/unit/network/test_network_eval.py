"""evaluate(): probe results captured on the netns lab -> findings (pure, deterministic)."""
from __future__ import annotations

import copy
import json
import os

from ceph_recovery import netview
from ceph_recovery import network as N
from ceph_recovery.model import Finding

FIX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
T = 1_800_000_000.0


def cycle(name: str):
    with open(os.path.join(FIX, "cycle_%s.json" % name)) as f:
        return json.load(f)


def kinds(findings):
    return [(f.hosts, f.kind) for f in findings]


def test_clean_lab_cycle_has_no_finding():
    assert N.evaluate(cycle("clean"), (), T) == ()


def test_jumbo_drop_on_h1_h3_is_a_finding_for_exactly_that_pair():
    fs = N.evaluate(cycle("jumbo_h1_h3"), (), T)
    assert kinds(fs) == [(("h1", "h3"), "jumbo_loss")]
    assert 0.05 < fs[0].value < 0.6 and fs[0].since == T
    assert "84 B 0.0%" in fs[0].detail


def test_veth_at_1500_in_a_9000_lab_is_a_blackhole_of_that_host():
    fs = N.evaluate(cycle("mtu_h2"), (), T)
    assert kinds(fs) == [(("h2",), "mtu_blackhole")]
    assert fs[0].value == 1.0


def test_blackhole_seen_from_one_side_only_stays_a_pair_finding():
    nets = cycle("mtu_h2")
    del nets["h3"]                       # only h1 <-> h2 measured: nothing to attribute
    assert kinds(N.evaluate(nets, (), T)) == [(("h1", "h2"), "mtu_blackhole")]


def test_syn_flood_flags_cookies_and_overflows_on_the_flooded_host():
    nets = cycle("clean")
    nets["h2"] = cycle("syn_h2")
    fs = N.evaluate(nets, (), T)
    assert kinds(fs) == [(("h2",), "listen_overflow"), (("h2",), "syn_cookies")]
    assert [f.value for f in fs] == [593.0, 296.0]


def test_connections_without_sack_are_a_tcp_options_finding():
    nets = cycle("clean")
    nets["h3"]["tcp"] = {"connections": 12, "no_sack": 2, "no_wscale": 1, "cwnd_min": 2}
    fs = N.evaluate(nets, (), T)
    assert kinds(fs) == [(("h3",), "tcp_options")] and fs[0].value == 2.0


def test_mon_latency_threshold_and_levels():
    nets = cycle("clean")
    nets["h1"]["mon"] = {"rtt_s": 0.95, "ok": True}
    assert N.evaluate(nets, (), T) == ()
    nets["h1"]["mon"] = {"rtt_s": 1.52, "ok": True}
    nets["h2"]["mon"] = {"rtt_s": 3.4, "ok": True}
    nets["h3"]["mon"] = {"rtt_s": 0.9, "ok": False, "error": "mon round trip still running"}
    fs = N.evaluate(nets, (), T)
    assert kinds(fs) == [(("h1",), "mon_latency"), (("h2",), "mon_latency"),
                         (("h3",), "mon_latency")]
    assert "slow" in fs[0].detail and "elections" in fs[1].detail
    assert "still running" in fs[2].detail and "no mon answer within 0.90 s" in fs[2].detail


def tput(nets, src, dst, bps, when=T):
    nets[src].setdefault("throughput", {})[dst] = {"bps": bps, "bytes": 1, "seconds": 1.0,
                                                  "time": when}


def test_throughput_cap_on_one_host_is_attributed_to_it():
    nets = cycle("clean")
    tput(nets, "h1", "h2", 95e6)
    tput(nets, "h3", "h2", 97e6)
    tput(nets, "h1", "h3", 8e9)
    fs = N.evaluate(nets, (), T)
    assert kinds(fs) == [(("h2",), "throughput_cap")] and fs[0].value == 95e6


def test_throughput_relative_to_the_median_and_stale_results():
    nets = cycle("clean")
    tput(nets, "h1", "h2", 1.5e9)
    tput(nets, "h1", "h3", 9e9)
    tput(nets, "h2", "h3", 9e9)
    fs = N.evaluate(nets, (), T)
    assert kinds(fs) == [(("h1", "h2"), "throughput_cap")]
    assert N.evaluate(nets, (), T + 601) == ()          # older than throughput_max_age_s


def test_unreachable_peer_is_not_a_finding_but_shows_in_the_view():
    nets = cycle("clean")
    for src, dst in (("h1", "h3"), ("h3", "h1")):
        for pr in nets[src]["peers"][dst]["probes"].values():
            pr["received"] = 0
    assert N.evaluate(nets, (), T) == ()
    view = netview.build_view(nets, (), T)
    row = [p for p in view["pairs"] if p["hosts"] == ["h1", "h3"]][0]
    assert row["unreachable"] is True and row["loss"]["84"] == 1.0


def test_small_packet_loss_is_packet_loss_not_jumbo_loss():
    nets = cycle("clean")
    nets["h1"]["peers"]["h2"]["probes"]["small"]["received"] = 14
    nets["h1"]["peers"]["h2"]["probes"]["jumbo"]["received"] = 10
    assert kinds(N.evaluate(nets, (), T)) == [(("h1", "h2"), "packet_loss")]


def test_too_few_probes_are_not_judged():
    nets = cycle("jumbo_h1_h3")
    for src, dst in (("h1", "h3"), ("h3", "h1")):
        for pr in nets[src]["peers"][dst]["probes"].values():
            pr["sent"], pr["received"] = 4, 2
    assert N.evaluate(nets, (), T) == ()


def test_since_is_kept_and_cleared_findings_linger_for_hold_s():
    first = N.evaluate(cycle("jumbo_h1_h3"), (), T)
    again = N.evaluate(cycle("jumbo_h1_h3"), first, T + 10)
    assert [f.since for f in again] == [T]
    lingering = N.evaluate(cycle("clean"), again, T + 12)
    assert lingering == again                            # within hold_s of since
    assert N.evaluate(cycle("clean"), again, T + 16) == ()


def test_evaluate_is_deterministic_and_does_not_mutate_input():
    nets = cycle("mtu_h2")
    before = copy.deepcopy(nets)
    prev = (Finding(hosts=("h2",), kind="mtu_blackhole", since=T - 50, value=1.0),)
    a = N.evaluate(nets, prev, T)
    b = N.evaluate(nets, prev, T)
    assert a == b and a[0].since == T - 50 and nets == before


def test_custom_thresholds():
    nets = cycle("jumbo_h1_h3")
    assert N.evaluate(nets, (), T, N.Thresholds(large_loss=0.9)) == ()


def test_network_view_json_shape_and_health():
    nets = cycle("jumbo_h1_h3")
    fs = N.evaluate(nets, (), T)
    view = netview.build_view(nets, fs, T + 1)
    json.dumps(view)
    assert [p["hosts"] for p in view["pairs"]] == [["h1", "h2"], ["h1", "h3"], ["h2", "h3"]]
    row = view["pairs"][1]
    assert set(row["loss"]) == {"84", "1500", "9000"} and row["loss"]["84"] == 0.0
    assert row["loss"]["9000"] > 0.05 and row["sent"]["9000"] == 40
    assert set(view["hosts"]) == {"h1", "h2", "h3"} and view["hosts"]["h1"]["mtu"] == 9000
    assert view["findings"] == [{"hosts": ["h1", "h3"], "kind": "jumbo_loss", "since": T,
                                 "value": fs[0].value, "detail": fs[0].detail}]
    text = netview.render_text(view)
    assert "h1<->h3" in text and "jumbo_loss" in text
    hc = N.network_health(fs)
    assert hc.code == "RECOVERY_NETWORK_DEGRADED" and "h1<->h3: jumbo_loss" in hc.detail[0]
    assert N.network_health(()) is None
    assert N.hosts_with_findings(fs) == ("h1", "h3")


def test_pair_finding_reattributed_to_its_host_does_not_linger():
    nets = cycle("mtu_h2")
    onset = dict(nets)
    del onset["h1"]                                        # only h3 has reported yet
    first = N.evaluate(onset, (), T)
    assert kinds(first) == [(("h2", "h3"), "mtu_blackhole")]
    later = N.evaluate(nets, first, T + 2)
    assert kinds(later) == [(("h2",), "mtu_blackhole")] and later[0].since == T


def test_findings_of_a_helper_that_stopped_reporting_expire():
    """Defect 6: results received long ago are not judged; the finding they raised ends once
    its hold time is over, instead of holding starts on the peer for good."""
    nets = cycle("clean")
    nets["h2"] = cycle("syn_h2")
    for h in nets:
        nets[h]["received_at"] = T
    fs = N.evaluate(nets, (), T)
    assert kinds(fs) == [(("h2",), "listen_overflow"), (("h2",), "syn_cookies")]
    th = N.Thresholds()
    later = T + th.result_max_age_s + 1           # h2's helper went silent after T
    for h in ("h1", "h3"):
        nets[h]["received_at"] = later
    held = N.evaluate(nets, fs, T + th.result_max_age_s - 1)
    assert kinds(held) == kinds(fs)                # still fresh: still judged
    gone = N.evaluate(nets, fs, later + th.hold_s)
    assert gone == ()
    assert N.evaluate(nets, fs, T + 25 * 3600) == ()


def test_results_stamped_in_the_future_are_not_judged():
    nets = cycle("clean")
    nets["h2"] = dict(cycle("syn_h2"), received_at=T + 3600)
    assert N.evaluate(nets, (), T) == ()
