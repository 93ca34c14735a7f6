"""Packaging shim: setup.cfg holds the metadata; this maps the card's folders to import names.

`orchestrator/` is installed as `ceph_recovery` (ceph-mgr ships its own top-level `orchestrator`
package, which would shadow ours), `policies/` as `ceph_recovery.policies`, `scripts/` as
`ceph_recovery_tools`. setuptools' find_packages cannot follow renamed package_dir entries, so
the sub-packages are listed by walking the folders.
"""
import os

from setuptools import setup

ROOTS = {"ceph_recovery": "orchestrator", "ceph_recovery.policies": "policies",
         "ceph_recovery_tools": "scripts"}


def _packages():
    found = []
    for name, folder in ROOTS.items():
        for dirpath, _dirs, files in os.walk(folder):
            if "__init__.py" in files:
                rel = os.path.relpath(dirpath, folder)
                found.append(name if rel == "." else name + "." + rel.replace(os.sep, "."))
    return sorted(found)


setup(packages=_packages(), package_dir=ROOTS,
      package_data={"ceph_recovery_tools": ["systemd/*", "*.sh"]})
