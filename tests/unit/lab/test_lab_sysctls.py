"""The lab raises the kernel limits Ceph's ceph-osd package sets, and never lowers one."""
import os

from ceph_recovery_tools.lab import build


def _tree(tmp_path, values):
    for name, value in values.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("%d\n" % value)
    return str(tmp_path)


def test_a_limit_below_cephs_is_raised_to_it(tmp_path):
    root = _tree(tmp_path, {"fs/aio-max-nr": 65536, "kernel/pid_max": 32768})
    build.raise_osd_sysctls(root)
    assert (tmp_path / "fs/aio-max-nr").read_text() == "1048576"
    assert (tmp_path / "kernel/pid_max").read_text() == "4194304"


def test_a_limit_above_cephs_is_left_alone(tmp_path):
    root = _tree(tmp_path, {"fs/aio-max-nr": 4 << 20, "kernel/pid_max": 4194304})
    build.raise_osd_sysctls(root)
    assert (tmp_path / "fs/aio-max-nr").read_text() == "%d\n" % (4 << 20)
    assert (tmp_path / "kernel/pid_max").read_text() == "4194304\n"
    assert sorted(os.listdir(root)) == ["fs", "kernel"]
