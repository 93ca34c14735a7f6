"""ceph_recovery.policies: registries of plain policy functions (see registry.py).

    from ceph_recovery.policies import REGISTRY, resolve
    policies = resolve(intent)        # ValueError listing the known names for unknown ones
"""
from .registry import REGISTRY, resolve

__all__ = ["REGISTRY", "resolve"]
