"""ceph_recovery: the pure decision core of ceph-recovery (no I/O; see docs/design.md and model.py)."""
__version__ = "0.1.0"
