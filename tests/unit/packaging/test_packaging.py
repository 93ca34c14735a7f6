"""The card's layout holds where it matters: inside ceph-mgr, under the import contract, and in
the wheel (which ships the mgr module and keeps the tools' dependencies in an extra)."""
import ast
import configparser
import email.parser
import importlib
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import ceph_recovery
import pytest

from ceph_recovery_tools import install_module

REPO = pathlib.Path(__file__).resolve().parents[3]


def test_repo_root_is_not_on_sys_path():
    # mgr_module/ or a top-level orchestrator/ on sys.path would shadow Ceph's own modules
    entries = {pathlib.Path(p or os.getcwd()).resolve() for p in sys.path}
    assert REPO not in entries


def test_core_is_imported_from_the_installed_package_not_the_checkout():
    installed = pathlib.Path(ceph_recovery.__file__).resolve()
    assert installed.parent != REPO / "orchestrator", installed
    assert installed.parent.name == "ceph_recovery" and "site-packages" in installed.parts


def test_policies_install_under_the_core_namespace():
    spec = importlib.util.find_spec("ceph_recovery.policies")
    assert spec is not None and "ceph_recovery" in spec.origin


def test_no_top_level_orchestrator_package_and_no_mgr_module_init():
    assert importlib.util.find_spec("orchestrator") is None
    assert not (REPO / "mgr_module" / "__init__.py").exists()
    assert (REPO / "mgr_module" / "recovery" / "module.py").exists()


def _contract_config(tmp_path):
    """A config with only the purity contract of setup.cfg, pointed at a copy of the core."""
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    out = configparser.ConfigParser()
    out["importlinter"] = {"root_package": "ceph_recovery", "include_external_packages": "True"}
    key = "importlinter:contract:core-is-pure"
    out[key] = dict(cfg[key])
    out[key]["forbidden_modules"] = "\n".join(
        m for m in cfg[key]["forbidden_modules"].split() if not m.startswith("ceph_recovery_tools"))
    path = tmp_path / "contract.cfg"
    with open(path, "w") as f:
        out.write(f)
    return path


def _lint(tmp_path, extra_module=None):
    pkgs = tmp_path / "pkgs"
    shutil.copytree(pathlib.Path(ceph_recovery.__file__).parent, pkgs / "ceph_recovery",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if extra_module:
        (pkgs / "ceph_recovery" / "_probe.py").write_text(extra_module)
    env = dict(os.environ, PYTHONPATH=str(pkgs))
    exe = pathlib.Path(sys.executable).parent / "lint-imports"
    return subprocess.run([str(exe), "--config", str(_contract_config(tmp_path))], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_import_contract_passes_on_the_core_as_shipped(tmp_path):
    proc = _lint(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_import_contract_fails_when_a_core_module_imports_subprocess(tmp_path):
    proc = _lint(tmp_path, "import subprocess\n")
    assert proc.returncode != 0
    assert "ceph_recovery._probe -> subprocess" in proc.stdout, proc.stdout


# ---------------------------------------------------------------- the wheel and its mgr module
MGR_DIR = REPO / "mgr_module" / "recovery"
TOOLS_ONLY = {"psutil", "rich", "matplotlib"}
HELPER_NEEDS = {"psutil"}
SYSTEMD = REPO / "scripts" / "systemd"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """A wheel built from a copy of the checkout (the build leaves nothing in the checkout)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("setup.py", "setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    for folder in ("orchestrator", "policies", "scripts", "mgr_module"):
        shutil.copytree(REPO / folder, src / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("wheel")
    # build isolation: the test env sees the system's site-packages (python3-rados), whose
    # Debian jaraco.functools breaks a newer setuptools inside that env
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                           "-w", str(out), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (path,) = out.glob("ceph_recovery-*.whl")
    return zipfile.ZipFile(path)


def _metadata(whl):
    (name,) = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
    return email.parser.Parser().parsestr(whl.read(name).decode())


def test_the_wheel_ships_the_mgr_module_built_with_the_core_inside(wheel):
    top = "ceph_recovery_mgr_module/recovery/"
    shipped = {n[len(top):]: n for n in wheel.namelist() if n.startswith(top)}
    own = {n for n in shipped if "/" not in n}
    assert own == {p.name for p in MGR_DIR.glob("*.py")}
    for name in own:
        assert wheel.read(shipped[name]) == (MGR_DIR / name).read_bytes(), name
    # _core/ceph_recovery is the core package as the wheel ships it, policies included
    core = {n[len("ceph_recovery/"):]: n for n in wheel.namelist()
            if n.startswith("ceph_recovery/")}
    vendored = {n[len("_core/ceph_recovery/"):]: m for n, m in shipped.items()
                if n.startswith("_core/")}
    assert set(vendored) == set(core) and "policies/registry.py" in vendored
    assert set(shipped) == own | {"_core/ceph_recovery/" + n for n in vendored}
    for name in core:
        assert wheel.read(vendored[name]) == wheel.read(core[name]), name


def test_the_mgr_module_namespace_has_no_init_so_importing_it_runs_nothing(wheel):
    assert "ceph_recovery_mgr_module/__init__.py" not in wheel.namelist()
    assert not any(n.startswith("ceph_recovery/mgr_module") for n in wheel.namelist())


def test_the_core_and_tools_require_only_structlog_and_tenacity(wheel):
    """The plain dependencies serve the helper and the tools; the mgr module folder needs
    none (test_selfcontained.py)."""
    plain, extras = set(), {}
    for req in _metadata(wheel).get_all("Requires-Dist"):
        name = req.split(";")[0].split("(")[0].split("[")[0].split("<")[0].split(">")[0].strip()
        if "extra ==" in req:
            extras.setdefault(req.split("extra ==")[1].strip(" '\""), set()).add(name)
        else:
            plain.add(name)
    assert plain == {"structlog", "tenacity"}
    assert extras["tools"] == TOOLS_ONLY
    assert extras["helper"] == HELPER_NEEDS     # no plotting or console library on OSD hosts
    assert "ceph-recovery" in extras["test"]    # the tests run the tools: test pulls [tools]


def test_the_install_console_script_is_declared(wheel):
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    cfg = configparser.ConfigParser()
    cfg.read_string(wheel.read(name).decode())
    assert (cfg["console_scripts"]["ceph-recovery-install-mgr-module"]
            == "ceph_recovery_tools.install_module:main")


def _imported_tops(path):
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            tops.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            tops.add(node.module.split(".")[0])
    return tops


@pytest.mark.parametrize("folder", ["orchestrator", "policies", "mgr_module"])
def test_code_ceph_mgr_loads_imports_no_tools_only_package(folder):
    offenders = {str(p.relative_to(REPO)): sorted(_imported_tops(p) & TOOLS_ONLY)
                 for p in (REPO / folder).rglob("*.py") if _imported_tops(p) & TOOLS_ONLY}
    assert offenders == {}


def test_installed_module_dir_is_the_installed_copy():
    found = pathlib.Path(install_module.installed_module_dir())
    assert found.name == "recovery" and found.parent.name == "ceph_recovery_mgr_module"
    assert "site-packages" in found.parts and (found / "module.py").is_file()


def test_install_copies_the_module_and_refuses_to_overwrite(tmp_path, capsys):
    assert install_module.main(["--dest", str(tmp_path)]) == 0
    copied = tmp_path / "recovery"
    assert {p.name for p in copied.glob("*.py")} == {p.name for p in MGR_DIR.glob("*.py")}
    assert (copied / "_core" / "ceph_recovery" / "policies" / "__init__.py").is_file()
    (copied / "marker").write_text("x")
    assert install_module.main(["--dest", str(tmp_path)]) == 2
    assert "pass --force" in capsys.readouterr().err
    assert (copied / "marker").exists()             # refused: nothing changed
    assert install_module.main(["--dest", str(tmp_path), "--force", "--symlink"]) == 0
    assert copied.is_symlink() and (copied / "module.py").is_file()


def test_install_refuses_a_missing_dest(tmp_path, capsys):
    assert install_module.main(["--dest", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert not (tmp_path / "nope").exists()


_LOADS_LIKE_CEPH_MGR = """
import importlib, os, sys, types
folder = sys.argv[1]
sys.path.insert(0, os.path.join(folder, "_core"))     # what __init__.py does first
pkg = types.ModuleType("recovery")
pkg.__path__ = [folder]
sys.modules["recovery"] = pkg          # as ceph-mgr names it; __init__.py needs mgr_module
for name in ("engine", "cluster", "executor", "state", "text", "inputs", "core", "logs"):
    importlib.import_module("recovery." + name)
print(" ".join(sorted({m.split(".")[0] for m in sys.modules})))
print(sys.modules["ceph_recovery"].__file__)
"""


def test_the_mgr_module_folder_from_the_wheel_alone_loads(wheel, tmp_path):
    """The wheel's module folder, copied out on its own, is all the module needs: loaded with
    no site-packages and no PYTHONPATH (python -S -E), only that folder and the standard
    library."""
    unpacked = tmp_path / "whl"
    wheel.extractall(unpacked)
    folder = tmp_path / "mgr" / "recovery"
    shutil.copytree(unpacked / "ceph_recovery_mgr_module" / "recovery", folder)
    proc = subprocess.run([sys.executable, "-S", "-E", "-c", _LOADS_LIKE_CEPH_MGR, str(folder)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    loaded, core_file = proc.stdout.split("\n")[:2]
    assert "ceph_recovery" in loaded.split()
    assert set(loaded.split()) & (TOOLS_ONLY | {"structlog", "tenacity",
                                                "ceph_recovery_tools"}) == set()
    assert core_file.startswith(str(folder / "_core" / "ceph_recovery"))


# ---------------------------------------------------------------- what the wheel must hold
def test_the_wheel_ships_every_systemd_file_the_repo_has_in_every_subfolder(wheel):
    in_repo = {str(p.relative_to(SYSTEMD)) for p in SYSTEMD.rglob("*") if p.is_file()}
    shipped = {n[len("ceph_recovery_tools/systemd/"):] for n in wheel.namelist()
               if n.startswith("ceph_recovery_tools/systemd/")}
    assert {"ceph-osd@.service.d/ceph-recovery-gate.conf", "cephadm/ceph-recovery-gate.conf",
            "ceph-recovery-helper.service"} <= in_repo
    assert shipped == in_repo
    for rel in in_repo:
        assert wheel.read("ceph_recovery_tools/systemd/" + rel) == (SYSTEMD / rel).read_bytes()


def test_the_wheel_ships_the_apache_license_its_metadata_names(wheel):
    licenses = [n for n in wheel.namelist()
                if ".dist-info/" in n and n.rsplit("/", 1)[-1] == "LICENSE"]
    assert len(licenses) == 1, wheel.namelist()
    text = wheel.read(licenses[0]).decode()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert text == (REPO / "LICENSE").read_text()
    meta = _metadata(wheel)
    assert meta["License"] == "Apache-2.0" or meta.get("License-Expression") == "Apache-2.0"


def test_the_helper_imports_nothing_outside_its_extra():
    """The helper's own modules, and every project module they import, import only the
    standard library, the project, the plain dependencies, the [helper] extra and rados."""
    allowed = HELPER_NEEDS | {"structlog", "tenacity", "rados", "ceph_recovery",
                              "ceph_recovery_tools"} | set(sys.stdlib_module_names)
    helper = list((REPO / "scripts" / "helper").glob("*.py"))
    common = list((REPO / "scripts" / "common").glob("*.py")) + [REPO / "scripts" / "jsonfile.py"]
    offenders = {str(p.relative_to(REPO)): sorted(_imported_tops(p) - allowed)
                 for p in helper + common if _imported_tops(p) - allowed}
    assert offenders == {}


def test_the_helper_units_documentation_is_a_page_the_helper_package_installs():
    unit = (SYSTEMD / "ceph-recovery-helper.service").read_text()
    (doc,) = [ln.split("=", 1)[1] for ln in unit.splitlines() if ln.startswith("Documentation=")]
    assert doc.startswith("file:///usr/share/doc/ceph-recovery-helper/"), doc
    page = doc.rsplit("/", 1)[1]
    installed = (REPO / "debian" / "ceph-recovery-helper.docs").read_text().split()
    assert "docs/" + page in installed and (REPO / "docs" / page).is_file()
