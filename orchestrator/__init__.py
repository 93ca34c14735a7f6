"""ceph_recovery: the pure decision core of ceph-recovery (no I/O; docs/design.md, model.py)."""
__version__ = "0.1.0"
