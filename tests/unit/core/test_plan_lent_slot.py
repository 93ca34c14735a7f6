"""At concurrency 1, an OSD kept in preboot (its growth to its peak does not fit) lends its
slot to the restart that makes room for its boot, and boots once that restart is done.

The lab's h2 with osd.3 granted and loaded (80 MiB in preboot, 5,000 missed entries: a
180 MiB peak) beside osd.2 up at 150 MiB with its heap already released: 230 + 100 MiB do
not fit the 237 MiB budget, and only a restart of osd.2 makes room. Without the lent slot,
that restart "waits for a free slot" that osd.3 holds, and the run stalls.
"""
from __future__ import annotations

from dataclasses import replace

from ceph_recovery.actions import AllowBoot, RestartOsd
from ceph_recovery.growth import BOOT_BYTES_PER_ENTRY, GROWTH_FLOOR
from ceph_recovery.model import Progress
from ceph_recovery.plan import check_invariants, plan
from ceph_recovery.view import RESTART_SETTLE_S

from labh2cases import BUDGET, MiB, NOW, POL, osd, sig, snap

ONE = replace(BUDGET, concurrency=1)
RSS = {i: 150 * MiB for i in (0, 1, 2, 4, 5)}
KEPT = Progress(run_id="r1", phase="running", epoch=149, saved_flags=frozenset(),
                held_osds=frozenset({3}), started_at=NOW - 300).with_columns(
                    granted={3: NOW - 60}, heap_released={2: NOW - 200},
                    heap_rss={2: 150 * MiB})
PRE3 = osd(3, down=(3,), process="running", rss_bytes=80 * MiB, process_started_at=NOW - 50,
           missed_entries=5000, daemon_state="preboot")


def at(dt, *changed, used, epoch):
    s = snap(PRE3, *changed, used=used, down=(3,), rss=RSS, epoch=epoch, at=NOW + dt)
    return replace(s, ok_to_stop={2: True})


def test_the_restart_that_makes_room_shares_the_kept_osds_slot():
    s = at(0, used=230 * MiB, epoch=150)
    res = plan(s, ONE, KEPT, POL, NOW)
    assert [sig(a) for a in res.actions] == ["restart_osd host=h2 osd=2 room_for=3"]
    assert res.actions[0].reason.endswith("in the slot of osd.3, kept in preboot until this "
                                          "restart is done")
    assert res.progress.osd_map("restarted") == {2: NOW}
    assert check_invariants(s, ONE, KEPT, res) == []


def test_the_kept_osd_boots_only_once_the_restart_in_its_slot_is_done():
    first = plan(at(0, used=230 * MiB, epoch=150), ONE, KEPT, POL, NOW)
    # osd.2 back up at 40 MiB: osd.3's growth now fits (120 + 100 <= 237), but osd.2 is
    # still restarting in osd.3's slot
    back = osd(2, down=(3,), rss=40 * MiB, process_started_at=NOW + 5)
    mid = at(10, back, used=120 * MiB, epoch=153)
    second = plan(mid, ONE, first.progress, POL, NOW + 10)
    assert [sig(a) for a in second.actions] == ["wait"]
    assert "h2: osd.3 stays in preboot while osd.2 restarts in its slot" in \
        second.summary["reasons"]
    assert check_invariants(mid, ONE, first.progress, second) == []
    later = NOW + RESTART_SETTLE_S + 1
    done = at(RESTART_SETTLE_S + 1, back, used=120 * MiB, epoch=154)
    third = plan(done, ONE, second.progress, POL, later)
    # its peak from its load and missed history (growth.py), above the peer floor now that
    # osd.2 came back small
    peak = int(80 * MiB * (1 + GROWTH_FLOOR) + 5000 * BOOT_BYTES_PER_ENTRY)
    assert [sig(a) for a in third.actions] == ["allow_boot osd=3 predicted_bytes=%d" % peak]
    assert check_invariants(done, ONE, second.progress, third) == []


def test_a_restart_beside_a_kept_osd_without_room_for_it_breaks_i2():
    s = at(0, used=230 * MiB, epoch=150)
    res = plan(s, ONE, KEPT, POL, NOW)
    plain = replace(res.actions[0], room_for=None)
    errs = check_invariants(s, ONE, KEPT, res._replace(actions=(plain,)))
    assert errs == ["I2: host h2 has 2 in flight > concurrency 1 after granting/restarting"]


def test_a_restart_in_the_slot_of_an_osd_let_boot_in_the_same_tick_breaks_i2():
    s = at(0, used=230 * MiB, epoch=150)
    res = plan(s, ONE, KEPT, POL, NOW)
    both = (res.actions[0], AllowBoot(osd=3, reason="booted anyway"))
    assert isinstance(both[0], RestartOsd) and both[0].room_for == 3
    errs = check_invariants(s, ONE, KEPT, res._replace(actions=both))
    assert "I2: host h2 has 2 in flight > concurrency 1 after granting/restarting" in errs
