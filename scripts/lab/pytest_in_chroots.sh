#!/usr/bin/env bash
# Runs pytest_in_chroot.sh for each release given, at the same time: each run is one Python
# process bound by CPU, and each holds its own copy of the tree. The chroots are built (or
# found) one after the other first, so that two debootstraps never share the archive at once.
# Each run's output is printed whole once all have ended; the exit code is the first
# failure's, else 0.
#   scripts/lab/pytest_in_chroots.sh tentacle reef bullseye
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: pytest_in_chroots.sh RELEASE..." >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
for release in "$@"; do
  "$here/../chroot.sh" "$release" >/dev/null
done
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
for release in "$@"; do
  "$here/pytest_in_chroot.sh" "$release" >"$logs/$release" 2>&1 &
  pids+=($!)
done
rc=0
i=0
for release in "$@"; do
  if wait "${pids[$i]}"; then status=passed; else r=$?; status="failed ($r)"; [ $rc -ne 0 ] || rc=$r; fi
  echo "=== pytest in the $release chroot: $status"
  cat "$logs/$release"
  i=$((i + 1))
done
exit $rc
