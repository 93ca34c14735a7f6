"""analyze.py RUNDIR: per-OSD per-phase table from samples.jsonl, pgstate histories and OSD logs."""
import datetime, glob, json, os, re, sys

run = sys.argv[1]
LOG = os.environ.get('LAB', '/tmp/rr/lab') + '/log/osd.%d.log'
rows = [json.loads(l) for l in open(os.path.join(run, 'samples.jsonl'))]
ev = [r for r in rows if r['kind'] == 'event']
rss = [r for r in rows if r['kind'] == 'rss']
cs = [r for r in rows if r['kind'] == 'ceph']
M = 2 ** 20


def ts(s):
    return datetime.datetime.strptime(s[:23], '%Y-%m-%dT%H:%M:%S.%f').replace(
        tzinfo=datetime.timezone.utc).timestamp()


def boot_times(o):
    out = []
    for path in sorted(glob.glob(LOG % o + '*')):
        if path.endswith('.stdio'):
            continue
        for line in open(path, errors='replace'):
            if 'state: booting -> active' in line:
                out.append(ts(line.split()[0]))
    return sorted(out)


def rss_series(o, w0, w1):
    return [(r['wall'], r['osds'][str(o)]['rss']) for r in rss
            if w0 <= r['wall'] <= w1 and r['osds'].get(str(o))]


def pg_active_time(o, tag):
    p = os.path.join(run, 'pgstate_history.osd%d.%s.json' % (o, tag))
    if not os.path.exists(p):
        return None, None
    h = json.load(open(p))
    last = []
    for pg in h['pgs']:
        if 'Active' not in pg['currently'] and 'ReplicaActive' not in pg['currently']:
            continue
        resets = [ts(s['exit']) for e in pg['history'] for s in e['states'] if s['state'] == 'Reset']
        if resets:
            last.append(max(resets))
    return (max(last) if last else None), len(last)


def phase(o, name, start_ev, end_wall, tag):
    s = start_ev['wall']
    ser = rss_series(o, s, end_wall)
    load5 = max([v for w, v in ser if w <= s + 5] or [0])
    at4 = min(ser, key=lambda x: abs(x[0] - (s + 4)))[1] if ser else None
    peak = max([v for _, v in ser] or [0])
    flat = [r for r in ev if r['name'] == 'flat' and s <= r['wall'] <= end_wall + 1]
    flat_v = flat[0]['rss'].get(str(o)) if flat else None
    boots = [b for b in boot_times(o) if b >= s - 1]
    up = boots[0] if boots else None
    up_map = next((c['wall'] for c in cs if c['wall'] >= s and c['osds'][str(o)]['up']), None)
    act_mgr = next((c['wall'] for c in cs if c['wall'] >= s and c['osds'][str(o)]['all_active']), None)
    act_hist, npg = pg_active_time(o, tag)
    f = lambda x: None if x is None else round(x, 1)
    return dict(osd=o, phase=name, load_rss_at4s=f(at4 / M if at4 else None), load_rss_max5s=f(load5 / M),
                peak=f(peak / M), flat=f(flat_v / M if flat_v else None),
                start_to_up_log=f(up - s if up else None), start_to_up_map=f(up_map - s if up_map else None),
                up_to_pgs_interval_start=f(act_hist - up if act_hist and up else None), npgs=npg,
                up_to_all_active_mgr=f(act_mgr - up if act_mgr and up else None))


starts = [r for r in ev if r['name'] == 'start']
ends = {r['phase']: r['wall'] for r in ev if r['name'] == 'phase_end'}
out = []
for st in starts:
    ph = st['phase']
    out.append(phase(st['osd'], ph, st, ends.get(ph, st['wall'] + 300), ph + '_active'))
# recovery + after clean
fu = next((r for r in ev if r['name'] == 'flags_unset'), None)
cl = next((r for r in ev if r['name'] == 'clean'), None)
if fu and cl:
    for o in (2, 3):
        ser = rss_series(o, fu['wall'], cl['wall'] + 120)
        ac = next((r for r in ev if r['name'] == 'rss_after_clean' and r['osd'] == o), None)
        out.append(dict(osd=o, phase='recovery->clean', recovery_s=round(cl['wall'] - fu['wall'], 1),
                        peak=round(max(v for _, v in ser) / M, 1),
                        flat=round(ac['rss_mib'], 1) if ac else None))
for r in out:
    print(json.dumps(r))
for r in rows:
    if r['kind'] == 'tell':
        print('tell', r['osd'], r['tag'], 'rss %.1f' % ((r.get('rss') or 0) / M),
              json.dumps({k: v for k, v in (r.get('summary') or {}).items() if k in ('osd_pglog', 'total', 'buffer_anon')}))
        m = re.search(r'(\d+) \(\s*([\d.]+) MiB\) Bytes in use by application', r.get('heap', ''))
        m2 = re.search(r'([\d.]+) MiB\) Actual memory used', r.get('heap', ''))
        m3 = re.search(r'([\d.]+) MiB\) Bytes in page heap freelist', r.get('heap', ''))
        if m:
            print('     heap: in use by app %s MiB, actual used %s MiB, page heap freelist %s MiB' % (m.group(2), m2 and m2.group(1), m3 and m3.group(1)))
