"""Packaging shim: setup.cfg holds the metadata; this maps the card's folders to import names.

`orchestrator/` is installed as `ceph_recovery` (ceph-mgr ships its own top-level `orchestrator`
package, which would shadow ours), `policies/` as `ceph_recovery.policies`, `scripts/` as
`ceph_recovery_tools`. setuptools' find_packages cannot follow renamed package_dir entries, so
the sub-packages are listed by walking the folders.

`mgr_module/recovery/` ships as `ceph_recovery_mgr_module/recovery/` under a namespace package
(no __init__.py at the top: importing it runs nothing, and recovery/__init__.py imports
`mgr_module`, which only ceph-mgr has). ceph-recovery-install-mgr-module and the lab find it
there. It stays outside `ceph_recovery`, so the import contract does not apply to it.
"""
import os

from setuptools import setup

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


# package_data globs do not descend: each folder level of scripts/systemd/ is listed (the gate
# drop-ins live one level down, in ceph-osd@.service.d/ and cephadm/)
setup(packages=_packages(), package_dir=dict(ROOTS, **MGR_MODULE),
      package_data={"ceph_recovery_tools": ["systemd/*", "systemd/*/*", "*.sh"]})
