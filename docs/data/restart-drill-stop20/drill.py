"""Make-room restart of a returning OSD still recovering, on a Pacific lab (wpq: the
recovery sleep applies): ceph-recovery-lab up --dir /tmp/labr, then
    python3 drill.py warm 0             # the module learns this workload's footprint
    python3 drill.py squeeze 0.05 0.5   # recovery spaced 0.05 s per op; budget = 2nd + 0.5 x 1st
Reports in /tmp/p20/r-<name>.json."""
import json, sys, time
from ceph_recovery_tools.lab import inrelease
from ceph_recovery_tools.lab.restore import restore
st = json.load(open('/tmp/labr/lab.json'))
name, sleep = sys.argv[1], float(sys.argv[2])
kw = dict(fail="host:h2", objects=20000, stop="kill", downtime=30, timeout=900, stall_limit=90.0,
          inactive_grace=120.0, concurrency="1", recovery_sleep=sleep)
if len(sys.argv) > 3:
    kw["fit_restart"] = float(sys.argv[3])
t0 = time.time()
try:
    r = inrelease.run_drill(st, "/tmp/p20/r-%s.json" % name, **kw)
finally:
    restore(st)
print(name, round(time.time() - t0), json.dumps({k: r.get(k) for k in ("peak_mem_bytes_by_host", "budget_bytes_by_host", "oom_kills_by_host", "process_starts_by_osd", "restarts", "stalled", "outcome", "inactive_pg_seconds", "time_to_all_up_s", "time_to_all_pgs_active_s", "time_to_all_pgs_clean_s", "objects_written", "objects_verified_ok")}, default=str))
