"""The two drills of docs/memory-model.md "What a restart costs service, on the lab",
on a Reef lab (ceph-recovery-lab up --dir /tmp/labq --ceph reef), in this order:
    python3 drill.py warm            # the module learns this workload's footprint
    python3 drill.py squeeze 0.5     # budget = predicted peak of the 2nd OSD + 0.5 x the 1st's
Kept as it ran (writes /tmp/p19/q-<name>.json)."""
import json, sys, time
from ceph_recovery_tools.lab import inrelease
from ceph_recovery_tools.lab.restore import restore
st = json.load(open('/tmp/labq/lab.json'))
name = sys.argv[1]
kw = dict(fail="host:h2", objects=20000, stop="kill", downtime=30, timeout=900, stall_limit=90.0,
          inactive_grace=120.0, concurrency="1")
if name == "squeeze":
    kw["fit_restart"] = float(sys.argv[2])
t0 = time.time()
try:
    r = inrelease.run_drill(st, "/tmp/p19/q-%s.json" % name, **kw)
finally:
    restore(st)
print(name, round(time.time() - t0), json.dumps({k: r.get(k) for k in ("peak_mem_bytes_by_host", "budget_bytes_by_host", "oom_kills_by_host", "process_starts_by_osd", "stalled", "time_to_all_up_s", "time_to_all_pgs_clean_s", "objects_written", "objects_verified_ok")}, default=str))
