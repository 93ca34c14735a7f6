"""The version is written once (the core's `__version__`) and shown everywhere: the wheel's
metadata, every tool's `--version`, the helper's reports, the module's answers. A helper whose
protocol the module does not speak is refused with EPROTONOSUPPORT and named by a health check
until it speaks one the module reads."""
from __future__ import annotations

import configparser
import errno
import importlib.metadata
import json
import pathlib
import re
import subprocess
import sys

import pytest

import ceph_recovery
from ceph_recovery import protocol
from recovery import versions  # see conftest.py
from recovery.inputs import InputError

import mgrcases as MC  # noqa: E402  (registered by conftest.py)

REPO = pathlib.Path(__file__).resolve().parents[3]
VERSION = ceph_recovery.__version__


def _console_scripts():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return [line.split("=")[0].strip()
            for line in cfg["options.entry_points"]["console_scripts"].splitlines() if line]


def test_the_version_is_written_once_and_the_wheel_reads_it():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    assert cfg["metadata"]["version"] == "attr: ceph_recovery.__version__"
    assert importlib.metadata.version("ceph-recovery") == VERSION
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)


def test_debian_changelog_names_the_same_upstream_version():
    first = (REPO / "debian" / "changelog").read_text().splitlines()[0]
    m = re.match(r"ceph-recovery \(([^)-]+)(-[^)]*)?\) ", first)
    assert m and m.group(1) == VERSION, first


@pytest.mark.parametrize("tool", _console_scripts())
def test_every_tool_has_version(tool):
    exe = pathlib.Path(sys.executable).parent / tool
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "%s %s (helper protocol %d)" % (
        tool, VERSION, protocol.PROTOCOL_VERSION)


def test_the_helper_report_names_its_version_and_protocol():
    from ceph_recovery_tools.helper import report
    rep = report.build_report("h1", 1, 1000.0, {"total": 8 << 30, "used": 1 << 28,
                                                "available": 6 << 30, "source": "host"}, [])
    assert rep["version"] == protocol.PROTOCOL_VERSION and rep["helper_version"] == VERSION
    assert protocol.parse_report(rep).helper_version == VERSION
    assert protocol.report_to_dict(protocol.parse_report(rep))["helper_version"] == VERSION


def _text(version, host="h1", **extra):
    d = {"version": version, "host": host, "time": 1000.0, "seq": 1,
         "memory": {"total": 8 << 30, "used": 50 << 20, "available": 6 << 30,
                    "limit": None, "source": "host"},
         "osds": [], "done": []}
    d.update(extra)
    return json.dumps(d)


def test_a_report_in_another_protocol_is_refused_with_eprotonosupport_and_remembered():
    eng, _ceph = MC.make_engine()
    with pytest.raises(InputError) as e:
        eng.handle_report(_text(2, helper_version="0.9.0"), "h1", 1000.0)
    assert e.value.errno == errno.EPROTONOSUPPORT
    for word in ("h1", "0.9.0", "protocol 2", VERSION, "speaks 1"):
        assert word in e.value.message, (word, e.value.message)
    assert eng.reports == {} and eng.refused_protocols == {"h1": (1000.0, 2, "0.9.0")}
    checks = versions.health(eng.refused_protocols, 1010.0, 30.0)
    assert checks["RECOVERY_HELPER_PROTOCOL"]["detail"] == [
        "host h1: helper ceph-recovery 0.9.0 speaks protocol 2, this module (ceph-recovery "
        "%s) speaks 1: its reports are refused (EPROTONOSUPPORT)" % VERSION]
    # the helper is upgraded: its first report in our protocol clears the check
    eng.handle_report(_text(1, helper_version=VERSION), "h1", 1020.0)
    assert eng.refused_protocols == {}
    assert versions.health(eng.refused_protocols, 1021.0, 30.0) == {}


def test_a_refused_helper_that_stops_reporting_is_forgotten_after_the_stale_timeout():
    refused = {"h1": (1000.0, 3, "")}
    assert versions.health(refused, 1030.0, 30.0)["RECOVERY_HELPER_PROTOCOL"]["count"] == 1
    assert versions.health(refused, 1031.0, 30.0) == {} and refused == {}


def test_a_refusal_is_named_by_the_cap_pinned_host_and_bounded():
    eng, _ceph = MC.make_engine()
    for i in range(versions.MAX_REFUSED + 5):
        with pytest.raises(InputError):
            eng.handle_report(_text(7, host="x%d" % i), "x%d" % i, 1000.0)
    assert len(eng.refused_protocols) == versions.MAX_REFUSED


@pytest.mark.parametrize("bad", ["1", True, None, 1.0])
def test_a_version_that_is_no_integer_is_malformed_einval_and_not_a_refusal(bad):
    eng, _ceph = MC.make_engine()
    with pytest.raises(InputError) as e:
        eng.handle_report(_text(bad), "h1", 1000.0)
    assert e.value.errno == errno.EINVAL and eng.refused_protocols == {}


def test_the_protocol_parser_names_what_it_speaks():
    with pytest.raises(protocol.ProtocolError, match="this side speaks 1"):
        protocol.parse_report(json.loads(_text(2)))
    with pytest.raises(protocol.ProtocolError, match="helper_version"):
        protocol.parse_report(json.loads(_text(1, helper_version="x" * 33)))
