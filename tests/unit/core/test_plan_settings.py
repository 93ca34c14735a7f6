"""plan() and the osd_memory_target lever: lowered on a constrained host's OSDs (with and
without tcmalloc), written ahead in Progress.saved_config, restored at the end, or kept and
named where the host's RAM cannot hold the restored value. Snapshots in, exact actions out
(plancases.py)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from ceph_recovery.plan import plan
from plancases import HELD, NOW, POL, RUN, RUNF, RUNNING, GiB, MiB, osd, sig, snap  # conftest.py

def held(heap_release):
    return [osd(i, flags=frozenset({"noup"}), heap_release=heap_release, memory_target=0)
            for i in (3, 4, 5)]


def roomy(*osds):
    """The cases' cluster with 64 GiB hosts: RAM that holds 3 OSDs at the restored target."""
    base = snap(*osds, cluster_flags=RUNF)
    return replace(base, hosts=tuple(replace(h, mem_total=64 * GiB) for h in base.hosts))


@pytest.mark.parametrize("heap_release, ratio", [(True, 1.1), (False, 1.2)])
def test_a_constrained_host_gets_a_lower_target_before_its_first_grant(heap_release, ratio):
    """h1: 3 OSDs x 4 GiB x ratio + a 500 MiB peak > budget 6553 MiB - base 1 GiB: the target
    goes to (6553 - 1024 - 500) MiB / 3 / ratio on all three (1524 MiB with tcmalloc), in the
    tick of osd.3's grant and before it. Without tcmalloc (Debian's 16.2.15) the cache budget
    is fixed from the target a process reads at its start, and nothing trims the caches for
    the history an OSD holds: RSS x 1.2 over the target instead of 1.1."""
    res = plan(snap(*held(heap_release), cluster_flags=RUNF), RUN, RUNNING, POL, NOW)
    want = int((int(8 * GiB * 0.8) - 1 * GiB - 500 * MiB) / 3 / ratio)
    assert [sig(a) for a in res.actions] == [
        "set_config name=osd_memory_target value=%d who=osd.%d" % (want, i) for i in (3, 4, 5)
    ] + ["grant_start host=h1 osd=3 predicted_bytes=%d" % (500 * MiB)]
    assert res.progress.saved_config == {"osd.%d osd_memory_target" % i: None for i in (3, 4, 5)}
    again = plan(snap(*held(heap_release), cluster_flags=RUNF), RUN, res.progress, POL, NOW + 1)
    assert not [a for a in again.actions if a.kind == "set_config"]


@pytest.mark.parametrize("heap_release, says", [
    (False, " (no tcmalloc: caches sized at its start stay so until its next start)"),
    (None, " (if built without tcmalloc, caches sized at its start stay so until its next "
           "start)"),     # no heap release tried yet: the module does not know
    (True, "")])
def test_the_restore_says_what_it_does_not_undo_without_tcmalloc(heap_release, says):
    up = [osd(i, up=True, heap_release=heap_release, rss_bytes=1 * GiB, pgs_inactive=0)
          for i in (3, 4, 5)]
    p = RUNNING.evolve(saved_config={"osd.%d osd_memory_target" % i: None for i in (3, 4, 5)},
                       finished=frozenset({3, 4, 5}), held_osds=frozenset())
    end = plan(roomy(*up), RUN, p, POL, NOW)
    assert [(a.who, a.reason) for a in end.actions if a.kind == "restore_config"] == [
        ("osd.%d" % i, "run done: restore the setting saved at start" + says) for i in (3, 4, 5)]


def test_no_lever_on_a_host_with_room_or_where_tcmalloc_and_the_setting_are_unknown():
    assert not [a for a in plan(snap(*HELD, cluster_flags=RUNF), RUN, RUNNING, POL, NOW).actions
                if a.kind == "set_config"]      # no config dump: nothing to restore to
    assert not [a for a in plan(roomy(*held(False)), RUN, RUNNING, POL, NOW).actions
                if a.kind == "set_config"]


def test_settings_are_restored_at_the_end_or_kept_where_ram_cannot_hold_them():
    saved = {"osd.%d osd_memory_target" % i: None for i in (3, 4, 5)}
    up = [osd(i, up=True, heap_release=True, rss_bytes=1 * GiB, pgs_inactive=0) for i in (3, 4, 5)]
    p = RUNNING.evolve(saved_config=saved, finished=frozenset({3, 4, 5}), held_osds=frozenset())
    res = plan(roomy(*up), RUN, p, POL, NOW)
    assert [sig(a) for a in res.actions] == [
        "restore_config name=osd_memory_target who=osd.%d" % i for i in (3, 4, 5)] + [
        "unset_flag flag=noout", "unset_flag flag=norebalance", "done"]
    assert res.progress.saved_config == {}
    tight = plan(snap(*up, cluster_flags=RUNF), RUN, p, POL, NOW)     # 8 GiB RAM < 3 x 4.4
    assert [sig(a) for a in tight.actions] == [
        "unset_flag flag=noout", "unset_flag flag=norebalance", "done"]
    kept = [h for h in tight.health if h.code == "RECOVERY_SETTING_KEPT"]
    assert kept and kept[0].count == 3 and tight.progress.saved_config == saved


def test_no_lever_when_the_osds_own_setting_is_unknown():
    """Without `config dump` the shell cannot say what to restore: nothing is lowered."""
    unknown = [osd(i, flags=frozenset({"noup"}), heap_release=True) for i in (3, 4, 5)]
    assert not [a for a in plan(snap(*unknown, cluster_flags=RUNF), RUN, RUNNING, POL,
                                NOW).actions if a.kind == "set_config"]


def test_an_osds_own_setting_is_what_the_restore_puts_back():
    own = [osd(i, flags=frozenset({"noup"}), heap_release=True, memory_target=3 << 30)
           for i in (3, 4, 5)]
    res = plan(snap(*own, cluster_flags=RUNF), RUN, RUNNING, POL, NOW)
    assert res.progress.saved_config == {
        "osd.%d osd_memory_target" % i: str(3 << 30) for i in (3, 4, 5)}
