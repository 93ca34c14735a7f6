#!/usr/bin/env bash
# Builds (once) and prints the root of a Debian chroot holding one Ceph release, or Python 3.9:
#   scripts/chroot.sh tentacle   -> Debian testing "forky"  (Ceph 20.2.x, tcmalloc)
#   scripts/chroot.sh reef       -> Debian 13 "trixie"      (Ceph 18.2.x, tcmalloc)
#   scripts/chroot.sh bullseye   -> Debian 11 "bullseye"    (Python 3.9, no Ceph: the Python of
#                                   Ceph's EL9 container images, for the mgr module's tests)
# The chroot lives under $CEPH_RECOVERY_CHROOTS (default /var/cache/ceph-recovery/chroots)/<release>
# and is reused while its ".ready" stamp exists. Safe to run twice and concurrently (flock).
# Any failure exits non-zero with the reason on stderr; a half-built root is never stamped ready.
# Rules (each verified):
#  - bookworm's debootstrap has no forky script: sid's is used for forky and trixie;
#  - Ceph is installed after debootstrap: --include=ceph-* fails on systemd's pre-dependency;
#  - proc/sys/dev must be mounted while installing: cryptsetup-bin's postinst needs /proc;
#  - no init system runs in the chroot: policy-rc.d (exit 101) stops maintainer scripts from
#    starting services (ceph-mon's postinst "try-restart" fails without it);
#  - pip inside the chroot (structlog, tenacity for the helper and drill, in $deps) needs the host's
#    CA bundle at the same path (the chroot has none).
set -euo pipefail
die() { echo "chroot.sh: $*" >&2; exit 1; }
[ $# -eq 1 ] || die "usage: chroot.sh tentacle|reef|bullseye"
ceph_pkgs=(ceph-mon ceph-mgr ceph-osd ceph-common python3-rados python3-venv python3-pip)
# structlog, tenacity: the mgr module; psutil, matplotlib: the lab's helper and drill, which run
# on the chroot's Python and librados (a Tentacle cluster's aes256k cephx keys are unreadable to
# the host's Pacific librados)
py_reqs=('structlog>=23.1,<26' 'tenacity>=8.2,<10' 'psutil>=5.9,<8' 'matplotlib>=3.6,<4')
script=/usr/share/debootstrap/scripts/sid
pip_flags=(--break-system-packages)
case "$1" in
  tentacle) suite=forky ;;
  # Reef's mgr_util imports bcrypt; trixie's bcrypt 4 is a PyO3 extension, which refuses
  # ceph-mgr's subinterpreters ("PyO3 modules do not yet support subinterpreters"), so no mgr
  # module loads. bcrypt 3.2 (cffi) works there and shadows it on ceph-mgr's PYTHONPATH.
  reef) suite=trixie; py_reqs+=('bcrypt>=3.2,<4') ;;
  # Python only: the module's and the core's tests, and each release's mgr_module.py loaded by
  # Python 3.9 (tests/unit/mgr/test_compat.py). bullseye's pip (20.3) predates
  # --break-system-packages and needs none; python3-bcrypt for Reef's mgr_util.
  bullseye) suite=bullseye; script=/usr/share/debootstrap/scripts/bullseye; pip_flags=()
    ceph_pkgs=(python3 python3-pip python3-bcrypt)
    py_reqs=('structlog>=23.1,<26' 'tenacity>=8.2,<10') ;;
  *) die "unknown release '$1' (EINVAL): expected tentacle, reef or bullseye" ;;
esac
release=$1
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, mounts)"
base=${CEPH_RECOVERY_CHROOTS:-/var/cache/ceph-recovery/chroots}
root=$base/$release
mkdir -p "$base"
exec 9>"$base/$release.lock"
flock 9

mirror() {
  # The first Debian mirror apt already uses (deb822 "URIs:" or one-line "deb" form).
  local m
  m=$(grep -rhsE '^URIs:' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
      | awk '{print $2}' | grep -E '/debian/?$' | head -n1 || true)
  [ -n "$m" ] || m=$(grep -rhsE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
      | awk '{print $2}' | grep -E '/debian/?$' | head -n1 || true)
  [ -n "$m" ] || die "no Debian mirror found in /etc/apt/sources.list*"
  echo "$m"
}

mount_api() {
  # /sys and /dev recursively: the lab's helpers inside the chroot read and join the host's
  # cgroups (/sys/fs/cgroup/...), which a fresh sysfs would not show
  local d
  if mountpoint -q "$root/sys" && [ -z "$(ls -A "$root/sys/fs/cgroup" 2>/dev/null)" ]; then
    umount -l "$root/sys"
  fi
  for d in proc sys dev; do
    mkdir -p "$root/$d"
    mountpoint -q "$root/$d" && continue
    case $d in
      proc) mount -t proc proc "$root/proc" ;;
      sys|dev) mount --rbind "/$d" "$root/$d" && mount --make-rslave "$root/$d" ;;
    esac
  done
  # /run/netns as iproute2 sets it up (a shared bind mount of itself), bound into the chroot as
  # its peer: network namespaces a --netns lab adds later appear inside, where the helpers
  # spawn OSDs with `nsenter --net=/run/netns/<ns>`
  mkdir -p /run/netns "$root/run/netns"
  if ! mountpoint -q /run/netns; then mount --bind /run/netns /run/netns; fi
  mount --make-shared /run/netns
  mountpoint -q "$root/run/netns" || mount --rbind /run/netns "$root/run/netns"
}

deps=/opt/ceph-recovery/deps   # the helper's and drill's Python dependencies (and Reef's bcrypt)
if [ -f "$root/.ready" ] && [ "$(cat "$root$deps/.requirements" 2>/dev/null)" = "${py_reqs[*]}" ]; then
  mount_api
  echo "$root"
  exit 0
fi

command -v debootstrap >/dev/null || {
  echo "chroot.sh: installing debootstrap" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q debootstrap >&2 || die "cannot install debootstrap"
}
[ -f "$script" ] || die "debootstrap script $script missing"
m=$(mirror)
start=$(date +%s)
if [ ! -x "$root/usr/bin/apt-get" ]; then
  rm -rf "$root.partial"
  echo "chroot.sh: debootstrap $suite from $m into $root" >&2
  debootstrap --variant=minbase "$suite" "$root.partial" "$m" "$script" >&2 \
    || die "debootstrap $suite failed (see output above; partial root left at $root.partial)"
  mv "$root.partial" "$root"
fi
mount_api
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
chroot "$root" env DEBIAN_FRONTEND=noninteractive dpkg --configure -a >&2 \
  || die "dpkg --configure -a failed in the $suite chroot"
echo "chroot.sh: installing ${ceph_pkgs[*]} into $root" >&2
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
  "${ceph_pkgs[@]}" >&2 \
  || die "apt-get install of ${ceph_pkgs[*]} in the $suite chroot failed"
ca=/etc/ssl/certs/ca-certificates.crt
if [ -f "$ca" ]; then mkdir -p "$root/$(dirname $ca)"; cp -L "$ca" "$root/$ca"; fi
rm -f "$root/.ready"
chroot "$root" python3 -m pip install -q --no-cache-dir "${pip_flags[@]}" --upgrade \
  --target "$deps" "${py_reqs[@]}" >&2 \
  || die "pip could not install ${py_reqs[*]} into $root$deps"
echo "${py_reqs[*]}" > "$root$deps/.requirements"
if [ "$release" = bullseye ]; then
  version=$(chroot "$root" python3 --version) || die "python3 --version fails inside the chroot"
else
  version=$(chroot "$root" ceph --version) || die "ceph --version fails inside the chroot"
fi
echo "$version" > "$root/.ready"
echo "chroot.sh: ready in $(( $(date +%s) - start )) s: $version" >&2
echo "$root"
