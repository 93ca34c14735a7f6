"""Packaging shim: setup.cfg holds the metadata; this maps the card's folders to import names.

`orchestrator/` is installed as `ceph_recovery` (ceph-mgr ships its own top-level `orchestrator`
package, which would shadow ours), `policies/` as `ceph_recovery.policies`, `scripts/` as
`ceph_recovery_tools`. setuptools' find_packages cannot follow renamed package_dir entries, so
the sub-packages are listed by walking the folders.

`mgr_module/recovery/` ships as `ceph_recovery_mgr_module/recovery/` under a namespace package
(no __init__.py at the top: importing it runs nothing, and recovery/__init__.py imports
`mgr_module`, which only ceph-mgr has). ceph-recovery-install-mgr-module and the lab find it
there. It stays outside `ceph_recovery`, so the import contract does not apply to it. The
build makes it self-contained: scripts/build_module.py copies the built `ceph_recovery` (policies
included) into it as `_core/ceph_recovery`, so the wheel and the Debian package ship a folder
that installs by copying it alone.
"""
import importlib.util
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))

ROOTS = {"ceph_recovery": "orchestrator", "ceph_recovery.policies": "policies",
         "ceph_recovery_tools": "scripts"}
MGR_MODULE = {"ceph_recovery_mgr_module": "mgr_module",
              "ceph_recovery_mgr_module.recovery": "mgr_module/recovery"}


def _packages():
    found = []
    for name, folder in ROOTS.items():
        for dirpath, _dirs, files in os.walk(folder):
            if "__init__.py" in files:
                rel = os.path.relpath(dirpath, folder)
                found.append(name if rel == "." else name + "." + rel.replace(os.sep, "."))
    return sorted(found) + sorted(MGR_MODULE)


def _build_module():
    """scripts/build_module.py, loaded by path (the package is not installed while it builds)."""
    spec = importlib.util.spec_from_file_location(
        "_ceph_recovery_build_module", os.path.join(HERE, "scripts", "build_module.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class BuildPy(build_py):
    """build_py, then the core vendored into the built mgr module folder (an editable install
    maps the source folders instead of copying them: nothing to vendor into)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        _build_module().vendor_core(
            os.path.join(self.build_lib, "ceph_recovery_mgr_module", "recovery"),
            os.path.join(self.build_lib, "ceph_recovery"))


# package_data globs do not descend: each folder level of scripts/systemd/ is listed (the gate
# drop-ins live one level down, in ceph-osd@.service.d/ and cephadm/)
setup(packages=_packages(), package_dir=dict(ROOTS, **MGR_MODULE),
      package_data={"ceph_recovery_tools": ["systemd/*", "systemd/*/*", "*.sh"]},
      cmdclass={"build_py": BuildPy})
