#!/usr/bin/env bash
# Runs this checkout's pure tests (the mgr module's pieces, the core, the policies) under the
# Python of a chroot (scripts/chroot.sh): Python 3.13 (reef), 3.14 (tentacle) or 3.9 (bullseye:
# the Python of Ceph's EL9 container images, which run ceph-mgr on cephadm clusters).
#   scripts/lab/pytest_in_chroot.sh tentacle [pytest args]   (default: the module and core tests)
# The committed tree (git archive HEAD, so commit first) is copied into ROOT/tmp; pytest and
# hypothesis are installed once into ROOT/opt/ceph-recovery/test-deps.
set -euo pipefail
die() { echo "pytest_in_chroot: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: pytest_in_chroot.sh reef|tentacle|bullseye [pytest args]"
release=$1; shift
repo=$(cd "$(dirname "$0")/../.." && pwd)
root=$("$repo/scripts/chroot.sh" "$release" | tail -n1) || die "no $release chroot"
tdeps=/opt/ceph-recovery/test-deps
if [ ! -d "$root$tdeps/hypothesis" ]; then
  # pip before 23 (bullseye's 20.3) has no --break-system-packages and needs none
  flags=()
  if chroot "$root" python3 -m pip install --help | grep -q -- --break-system-packages; then
    flags=(--break-system-packages)
  fi
  chroot "$root" python3 -m pip install -q --no-cache-dir "${flags[@]}" \
    --target "$tdeps" 'pytest>=7.4,<9' 'hypothesis>=6.80,<7' >&2 || die "pip: pytest/hypothesis"
fi
work=$(mktemp -d "$root/tmp/pytest-XXXXXX")
trap 'rm -rf "$work"' EXIT
git -C "$repo" archive HEAD | tar -x -C "$work"
inside=${work#"$root"}
# the core installs as ceph_recovery (setup.py package_dir): the same mapping, copied
mkdir -p "$work/pylib/ceph_recovery"
cp -r "$work/orchestrator/." "$work/pylib/ceph_recovery/"
cp -r "$work/policies" "$work/pylib/ceph_recovery/policies"
# default: every test of the core (tests/unit/core, the network evaluation, the policies) and
# of the mgr module's pieces (tests/unit/mgr but test_compat.py, which runs releases' chroots
# itself); the tools' tests need the tools' dependencies, which these chroots do not hold (a
# test that also touches a tool skips it; the check of the installed folder needs the tools:
# deselected)
if [ $# -eq 0 ]; then
  set -- tests/unit/core $(cd "$work" && ls tests/unit/mgr/test_*.py | grep -v /test_compat) \
    tests/unit/network/test_network_eval.py \
    tests/unit/packaging/test_selfcontained.py tests/policies \
    --deselect tests/unit/packaging/test_selfcontained.py::test_the_installed_module_folder_is_built_and_imports_only_the_same
fi
# no structlog or tenacity (/opt/ceph-recovery/deps): the mgr module needs neither
chroot "$root" env -C "$inside" PYTHONPATH="$inside/pylib:$tdeps" \
  python3 -m pytest -q -p no:cacheprovider --import-mode=importlib "$@"
