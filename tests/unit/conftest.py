"""Make the mgr module's pieces importable as `recovery.<name>` without ceph-mgr, and the
test builders (mgr/cephfake.py, core/plancases.py, core/labh2cases.py, core/rackcases.py,
mgr/mgrcases.py, helper/gatecases.py, mgr/maintcases.py, mgr/mgrlab.py) under their names.

The tests are in one folder per package they test: core/ (the decision core), mgr/ (the mgr
module, with its recorded Ceph answers in mgr/data/), helper/, lab/, drill/, bench/, common/
(the tools), network/ (the network evaluation and probes), packaging/ (wheel, debs, versions,
docs, test tiers). A test finds its data relative to its own file.

mgr_module/recovery/__init__.py imports mgr_module (only inside ceph-mgr), so the package is
registered here as a bare namespace over that directory: `from recovery import engine` then
loads engine.py (and its relative imports) but never __init__.py. The repo root stays off
sys.path; only this one directory is exposed, under the name ceph-mgr gives it.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import types

MODULE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "mgr_module",
                                          "recovery"))

if "recovery" not in sys.modules:
    _pkg = types.ModuleType("recovery")
    _pkg.__path__ = [MODULE_DIR]
    sys.modules["recovery"] = _pkg

# The shared test builders, importable by name from any folder (importlib mode: no test folder
# is on sys.path); each lives with the tests it serves. In import order: a builder imports only
# the ones before it.
BUILDERS = (("cephfake", "mgr"), ("plancases", "core"), ("labh2cases", "core"),
            ("rackcases", "core"), ("mgrcases", "mgr"), ("gatecases", "helper"),
            ("maintcases", "mgr"), ("mgrlab", "mgr"))
for _name, _folder in BUILDERS:
    if _name not in sys.modules:
        _spec = importlib.util.spec_from_file_location(
            _name, os.path.join(os.path.dirname(os.path.abspath(__file__)), _folder,
                                _name + ".py"))
        _mod = importlib.util.module_from_spec(_spec)
        sys.modules[_name] = _mod
        _spec.loader.exec_module(_mod)
