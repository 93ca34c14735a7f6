#!/usr/bin/env bash
# The hosts x RAM sweep's cells (one rack down 1 h; 30, 100, 500 hosts of 12 OSDs; 40-64 GiB per host)
# x seeds 1-3, controlled with default settings, on OSDs built without tcmalloc
# (--no-heap-release: Debian's 16.2.15 build). One line per run:
#   seed hosts GiB  all-PGs-active-s  oom-kills  peak/budget  peak-at-s  restarts  inactive  down
#   in-run-peak/budget
# then the sum of the times of the runs that got all PGs active. peak/budget is the largest
# host's over the whole simulation (at 0 s: a healthy host before the outage; after plan()
# said Done: caches refilling with the run over); in-run-peak/budget until plan() said Done.
# A baseline from another commit in the same session:
#   git archive <commit> orchestrator policies scripts | tar -x -C /tmp/base && cd /tmp/base &&
#   mv orchestrator ceph_recovery && mv policies ceph_recovery/policies &&
#   mv scripts ceph_recovery_tools
#   PYTHONPATH=/tmp/base docs/examples/no-tcmalloc-sweep.sh
# About 5 minutes on 2 cores.
set -euo pipefail
sim=${CEPH_RECOVERY_SIM:-ceph-recovery-sim}
export sim
for seed in 1 2 3; do for hosts in 30 100 500; do for gib in 40 44 48 56 64; do
  echo "$seed $hosts $gib"
done; done; done | xargs -P 2 -n 3 sh -c '
  "$sim" --osds $(($1 * 12)) --hosts $1 --racks $(($1 / 10)) --fail rack:1 --downtime 3600 \
    --host-ram $(($2 * 1073741824)) --strategy controlled --seed $0 --horizon 21600 \
    --no-heap-release --json | python3 -c "
import json, sys
r = json.load(sys.stdin)
print(sys.argv[1], sys.argv[2], sys.argv[3], r[\"time_to_all_pgs_active_s\"], r[\"oom_kills\"],
      r[\"peak_host_mem_over_budget\"], r[\"peak_time_s\"], r[\"restarts\"],
      r[\"pgs_inactive_at_end\"], r[\"osds_down_at_end\"], r[\"peak_in_run_over_budget\"])" $0 $1 $2' | sort -n -k1 -k2 -k3 |
  tee /dev/stderr | awk '$4 != "None" {s += $4; n++} END {print "sum", s, "over", n, "runs"}'
