"""For every mutant of the catalogue, the test `tools/lab watch` shows first is one that the mutant's
`Caught by:` names: a student who makes that bug reads a hint meant for it.

The mutants' test results are recorded in tools/tests/mutants/first_shown.json (the failing tests
of each mutant, with the status and detail tools/lab reads from their output), so this runs in
a second without building 45 mutants; the rule (diagnosis.diagnose), the chapters' tables and
the Caught by lines are the live ones. `tools/lab mutants` and `tools/lab check` make the same
check on freshly built mutants. After a change to a lab's tests, record again:

    python3 tools/tests/test_first_shown.py --record [NN ...]

Run: python3 -m unittest discover -s tools/tests"""
from __future__ import annotations

import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labkit import diagnosis, grading, labs, mutants, testrun  # noqa: E402

RECORD = Path(__file__).resolve().parent / "mutants" / "first_shown.json"


def record(numbers: list[str]) -> None:
    """Builds and runs the mutants of the labs `numbers` (every lab when empty) and writes their
    failing tests into RECORD, keeping the other labs' entries."""
    from labkit import build as cmake
    from labkit.paths import build_dir
    found = mutants.catalogue(labs.pick(numbers))
    with cmake.lock(build_dir("mutants"), "test_first_shown --record"):
        mutants.run(found, mutants.configure(found))
    kept = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    for m in found:
        kept[f"{m.lab.room}/{m.stem}"] = [
            {"test": testrun.test_key(name), "status": r.status, "detail": r.detail}
            for name, r in sorted(m.results.items()) if r.status not in ("passed", "skipped")]
    RECORD.write_text(json.dumps(kept, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    print(f"{RECORD}: {len(kept)} mutants")


class Failing:
    def __init__(self, entry: dict):
        self.key, self.status, self.detail = entry["test"], entry["status"], entry["detail"]


@unittest.skipUnless(labs.has_solutions(), "a student release has no mutants")
class FirstShown(unittest.TestCase):
    def test_the_first_test_shown_is_one_the_mutant_names(self):
        recorded = json.loads(RECORD.read_text())
        catalogue = {f"{m.lab.room}/{m.stem}": m for m in mutants.catalogue(labs.labs())}
        rooms = {m.lab.room for m in catalogue.values()}
        checked = 0
        for key, failing in sorted(recorded.items()):
            self.assertIn(key, catalogue, f"{key} is recorded but not in the catalogue: record "
                          "again (see this file's docstring)")
            m = catalogue[key]
            with self.subTest(key):
                shown = diagnosis.diagnose([Failing(e) for e in failing],
                                           grading.read_table(m.lab), m.lab).first
                self.assertIsNotNone(shown, f"{key}: recorded with no failing test")
                self.assertIn(shown.key, m.caught_by,
                              f"{key}: watch shows {shown.key} first "
                              f"({grading.failure_kind(shown.status, shown.detail)}); Caught by: "
                              f"{', '.join(m.caught_by)}. Name it there, or move a test it names "
                              "before it in the chapter's table (or record again: see this "
                              "file's docstring)")
                checked += 1
        # A lab is recorded whole or not at all (a new lab's mutants wait for their first record;
        # tools/lab check covers them meanwhile).
        recorded_rooms = {k.split("/")[0] for k in recorded}
        for key in catalogue:
            if key.split("/")[0] in recorded_rooms:
                self.assertIn(key, recorded, f"{key} has no record: record again")
        self.assertGreaterEqual(checked, 21)

if __name__ == "__main__":
    if sys.argv[1:2] == ["--record"]:
        record(sys.argv[2:])
    else:
        unittest.main()
