"""The crush-return bench's arithmetic on real crushtool output: a 12-OSD map (4 hosts x 3
OSDs in 2 racks, `crushtool --build --num_osds 12 host straw2 3 rack straw2 2 root straw2 0`),
pool 1, x 0..15, size 3, captured in the Tentacle chroot with the built (optimal) tunables and
with the argonaut ones, all in and with osd.1 and osd.2 out (`--weight 1 0 --weight 2 0`):
host0 (osd.0-2) with k = 1 of its OSDs in. The counts below were read off those files."""
from __future__ import annotations

import json
import pathlib

from ceph_recovery_tools.bench.crushreturn import (cluster_table, findings, k_row, moves, page,
                                                   parse_mappings, pg_counts, pg_num_for)

DATA = pathlib.Path(__file__).parent / "data" / "crush"
REPO = pathlib.Path(__file__).resolve().parents[3]
HOST = [0, 1, 2]


def load(name):
    return parse_mappings((DATA / name).read_text())


def test_mappings_and_counts_from_crushtool_output():
    final, now = load("optimal-all-in.txt"), load("optimal-osd0-in.txt")
    assert len(final) == 16 and final[0] == [3, 1, 7] and now[15] == [3, 0, 8]
    assert [pg_counts(final)[o] for o in HOST] == [2, 6, 4]
    assert pg_counts(now)[0] == 6 and pg_counts(now)[1] == 0
    # lines that are no mapping (the utilization block) are skipped
    assert parse_mappings("rule 0 (replicated_rule) num_rep 3 result size == 3:\t16/16\n"
                          "  device 0:\t\t stored : 6\t expected : 4.8\n"
                          "CRUSH rule 0 x 7 []\n") == {7: []}


def test_optimal_one_osd_in_sends_the_rest_of_the_host_elsewhere():
    final, now = load("optimal-all-in.txt"), load("optimal-osd0-in.txt")
    assert moves(HOST, now, final) == {"elsewhere": 6, "moved_in_host": 4, "collateral": 0,
                                       "foreign": 4}
    r = k_row(1, HOST, now, final, hard_limit=12, soft_limit=5)
    assert (r["max_pgs"], r["max_osd"], r["share"], r["ratio"], r["max_own_ratio"]) == (
        6, 0, 4.0, 1.5, 3.0)
    assert (r["over_soft"], r["over_hard"], r["host_pgs_final"], r["moves_to_final"],
            r["short_pgs"]) == (True, False, 12, 10, 0)


def test_argonaut_one_osd_in_takes_the_whole_host():
    final, now = load("argonaut-all-in.txt"), load("argonaut-osd0-in.txt")
    r = k_row(1, HOST, now, final, hard_limit=12, soft_limit=5)
    assert (r["max_pgs"], r["host_pgs_final"], r["ratio"], r["max_own_ratio"]) == (
        13, 13, 3.0, 4.33)
    assert (r["elsewhere"], r["moved_in_host"], r["collateral"], r["over_hard"]) == (
        0, 10, 0, True)
    assert r["short_pgs"] == 1          # x 0: [3,0], the legacy 19 tries found no third host
    full = k_row(3, HOST, final, final, 12, 5)
    assert full["moves_to_final"] == 0 and full["max_pgs"] == 5
    none = k_row(0, HOST, final, final, 12, 5)
    assert none["max_pgs"] is None and none["ratio"] is None and not none["over_hard"]


def test_table_row_per_k_and_profile():
    rows = [dict(k_row(1, HOST, load(p + "-osd0-in.txt"), load(p + "-all-in.txt"), 12, 5),
                 profile=p) for p in ("optimal", "argonaut")]
    text = cluster_table(rows, ["optimal", "argonaut"])
    assert "| 1 | 6 over soft | 1.50 | 6 | 10 | 13 **over hard** | 3.00 | 0 | 10 |" in text


def test_pg_num_rounds_as_the_autoscaler():
    assert pg_num_for(360) == 8192          # 12,000: 8,192 is 3,808 away, 16,384 4,384
    assert pg_num_for(1200) == 32768
    assert pg_num_for(3, per_osd=384) == 512      # a tie goes up


def test_the_committed_page_is_the_committed_json_drawn_again():
    out = REPO / "docs" / "data" / "outmark"
    doc = json.loads((out / "crush-return.json").read_text())
    assert page(doc, findings(doc)) == (out / "crush-return.md").read_text()
