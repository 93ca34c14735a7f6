"""ceph-recovery-install-mgr-module: put the mgr module `recovery` into a ceph-mgr module directory.

The wheel ships the module as `ceph_recovery_mgr_module/recovery/` (a namespace package:
nothing in it runs on import, and `recovery/__init__.py` imports `mgr_module`, which exists only
inside ceph-mgr), built self-contained: the decision core rides along in `_core/`
(build_module.py). ceph-mgr loads one module per sub-directory of its `mgr_module_path`
(Debian: /usr/share/ceph/mgr), so installing is a copy of that folder there (build_module.build)
or a symlink to it. The module needs nothing on ceph-mgr's Python path.
"""
import argparse
import importlib.util
import os
import shutil
import sys
from typing import List, Optional

from . import build_module
from .common.version import add_version

MODULE_NAME = "recovery"
PACKAGE = "ceph_recovery_mgr_module"


def installed_module_dir() -> Optional[str]:
    """The installed copy of mgr_module/recovery, or None when this install has none."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    for base in (spec.submodule_search_locations or []) if spec else []:
        candidate = os.path.join(base, MODULE_NAME)
        if os.path.isfile(os.path.join(candidate, "module.py")):
            return os.path.abspath(candidate)
    return None


def install(dest: str, symlink: bool = False, force: bool = False,
            source: Optional[str] = None) -> str:
    """Build (or symlink) the self-contained module as DEST/recovery; returns that path.

    Refuses (and changes nothing) when DEST is not a directory, or DEST/recovery exists and
    force is not set.
    """
    src = source or installed_module_dir()
    if src is None or not os.path.isfile(os.path.join(src, "module.py")):
        raise FileNotFoundError("no installed mgr module found (%s/%s): reinstall ceph-recovery"
                                % (PACKAGE, MODULE_NAME))
    if not os.path.isdir(dest):
        raise FileNotFoundError("--dest %s is not a directory" % dest)
    target = os.path.join(dest, MODULE_NAME)
    if os.path.lexists(target):
        if not force:
            raise FileExistsError("%s exists: pass --force to replace it" % target)
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        else:
            os.unlink(target)
    if symlink:
        os.symlink(os.path.abspath(src), target)
    else:
        build_module.build(target, src)
    return target


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ceph-recovery-install-mgr-module",
        description="Install the ceph-mgr module `recovery` into a mgr module directory "
                    "(the mgr option mgr_module_path; Debian: /usr/share/ceph/mgr).")
    add_version(p, "ceph-recovery-install-mgr-module")
    p.add_argument("--dest", help="mgr module directory; the module goes to DEST/recovery")
    p.add_argument("--symlink", action="store_true",
                   help="symlink to the installed copy instead of copying it")
    p.add_argument("--force", action="store_true", help="replace an existing DEST/recovery")
    p.add_argument("--print-path", action="store_true",
                   help="print where the installed module is, and exit")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    if args.print_path:
        path = installed_module_dir()
        if path is None:
            print("ceph-recovery-install-mgr-module: no installed mgr module", file=sys.stderr)
            return 2
        print(path)
        return 0
    if not args.dest:
        print("ceph-recovery-install-mgr-module: --dest DIR is required", file=sys.stderr)
        return 2
    try:
        target = install(args.dest, symlink=args.symlink, force=args.force)
    except (FileNotFoundError, FileExistsError) as e:
        print("ceph-recovery-install-mgr-module: %s" % e, file=sys.stderr)
        return 2
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
