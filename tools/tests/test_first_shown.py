"""For every mutant of the catalogue, the test `tools/lab watch` shows first is one that the mutant's
`Caught by:` names: a student who makes that bug reads a hint meant for it.

The mutants' failing tests and their kinds are recorded in tools/tests/mutants/first_shown.json
(one line per mutant; the format is in labkit/mutants.py), so this runs in a second without
building the mutants; the rule (diagnosis.diagnose), the chapters' tables and the Caught by
lines are the live ones. `tools/lab mutants` and `tools/lab check` make the same check on freshly
built mutants. After a change to a lab's tests or its table, record again:

    tools/lab check --record

Run: python3 -m unittest discover -s tools/tests"""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labkit import diagnosis, grading, labs, mutants  # noqa: E402


class Failing:
    """A recorded failing test: its Suite.Test key and its kind (grading.KINDS)."""

    def __init__(self, key: str, kind: str):
        self.key, self.kind = key, kind


@unittest.skipUnless(labs.has_solutions(), "a student release has no mutants")
class FirstShown(unittest.TestCase):
    def test_the_first_test_shown_is_one_the_mutant_names(self):
        recorded = mutants.read_record()
        catalogue = {f"{m.lab.room}/{m.stem}": m for m in mutants.catalogue(labs.labs())}
        checked = 0
        for key, failing in sorted(recorded.items()):
            self.assertTrue(key in catalogue, f"{key} is recorded but not in the catalogue: "
                            "record again (tools/lab check --record)")
            m = catalogue[key]
            with self.subTest(key):
                for kind in failing.values():
                    self.assertIn(kind, grading.KINDS, f"{key}: a kind the grader does not know")
                shown = diagnosis.diagnose([Failing(k, v) for k, v in failing.items()],
                                           grading.read_table(m.lab), m.lab).first
                self.assertIsNotNone(shown, f"{key}: recorded with no failing test")
                self.assertIn(shown.key, m.caught_by,
                              f"{key}: watch shows {shown.key} first ({shown.kind}); Caught by: "
                              f"{', '.join(m.caught_by)}. Name it there, or move a test it names "
                              "before it in the chapter's table (or record again: "
                              "tools/lab check --record)")
                checked += 1
        # Every mutant of the catalogue is recorded (tools/lab check --record records them all).
        for key in catalogue:
            # (assertTrue: assertIn would print the whole record with the message)
            self.assertTrue(key in recorded, f"{key} has no record: tools/lab check --record")
        self.assertGreaterEqual(checked, 45)

    def test_the_record_is_one_line_per_mutant(self):
        lines = mutants.RECORD.read_text().splitlines()
        self.assertEqual((lines[0], lines[-1]), ("{", "}"))
        self.assertEqual(len(lines) - 2, len(mutants.read_record()))


if __name__ == "__main__":
    unittest.main()
