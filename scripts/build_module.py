"""Build the ceph-mgr module `recovery` as one self-contained folder.

ceph-mgr imports each directory of its module path with the standard library and its own
modules (mgr_module, ...) only, so the folder carries the decision core with it: the module's
files, plus the `ceph_recovery` package (policies included) as `_core/ceph_recovery`, which the
module's __init__.py puts first on sys.path before anything imports it. Copying or mounting the
folder is then the whole install. This file is the one place that builds the folder: setup.py
(so the wheel and the Debian package ship it built), ceph-recovery-install-mgr-module and the
lab use it. It imports only the standard library, so setup.py can load it by path.
"""
import importlib.util
import os
import shutil
from typing import Optional

MODULE_NAME = "recovery"
CORE_DIR = "_core"
CORE_PACKAGE = "ceph_recovery"
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", CORE_DIR)


def core_package_dir() -> str:
    """The importable `ceph_recovery` package's folder (the installed core and policies)."""
    spec = importlib.util.find_spec(CORE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the decision core (%s) is not importable" % CORE_PACKAGE)
    return os.path.abspath(list(spec.submodule_search_locations)[0])


def vendored_core(module_dir: str) -> Optional[str]:
    """The core a built module folder carries, or None (a source folder carries none)."""
    path = os.path.join(module_dir, CORE_DIR, CORE_PACKAGE)
    return path if os.path.isfile(os.path.join(path, "__init__.py")) else None


def vendor_core(module_dir: str, core_src: str) -> str:
    """Put a copy of core_src (a `ceph_recovery` package folder) into module_dir as
    _core/ceph_recovery, replacing any copy there; returns its path."""
    if not os.path.isfile(os.path.join(core_src, "policies", "__init__.py")):
        raise FileNotFoundError("%s is not the core package (no policies/)" % core_src)
    target = os.path.join(module_dir, CORE_DIR, CORE_PACKAGE)
    if os.path.isdir(target):
        shutil.rmtree(target)
    shutil.copytree(core_src, target, ignore=IGNORE)
    return target


def build(dest: str, module_src: str, core_src: Optional[str] = None) -> str:
    """Make dest (which must not exist yet) the self-contained module folder: the module's
    files from module_src and the core from core_src; by default the core module_src already
    carries, else the importable one. Returns dest."""
    if not os.path.isfile(os.path.join(module_src, "module.py")):
        raise FileNotFoundError("%s holds no module.py" % module_src)
    core = core_src or vendored_core(module_src) or core_package_dir()
    shutil.copytree(module_src, dest, ignore=IGNORE)
    vendor_core(dest, core)
    return dest
