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
[ $# -gt 0 ] || set -- tests/unit/test_mgr_engine.py tests/unit/test_mgr_inputs_state.py \
  tests/unit/test_mgr_text.py tests/unit/test_invariants.py tests/unit/test_model_persist.py \
  tests/unit/test_plan_interrupted.py tests/unit/test_plan_load_bound.py \
  tests/unit/test_plan_matrix.py tests/unit/test_plan_properties.py \
  tests/unit/test_plan_settling.py tests/unit/test_plan_ending.py \
  tests/unit/test_plan_settings.py tests/policies
chroot "$root" env -C "$inside" PYTHONPATH="$inside/pylib:/opt/ceph-recovery/deps:$tdeps" \
  python3 -m pytest -q -p no:cacheprovider --import-mode=importlib "$@"
