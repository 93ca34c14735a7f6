"""Predicted peak at grant vs the peak each OSD then reached, in one simulator cell (one rack
down 1 h, seed 1): the prediction is read from the grant's journal line, the real peak from the
model's OSD after the run.

    .venv/bin/python docs/examples/prediction-error.py HOSTS RAM_GIB controlled|oracle [BUDGET]
    .venv/bin/python docs/examples/prediction-error.py 100 64 controlled
"""
import re, sys, statistics, io
from ceph_recovery_tools.sim.cli import parser, build_params
from ceph_recovery_tools.sim.engine import RunConfig, Sim
from ceph_recovery_tools.sim.strategies import make
from ceph_recovery_tools.sim.topology import load
hosts, ram, strat = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
budget = float(sys.argv[4]) if len(sys.argv) > 4 else (0.95 if strat == "oracle" else 0.9)
args = parser().parse_args(["--osds", str(hosts*12), "--hosts", str(hosts), "--racks", str(hosts//10),
                            "--host-ram", str(ram*2**30), "--seed", "1", "--horizon", "21600"])
topo = load(args.osds, args.hosts, args.racks, args.pg_bits)
cfg = RunConfig(strategy=strat, fail="rack:1", downtime_s=3600, horizon_s=21600, tick_s=5.0,
                budget=budget, host_ram=ram*2**30, seed=1)
st = make(cfg); buf = io.StringIO(); st.trace = buf
sim = Sim(topo, build_params(args), cfg, st)
res = sim.run()
import json
grants = {}
for line in buf.getvalue().splitlines():
    t = json.loads(line)
    for a in t["actions"]:
        m = re.match(r"grant_start osd\.(\d+): .*predicted (\d+) MiB", a)
        if m and int(m.group(1)) not in grants:
            grants[int(m.group(1))] = (t["t"], int(m.group(2)) * 2**20)
errs = []
for oid, (t, pred) in sorted(grants.items()):
    real = sim.cl.osds[oid].run_peak
    errs.append(pred / real - 1)
errs.sort()
print(strat, hosts, ram, "active", res["time_to_all_pgs_active_s"], "oom", res["oom_kills"],
      "n", len(errs), "pred/real-1: min %.2f p10 %.2f med %.2f p90 %.2f max %.2f" % (
      errs[0], errs[len(errs)//10], statistics.median(errs), errs[9*len(errs)//10], errs[-1]))
by = {}
for oid, (t, pred) in sorted(grants.items()):
    real = sim.cl.osds[oid].run_peak
    by.setdefault(int(t // 100) * 100, []).append((pred / 2**30, real / 2**30))
for t in sorted(by):
    v = by[t]
    print("  grants at %4d-%4d s: n %3d  pred med %.2f GiB  real med %.2f GiB  ratio med %.2f" % (
        t, t + 99, len(v), statistics.median(p for p, r in v), statistics.median(r for p, r in v),
        statistics.median(p / r for p, r in v)))
