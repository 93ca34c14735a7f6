#!/usr/bin/env bash
# Builds the Debian packages from the committed tree (git archive HEAD: what a clean clone
# holds, so commit first) and checks them with lintian:
#   scripts/build-debs.sh [OUT]      (default OUT: dist/debs in the checkout)
# python3-ceph-recovery (the core), ceph-recovery-mgr (the module under /usr/share/ceph/mgr),
# ceph-recovery-helper (helper, unit, gate drop-ins), ceph-recovery-tools (lab, drill, sim,
# bench). Installs the build dependencies (root, apt) when missing. The build runs in a
# temporary copy: dpkg-buildpackage writes its results next to the source directory, and
# nothing is left in the checkout. Exits non-zero on a build failure or a lintian error.
set -euo pipefail
die() { echo "build-debs: $*" >&2; exit 1; }
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/dist/debs}
deps=(build-essential debhelper dh-python python3-all python3-setuptools lintian)
missing=()
for p in "${deps[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing build dependencies (run as root to install): ${missing[*]}"
  echo "build-debs: installing ${missing[*]}" >&2
  install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      "${missing[@]}" >&2; }
  install || { apt-get update -q >&2 && install; } || die "apt-get install ${missing[*]} failed"
fi
work=$(mktemp -d /tmp/build-debs-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
git -C "$repo" archive HEAD | tar -x -C "$work/src"
start=$(date +%s)
# Debian's own toolchain only: a virtualenv's python or setuptools on PATH (tox's, the
# project's .venv) mixed with the system's dist-packages breaks pybuild
clean_env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="${HOME:-/root}" LANG=C.UTF-8
           PYTHONDONTWRITEBYTECODE=1)
(cd "$work/src" && "${clean_env[@]}" dpkg-buildpackage -us -uc -b) > "$work/build.log" 2>&1 \
  || { tail -n 40 "$work/build.log" >&2; die "dpkg-buildpackage failed (log above)"; }
mkdir -p "$out"
rm -f "$out"/*.deb
cp "$work"/*.deb "$out"/
echo "build-debs: built in $(( $(date +%s) - start )) s into $out:" >&2
ls -1 "$out" >&2
# errors fail the build; warnings are printed
"${clean_env[@]}" lintian --fail-on error "$work"/*.changes >&2 \
  || die "lintian reports errors (above)"
