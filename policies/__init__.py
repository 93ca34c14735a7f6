"""ceph_recovery.policies: registries of plain policy functions (see registry.py)."""
