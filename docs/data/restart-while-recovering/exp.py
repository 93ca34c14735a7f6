"""Restart-while-degraded experiment. Usage: exp.py OUTDIR DEGRADED_RESTART_OSD CLEAN_RESTART_OSD NOBJ PREFIX"""
import json, os, signal, sys, threading, time
import psutil
from ceph_recovery_tools.lab import launch, state

LAB = os.environ.get('LAB', '/tmp/rr/lab')
out, deg_osd, clean_osd, nobj, prefix = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
os.makedirs(out, exist_ok=True)
st = state.load_state(LAB)
T0 = time.monotonic()
lock = threading.Lock()
fh = open(os.path.join(out, 'samples.jsonl'), 'a')
stop = threading.Event()
OSDS = [2, 3]
latest = {}  # osd -> dict of last ceph sample
up_since = {}  # osd -> t of first up sample after being down


def t():
    return round(time.monotonic() - T0, 2)


def rec(**kw):
    kw.setdefault('t', t())
    kw['wall'] = time.time()
    with lock:
        fh.write(json.dumps(kw) + '\n'); fh.flush()


def event(name, **kw):
    rec(kind='event', name=name, **kw)
    print('[%7.1f] %s %s' % (t(), name, kw if kw else ''), flush=True)


def ceph(*a, **kw):
    return launch.ceph(st, *a, **kw)


def rss_loop():
    pids = {}
    while not stop.is_set():
        row = {}
        for o in OSDS:
            p = pids.get(o)
            try:
                if p is None or not p.is_running() or p.status() == psutil.STATUS_ZOMBIE:
                    pid = launch.osd_pid(st, o)
                    p = psutil.Process(pid) if pid else None
                    pids[o] = p
                row[str(o)] = {'pid': p.pid, 'rss': p.memory_info().rss} if p else None
            except psutil.Error:
                pids[o] = None
                row[str(o)] = None
        rec(kind='rss', osds=row)
        stop.wait(0.5)


def ceph_loop():
    while not stop.is_set():
        try:
            t_a = t()
            dump = ceph('osd', 'dump', timeout=20)
            ups = {o['osd']: o['up'] for o in dump['osds'] if o['osd'] in OSDS}
            pgs = ceph('pg', 'dump', 'pgs_brief', timeout=20)
            if isinstance(pgs, dict):
                pgs = pgs.get('pg_stats', pgs.get('pgs_brief', []))
            per = {}
            for o in OSDS:
                mine = [p for p in pgs if o in p['up']]
                c = dict(n_up=len(mine),
                         in_acting=sum(1 for p in mine if o in p['acting']),
                         active=sum(1 for p in mine if 'active' in p['state'].split('+')),
                         active_in_acting=sum(1 for p in mine if o in p['acting'] and 'active' in p['state'].split('+')),
                         peering=sum(1 for p in mine if 'peering' in p['state']),
                         degraded=sum(1 for p in mine if 'degraded' in p['state']),
                         clean=sum(1 for p in mine if 'clean' in p['state']))
                c['up'] = ups.get(o)
                c['epoch'] = dump['epoch']
                if not c['up']:
                    up_since.pop(o, None)
                elif o not in up_since:
                    up_since[o] = t_a
                # async recovery targets are not in acting: count PGs active (in up), none peering,
                # and only samples taken >= 3 s after the osd was first seen up (mgr_stats_period=1)
                c['all_active'] = bool(c['up']) and c['n_up'] > 0 and c['active'] == c['n_up'] \
                    and c['peering'] == 0 and t_a - up_since.get(o, t_a) >= 3
                per[str(o)] = c
            states = {}
            for p in pgs:
                states[p['state']] = states.get(p['state'], 0) + 1
            latest.update({int(k): v for k, v in per.items()})
            rec(kind='ceph', t=t_a, t_end=t(), osds=per, states=states)
        except Exception as e:  # noqa
            rec(kind='ceph_error', err=str(e)[:300])
        stop.wait(1.0)


def rss_now(o):
    pid = launch.osd_pid(st, o)
    return psutil.Process(pid).memory_info().rss if pid else None


def wait_for(pred, timeout, what, step=0.5):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    event('timeout', what=what)
    return False


def wait_flat(osds, window=30, tol=2 << 20, cap=150):
    """wait until no osd's RSS has grown by more than tol over the last `window` seconds."""
    hist = []
    start = time.monotonic()
    while time.monotonic() - start < cap:
        now = time.monotonic()
        hist.append((now, {o: rss_now(o) or 0 for o in osds}))
        hist = [h for h in hist if now - h[0] <= window]
        if now - start >= window:
            base = hist[0][1]
            if all(max(h[1][o] for h in hist) - base[o] <= tol for o in osds):
                event('flat', rss={o: hist[-1][1][o] for o in osds}, waited=round(now - start, 1))
                return True
        time.sleep(1)
    event('flat_cap_reached', rss={o: rss_now(o) for o in osds})
    return False


def tell_dump(o, tag):
    res = {}
    for name, args in (('mempools', ('tell', 'osd.%d' % o, 'dump_mempools')),
                       ('heap', ('tell', 'osd.%d' % o, 'heap', 'stats')),
                       ('perf_pglog', None)):
        try:
            if name == 'heap':
                res[name] = ceph(*args, json_out=False, timeout=20)
            elif name == 'mempools':
                res[name] = ceph(*args, timeout=20)
        except Exception as e:  # noqa
            res[name + '_err'] = str(e)[:300]
    try:
        mp = res['mempools']['mempool']['by_pool']
        res['summary'] = {k: mp[k] for k in ('osd_pglog', 'bluestore_cache_other', 'bluestore_cache_onode',
                                             'buffer_anon', 'osd', 'osdmap') if k in mp}
        res['summary']['total'] = res['mempools']['mempool']['total']
    except Exception:  # noqa
        pass
    res['rss'] = rss_now(o)
    rec(kind='tell', osd=o, tag=tag, **res)
    event('tell', osd=o, tag=tag, summary=res.get('summary'), rss_mib=(res['rss'] or 0) / 2**20)
    return res


def wait_active(osds, timeout=300):
    """wait for osds up in the map and all their PGs active (with them in acting)."""
    def ok():
        return all(latest.get(o, {}).get('all_active') for o in osds)
    return wait_for(ok, timeout, 'pgs active %s' % osds)


def wait_down(osds, timeout=120):
    return wait_for(lambda: all(latest.get(o, {}).get('up') == 0 for o in osds), timeout, 'down %s' % osds)


def pgstate_history(o, tag):
    try:
        h = ceph('daemon', launch.admin_socket(LAB, 'osd.%d' % o), 'dump_pgstate_history', timeout=20)
        with open(os.path.join(out, 'pgstate_history.osd%d.%s.json' % (o, tag)), 'w') as f:
            json.dump(h, f)
    except Exception as e:  # noqa
        event('pgstate_history_err', osd=o, err=str(e)[:200])


def main():
    threading.Thread(target=rss_loop, daemon=True).start()
    threading.Thread(target=ceph_loop, daemon=True).start()
    event('begin', deg_osd=deg_osd, clean_osd=clean_osd, nobj=nobj)
    stat = ceph('pg', 'stat')
    event('pg_stat', s=stat['pg_summary']['num_pg_by_state'])
    launch.wait_pgs_clean(st, 300)
    ceph('osd', 'set', 'noout', json_out=False)
    for o in OSDS:
        event('rss_before_kill', osd=o, rss_mib=(rss_now(o) or 0) / 2**20)
    # 2. kill h2
    pids = launch.kill_host(st, 'h2')
    event('killed_h2', pids=pids)
    wait_down(OSDS)
    event('h2_down_in_map')
    # 3. write objects
    import rados
    cl = rados.Rados(conffile=st['conf'], conf={'keyring': st['admin_keyring']})
    cl.connect(timeout=30)
    io = cl.open_ioctx('lab')
    t_w = time.monotonic()
    pending = []
    data = os.urandom(4096)
    for i in range(nobj):
        pending.append(io.aio_write_full('%s-%06d' % (prefix, i), data))
        if len(pending) >= 64:
            for c in pending:
                c.wait_for_complete()
                assert c.get_return_value() >= 0
            pending = []
    for c in pending:
        c.wait_for_complete()
    wdur = time.monotonic() - t_w
    event('written', n=nobj, seconds=round(wdur, 1))
    io.close(); cl.shutdown()
    # 4. flags
    ceph('osd', 'set', 'norecover', json_out=False)
    ceph('osd', 'set', 'nobackfill', json_out=False)
    event('flags_set')
    # 5. start both
    for o in OSDS:
        pid = launch.start_osd(st, o)
        event('start', osd=o, pid=pid, phase='first_return')
    wait_active(OSDS)
    event('active', osds=OSDS, phase='first_return')
    for o in OSDS:
        pgstate_history(o, 'first_return_active')
    wait_flat(OSDS)
    event('phase_end', phase='first_return')
    for o in OSDS:
        tell_dump(o, 'first_return_flat')
    pgstate_history(deg_osd, 'first_return')
    # 6. restart deg_osd while degraded
    event('stopping', osd=deg_osd, phase='restart_degraded')
    ok = launch.stop_osd(st, deg_osd, signal.SIGTERM, 60)
    event('stopped', osd=deg_osd, ok=ok)
    wait_down([deg_osd], 60)
    pid = launch.start_osd(st, deg_osd)
    event('start', osd=deg_osd, pid=pid, phase='restart_degraded')
    wait_active([deg_osd])
    event('active', osds=[deg_osd], phase='restart_degraded')
    pgstate_history(deg_osd, 'restart_degraded_active')
    wait_flat([deg_osd])
    event('phase_end', phase='restart_degraded')
    tell_dump(deg_osd, 'restart_degraded_flat')
    for o in OSDS:
        if o != deg_osd:
            tell_dump(o, 'other_during_restart_degraded')
    pgstate_history(deg_osd, 'restart_degraded')
    # 7. recover
    ceph('osd', 'unset', 'norecover', json_out=False)
    ceph('osd', 'unset', 'nobackfill', json_out=False)
    event('flags_unset')
    launch.wait_pgs_clean(st, 600)
    event('clean')
    for o in OSDS:
        pgstate_history(o, 'clean')
    wait_flat(OSDS, window=20, cap=90)
    for o in OSDS:
        event('rss_after_clean', osd=o, rss_mib=(rss_now(o) or 0) / 2**20)
        tell_dump(o, 'after_clean')
    event('stopping', osd=clean_osd, phase='restart_clean')
    ok = launch.stop_osd(st, clean_osd, signal.SIGTERM, 60)
    event('stopped', osd=clean_osd, ok=ok)
    wait_down([clean_osd], 60)
    pid = launch.start_osd(st, clean_osd)
    event('start', osd=clean_osd, pid=pid, phase='restart_clean')
    wait_active([clean_osd])
    event('active', osds=[clean_osd], phase='restart_clean')
    pgstate_history(clean_osd, 'restart_clean_active')
    wait_flat([clean_osd])
    event('phase_end', phase='restart_clean')
    tell_dump(clean_osd, 'restart_clean_flat')
    launch.wait_pgs_clean(st, 300)
    event('done')


try:
    main()
finally:
    stop.set()
    time.sleep(1)
