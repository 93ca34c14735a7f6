#!/bin/sh
# What a start-everything exit costs against the controlled exit, in inactive PG-seconds,
# measured in one run on the same bucket with two drills:
#   1. `drill start --fail HOST --downtime D --write-load N`: the bucket comes back by the
#      controlled start (the maintenance exit's path);
#   2. the same drill with a long downtime, aborted once the bucket is down: `drill abort`
#      starts every OSD of the bucket at once (what `ceph orch host maintenance exit` does).
# Each drill's report integrates (PGs total - PGs active) over its timeline from the moment
# the bucket starts coming back to the drill's end (with a write load the drill ends only
# once every PG is active again: its objects are verified then). The timeline's resolution
# is the module's tick: the script sets tick_interval to 0.5 s and restores it.
#
#   docs/examples/exit-cost.sh HOST [DOWNTIME_SECONDS] [WRITE_LOAD]
#
# Environment: CEPH as in rolling-maintenance.sh. Needs mon_allow_pool_delete=true in the
# monitors' config (the drills' write load removes its pool at the end).
set -eu

HOST=${1:?usage: exit-cost.sh HOST [DOWNTIME_SECONDS] [WRITE_LOAD]}
DOWNTIME=${2:-30}
LOAD=${3:-20}
CEPH=${CEPH:-ceph}

wait_end() {
    while :; do
        rc=0
        $CEPH recovery wait --timeout 2 >/dev/null 2>&1 || rc=$?
        [ "$rc" -eq 110 ] || return 0
    done
}

field() {   # field NAME: from the latest drill's report
    $CEPH recovery drill report -f json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(r.get(sys.argv[1]) if sys.argv[1] in r else r["write_load"][sys.argv[1][6:]])' "$1"
}

cost() {    # the latest drill's inactive PG-seconds and most PGs inactive at once, from
            # the bucket's return (the exit's start or the abort) to the drill's end
    $CEPH recovery drill report -f json | python3 -c '
import json, sys
r = json.load(sys.stdin)
back = (r["exit_at"] or r["aborted_at"]) - r["started_at"]
most = max([(s["pgs_total"] - s["pgs_active"], s["pgs_total"]) for s in r["timeline"]
            if s["t"] >= back] or [(0, 0)])
print("%s inactive PG-seconds, at most %d of %d PGs inactive at once" % (
    r["inactive_pg_seconds"], most[0], most[1]))'
}

restore_tick() { $CEPH config rm mgr mgr/recovery/tick_interval; }
trap restore_tick EXIT
$CEPH config set mgr mgr/recovery/tick_interval 0.5

t0=$(date +%s)
echo "== controlled exit: $HOST down for ${DOWNTIME}s, $LOAD objects/s"
$CEPH recovery drill start --fail "$HOST" --downtime "${DOWNTIME}s" --write-load "$LOAD"
wait_end
controlled=$(cost)
c_outcome=$(field outcome)
c_up=$(field time_to_all_up_s)
c_bad=$(field write_objects_bad)

echo "== start-everything exit: $HOST down, then drill abort"
$CEPH recovery drill start --fail "$HOST" --downtime 1h --write-load "$LOAD"
while [ "$(field phase)" != down ]; do sleep 1; done
sleep "$DOWNTIME"
$CEPH recovery drill abort
wait_end
everything=$(cost)
e_bad=$(field write_objects_bad)

echo "controlled exit ($c_outcome, all up after ${c_up}s): $controlled"
echo "start-everything exit: $everything"
echo "objects bad: $c_bad / $e_bad; both drills in $(( $(date +%s) - t0 )) s"
