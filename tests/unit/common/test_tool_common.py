"""The tools' shared helpers: wait_until, sizes, the cgroup reader, the logging set-up."""
import argparse
import json

import pytest

from ceph_recovery_tools.common import cgroup, logs, sizes
from ceph_recovery_tools.common.wait import wait_until
from ceph_recovery_tools.lab import cgroups


@pytest.mark.parametrize("text,value", [
    ("4096", 4096), ("600M", 600 << 20), ("1G", 1 << 30), ("1g", 1 << 30),
    ("1.5G", 3 << 29), ("512KiB", 512 << 10), ("2T", 2 << 40), (" 64m ", 64 << 20),
    ("1GiB", 1 << 30), ("300MB", 300 << 20),
])
def test_parse_bytes(text, value):
    assert sizes.parse_bytes(text) == value


@pytest.mark.parametrize("bad", ["", "M", "-1G", "12X", "1GG", "0", "one", "abc"])
def test_bad_sizes_are_refused_naming_the_value(bad):
    with pytest.raises(ValueError, match="size"):
        sizes.parse_bytes(bad)
    with pytest.raises(argparse.ArgumentTypeError, match=repr(bad).replace("\\", "\\\\")):
        sizes.size_arg(bad)


@pytest.mark.parametrize("n,unit,text", [
    (None, "", "-"), (512, "", "512 B"), (1536, "", "1.5 KiB"), (300 << 20, "", "300.0 MiB"),
    (int(19.3 * (1 << 30)), "", "19.3 GiB"), (300 << 20, "MiB", "300"), (None, "MiB", "-"),
    (3 << 30, "GiB", "3"),
])
def test_format_bytes(n, unit, text):
    assert sizes.format_bytes(n, unit) == text


def counter(values):
    it = iter(values)

    def probe():
        value = next(it)
        if isinstance(value, BaseException):
            raise value
        return value
    return probe


def test_wait_until_returns_the_first_value_that_is_done():
    assert wait_until(counter([0, None, [], 7, 8]), timeout=5, interval=0) == 7
    assert wait_until(counter([[1], [1], []]), timeout=5, interval=0,
                      done=lambda left: not left) == []


def test_ignored_exceptions_are_not_yet_others_propagate():
    assert wait_until(counter([OSError("busy"), "ok"]), 5, 0, ignore=(OSError,)) == "ok"
    with pytest.raises(KeyError):
        wait_until(counter([None, KeyError("bad")]), 5, 0, ignore=(OSError,))


def test_timeout_raises_with_what_and_the_last_value_or_returns_it():
    with pytest.raises(TimeoutError, match=r"^mgr not available after 0\.05s: last 0$"):
        wait_until(lambda: 0, 0.05, 0.01, what="mgr not available",
                   detail=lambda last: "last %r" % last)
    assert wait_until(lambda: [3], 0.05, 0.01, done=lambda left: not left) == [3]
    with pytest.raises(TimeoutError, match="error: boom"):
        wait_until(counter([OSError("boom")] * 1000), 0.05, 0.01, ignore=(OSError,),
                   what="x", detail=lambda last: "error: %s" % last)


def write(d, **files):
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / (name if "." in name else name.replace("_", ".", 1))).write_text(text)
    return str(d)


def test_cgroup_v1_and_v2_read_alike(tmp_path):
    v1 = write(tmp_path / "v1", memory_usage_in_bytes="1000\n",
               memory_limit_in_bytes="9223372036854771712\n",
               **{"memory.max_usage_in_bytes": "3000\n",
                  "memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n"})
    assert cgroup.version(v1) == 1
    assert cgroup.read(v1) == {"usage": 1000, "limit": None, "oom_kill": 4, "max_usage": 3000}
    v2 = write(tmp_path / "v2", memory_current="2000\n", memory_max="1073741824\n")
    assert cgroup.version(v2) == 2
    assert cgroup.read(v2) == {"usage": 2000, "limit": 1 << 30, "oom_kill": 0,
                               "max_usage": 2000}


def test_not_a_cgroup_is_an_error_for_the_helper_and_zeros_for_the_lab(tmp_path):
    with pytest.raises(cgroup.NotAMemoryCgroup, match="not a memory cgroup"):
        cgroup.read(str(tmp_path))
    assert cgroups.memory(2, str(tmp_path / "gone")) == {
        "usage": 0, "limit": None, "oom_kill": 0, "max_usage": 0}


def test_logging_is_json_lines_filtered_by_level(capsys):
    import structlog
    # structlog's configuration is global: put it back, or every later test in this process
    # logs to capsys' stream, closed once this test ends
    before = structlog.get_config()
    try:
        logs.configure_logging("warning")
        log = structlog.get_logger("t")
        log.info("hidden")
        log.warning("shown", osd=3)
        lines = capsys.readouterr().err.strip().splitlines()
    finally:
        structlog.configure(**before)
    assert len(lines) == 1
    got = json.loads(lines[0])
    assert (got["event"], got["osd"], got["level"]) == ("shown", 3, "warning")
    assert got["timestamp"].endswith("Z")


@pytest.mark.parametrize("version,name,unlimited", [(1, "memory.limit_in_bytes", "-1"),
                                                    (2, "memory.max", "max")])
def test_set_limit_writes_the_versions_file(tmp_path, version, name, unlimited):
    cgroup.set_limit(str(tmp_path), version, 300 << 20)
    assert (tmp_path / name).read_text() == str(300 << 20)
    cgroup.set_limit(str(tmp_path), version, None)
    assert (tmp_path / name).read_text() == unlimited
