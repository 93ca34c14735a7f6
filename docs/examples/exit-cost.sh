#!/bin/sh
# What a start-everything exit costs against the controlled exit, in inactive PG-seconds,
# measured in one run on the same bucket with two drills:
#   1. `drill start --fail HOST --downtime D --write-load N`: the bucket comes back by the
#      controlled start (the maintenance exit's path);
#   2. the same drill with a long downtime, aborted after D seconds down: `drill abort`
#      starts every OSD of the bucket at once (what `ceph orch host maintenance exit` does).
# A sampler asks `ceph pg stat` every 0.5 s through both drills. For each drill, from the
# moment the bucket starts coming back (the exit's start, or the abort) to SETTLE seconds
# after the drill's end, it sums (PGs - active PGs) x the time to the next sample, and keeps
# the most PGs inactive at once. The drill's own `inactive_pg_seconds` (its timeline, which
# ends with the drill) is printed beside it. PG states come from the mgr's PG map, which the
# OSDs refresh every few seconds: a peering shows for at least that long.
#
#   docs/examples/exit-cost.sh HOST [DOWNTIME_SECONDS] [WRITE_LOAD] [SETTLE_SECONDS]
#
# Environment: CEPH as in rolling-maintenance.sh. Needs mon_allow_pool_delete=true in the
# monitors' config (the drills' write load removes its pool at the end).
set -eu

HOST=${1:?usage: exit-cost.sh HOST [DOWNTIME_SECONDS] [WRITE_LOAD] [SETTLE_SECONDS]}
DOWNTIME=${2:-30}
LOAD=${3:-20}
SETTLE=${4:-15}
CEPH=${CEPH:-ceph}
SAMPLES=$(mktemp)

wait_end() {
    while :; do
        rc=0
        $CEPH recovery wait >/dev/null 2>&1 || rc=$?
        [ "$rc" -eq 110 ] || return 0
        sleep 2
    done
}

phase() {
    $CEPH recovery drill report -f json | python3 -c 'import json, sys
print(json.load(sys.stdin)["phase"])'
}

cost() {    # cost LABEL: the latest drill, measured from the sampler's file
    $CEPH recovery drill report -f json | python3 -c '
import json, sys
r, label = json.load(sys.stdin), sys.argv[2]
back, end = r["exit_at"] or r["aborted_at"], r["ended_at"] + float(sys.argv[3])
rows = [tuple(float(x) for x in line.split()) for line in open(sys.argv[1]) if line.strip()]
rows = [x for x in rows if back <= x[0] <= end]
pgs = sum((b[0] - a[0]) * (a[1] - a[2]) for a, b in zip(rows, rows[1:]))
most = max([(int(x[1] - x[2]), int(x[1])) for x in rows] or [(0, 0)])
w = r["write_load"] or {}
t_back = back - r["started_at"]
p99 = [s["write_p99_ms"] for s in r["timeline"] if s["t"] >= t_back and s["write_p99_ms"]]
print("%s: %s, all up after %ss; sampled %.1f inactive PG-seconds, at most %d of %d PGs "
      "inactive at once (%d samples); the drill timeline: %s; write p99 after the return at "
      "most %s ms; objects verified %s, bad %s"
      % (label, r["outcome"], r["time_to_all_up_s"] if r["exit_at"] else
         round(r["up_at"] - r["aborted_at"], 1), pgs, most[0], most[1], len(rows),
         r["inactive_pg_seconds"], max(p99) if p99 else None, w.get("objects_verified"),
         w.get("objects_bad")))
' "$SAMPLES" "$1" "$SETTLE"
}

python3 - "$SAMPLES" $CEPH <<'EOF' &
import json, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
while True:
    t = time.time()
    try:
        s = json.loads(subprocess.run(cmd + ["pg", "stat", "-f", "json"], timeout=10,
                                      capture_output=True, text=True).stdout)
        s = s.get("pg_summary", s)
        act = sum(x["num"] for x in s["num_pg_by_state"] if "active" in x["name"].split("+"))
        with open(out, "a") as f:
            f.write("%.2f %d %d\n" % (t, s["num_pgs"], act))
    except (ValueError, KeyError, subprocess.SubprocessError):
        pass
    time.sleep(max(0.0, 0.5 - (time.time() - t)))
EOF
SAMPLER=$!
trap 'kill $SAMPLER 2>/dev/null; rm -f "$SAMPLES"' EXIT

t0=$(date +%s)
echo "== controlled exit: $HOST down for ${DOWNTIME}s, $LOAD objects/s"
$CEPH recovery drill start --fail "$HOST" --downtime "${DOWNTIME}s" --write-load "$LOAD"
wait_end
sleep "$SETTLE"
controlled=$(cost "controlled exit")

echo "== start-everything exit: $HOST down for ${DOWNTIME}s, then drill abort"
$CEPH recovery drill start --fail "$HOST" --downtime 1h --write-load "$LOAD"
while [ "$(phase)" != down ]; do sleep 1; done
sleep "$DOWNTIME"
$CEPH recovery drill abort
wait_end
sleep "$SETTLE"
everything=$(cost "start-everything exit")

echo "$controlled"
echo "$everything"
echo "both drills in $(( $(date +%s) - t0 )) s"
