#!/usr/bin/env python3
"""The core's load-to-peak rule (ceph_recovery.growth.peak_from_load) replayed on the fresh-lab
drills of docs/data/growth-per-entry: per lab, the 5,000-, 20,000- and 5,000-object drills in
order, each booted start predicted from its load, its missed entries and the starts of the
earlier drills (ceph_recovery_tools.drill.tables.replay). Prints one line per start and, per
release, the median and extremes of the error from the second drill on (where something is
learned). Run it with the core of any commit on PYTHONPATH to compare rules:

  python3 docs/examples/growth-replay.py [-v]
"""
import json
import os
import statistics
import sys

from ceph_recovery_tools.drill.tables import replay

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "growth-per-entry")
LABS = {"Tentacle 20.2.4": ("tn1", "tn2", "tn3", "tn4"), "Pacific 16.2.15": ("pa1", "pa2", "pa3", "pa4")}


def main() -> int:
    for release, labs in LABS.items():
        later = []
        for lab in labs:
            reports = [("%s-%s" % (lab, run), json.load(open(os.path.join(DATA, "%s-%s.json" % (lab, run)))))
                       for run in ("a5k", "b20k", "c5k")]
            replay(reports)
            for i, (label, r) in enumerate(reports):
                for p in r["predictions"]:
                    if p.get("replay_error") is None:
                        continue
                    if "-v" in sys.argv:
                        print("%s osd.%s missed %s: %+.0f %%" % (label, p["osd"], p.get("missed_entries"),
                                                                 100 * p["replay_error"]))
                    if i > 0:
                        later.append(p["replay_error"])
        print("%s, from the second drill on: %d starts, |error| median %.0f %%, from %+.0f %% to %+.0f %%" % (
            release, len(later), 100 * statistics.median(abs(e) for e in later), 100 * min(later), 100 * max(later)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
