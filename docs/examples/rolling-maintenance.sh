#!/bin/sh
# Rolling maintenance of one CRUSH rack: each host in turn goes into a maintenance window
# (refused unless `ok-to-stop` clears it: then the script stops, changing nothing), is
# "patched", and comes back by a controlled start under a memory budget, before the next
# host goes.
#
#   docs/examples/rolling-maintenance.sh RACK [BUDGET]
#
# Environment:
#   CEPH    the ceph command with its options (default: ceph), e.g. "ceph -c /tmp/lab/ceph.conf"
#   PATCH   what to run on each host while it is down, with the host name as its argument
#           (default: a no-op); e.g. PATCH='ssh -n' with a remote command after it
#   REASON  the windows' reason (default: "rolling maintenance of RACK")
#
# Exit status: 0 when every host came back; otherwise that of the failing step, with
# `ceph recovery maintenance ls` telling where the rack stands (a window left open stays held,
# with noout set, until `ceph recovery maintenance exit HOST`).
set -eu

RACK=${1:?usage: rolling-maintenance.sh RACK [BUDGET]}
BUDGET=${2:-80%}
CEPH=${CEPH:-ceph}
PATCH=${PATCH:-true}
REASON=${REASON:-"rolling maintenance of $RACK"}

# `ceph recovery wait` answers at once: ETIMEDOUT (110) while the window's enter (its
# ok-to-stop, then the stops) or exit is still going; poll until it answers something else.
# EBUSY (16) after `enter`: ok-to-stop refused the host, nothing was changed.
wait_end() {
    while :; do
        rc=0
        $CEPH recovery wait || rc=$?
        [ "$rc" -eq 110 ] || return "$rc"
        sleep 2
    done
}

hosts=$($CEPH osd tree -f json | python3 -c '
import json, sys
rack = sys.argv[1]
nodes = {n["id"]: n for n in json.load(sys.stdin)["nodes"]}
for n in nodes.values():
    if n["name"] == rack and n["type"] != "osd":
        for c in n.get("children", []):
            if nodes[c]["type"] == "host":
                print(nodes[c]["name"])
        break
else:
    sys.exit("no CRUSH bucket named %s" % rack)
' "$RACK")
[ -n "$hosts" ] || { echo "rack $RACK has no host" >&2; exit 2; }

start_all=$(date +%s)
for host in $(echo "$hosts" | sort); do
    t0=$(date +%s)
    echo "== $host: enter"
    $CEPH recovery maintenance enter "$host" --reason "$REASON" --max-duration 1h
    wait_end
    echo "== $host: patch"
    $PATCH "$host"
    echo "== $host: exit (budget $BUDGET)"
    $CEPH recovery maintenance exit "$host" --budget "$BUDGET"
    wait_end
    echo "== $host: back in $(( $(date +%s) - t0 )) s"
done
echo "rack $RACK: $(echo "$hosts" | wc -l) host(s) in $(( $(date +%s) - start_all )) s"
