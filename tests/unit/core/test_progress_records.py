"""Progress keeps one OsdRun per OSD: the per-field maps are built from and read from those
records, a state document saved before the records existed still loads, and forgetting
an OSD is one deletion."""
from __future__ import annotations

import json

import pytest

from ceph_recovery.model import (NO_RUN, OSD_FIELDS, PHASE_RUNNING, SETTLE_MARKERS, START_MARKERS,
                                 Observation, OsdRun, Progress, clear_osd, columns,
                                 records_from)
from ceph_recovery.persist import progress_from_json, progress_to_json

# written by the persist.py of the commit before OsdRun (13 parallel maps in Progress)
OLD_STATE = (
    '{"auto_held":["rack1"],"booting":{"3":12.5},"downtime":{"3":3600.0},"epoch":7,'
    '"failures":{"2":1},"finished":[1],"finished_at":null,"fresh_rss":{"1":104857600},'
    '"granted":{"3":10.0},"grew_at":{"1":25.0},"heap_released":{"1":4.0},'
    '"heap_rss":{"1":157286400},"held_buckets":["rack1"],"held_osds":[3],'
    '"load_rss":{"1":83886080},"missed":{"1":12},'
    '"observations":[[1,40,60.0,1000,314572800,12,83886080]],'
    '"peaks":{"1":325058560,"3":209715200},"phase":"running","restarted":{"1":5.0},'
    '"run_id":"r1","saved_config":{"osd osd_memory_target":null},"saved_flags":["noout"],'
    '"schema":1,"service_at":30.0,"settling":{"1":20.0},"stalled_since":null,'
    '"started_at":1.0}')
MiB = 1 << 20


def test_old_state_document_loads_into_records():
    p = progress_from_json(OLD_STATE)
    assert p.osds == {
        1: OsdRun(restarted=5.0, heap_released=4.0, peak=310 * MiB, fresh_rss=100 * MiB,
                  settling=20.0, grew_at=25.0, load_rss=80 * MiB, missed=12,
                  heap_rss=150 * MiB),
        2: OsdRun(failures=1),
        3: OsdRun(granted=10.0, booting=12.5, peak=200 * MiB, downtime=3600.0)}
    assert (p.run_id, p.phase, p.epoch) == ("r1", PHASE_RUNNING, 7)
    assert p.osd_map("granted") == {3: 10.0} and p.osd_map("booting") == {3: 12.5}
    assert p.osd_map("failures") == {2: 1} and p.osd_map("missed") == {1: 12}
    assert p.osd_map("peaks") == {1: 310 * MiB, 3: 200 * MiB}
    assert p.finished == {1} and p.held_osds == {3} and p.held_buckets == {"rack1"}
    assert p.saved_flags == {"noout"} and p.saved_config == {"osd osd_memory_target": None}
    assert p.observations == (Observation(1, 40, 60.0, 1000, 300 * MiB, 12, 80 * MiB),)
    assert (p.started_at, p.service_at, p.finished_at) == (1.0, 30.0, None)
    # and it is saved in the same format, with the maps added since (empty) beside
    assert (p.inactive_pg_s, p.inactive_seen, p.budget_state) == (0.0, None, "")
    assert json.loads(progress_to_json(p)) == dict(json.loads(OLD_STATE), restart_rss={},
                                                   shrink_at={}, shrink_rss={}, staged={},
                                                   inactive_pg_s=0.0, inactive_seen=None,
                                                   budget_state="", stopped={}, restoring={},
                                                   restoring_flags={}, rebuild_from={},
                                                   rebuild_seen={})


@pytest.mark.parametrize("bad", ['"inactive_seen":[1.0]', '"inactive_seen":[1.0,"3"]',
                                 '"inactive_seen":{"t":1}', '"inactive_pg_s":"12"',
                                 '"inactive_pg_s":true'])
def test_service_lost_fields_of_a_wrong_shape_are_refused(bad):
    with pytest.raises(ValueError, match="progress: inactive_"):
        progress_from_json(OLD_STATE[:-1] + "," + bad + "}")


@pytest.mark.parametrize("bad", ['"budget_state":"up"', '"budget_state":1'])
def test_an_auto_budget_state_of_a_wrong_shape_is_refused(bad):
    with pytest.raises(ValueError, match="progress: budget_state must be"):
        progress_from_json(OLD_STATE[:-1] + "," + bad + "}")


def test_an_auto_budget_state_survives_a_save_and_load():
    for state in ("", "raised", "held"):
        assert progress_from_json(progress_to_json(Progress(budget_state=state))).budget_state \
            == state


def test_service_lost_survives_a_save_and_load():
    p = Progress(run_id="r", inactive_pg_s=12.5, inactive_seen=(30.0, 4))
    back = progress_from_json(progress_to_json(p))
    assert (back.inactive_pg_s, back.inactive_seen) == (12.5, (30.0, 4))


def test_maps_and_records_are_two_spellings_of_one_value():
    by_maps = Progress().with_columns(granted={4: 1.0}, peaks={4: 7, 5: 9}, failures={5: 2})
    by_records = Progress(osds={4: OsdRun(granted=1.0, peak=7), 5: OsdRun(peak=9, failures=2)})
    assert by_maps == by_records
    assert by_maps.with_columns(granted={}).osds == {4: OsdRun(peak=7),
                                                     5: OsdRun(peak=9, failures=2)}
    assert by_maps.with_columns(peaks={}, failures={}).osds == {4: OsdRun(granted=1.0)}
    with pytest.raises(TypeError, match="unknown per-OSD map"):
        Progress().with_columns(grants={1: 0.0})
    with pytest.raises(TypeError):        # the constructor takes records only
        Progress(granted={1: 0.0})


def test_columns_are_plain_dicts_and_records_come_back_from_them_in_order():
    records = {7: OsdRun(failures=1), 2: OsdRun(granted=1.5, peak=5)}
    cols = columns(records)
    assert set(cols) == set(OSD_FIELDS) and all(type(m) is dict for m in cols.values())
    assert cols["granted"] == {2: 1.5} and cols["peaks"] == {2: 5} and cols["failures"] == {7: 1}
    cols["granted"][9] = 3.0          # a new OSD comes after the records it had
    cols["peaks"].pop(2)
    cols["granted"].pop(2)            # osd.2's record is empty now: gone
    cols["granted"][7] = 2.0
    out = records_from(records, cols)
    assert out == {7: OsdRun(failures=1, granted=2.0), 9: OsdRun(granted=3.0)}
    assert list(out) == [7, 9]
    assert records == {7: OsdRun(failures=1), 2: OsdRun(granted=1.5, peak=5)}   # untouched


def test_forgetting_a_start_keeps_what_the_run_knows_of_the_osd():
    rec = OsdRun(granted=1.0, booting=2.0, peak=3, downtime=4.0, missed=5, load_rss=6,
                 restarted=7.0, failures=1, settling=8.0, grew_at=9.0)
    cols = columns({0: rec})
    clear_osd(cols, 0, START_MARKERS)
    assert records_from({}, cols) == {0: OsdRun(restarted=7.0, failures=1, settling=8.0,
                                                grew_at=9.0)}
    clear_osd(cols, 0, SETTLE_MARKERS)
    assert records_from({0: rec}, cols) == {0: OsdRun(restarted=7.0, failures=1)}
    cols = columns({1: OsdRun(granted=1.0, peak=2)})
    clear_osd(cols, 1, START_MARKERS)
    clear_osd(cols, 9, START_MARKERS)          # an OSD without an entry: nothing to do
    assert records_from({1: OsdRun(granted=1.0, peak=2)}, cols) == {} and NO_RUN == OsdRun()
