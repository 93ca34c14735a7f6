"""The card's layout holds where it matters: inside ceph-mgr and under the import contract."""
import configparser
import importlib.util
import os
import pathlib
import shutil
import subprocess
import sys

import ceph_recovery

REPO = pathlib.Path(__file__).resolve().parents[2]


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
