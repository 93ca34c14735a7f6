"""Fixtures giving integration tests a REAL local Ceph lab cluster (needs root).

- `lab`: session-scoped 3 hosts x 2 OSDs over 2 racks, BlueStore, helpers per `up`'s default;
  yields the state dict of D/lab.json (see ceph_recovery_tools.lab.launch for the API).
- `healthy_lab`: the same lab, restored after the test (stopped OSDs started again, noup/noout
  and similar flags cleared, all up and HEALTH_OK) so tests that break it do not leak.
- `lab_factory`: session-scoped `make(**LabOptions fields) -> state` for an extra lab with other
  options (netns=True, host_mem_limit=..., objectstore="memstore", ...). At most one extra lab
  lives at a time: `make` tears down the previous one; `make.down()` tears it down early.
Every lab runs the release CEPH_RECOVERY_FULL_RELEASE names (default pacific; see full_release).

A skipped integration test fails the session (exit 1): the tier proves nothing when it does
not run (non-root, Ceph missing). CEPH_RECOVERY_ALLOW_SKIP=1 allows skips explicitly.

A lab's log/ directory is kept (path printed) when tests of the session failed, or always with
CEPH_RECOVERY_KEEP_LAB_LOGS=1; everything else is torn down.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from typing import Any, Dict, List

import pytest

from ceph_recovery_tools.lab import bootstrap, build, release, teardown
from ceph_recovery_tools.lab.restore import restore

pytestmark = pytest.mark.integration
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# fault_row.py, the rows' shared parts, importable by name from every test file (importlib
# mode: this folder is not on sys.path); one instance, so the rows' RESULTS are one dict
if "fault_row" not in sys.modules:
    _spec = importlib.util.spec_from_file_location(
        "fault_row", os.path.join(os.path.dirname(os.path.abspath(__file__)), "fault_row.py"))
    _fault_row = importlib.util.module_from_spec(_spec)
    sys.modules["fault_row"] = _fault_row
    _spec.loader.exec_module(_fault_row)


# Each file's wall seconds in the tier (pytest --durations, every phase summed, rounded): the
# files run longest first, so that the two workers (--dist loadfile, --no-loadscope-reorder)
# end close together; a file not listed counts as FILE_SECONDS_DEFAULT. Order only: nothing
# asserts a time.
FILE_SECONDS = {
    "test_drill_memory.py": 900, "test_fault_matrix.py": 570, "test_liveness.py": 540,
    "test_drill_engine_module.py": 360, "test_restart_overlap.py": 330,
    "test_maintenance.py": 325, "test_network_netns.py": 320, "test_release_smoke.py": 290,
    "test_throttle_lab.py": 230, "test_drill_controlled.py": 220, "test_drill_module.py": 210,
    "test_drill_staged.py": 190, "test_module_commands.py": 160, "test_host_out.py": 135,
    "test_cephadm_podman.py": 120, "test_fault_netns.py": 115, "test_scale_lab.py": 105,
    "test_rebuild_phase.py": 130, "test_helper_lab.py": 90, "test_installed_debs.py": 230,
    "test_systemd_gate.py": 150, "test_lab.py": 70}
FILE_SECONDS_DEFAULT = 120


def file_seconds(path: str) -> int:
    return FILE_SECONDS.get(os.path.basename(path), FILE_SECONDS_DEFAULT)


def pytest_collection_modifyitems(items: List[pytest.Item]) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.integration)
    # longest file first; a file's own tests keep their order (sorted() is stable)
    items[:] = sorted(items, key=lambda item: -file_seconds(str(item.fspath))
                      if str(item.fspath).startswith(here) else 0)


_SKIPPED: List[str] = []
HERE = os.path.dirname(os.path.abspath(__file__))


def _skips_allowed() -> bool:
    return os.environ.get("CEPH_RECOVERY_ALLOW_SKIP") == "1"


def pytest_runtest_logreport(report: Any) -> None:
    path = report.nodeid.split("::")[0]
    in_tier = os.path.basename(os.path.dirname(os.path.abspath(path))) == "integration"
    if report.skipped and not hasattr(report, "wasxfail") and in_tier:
        _SKIPPED.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _SKIPPED and not _skips_allowed() and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _SKIPPED and not _skips_allowed():
        terminalreporter.write_line(
            "FAILED: %d integration test(s) skipped (the tier must run; set "
            "CEPH_RECOVERY_ALLOW_SKIP=1 to allow): %s" % (len(_SKIPPED), ", ".join(_SKIPPED[:5])),
            red=True)


def _require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the lab cluster needs root (memory cgroups, network namespaces)")
    if shutil.which("ceph-osd") is None:
        pytest.skip("Ceph is not installed (run scripts/bootstrap.sh)")


def full_release() -> str:
    """The Ceph release of the integration tier's labs: CEPH_RECOVERY_FULL_RELEASE (pacific,
    reef or tentacle; default pacific, the host's packages). A reef/tentacle chroot is built on
    first use; one that cannot be built fails the lab fixture with the reason."""
    name = os.environ.get("CEPH_RECOVERY_FULL_RELEASE", "pacific").strip() or "pacific"
    if name not in release.RELEASES:
        raise ValueError(f"CEPH_RECOVERY_FULL_RELEASE: unknown {name!r}; one of {release.RELEASES}")
    return name


def _options(**overrides: Any) -> build.LabOptions:
    module_dir = bootstrap.module_dir_from(None, REPO_ROOT)
    overrides.setdefault("ceph", full_release())
    return build.LabOptions(module_dir=module_dir, **overrides)


def _start(prefix: str, opts: build.LabOptions) -> Dict[str, Any]:
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    return build.up(d, opts)


def _stop(state_dir: str, keep_logs: bool = False) -> None:
    report = teardown.down(state_dir)
    if keep_logs or os.environ.get("CEPH_RECOVERY_KEEP_LAB_LOGS"):
        print(f"lab logs kept in {state_dir}/log")
    else:
        shutil.rmtree(state_dir, ignore_errors=True)
    left = {k: v for k, v in report.items() if v}
    assert not left, f"lab teardown left things behind: {left}"


@pytest.fixture(scope="session")
def lab(request: pytest.FixtureRequest) -> Any:
    _require_root()
    state = _start("lab-pytest-", _options())
    try:
        yield state
    finally:
        _stop(state["dir"], keep_logs=request.session.testsfailed > 0)


@pytest.fixture
def healthy_lab(lab: Dict[str, Any]) -> Any:
    yield lab
    restore(lab)


@pytest.fixture(scope="session")
def lab_factory(request: pytest.FixtureRequest) -> Any:
    _require_root()
    current: List[str] = []

    def down() -> None:
        while current:
            _stop(current.pop(), keep_logs=request.session.testsfailed > 0)

    def make(**options: Any) -> Dict[str, Any]:
        down()
        state = _start("lab-pytest-x-", _options(**options))
        current.append(state["dir"])
        return state

    make.down = down  # type: ignore[attr-defined]
    try:
        yield make
    finally:
        down()



@pytest.fixture
def assert_booted_on_preboot():
    """check(journal, osds): every boot of a controlled start in `journal` came from the
    daemon's own "preboot" (its admin socket, read by the helper), none from the flat-rss
    fallback, and the booted OSDs are exactly `osds`."""
    def check(journal: List[Dict[str, Any]], osds: Any) -> None:
        boots = [j["action"] for j in journal if j["action"]["kind"] == "allow_boot"
                 and "load-time rss" in j["action"].get("reason", "")]
        assert {a["osd"] for a in boots} == set(osds), journal
        assert all("in preboot (the daemon's state)" in a["reason"] for a in boots), boots
    return check
