"""The synthetic helpers' report loop (lab/scaleload.py): one report per interval per step,
none in a silent step (interval 0), the next step's reports after the pause."""
from __future__ import annotations

import time

from ceph_recovery_tools.lab.scaleload import Host, Step, play


def test_a_silent_step_sends_nothing_and_the_next_step_starts_after_it():
    sent = []

    def send(host, text):
        sent.append(time.time())
        return 0, {}, ""
    steps = [[1.0, 0.5], [1.0, 0.0], [1.0, 0.5]]
    recs = [Step(float(i), float(sec)) for sec, i in steps]
    t0 = time.time() + 0.05
    play(send, Host("host0", [0, 1], False), steps, recs, 0.5, t0)
    assert [r.sent for r in recs] == [2, 0, 2]
    # reports due at 0.25, 0.75, then (the pause) 2.25, 2.75 s: none while it held
    assert len([t for t in sent if t >= t0 + 2.0]) == 2
    assert not [t for t in sent if t0 + 1.6 <= t < t0 + 2.0]


def test_a_worker_says_it_is_ready_and_starts_at_the_time_the_bench_gives(tmp_path):
    import threading
    from ceph_recovery_tools.lab.scaleload import start_time
    ready, go = tmp_path / "w.ready", tmp_path / "w.go"

    def bench():
        while not ready.exists():
            time.sleep(0.01)
        (tmp_path / "w.go.tmp").write_text("1234.5")
        (tmp_path / "w.go.tmp").rename(go)
    t = threading.Thread(target=bench)
    t.start()
    assert start_time({"ready": str(ready), "go": str(go), "start_at": 99.0}) == 1234.5
    t.join()
    assert start_time({"start_at": 99.0}) == 99.0
