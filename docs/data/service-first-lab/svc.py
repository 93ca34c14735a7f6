"""Service-first on a real lab: two of three hosts lose power, every PG drops below min_size;
a controlled start (--start-order ORDER --concurrency C) brings PGs to min_size first.
python3 svc.py LABDIR ORDER CONC OUT.json"""
import json, subprocess, sys, threading, time
from ceph_recovery_tools.lab import launch, release

lab, order, conc, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
st = json.load(open(lab + "/lab.json"))
hosts = sorted(st["hosts"])
down_hosts = hosts[1:]
print("hosts", {h: st["hosts"][h]["osds"] for h in hosts}, "pool", st["pool"])
rados = release.tool(st, "rados") + ["-c", st["conf"], "-p", st["pool"]]
p = subprocess.run(rados + ["bench", "15", "write", "--no-cleanup", "-b", "65536", "-t", "4"],
                   capture_output=True, text=True, env=release.tool_env(st), timeout=120)
print("bench rc", p.returncode, p.stdout.strip().splitlines()[-1:] if p.stdout else p.stderr[-300:])

samples = []
stop = threading.Event()


def sample():
    while not stop.is_set():
        try:
            s = launch.ceph(st, "pg", "stat", timeout=10)
            m = launch.ceph(st, "osd", "dump", timeout=10)
            n = s.get("pg_summary", s).get("num_pgs") if isinstance(s, dict) else None
            states = {x["name"]: x["num"] for x in (s.get("pg_summary", s).get("num_pg_by_state") or [])}
            up = sorted(o["osd"] for o in m["osds"] if o["up"])
            samples.append({"t": time.time(), "pgs": n, "states": states, "up": up})
        except Exception as e:  # noqa: BLE001 - a sample lost is a sample lost
            samples.append({"t": time.time(), "error": str(e)[:200]})
        stop.wait(1.0)


for h in down_hosts:
    launch.ceph(st, "recovery", "hold", h, json_out=False)
time.sleep(6)
for h in down_hosts:
    print("killed", h, launch.kill_host(st, h))
th = threading.Thread(target=sample, daemon=True)
th.start()
t_kill = time.time()
deadline = time.time() + 120
while time.time() < deadline:
    m = launch.ceph(st, "osd", "dump")
    if all(not o["up"] for o in m["osds"] if any(o["osd"] in st["hosts"][h]["osds"] for h in down_hosts)):
        break
    time.sleep(1)
time.sleep(8)
print("pg stat while down:", json.dumps(launch.ceph(st, "pg", "stat"))[:400])
dry = launch.ceph(st, "recovery", "start-controlled", "--start-order", order, "--concurrency", conc,
                  "--dry-run", json_out=False)
print("dry run:\n" + dry[:2000])
t0 = time.time()
launch.ceph(st, "recovery", "start-controlled", "--start-order", order, "--concurrency", conc,
            json_out=False)
for h in down_hosts:
    launch.ceph(st, "recovery", "release", h, json_out=False)
deadline = time.time() + 420
status = {}
while time.time() < deadline:
    status = launch.ceph(st, "recovery", "status")
    if status.get("phase") in ("done", "aborted"):
        break
    time.sleep(2)
time.sleep(3)
stop.set()
th.join(5)
text = launch.ceph(st, "recovery", "status", json_out=False)
json.dump({"order": order, "concurrency": conc, "t_kill": t_kill, "t_start": t0,
           "status": status, "samples": samples, "status_text": text}, open(out, "w"), indent=1)
print(text[:3000])
for j in status.get("journal") or []:
    a = j.get("action") or {}
    if j.get("time", 0) >= t0 - 1 and a.get("kind") in ("grant_start", "allow_boot", "set_config",
                                                         "restore_config", "rm_noup", "set_noup"):
        print("+%6.1f %s %s %s" % (j["time"] - t0, a.get("kind"), a.get("osd", a.get("who", "")),
                                   (a.get("reason") or "")[:200]))
print("summary", json.dumps(status.get("summary"))[:600])
for s in samples:
    if s.get("states") is not None and s["t"] > t0 - 2 and s["t"] < t0 + 120:
        inactive = sum(v for k, v in s["states"].items() if "active" not in k.split("+"))
        print("  %+6.1f up %s inactive %d %s" % (s["t"] - t0, s["up"], inactive,
                                                 ",".join("%s=%d" % kv for kv in sorted(s["states"].items()))[:160]))
