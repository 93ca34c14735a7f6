"""ceph-recovery-drill from the host on a lab of a chroot release: its arguments handed to the
release's drill with the lab paths made absolute and the report written in the lab's log/."""
from __future__ import annotations

from ceph_recovery_tools.drill.cli import parser, relay_argv


def test_the_report_and_lab_paths_are_replaced_whatever_their_spelling():
    argv = ["--dir", "lab", "--fail", "host:h2", "--json", "out.json", "--objects", "40"]
    assert relay_argv(argv, {"--json": "/t/lab/log/out.json", "--dir": "/t/lab"}) == [
        "--dir", "/t/lab", "--fail", "host:h2", "--json", "/t/lab/log/out.json",
        "--objects", "40"]
    argv = ["--dir=lab", "--json=o.json", "--naive"]
    assert relay_argv(argv, {"--json": "/t/lab/log/o.json", "--dir": "/t/lab"}) == [
        "--dir", "/t/lab", "--json", "/t/lab/log/o.json", "--naive"]


def test_the_relayed_arguments_parse_as_the_originals():
    argv = ["--dir", "lab", "--fail", "host:h2", "--json", "out.json", "--stop", "kill"]
    a = parser().parse_args(argv)
    b = parser().parse_args(relay_argv(argv, {"--json": "/t/l/log/out.json", "--dir": "/t/l"}))
    assert (b.dir, b.json_out) == ("/t/l", "/t/l/log/out.json")
    assert {k: v for k, v in vars(a).items() if k not in ("dir", "json_out")} == \
        {k: v for k, v in vars(b).items() if k not in ("dir", "json_out")}
