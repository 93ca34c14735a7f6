"""Smoke tier per Ceph release: the lab comes up on the release's own binaries, the recovery
module is enabled and answers, and a failed host comes back through start-controlled with the
cluster's flags restored.

Releases: CEPH_RECOVERY_RELEASES, comma-separated among pacific, reef, tentacle (default
tentacle). A reef/tentacle chroot is built on first use (scripts/chroot.sh, cached); a chroot
that cannot be built FAILS the test with the reason, it is never skipped.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time

import pytest

from ceph_recovery_tools.common.wait import wait_until
from ceph_recovery_tools.lab import bootstrap, build, launch, release, teardown

pytestmark = pytest.mark.integration
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RELEASE_NAME = {"pacific": "pacific", "reef": "reef", "tentacle": "tentacle"}


def releases():
    wanted = [r.strip() for r in os.environ.get("CEPH_RECOVERY_RELEASES", "tentacle").split(",")
              if r.strip()]
    bad = [r for r in wanted if r not in release.RELEASES]
    if bad:
        raise ValueError(f"CEPH_RECOVERY_RELEASES: unknown {bad}; one of {release.RELEASES}")
    return wanted


@pytest.fixture(scope="module", params=releases())
def release_lab(request):
    if os.geteuid() != 0:
        pytest.skip("the lab cluster needs root (memory cgroups, chroot)")
    t0 = time.monotonic()
    release.ensure_root(request.param)          # ChrootError (test error) if it cannot build
    t_chroot = time.monotonic() - t0
    d = tempfile.mkdtemp(prefix=f"smoke-{request.param[:4]}-", dir="/tmp")
    opts = build.LabOptions(module_dir=bootstrap.module_dir_from(None, REPO_ROOT),
                            ceph=request.param)
    state = build.up(d, opts)
    print(f"\n{request.param}: chroot ready in {t_chroot:.1f}s, lab up in "
          f"{time.monotonic() - t0 - t_chroot:.1f}s")
    try:
        yield state
    finally:
        report = teardown.down(d)
        if not request.session.testsfailed:
            shutil.rmtree(d, ignore_errors=True)
        assert not {k: v for k, v in report.items() if v}, report


def test_daemons_run_the_release(release_lab):
    versions = launch.ceph(release_lab, "versions")
    # "ceph version 20.2.4 (<sha1>) tentacle (stable - RelWithDebInfo)": the codename
    names = {re.search(r"\) (\w+) \(", v).group(1) for v in versions["overall"]}
    assert names == {RELEASE_NAME[release_lab["ceph"]]}, versions["overall"]


def test_module_enabled_and_status_answers(release_lab):
    mods = launch.ceph(release_lab, "mgr", "module", "ls")
    assert "recovery" in mods["enabled_modules"]
    status = launch.ceph(release_lab, "recovery", "status")
    assert status["phase"] == "idle" and status["mode"] == "idle", status
    assert sorted(status["hosts"]) == sorted(release_lab["hosts"])
    health = launch.ceph(release_lab, "health")
    assert health["status"] == "HEALTH_OK", health


def wait_node_flags(lab, bucket, want, timeout=60.0):
    wait_until(lambda: launch.ceph(lab, "osd", "dump").get("crush_node_flags", {}).get(bucket, []),
               timeout, 1, done=lambda got: sorted(got) == sorted(want),
               what=f"{bucket} flags not {want}", detail=lambda got: f"last {got}")


def test_module_commands_hold_release_dry_run_and_bad_input(release_lab):
    lab = release_lab
    try:
        assert launch.ceph(lab, "recovery", "hold", "h3")["holds"] == ["h3"]
        wait_node_flags(lab, "h3", ["noup"])       # the module's serve loop sets it
    finally:
        assert launch.ceph(lab, "recovery", "release", "h3")["holds"] == []
    wait_node_flags(lab, "h3", [])
    # a bool argument is a flag on every release (positional=false from Reef on)
    plan = launch.ceph(lab, "recovery", "start-controlled", "--dry-run")
    assert isinstance(plan, dict) and launch.ceph(lab, "recovery", "status")["phase"] == "idle"
    with pytest.raises(launch.CephError) as bad:
        launch.ceph(lab, "recovery", "hold", "no-such-bucket")
    assert bad.value.rc == 2, bad.value        # ENOENT
    with pytest.raises(launch.CephError) as bad:
        launch.ceph(lab, "recovery", "start-controlled", "--budget", "lots")
    assert bad.value.rc == 22, bad.value       # EINVAL


DUPS_WARNING = ("0 read_log_and_missing WARN num of dups exceeded 6000. You can be hit by THE "
                "DUPS BUG https://tracker.ceph.com/issues/53729. Consider "
                "ceph-objectstore-tool --op trim-pg-log-dups")


def test_the_dups_preflight_no_false_positive_and_a_logged_warning(release_lab):
    """The PG log dups pre-flight (orchestrator/dups.py) on a release outside the bug's range
    (16.2.15, 18.2.x and 20.2.x all trim dups): with h3's OSDs stopped, the dry run reads each
    one's release from its metadata, as `ceph osd metadata` shows it, names none of them,
    and raises no RECOVERY_PGLOG_DUPS; their helper found no dups warning in their logs.
    Then Ceph's warning line (src/osd/PGLog.h) appended to one stopped OSD's log, as its
    last start would have written it, reaches the dry run through the real helper: that OSD
    is named, and h3 gets one start, not two. Its next start's first line resets the count."""
    from ceph_recovery import dups
    lab = release_lab
    down = sorted(int(o) for o in lab["hosts"]["h3"]["osds"])
    meta = {o: launch.ceph(lab, "osd", "metadata", str(o))["ceph_version"] for o in down}
    assert all(dups.release_affected(v) is False for v in meta.values()), meta
    try:
        for o in down:
            assert launch.stop_osd(lab, o)

        def dry_run():
            return launch.ceph(lab, "recovery", "start-controlled", "--dry-run")
        plan = wait_until(dry_run, 60, 1, done=lambda d: sorted(
            x["osd"] for x in d["order"]) == down, what="dry run without h3's OSDs in order",
            detail=lambda d: f"last {d['order']}")
        assert {x["osd"]: x["release"] for x in plan["order"]} == meta, plan["order"]
        assert [x["pglog_dups"] for x in plan["order"]] == [0] * len(down), plan["order"]
        assert plan["pglog_dups"] == [] and "RECOVERY_PGLOG_DUPS" not in plan["health"], plan
        assert sorted(a["osd"] for a in plan["first_actions"] if a["kind"] == "grant_start") \
            == down, plan["first_actions"]          # both at once: the budget holds them
        with open(os.path.join(lab["dir"], "log", f"osd.{down[0]}.log"), "a") as f:
            f.write(time.strftime("%Y-%m-%dT%H:%M:%S.000+0000 7f0000000000  ", time.gmtime())
                    + DUPS_WARNING + "\n")
        plan = wait_until(dry_run, 60, 1, done=lambda d: d["pglog_dups"],
                          what=f"osd.{down[0]}'s dups warning in the dry run",
                          detail=lambda d: f"last {d['order']}")
        assert [(x["osd"], x["warnings"]) for x in plan["pglog_dups"]] == [(down[0], 1)]
        assert "RECOVERY_PGLOG_DUPS" in plan["health"], plan["health"]
        grants = [a["osd"] for a in plan["first_actions"] if a["kind"] == "grant_start"]
        assert len(grants) == 1 and grants[0] in down, plan["first_actions"]
    finally:
        for o in down:
            if not launch.osd_pid(lab, o):
                launch.start_osd(lab, o)
        launch.wait_all_up(lab, timeout=120, require_running=True)
        launch.wait_pgs_clean(lab, timeout=300)


def test_failed_host_comes_back_through_start_controlled(release_lab, assert_booted_on_preboot):
    """ceph-recovery-drill of the lab's release (its Python and librados, like the helpers):
    h2's OSDs killed, written to while down, started again by the module through the helpers."""
    out = os.path.join(release_lab["dir"], "log", "smoke-drill.json")  # visible in the chroot
    t0 = time.monotonic()
    proc = subprocess.run(release.tool_argv(release_lab, "ceph-recovery-drill") + [
        "--dir", release_lab["dir"], "--fail", "host:h2", "--objects", "300", "--downtime", "10",
        "--timeout", "300", "--json", out], env=release.tool_env(release_lab),
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out) as f:
        r = json.load(f)
    print(f"\n{release_lab['ceph']}: drill {time.monotonic() - t0:.1f}s, all up "
          f"{r['time_to_all_up_s']}s, clean {r['time_to_all_pgs_clean_s']}s")
    failed = sorted(release_lab["hosts"]["h2"]["osds"])
    assert sorted(r["start_order"]) == failed
    assert_booted_on_preboot(r["journal"], failed)
    assert all(n == 1 for n in r["process_starts_by_osd"].values()), r["process_starts_by_osd"]
    assert r["objects_verified_ok"] == r["objects_written"] > 0, r["objects_bad"]
    assert not r.get("timed_out")
    dump = launch.ceph(release_lab, "osd", "dump")
    flags = set(dump["flags"].split(","))
    assert not flags & {"noup", "noout", "nodown", "noin", "norecover", "nobackfill"}, flags
    assert not any(dump.get("crush_node_flags", {}).values()), dump.get("crush_node_flags")
    per_osd = {o["osd"]: set(o["state"]) & {"noup", "noout", "nodown", "noin"}
               for o in dump["osds"]}
    assert not any(per_osd.values()), per_osd
    up = {o["osd"] for o in dump["osds"] if o["up"] and o["in"]}
    assert up == {int(o) for o in release_lab["osds"]}
    status = launch.ceph(release_lab, "recovery", "status")
    assert status["phase"] == "done" and not status["active"], status["phase"]


def pricache(lab, osd_id):
    return launch.ceph(lab, "tell", f"osd.{osd_id}", "perf", "dump")["bluestore-pricache"]


def restart_osd(lab, osd_id):
    assert launch.stop_osd(lab, osd_id)
    launch.start_osd(lab, osd_id)
    launch.wait_all_up(lab, timeout=120, require_running=True)


def test_osd_memory_target_sizes_the_caches_at_runtime_with_tcmalloc_at_start_without(
        release_lab):
    """The lever settings.py pulls, on the release's own OSD: with tcmalloc the autotuner
    (PriorityCache::Manager::tune_memory, every osd_memory_cache_resize_interval) moves the
    running OSD's cache budget to the new target; without tcmalloc (Debian's Pacific build:
    heap_bytes 0) tune_memory never runs and the budget, 0.85 x target - osd_memory_base, is
    the one fixed when the process started, so only a restart applies a new target."""
    lab, osd_id, target = release_lab, 0, 1200000000
    before = pricache(lab, osd_id)
    tcmalloc = before["heap_bytes"] > 0
    assert tcmalloc == (lab["ceph"] != "pacific"), before
    budget = int(0.85 * target) - 768 * 1024 * 1024       # osd_memory_base's default
    try:
        launch.ceph(lab, "config", "set", f"osd.{osd_id}", "osd_memory_target", str(target),
                    json_out=False)
        if tcmalloc:
            wait_until(lambda: pricache(lab, osd_id), 30, 1,
                       done=lambda p: p["target_bytes"] == target
                       and p["cache_bytes"] < before["cache_bytes"],
                       what="the running OSD's cache budget did not follow the target",
                       detail=lambda p: f"last {p}")
        else:
            time.sleep(8)       # past bluestore_cache_autotune_interval (5 s)
            assert pricache(lab, osd_id)["cache_bytes"] == before["cache_bytes"]
            restart_osd(lab, osd_id)
            assert pricache(lab, osd_id)["cache_bytes"] == budget
    finally:
        launch.ceph(lab, "config", "rm", f"osd.{osd_id}", "osd_memory_target", json_out=False)
        if not tcmalloc:
            restart_osd(lab, osd_id)


def pool_record(lab, pool):
    """The `pool_availability` record of `pool` in `status -f json` (None: not listed yet),
    and the document's `ceph` state."""
    pa = launch.ceph(lab, "recovery", "status")["pool_availability"]
    return next((r for r in pa["pools"] if r["pool"] == pool), None), pa["ceph"]


def test_status_carries_per_pool_service_in_cephs_terms(release_lab):
    """`status -f json` carries per pool its service in Ceph's terms. On Tentacle with
    enable_availability_tracking on, Ceph's own (`osd pool availability-status`) beside ours;
    before Tentacle ours alone under the same names. osd.0 and osd.2 (two hosts) stopped for
    a while take the PGs they share below min_size: ours counts the lab pool down once.
    (Ceph's own count of that outage is printed, not asserted: on these labs it counted none
    of three such outages, 16 to 60 s long, though it did count one on a fresh lab.)"""
    lab, pool, stopped = release_lab, "lab", (0, 2)
    tentacle = lab["ceph"] == "tentacle"
    fields = ("uptime_s", "downtime_s", "num_failures", "mtbf_s", "mttr_s", "score",
              "available")

    def cephs():         # Tentacle 20.2: a list, one object per pool
        return {r["pool"]: r for r in launch.ceph(lab, "osd", "pool", "availability-status")}
    if tentacle:
        launch.ceph(lab, "config", "set", "global", "enable_availability_tracking", "true",
                    json_out=False)
    try:
        # a status reader makes the module read Ceph's answer (and the PG stats every
        # tick); a module that found the tracking disabled asks again within a minute, and
        # Ceph's first answer after the enable may list no pool yet (read again in 30 s)
        wait_until(lambda: pool_record(lab, pool), 150, 2,
                   done=lambda rs: rs[0] is not None and rs[1] == (
                       "tracked" if tentacle else "unsupported")
                   and rs[0]["source"] == ("ceph" if tentacle else "recovery"),
                   what="status without the lab pool's record", detail=lambda rs: f"last {rs}")
        for o in stopped:
            assert launch.stop_osd(lab, o)
        wait_until(lambda: pool_record(lab, pool), 60, 1,
                   done=lambda rs: rs[0] is not None and (rs[0]["recovery"] or {}).get(
                       "available") is False,
                   what="the lab pool never down in ours", detail=lambda rs: f"last {rs}")
        time.sleep(8)
        if tentacle:
            print(f"\nosd pool availability-status while down: {json.dumps(cephs())}")
        for o in stopped:
            launch.start_osd(lab, o)
        launch.wait_all_up(lab, timeout=120, require_running=True)
        rec, state = wait_until(
            lambda: pool_record(lab, pool), 120, 2,
            done=lambda rs: rs[0] is not None and (rs[0]["recovery"] or {}).get("available")
            and rs[0]["recovery"]["num_failures"] >= 1,
            what="status without the outage in ours", detail=lambda rs: f"last {rs}")
        print(f"{lab['ceph']}: status pool_availability record ({state}): {json.dumps(rec)}")
        ours = rec["recovery"]
        assert ours["num_failures"] >= 1 and ours["downtime_s"] >= 8, ours
        # both are rounded to 0.1 s from the same unrounded downtime
        assert abs(ours["mttr_s"] - ours["downtime_s"] / ours["num_failures"]) <= 0.1, ours
        if tentacle:
            now = cephs()[pool]
            print(f"osd pool availability-status after: {json.dumps(now)}")
            assert state == "tracked" and rec["source"] == "ceph", rec
            assert {k: rec[k] for k in fields} == rec["ceph"], rec
            # the module's reading is at most REFRESH_S old: Ceph's counters only grow
            assert rec["ceph"]["num_failures"] <= now["num_failures"], (rec, now)
            assert rec["ceph"]["uptime_s"] <= now["uptime"], (rec, now)
        else:
            assert rec["source"] == "recovery" and rec["ceph"] is None, rec
            assert {k: rec[k] for k in fields} == ours, rec
    finally:
        if tentacle:
            launch.ceph(lab, "config", "rm", "global", "enable_availability_tracking",
                        json_out=False)
        for o in stopped:
            if launch.osd_pid(lab, o) is None:
                launch.start_osd(lab, o)
        launch.wait_all_up(lab, timeout=120)
        launch.wait_pgs_clean(lab, timeout=300)
