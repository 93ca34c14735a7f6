"""The mgr module installs as one folder: built (ceph_recovery_tools.build_module), it carries the
decision core and imports nothing but the standard library and ceph-mgr's own modules.
Checked by parsing every file of a built folder and of the installed (wheel-built) one, and by
loading a built folder in a fresh interpreter that has no site-packages, only that folder and a
stand-in mgr_module. test_compat.py loads the same built folder against each release's real
mgr_module.py under Python 3.9, 3.11, 3.13 and 3.14, and scripts/lab/pytest_in_chroot.sh runs
this file there too: build_module.py is loaded by path (as setup.py does), so only the test of
the installed copy needs the installed tools."""
from __future__ import annotations

import ast
import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
_spec = importlib.util.spec_from_file_location("_build_module",
                                              REPO / "scripts" / "build_module.py")
build_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_module)
SOURCE = REPO / "mgr_module" / "recovery"
# what ceph-mgr itself provides to its modules: its mgr directory's top-level files, its C
# extension, and the Ceph Python bindings and packages every ceph-mgr install carries
CEPH_MGR = {"mgr_module", "mgr_util", "object_format", "ceph_module", "ceph_argparse", "ceph",
            "rados", "rbd", "cephfs"}
# sys.stdlib_module_names exists from Python 3.10; on 3.9 the modules the folder may use
STDLIB_39 = {"__future__", "abc", "array", "ast", "base64", "bisect", "collections", "contextlib",
             "copy", "ctypes", "dataclasses", "datetime", "enum", "errno", "functools",
             "hashlib", "heapq", "hmac", "http", "importlib", "itertools", "json", "logging",
             "math", "operator", "os", "queue", "random", "re", "secrets", "shutil", "socket",
             "statistics", "string", "struct", "sys", "threading", "time", "types", "typing",
             "uuid", "weakref", "zlib"}
STDLIB = set(getattr(sys, "stdlib_module_names", STDLIB_39))


def _imports(path: pathlib.Path):
    """(absolute top-level names, relative imports) of one file."""
    tops, relative = set(), 0
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            tops.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            relative += 1
    return tops, relative


def _outside_imports(folder: pathlib.Path) -> dict:
    """{file: names} of every import that is neither the standard library, nor ceph-mgr's,
    nor the core the folder carries (_core/ceph_recovery)."""
    own = {"ceph_recovery"} if (folder / "_core" / "ceph_recovery" / "__init__.py").is_file() \
        else set()
    allowed = STDLIB | CEPH_MGR | own
    found = {}
    for path in sorted(folder.rglob("*.py")):
        outside = _imports(path)[0] - allowed
        if outside:
            found[str(path.relative_to(folder))] = sorted(outside)
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> pathlib.Path:
    return pathlib.Path(build_module.build(str(tmp_path_factory.mktemp("mgr") / "recovery"),
                                           str(SOURCE)))


def test_the_built_folder_holds_the_module_and_the_core_with_its_policies(built):
    assert {p.name for p in built.glob("*.py")} == {p.name for p in SOURCE.glob("*.py")}
    core = built / "_core" / "ceph_recovery"
    assert (core / "plan.py").is_file() and (core / "policies" / "registry.py").is_file()
    assert not list(built.rglob("__pycache__"))


def test_the_built_folder_imports_only_the_standard_library_and_ceph_mgr(built):
    assert _outside_imports(built) == {}


def test_the_installed_module_folder_is_built_and_imports_only_the_same():
    from ceph_recovery_tools import install_module   # the tools: not in the chroot runs
    installed = pathlib.Path(install_module.installed_module_dir())
    assert (installed / "_core" / "ceph_recovery" / "policies" / "__init__.py").is_file()
    assert _outside_imports(installed) == {}


def test_the_check_finds_an_import_from_outside(tmp_path):
    folder = pathlib.Path(build_module.build(str(tmp_path / "recovery"), str(SOURCE)))
    (folder / "probe.py").write_text("import structlog\nfrom tenacity import retry\n")
    (folder / "_core" / "ceph_recovery" / "probe.py").write_text("import psutil\n")
    assert _outside_imports(folder) == {"probe.py": ["structlog", "tenacity"],
                                        "_core/ceph_recovery/probe.py": ["psutil"]}


def test_a_folder_without_its_core_may_not_import_the_core():
    assert "core.py" in _outside_imports(SOURCE)


def test_build_refuses_a_folder_without_module_py_and_a_core_without_policies(tmp_path):
    with pytest.raises(FileNotFoundError):
        build_module.build(str(tmp_path / "a"), str(tmp_path))
    (tmp_path / "core").mkdir()
    with pytest.raises(FileNotFoundError):
        build_module.build(str(tmp_path / "b"), str(SOURCE), str(tmp_path / "core"))


FAKE_MGR_MODULE = '''
import collections, logging
HandleCommandResult = collections.namedtuple("HandleCommandResult", "retval stdout stderr")
class CommandResult(object):
    def __init__(self, tag=""):
        self.tag = tag
class Option(dict):
    def __init__(self, name, **kw):
        super().__init__(name=name, **kw)
class MgrModule(object):
    def __init__(self, *args, **kwargs):
        self.log = logging.getLogger("mgr.recovery")
    def send_command(self, *args):
        raise RuntimeError("no cluster here")
def CLIReadCommand(prefix, **kw):
    return lambda f: f
CLIWriteCommand = CLIReadCommand
'''

LOAD = '''
import importlib.util, json, logging, os, sys, sysconfig
fake, folder = sys.argv[1], sys.argv[2]
sys.path.insert(0, fake)
spec = importlib.util.spec_from_file_location(
    "recovery", os.path.join(folder, "__init__.py"), submodule_search_locations=[folder])
pkg = importlib.util.module_from_spec(spec)
sys.modules["recovery"] = pkg
spec.loader.exec_module(pkg)          # as ceph-mgr imports it: __init__.py first
from recovery import module
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
m = pkg.Module()
m.slog.info("probe", n=1)
std = [sysconfig.get_paths()[k] + os.sep for k in ("stdlib", "platstdlib")]
outside = {n.split(".")[0] for n, mod in list(sys.modules.items())
           if getattr(mod, "__file__", None) and not os.path.abspath(mod.__file__).startswith(
               tuple(std))}
print(json.dumps({"error": module.IMPORT_ERROR, "core": sys.modules["ceph_recovery"].__file__,
                  "outside": sorted(outside)}))
'''


def test_the_built_folder_loads_in_a_fresh_python_with_nothing_but_itself(built, tmp_path):
    """-S: no site-packages; -E: no PYTHONPATH. Only the folder and a stand-in mgr_module."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "mgr_module.py").write_text(FAKE_MGR_MODULE)
    proc = subprocess.run([sys.executable, "-S", "-E", "-c", LOAD, str(fake), str(built)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["error"] is None
    assert got["core"].startswith(str(built / "_core" / "ceph_recovery")), got["core"]
    # every module loaded from outside the standard library's folders
    assert set(got["outside"]) - CEPH_MGR == {"recovery", "ceph_recovery"}
    event = json.loads(proc.stderr.strip().splitlines()[-1])
    assert event["event"] == "probe" and event["n"] == 1 and event["module"] == "recovery"
