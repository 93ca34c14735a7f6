"""ceph-mgr module `recovery`: controlled start of a failed failure domain (see module.py)."""
from .module import Module  # noqa: F401
