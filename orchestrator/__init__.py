"""ceph_recovery: the pure decision core of ceph-recovery (no I/O; docs/design.md, model.py).

`__version__` is the one place the project's version is written: setup.cfg, the tools'
`--version`, the mgr module's `ceph recovery version` and the helper's reports read it here
(debian/changelog must name the same upstream version;
tests/unit/packaging/test_versions.py checks it).
"""
__version__ = "0.1.0"
