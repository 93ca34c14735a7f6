#!/bin/bash
# The boot gate under a real systemd as PID 1, without Ceph: a Debian bookworm container booted
# by systemd-nspawn, with the helper installed from this checkout's wheel, the repo's
# ceph-osd@.service.d gate drop-in, the helper unit, and a stand-in ceph-osd@.service template
# whose ExecStart is a sleep loop (the gate is under test, not ceph-osd). Prints one PASS/FAIL
# line per check and exits 1 if any check failed.
#
# Checks: systemd runs as PID 1 (is-system-running: running or degraded); a held OSD's start is
# skipped by ExecCondition= (unit inactive, "start condition failed"); once the helper's cached
# mgr instructions grant it, it starts; after `systemctl reboot` the held OSD stays down at boot
# while the granted one (enabled through ceph-osd.target) comes up.
#
# Usage (root, Debian 12 host): scripts/lab/systemd_gate.sh [--fresh] [--keep]
#   WORK (env, default /tmp/ceph-recovery-sdgate): $WORK/base is the debootstrapped rootfs,
#   built once and reused (--fresh rebuilds it); each run boots a copy, $WORK/root (removed at
#   the end unless --keep). Logs in $WORK/*.log.
# Needs root, debootstrap from a Debian mirror and systemd-nspawn (installed if missing). The
# integration tier runs it: tests/integration/test_systemd_gate.py.
#
# How systemd-nspawn runs on a host whose PID 1 is not systemd: --register=no --keep-unit.
# Without both, nspawn asks the host's system bus (machined registration, a transient scope
# unit) and stops with "Failed to open system bus: No such file or directory". With
# --keep-unit the container's cgroups are made under nspawn's own, so the script first moves
# itself into a cgroup of its own in the name=systemd and unified hierarchies and removes it at
# the end. A reboot inside the container ends nspawn with status 133; the boot loop starts it
# again on the same rootfs, as systemd-nspawn@.service does (RestartForceExitStatus=133).
set -uo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
WORK=${WORK:-/tmp/ceph-recovery-sdgate}
BASE=$WORK/base
ROOT=$WORK/root
MACHINE=sdgate
CG=ceph-recovery-sdgate
FRESH=0
KEEP=0
for a in "$@"; do
    case "$a" in
        --fresh) FRESH=1 ;;
        --keep) KEEP=1 ;;
        *) echo "usage: $0 [--fresh] [--keep]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 2; }

T0=$(date +%s)
FAILS=0
LOOP=""
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
say() { echo "--- $*"; }

need() {   # command, Debian package
    command -v "$1" >/dev/null || apt-get install -y -q "$2" >"$WORK/apt.log" 2>&1 \
        || { echo "cannot install $2 (see $WORK/apt.log)" >&2; exit 2; }
}
mkdir -p "$WORK"
need systemd-nspawn systemd-container
need debootstrap debootstrap
need nsenter util-linux

# -- cgroups of our own (see the header); hybrid/v1 and v2 hosts alike -------------------------
CGDIRS=()
for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified /sys/fs/cgroup; do
    if [ -f "$h/cgroup.procs" ] && { [ "$h" != /sys/fs/cgroup ] || [ -f "$h/cgroup.controllers" ]; }; then
        mkdir -p "$h/$CG" && echo $$ >"$h/$CG/cgroup.procs" && CGDIRS+=("$h")
    fi
done

leader() {   # host pid of the container's PID 1: the child of the running nspawn that is pid 1
    # of its own pid namespace (nspawn's short-lived outer child is not)
    local ns p
    ns=$(pgrep -P "$LOOP" -x systemd-nspawn 2>/dev/null | head -1)
    [ -n "$ns" ] || return 0
    for p in $(pgrep -P "$ns"); do
        awk '$1 == "NSpid:" && NF > 2 && $NF == 1 { ok = 1 } END { exit !ok }' \
            "/proc/$p/status" 2>/dev/null && { echo "$p"; return 0; }
    done
}
in_ct() {   # run a command inside the booted container (all its namespaces)
    local l; l=$(leader)
    [ -n "$l" ] || { echo "(no container)" >&2; return 125; }
    nsenter -t "$l" -a -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
}
nspawn_run() {   # a command in the rootfs, not booted (installation)
    systemd-nspawn -q -D "$ROOT" --register=no --keep-unit --pipe "$@"
}

cleanup() {
    if [ -n "$LOOP" ] && kill -0 "$LOOP" 2>/dev/null; then
        in_ct systemctl poweroff >/dev/null 2>&1
        for _ in $(seq 30); do kill -0 "$LOOP" 2>/dev/null || break; sleep 1; done
        local ns; ns=$(pgrep -P "$LOOP" -x systemd-nspawn | head -1)
        [ -n "$ns" ] && kill -TERM "$ns" && sleep 1 && kill -TERM "$ns" 2>/dev/null
        kill "$LOOP" 2>/dev/null
        wait "$LOOP" 2>/dev/null
    fi
    for h in "${CGDIRS[@]}"; do
        echo $$ >"$h/cgroup.procs"
        find "$h/$CG" -depth -type d -exec rmdir {} \; 2>/dev/null
    done
    [ "$KEEP" = 1 ] || rm -rf "$ROOT"
}
trap cleanup EXIT

# -- rootfs: Debian bookworm minbase with systemd, dbus, python3 and the helper's deps ----------
# The helper package's dependencies as on a real OSD host: python3-rados (the gate imports it;
# the mon is unreachable here) and procps (/bin/kill for the helper unit's ExecReload=).
PKGS=systemd,systemd-sysv,dbus,procps,python3,python3-venv,python3-psutil,python3-structlog,python3-tenacity,python3-rados
if [ "$FRESH" = 1 ] || [ ! -f "$BASE/.complete" ]; then
    say "debootstrap bookworm into $BASE (log $WORK/debootstrap.log)"
    rm -rf "$BASE"
    nice debootstrap --variant=minbase --include="$PKGS" bookworm "$BASE" \
        http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 \
        || { echo "debootstrap failed, see $WORK/debootstrap.log" >&2; exit 2; }
    touch "$BASE/.complete"
fi
rm -rf "$ROOT"
cp -a "$BASE" "$ROOT"
echo "$MACHINE" >"$ROOT/etc/hostname"

# -- the helper, as docs/helper.md installs it from the wheel (deps from Debian packages) ------
say "wheel of $REPO"
rm -rf "$WORK/whl"
(cd /tmp && nice python3 -m pip wheel -q --no-deps -w "$WORK/whl" "$REPO") >"$WORK/wheel.log" 2>&1 \
    || { echo "pip wheel failed, see $WORK/wheel.log" >&2; exit 2; }
# not under /tmp: nspawn mounts a tmpfs there
mkdir -p "$ROOT/var/tmp/whl" && cp "$WORK"/whl/*.whl "$ROOT/var/tmp/whl/"
nspawn_run /bin/sh -ec '
    python3 -m venv --system-site-packages /opt/ceph-recovery
    /opt/ceph-recovery/bin/pip install -q --no-deps --no-index /var/tmp/whl/*.whl
    rm -r /var/tmp/whl
    ln -sf /opt/ceph-recovery/bin/ceph-recovery-helper /usr/bin/ceph-recovery-helper' \
    >"$WORK/install.log" 2>&1 || { echo "install failed, see $WORK/install.log" >&2; exit 2; }

# -- units where the packages put them: the stand-in ceph-osd@ (as Debian's ceph-osd ships it,
# with a sleep loop for ceph-osd), the gate drop-in and the helper unit from this repo ----------
U=$ROOT/lib/systemd/system
cat >"$U/ceph-osd@.service" <<'EOF'
# Stand-in for Debian's ceph-osd@.service: same dependencies and CLUSTER environment (the gate
# drop-in's paths use ${CLUSTER}); ExecStart is a sleep loop instead of ceph-osd.
[Unit]
Description=stand-in Ceph object storage daemon osd.%i
After=network-online.target local-fs.target time-sync.target
Wants=network-online.target local-fs.target time-sync.target
PartOf=ceph-osd.target
Before=ceph-osd.target

[Service]
Environment=CLUSTER=ceph
ExecStart=/bin/sh -c 'while :; do sleep 3600; done'
Restart=on-failure
StartLimitBurst=3

[Install]
WantedBy=ceph-osd.target
EOF
cat >"$U/ceph-osd.target" <<'EOF'
[Unit]
Description=ceph target allowing to start/stop all ceph-osd@.service instances at once
PartOf=ceph.target
Before=ceph.target

[Install]
WantedBy=multi-user.target ceph.target
EOF
cat >"$U/ceph.target" <<'EOF'
[Unit]
Description=ceph target allowing to start/stop all ceph*@.service instances at once

[Install]
WantedBy=multi-user.target
EOF
install -D -m 644 "$REPO/scripts/systemd/ceph-osd@.service.d/ceph-recovery-gate.conf" \
    "$U/ceph-osd@.service.d/ceph-recovery-gate.conf"
install -m 644 "$REPO/scripts/systemd/ceph-recovery-helper.service" "$U/"
# A cluster whose monitor does not answer: nothing listens on 127.0.0.1:3300 and the container
# has a private network, so the gate decides from the helper's cache, as at a boot with the
# monitors down. The key is well-formed and random (no cluster knows it).
mkdir -p "$ROOT/etc/ceph"
cat >"$ROOT/etc/ceph/ceph.conf" <<'EOF'
[global]
fsid = 00000000-0000-4000-8000-000000000001
mon_host = v2:127.0.0.1:3300
EOF
KEY=$(python3 -c 'import base64,os,struct;print(base64.b64encode(struct.pack("<HIIH",1,0,0,16)+os.urandom(16)).decode())')
printf '[client.recovery-helper]\n\tkey = %s\n' "$KEY" >"$ROOT/etc/ceph/ceph.client.recovery-helper.keyring"
chmod 600 "$ROOT/etc/ceph/ceph.client.recovery-helper.keyring"

# -- boot ---------------------------------------------------------------------------------------
BOOTS=0
boot_loop() {
    while :; do
        systemd-nspawn -D "$ROOT" -M "$MACHINE" --boot --register=no --keep-unit \
            --private-network --console=pipe </dev/null >>"$WORK/nspawn.log" 2>&1
        rc=$?
        echo "systemd-nspawn exited with status $rc" >>"$WORK/nspawn.log"
        [ "$rc" = 133 ] || break    # 133: the container rebooted
    done
}
wait_booted() {   # previous leader pid (or ""): wait for a new PID 1 and its boot to finish
    local old=$1 l="" st=""
    for _ in $(seq 60); do
        l=$(leader); [ -n "$l" ] && [ "$l" != "$old" ] && break; sleep 1
    done
    [ -n "$l" ] && [ "$l" != "$old" ] || { echo "no container PID 1" >&2; return 1; }
    # systemctl answers "offline" until PID 1 has made /run/systemd/system, and "Failed to
    # connect to bus" until PID 1 listens on /run/systemd/private: on a loaded host both come
    # seconds after PID 1 exists, so wait for the socket and retry until systemctl gets through.
    for _ in $(seq 60); do [ -S "/proc/$l/root/run/systemd/private" ] && break; sleep 1; done
    for _ in $(seq 30); do
        st=$(timeout 90 nsenter -t "$l" -a -- systemctl is-system-running --wait 2>&1)
        case "$st" in "Failed to connect"*|offline|"") sleep 2 ;; *) break ;; esac
    done
    echo "$st"
}
say "boot: systemd-nspawn --boot (log $WORK/nspawn.log)"
: >"$WORK/nspawn.log"
boot_loop &
LOOP=$!
ST=$(wait_booted "")
L1=$(leader)
PID1=$(in_ct cat /proc/1/comm 2>/dev/null)
echo "systemctl is-system-running: $ST; PID 1 in the container: $PID1 (host pid $L1)"
if [ "$PID1" = systemd ] && { [ "$ST" = running ] || [ "$ST" = degraded ]; }; then
    pass "systemd is PID 1 in the container, is-system-running: $ST"
else
    fail "systemd as PID 1: is-system-running '$ST', PID 1 '$PID1'"
    tail -20 "$WORK/nspawn.log"
    exit 1
fi
in_ct systemctl --version | head -1

say "units: systemd-analyze verify, enable ceph-osd@0 and ceph-osd@1 for boot"
V=$(in_ct systemd-analyze verify ceph-osd@0.service ceph-recovery-helper.service 2>&1)
if [ -z "$V" ]; then
    pass "systemd-analyze verify ceph-osd@0.service (with the gate drop-in) and ceph-recovery-helper.service: no warnings"
else
    echo "$V" | sed 's/^/    /'
    fail "systemd-analyze verify warns"
fi
in_ct systemctl enable ceph-osd.target ceph-osd@0.service ceph-osd@1.service 2>&1

# The helper's cache as the helper leaves it: the view of this host's OSDs with its CRUSH host
# h1 held (`ceph osd set-group noup h1`), written with the helper's own state code.
state() {   # python statements run with StateDir S, gate, time imported
    in_ct /opt/ceph-recovery/bin/python3 -c "
import time
from ceph_recovery_tools.helper import gate
from ceph_recovery_tools.helper.state import StateDir
S = StateDir('/var/lib/ceph-recovery').ensure()
$1"
}
state "
dump = {'epoch': 42, 'crush_node_flags': {'h1': ['noup']},
        'osds': [{'osd': 0, 'up': 0, 'in': 1, 'state': ['exists']},
                 {'osd': 1, 'up': 0, 'in': 1, 'state': ['exists']}]}
tree = {'nodes': [{'id': -1, 'name': 'default', 'type': 'root', 'children': [-2]},
                  {'id': -2, 'name': 'h1', 'type': 'host', 'children': [0, 1]},
                  {'id': 0, 'name': 'osd.0', 'type': 'osd'},
                  {'id': 1, 'name': 'osd.1', 'type': 'osd'}]}
d, t = gate.trim_view([0, 1], dump, tree)
S.save_view(d, t, 'h1', [0, 1], time.time())
S.save_instructions({'epoch': 42, 'grants': [], 'held': [0, 1], 'instructions': []}, time.time())
" || fail "writing the helper's state"
echo "gate by hand: $(in_ct ceph-recovery-helper gate 0 --timeout 2 2>/dev/null | tail -1)"

show() {   # unit: status and the state properties
    in_ct systemctl status --no-pager -n 5 "$1" 2>&1 | sed 's/^/    /'
    in_ct systemctl show -p ActiveState -p SubState -p ConditionResult -p ExecMainPID "$1" \
        | sed 's/^/    /'
}
held_ok() {   # unit: inactive, and the last start skipped by the condition
    local u=$1 a s
    a=$(in_ct systemctl show -P ActiveState "$u")
    s=$(in_ct systemctl status --no-pager "$u" 2>&1)
    [ "$a" = inactive ] && grep -q "start condition failed" <<<"$s"
}

say "check: held osd.0, systemctl start ceph-osd@0"
in_ct systemctl start ceph-osd@0.service; echo "systemctl start exit status: $?"
show ceph-osd@0.service
if held_ok ceph-osd@0.service; then
    pass "held osd.0: start skipped by ExecCondition (inactive, start condition failed)"
else
    fail "held osd.0 was not refused by ExecCondition"
fi

say "check: the mgr grants osd.0 (cached instructions), systemctl start ceph-osd@0"
state "S.save_instructions({'epoch': 42, 'grants': [0], 'held': [1], 'instructions': []}, time.time())" \
    || fail "writing the grant"
in_ct systemctl start ceph-osd@0.service; echo "systemctl start exit status: $?"
show ceph-osd@0.service
if [ "$(in_ct systemctl is-active ceph-osd@0.service)" = active ]; then
    pass "granted osd.0 starts (active)"
else
    fail "granted osd.0 did not start"
fi

say "check: systemctl reboot; osd.1 (held, enabled) must stay down at boot, osd.0 (granted) up"
in_ct systemctl reboot
ST=$(wait_booted "$L1")
L2=$(leader)
echo "after reboot: is-system-running: $ST (PID 1 host pid $L1 -> $L2)"
grep "exited with status" "$WORK/nspawn.log" | sed 's/^/    /'
in_ct journalctl --list-boots --no-pager 2>&1 | sed 's/^/    /'
show ceph-osd@1.service
in_ct journalctl -b -u ceph-osd@1.service --no-pager -o cat 2>&1 | sed 's/^/    journal: /'
show ceph-osd@0.service
if [ -n "$L2" ] && [ "$L2" != "$L1" ] && { [ "$ST" = running ] || [ "$ST" = degraded ]; }; then
    pass "container rebooted (new PID 1, is-system-running: $ST)"
else
    fail "container reboot: is-system-running '$ST'"
fi
if held_ok ceph-osd@1.service && [ "$(in_ct journalctl -b -q -u ceph-osd@1.service \
        | grep -c 'osd.1 held')" -ge 1 ]; then
    pass "after reboot the held osd.1 stays down: the boot's start skipped by ExecCondition"
else
    fail "after reboot osd.1 is not held"
fi
if [ "$(in_ct systemctl is-active ceph-osd@0.service)" = active ]; then
    pass "after reboot the granted osd.0 started at boot"
else
    fail "after reboot the granted osd.0 is not active"
fi

# A container shares the host's boot time (/proc/stat btime), so the cache written above still
# counts as "this boot" after the container's reboot. On a real host a power loss leaves a cache
# from before the boot: the gate holds on it whatever it shows (source stale-cache). Same here
# with a view saved before the boot time that shows no flag at all.
say "check: a cached view from before this boot (no noup in it) holds osd.1"
state "
import psutil
d = {'epoch': 41, 'crush_node_flags': {},
     'osds': [{'osd': 0, 'state': ['exists', 'up']}, {'osd': 1, 'state': ['exists', 'up']}]}
t = {'nodes': [{'id': -2, 'name': 'h1', 'type': 'host', 'children': [0, 1]},
               {'id': 0, 'name': 'osd.0', 'type': 'osd'}, {'id': 1, 'name': 'osd.1', 'type': 'osd'}]}
S.save_view(d, t, 'h1', [0, 1], psutil.boot_time() - 60)
S.save_instructions({'epoch': 41, 'grants': [], 'held': [], 'instructions': []}, psutil.boot_time() - 60)
" || fail "writing the pre-boot cache"
in_ct systemctl start ceph-osd@1.service; echo "systemctl start exit status: $?"
show ceph-osd@1.service
if held_ok ceph-osd@1.service && in_ct journalctl -q -u ceph-osd@1.service -n 5 -o cat \
        | grep -q '"source": "stale-cache"'; then
    pass "a cache from before this boot holds osd.1 (stale-cache)"
else
    fail "a cache from before this boot did not hold osd.1"
fi

echo "wall time: $(( $(date +%s) - T0 )) s"
if [ "$FAILS" = 0 ]; then echo "PASS: all checks"; else echo "FAIL: $FAILS check(s)"; exit 1; fi
