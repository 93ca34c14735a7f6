"""ceph-mgr module `recovery`: controlled start of a failed failure domain (see module.py).

A built module folder carries the decision core as _core/ceph_recovery
(ceph_recovery_tools.build_module): that directory goes first on sys.path here, before any of
the module's files imports the core, so the one folder is the whole install. A folder without
it (the repository's source folder) takes the core from the Python path.
"""
import os
import sys

_CORE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_core")
if os.path.isdir(_CORE) and _CORE not in sys.path:
    sys.path.insert(0, _CORE)

from .module import Module  # noqa: E402,F401
