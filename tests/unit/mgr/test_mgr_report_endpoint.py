"""The module's report endpoint, served for real on 127.0.0.1 by the Module class (mgrlab), and
posted to as the helper does (signed with the host's token: ceph_recovery.reportauth; the
helper's own client is tested in tests/unit/helper)."""
from __future__ import annotations

import http.client
import json
import urllib.parse

import pytest

from ceph_recovery import reportauth
from mgrlab import LabModule, valid_report  # see conftest.py


class Served(LabModule):
    def get_mgr_ip(self):
        return "127.0.0.1"


@pytest.fixture
def mod():
    m = Served()
    assert m._guard() is None
    m._endpoint()
    yield m
    m._reports.stop()


def advertised(m, host="h1", seq=1):
    rc, out, err = m.cmd_helper_report(valid_report(host, seq=seq), host)
    assert rc == 0, err
    return reportauth.parse_endpoint(json.loads(out)["endpoint"])


def raw_post(url, body, headers):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
    try:
        conn.request("POST", u.path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def post(url, token, host, text):
    """(HTTP status, the reply's {"rc", "out", "outs"} or None); a 200 reply must be signed
    for this request."""
    body = text.encode()
    sig = reportauth.sign(token, body)
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
    try:
        conn.request("POST", u.path, body=body, headers={
            reportauth.HOST_HEADER: host, reportauth.SIGNATURE_HEADER: sig})
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            return resp.status, None
        assert reportauth.verify(token, data, resp.getheader(reportauth.SIGNATURE_HEADER), sig)
        return 200, json.loads(data)
    finally:
        conn.close()


def test_the_command_names_the_endpoint_and_a_signed_report_is_taken_there(mod):
    url, token = advertised(mod)
    assert url == "http://127.0.0.1:%d/v1/report" % mod._reports._server.server_address[1]
    assert token == reportauth.host_token(mod.store["report_secret"], "h1")
    status, doc = post(url, token, "h1", valid_report("h1", seq=2))
    assert (status, doc["rc"], doc["outs"]) == (200, 0, "")
    reply = json.loads(doc["out"])
    assert reply["host"] == "h1" and "endpoint" not in reply
    report, _t = mod.engine.reports["h1"]
    assert report.seq == 2
    assert mod.meter.doc()["handlers"]["report-endpoint"]["count"] == 1


def test_the_endpoint_answers_a_refused_report_as_the_command_does(mod):
    url, token = advertised(mod)
    status, doc = post(url, token, "h1", valid_report("h1", seq=1))
    assert status == 200 and doc["rc"] < 0 and doc["out"] == "" and "seq" in doc["outs"]
    assert mod.engine.reports["h1"][0].seq == 1


def test_a_report_signed_with_another_hosts_token_is_refused_and_changes_nothing(mod):
    url, token_h1 = advertised(mod, "h1")
    before = dict(mod.engine.reports)
    assert post(url, token_h1, "h2", valid_report("h2")) == (403, None)
    body = valid_report("h1", seq=5).encode()
    status, _ = raw_post(url, body, {reportauth.HOST_HEADER: "h1",
                                     reportauth.SIGNATURE_HEADER: "0" * 64})
    assert status == 403
    status, _ = raw_post(url, body, {reportauth.HOST_HEADER: "h1"})
    assert status == 403
    assert mod.engine.reports == before


def test_the_host_header_must_name_the_reports_host(mod):
    url, _token = advertised(mod, "h1")
    token_h2 = reportauth.host_token(mod.store["report_secret"], "h2")
    status, doc = post(url, token_h2, "h2", valid_report("h1", seq=2))
    assert status == 200 and doc["rc"] == -13 and "does not match" in doc["outs"]
    assert mod.engine.reports["h1"][0].seq == 1


def test_a_reply_not_signed_for_the_request_is_not_taken():
    token = "a" * 64
    sig = reportauth.sign(token, b"report")
    reply = b'{"rc": 0, "out": "", "outs": ""}'
    assert reportauth.verify(token, reply, reportauth.sign(token, reply, sig), sig)
    other = reportauth.sign(token, b"another report")
    assert not reportauth.verify(token, reply, reportauth.sign(token, reply, other), sig)
    assert not reportauth.verify(token, reply, None, sig)


def test_turned_off_the_endpoint_closes_and_the_command_names_none(mod):
    url, token = advertised(mod)
    mod.options["report_endpoint"] = False
    mod._endpoint()
    rc, out, _ = mod.cmd_helper_report(valid_report("h1", seq=2), "h1")
    assert rc == 0 and "endpoint" not in json.loads(out)
    with pytest.raises(OSError):        # nothing listens there any more
        post(url, token, "h1", valid_report("h1", seq=3))


def test_every_mgr_derives_the_same_tokens_from_the_stored_secret(mod):
    _url, token = advertised(mod)
    other = Served()
    other.store = mod.store
    other._endpoint()
    try:
        assert other._token_of("h1") == token
        assert other._token_of("h2") != token
    finally:
        other._reports.stop()


def test_a_fixed_port_in_use_leaves_the_command_path_and_says_why(mod):
    busy = mod._reports._server.server_address[1]
    other = Served()
    other.options["report_port"] = busy
    other._endpoint()
    assert other._reports.url is None and "port %d" % busy in other._reports.error
    rc, out, _ = other.cmd_helper_report(valid_report("h1"), "h1")
    assert rc == 0 and "endpoint" not in json.loads(out)


def test_the_endpoint_url_brackets_an_ipv6_address():
    assert reportauth.endpoint_url("::1", 7) == "http://[::1]:7/v1/report"
    assert reportauth.parse_endpoint({"url": "http://[::1]:7/v1/report", "token": "f" * 64})
    assert reportauth.parse_endpoint({"url": "ftp://x/v1/report", "token": "f" * 64}) is None
    assert reportauth.parse_endpoint({"url": "http://x:1/v1/report", "token": "f"}) is None


def test_past_its_requests_in_flight_the_endpoint_answers_busy_and_takes_nothing(monkeypatch):
    from recovery import reportserver
    monkeypatch.setattr(reportserver, "MAX_IN_FLIGHT", 0)
    m = Served()
    assert m._guard() is None
    m._endpoint()
    try:
        url, token = advertised(m)
        assert post(url, token, "h1", valid_report("h1", seq=2)) == (503, None)
        assert m.engine.reports["h1"][0].seq == 1
    finally:
        m._reports.stop()


def test_a_stored_secret_too_short_for_tokens_is_replaced():
    m = Served()
    m.store["report_secret"] = "short"
    assert m._guard() is None
    m._endpoint()
    try:
        assert len(m.store["report_secret"]) == 64
        assert advertised(m)[1] == reportauth.host_token(m.store["report_secret"], "h1")
    finally:
        m._reports.stop()
