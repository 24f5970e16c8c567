"""tools/lab hint and the hint files (labkit/hints.py): every lab's hints.json passes the book's
check; a repeated call shows one more level, kept under build/hints, never in the student's
files; a broken file (a missing level, a § that is no heading) is named.

Run: python3 -m unittest discover -s tools/tests"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labkit import hints, labs  # noqa: E402


class HintFiles(unittest.TestCase):
    def test_every_lab_has_hints_that_pass_the_check(self):
        for lab in labs.labs():
            with self.subTest(lab.number):
                self.assertEqual(hints.problems(lab), [])
                self.assertTrue(hints.load(lab))

    def test_every_starter_todo_has_a_step(self):
        # Each "TODO N" of a starter's region is a step of its hints (or part of one: 3b of 3).
        import re
        for lab in labs.labs():
            steps = hints.load(lab)
            lines = (lab.folder() / "starter.cpp").read_text().splitlines()
            for number, line in enumerate(lines, start=1):
                m = re.match(r"^\s*//\s*TODO\s+(\d+[a-z]?)\b", line)
                if m:
                    with self.subTest(f"{lab.number}:{number}"):
                        self.assertIsNotNone(hints.step_of_line(steps, lines, number),
                                             f"labs/{lab.room}/starter.cpp:{number}: TODO "
                                             f"{m.group(1)} belongs to no step of hints.json")


class HintCommand(unittest.TestCase):
    """tools/lab hint in a copy of one lab's room (the real tree's build/ is left alone)."""

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        lab = labs.pick(["06"])[0]
        shutil.copytree(lab.folder(), self.tmp / "labs" / lab.room)
        self.lab = labs.pick(["06"], self.tmp)[0]
        self.addCleanup(shutil.rmtree, self.tmp)

    def call(self, *argv) -> str:
        args = argparse.Namespace(lab="06", step=argv[0] if argv and argv[0] != "--reset" else None,
                                  reset="--reset" in argv)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            hints.main(args, self.tmp)
        return out.getvalue()

    def test_each_call_shows_one_more_level_and_keeps_its_state_in_build(self):
        before = {p: p.read_bytes() for p in (self.tmp / "labs").rglob("*") if p.is_file()}
        first = self.call("attention.5")
        self.assertIn("1. the idea:", first)
        self.assertNotIn("2. the invariant:", first)
        second = self.call("attention.5")
        self.assertIn("2. the invariant:", second)
        third = self.call("attention.5")
        self.assertIn("3. the shape of the code:", third)
        self.assertIn("last level", third)
        state = json.loads((self.tmp / "build" / "hints" / f"{self.lab.room}.json").read_text())
        self.assertEqual(state, {"attention.5": 3})
        after = {p: p.read_bytes() for p in (self.tmp / "labs").rglob("*") if p.is_file()}
        self.assertEqual(before, after, "tools/lab hint wrote into the student's files")
        self.call("attention.5", "--reset")
        self.assertNotIn("2. the invariant:", self.call("attention.5"))

    def test_a_todo_number_names_its_step_and_a_list_has_every_step(self):
        self.assertIn("TODO 3 of paged_attention_v2_reduce_kernel", self.call("reduce.3"))
        listing = self.call()
        for s in hints.load(self.lab, self.tmp):
            self.assertIn(s.id, listing)


class BrokenFiles(unittest.TestCase):
    def test_a_missing_level_and_an_unknown_section_are_named(self):
        tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp)
        lab = labs.pick(["04"])[0]
        shutil.copytree(lab.folder(), tmp / "labs" / lab.room)
        path = tmp / "labs" / lab.room / "hints.json"
        data = json.loads(path.read_text())
        data["steps"][0]["levels"] = data["steps"][0]["levels"][:2]
        data["steps"][1]["section"] = "lab_04_nowhere"
        path.write_text(json.dumps(data))
        found = "\n".join(hints.problems(labs.pick(["04"], tmp)[0], tmp))
        self.assertIn("needs 3 non-empty levels", found)
        self.assertIn("§ lab_04_nowhere is not a heading", found)


if __name__ == "__main__":
    unittest.main()
