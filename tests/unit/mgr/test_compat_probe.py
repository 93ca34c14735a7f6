"""Probe for test_compat.py, run as a script by one Ceph release's own interpreter (no pytest):
    python3 test_compat_probe.py MGR_DIR MODULE_DIR
prints, as one JSON line, the commands and options ceph-mgr would read from the recovery module
when loaded against MGR_DIR/mgr_module.py, the module's import error (None when the core
loaded), where the core was loaded from, and every top-level module then loaded. It holds no
tests.

ceph-mgr's C extension `ceph_module` (and cephfs/rados, where missing) exist only inside
ceph-mgr; empty base classes stand in for them, which is all importing mgr_module.py needs.
"""
import importlib
import importlib.util
import json
import os
import sys
import types


def _stub(name: str) -> types.ModuleType:
    """A module whose every attribute is a fresh empty class (base classes for mgr_module)."""
    mod = types.ModuleType(name)

    def __getattr__(attr: str) -> type:
        if attr.startswith("__"):
            raise AttributeError(attr)
        cls = type(attr, (object,), {})
        setattr(mod, attr, cls)
        return cls
    mod.__getattr__ = __getattr__  # type: ignore[attr-defined]
    return mod


def _args(cmd: str) -> dict:
    """{argument name: sorted attributes} of a command signature (attribute order differs)."""
    out = {}
    for word in cmd.split()[1:]:
        if word.startswith("name="):
            attrs = dict(kv.split("=", 1) for kv in word.split(","))
            name = attrs.pop("name")
            out[name] = sorted("%s=%s" % kv for kv in attrs.items())
    return out


def probe(mgr_dir: str, module_dir: str) -> dict:
    for name in ("ceph_module", "cephfs", "rados"):
        try:
            importlib.import_module(name)
        except ImportError:
            sys.modules[name] = _stub(name)
    sys.path.insert(0, mgr_dir)
    import mgr_module
    spec = importlib.util.spec_from_file_location(
        "recovery", os.path.join(module_dir, "__init__.py"),
        submodule_search_locations=[module_dir])
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["recovery"] = pkg
    spec.loader.exec_module(pkg)
    from recovery import compat, module
    cls = module.Module
    cls.COMMANDS = []   # ceph-mgr fills this per module class at load
    cls._register_commands("recovery")
    cmds = {c["cmd"].split(" name=")[0].strip(): c for c in cls.COMMANDS}
    return {"python": "%d.%d" % sys.version_info[:2],
            "registry": compat.CLI_REGISTRY is not None,
            "has_cli_read_command": hasattr(mgr_module, "CLIReadCommand"),
            "perm": {p: c["perm"] for p, c in cmds.items()},
            "args": {p: _args(c["cmd"]) for p, c in cmds.items()},
            "options": sorted(o["name"] for o in cls.MODULE_OPTIONS),
            "import_error": module.IMPORT_ERROR,
            "core": getattr(sys.modules.get("ceph_recovery"), "__file__", None),
            "loaded": sorted({m.split(".")[0] for m in sys.modules})}


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1], sys.argv[2]), sort_keys=True))
