#!/usr/bin/env bash
# Installs everything ceph-recovery's two README commands need. Safe to run twice.
#  - Debian packages: Ceph 16.2 (mon, mgr, osd, CLI), python3-rados, nftables, iproute2, venv
#  - optional release argument (pacific | reef | tentacle, default pacific): for reef/tentacle,
#    the Debian chroot holding that Ceph is built and cached too (scripts/chroot.sh)
#  - .venv/: a virtualenv on Debian's /usr/bin/python3 with system site packages (python3-rados
#    is built for that interpreter only), holding tox and this project with its test extras.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
need_root() { [ "$(id -u)" = 0 ] || { echo "bootstrap: run as root (installs packages, makes cgroups)" >&2; exit 1; }; }
need_root
release=${1:-pacific}
case "$release" in
  pacific|reef|tentacle) ;;
  *) echo "bootstrap: unknown release '$release' (pacific, reef or tentacle)" >&2; exit 2 ;;
esac
pkgs=(ceph ceph-mon ceph-mgr ceph-osd ceph-common python3-rados python3-venv python3-pip
      nftables iproute2 iputils-ping procps util-linux systemd)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# ceph's Debian packages may start nothing here (no systemd as PID 1); the lab runs daemons itself.
if [ ! -x "$repo/.venv/bin/python" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$repo/.venv"
fi
"$repo/.venv/bin/python" -m pip install -q --upgrade pip 'tox>=4.11,<5'
# Non-editable install: ceph-mgr imports ceph_recovery from this venv's site-packages
# (PYTHONPATH), where .pth-based editable installs are not honoured.
"$repo/.venv/bin/python" -m pip install -q "$repo[test]"
if [ "$release" != pacific ]; then
  echo "bootstrap: Ceph $release chroot: $("$repo/scripts/chroot.sh" "$release")"
fi
echo "bootstrap: ok ($("$repo/.venv/bin/python" -c 'import ceph_recovery, rados; print("ceph_recovery", ceph_recovery.__version__)'))"
