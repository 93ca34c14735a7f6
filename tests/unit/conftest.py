"""Make the mgr module's pieces importable as `recovery.<name>` without ceph-mgr.

mgr_module/recovery/__init__.py imports mgr_module (only inside ceph-mgr), so the package is
registered here as a bare namespace over that directory: `from recovery import engine` then
loads engine.py (and its relative imports) but never __init__.py. The repo root stays off
sys.path; only this one directory is exposed, under the name ceph-mgr gives it.
"""
from __future__ import annotations

import os
import sys
import types

MODULE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "mgr_module",
                                          "recovery"))

if "recovery" not in sys.modules:
    _pkg = types.ModuleType("recovery")
    _pkg.__path__ = [MODULE_DIR]
    sys.modules["recovery"] = _pkg
