"""Lab experiment: does booting an OSD right at its daemon's preboot (vs a few seconds later)
leave PGs inactive longer? h2's OSDs killed, noup set per OSD, writes while down, started, then
noup removed DELAY s after both report preboot; `pg stat` sampled every 0.5 s for 40 s.

    ceph-recovery-lab up --dir /tmp/labx --ceph tentacle
    .venv/bin/python docs/examples/boot-delay.py /tmp/labx 0,8,0,8
    ceph-recovery-lab down --dir /tmp/labx
"""
import json, os, signal, subprocess, sys, time
from ceph_recovery_tools.lab import launch, release
from ceph_recovery_tools.lab.state import load_state
from ceph_recovery_tools.helper import asok

d = sys.argv[1]; delays = [float(x) for x in sys.argv[2].split(",")]
st = load_state(d)
osds = sorted(st["hosts"]["h2"]["osds"])
rados = release.tool(st, "rados") + ["-c", st["conf"], "-p", "lab"]

def pgstat():
    s = launch.ceph(st, "pg", "stat", timeout=10)
    by = s.get("pg_summary", s).get("num_pg_by_state", [])
    total = s.get("pg_summary", s).get("num_pgs", 0)
    active = sum(x["num"] for x in by if "active" in x["name"].split("+"))
    return total, active

def status(o):
    return asok.osd_state(os.path.join(d, "run", "osd.%d.asok" % o), timeout=1.0)

def raw(o):
    try:
        return json.loads(asok.request(os.path.join(d, "run", "osd.%d.asok" % o), asok.STATUS_REQUEST, 1.0))
    except Exception as e:
        return str(e)

for delay in delays:
    launch.ceph(st, "osd", "set", "noout", json_out=False)
    for o in osds:
        launch.ceph(st, "osd", "add-noup", str(o), json_out=False)
        launch.stop_osd(st, o, sig=signal.SIGKILL)
    t0 = time.time()
    while any(o["up"] for o in launch.ceph(st, "osd", "dump")["osds"] if o["osd"] in osds):
        time.sleep(0.5)
    subprocess.run(rados + ["bench", "20", "write", "--no-cleanup", "-b", "65536", "-t", "8"],
                   capture_output=True, env=release.tool_env(st), timeout=120)
    for o in osds:
        launch.start_osd(st, o)
    ts = time.time(); seen = {}
    while len(seen) < len(osds) and time.time() - ts < 120:
        for o in osds:
            if o not in seen and status(o) == "preboot":
                seen[o] = time.time() - ts
        time.sleep(0.2)
    print("delay %.0f: preboot after %s s; status %s" % (delay, {o: round(v, 1) for o, v in seen.items()}, raw(osds[0])), flush=True)
    time.sleep(delay)
    epoch = launch.ceph(st, "osd", "dump")["epoch"]
    print("  before rm-noup: cluster epoch %d, status %s" % (epoch, raw(osds[0])), flush=True)
    tb = time.time()
    for o in osds:
        launch.ceph(st, "osd", "rm-noup", str(o), json_out=False)
    inactive_s = 0.0; last = time.time(); samples = []
    while time.time() - tb < 40:
        total, active = pgstat(); now = time.time()
        inactive_s += (total - active) * (now - last); last = now
        samples.append((round(now - tb, 1), total - active))
        time.sleep(0.5)
    print("  inactive PG-s %.1f; nonzero samples %s" % (inactive_s, [s for s in samples if s[1]][:12]), flush=True)
    launch.ceph(st, "osd", "unset", "noout", json_out=False)
    launch.wait_pgs_clean(st, 300)
