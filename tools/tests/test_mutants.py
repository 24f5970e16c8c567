"""Unit tests of the mutant catalogue as data: reading and applying unified diffs without `patch`
(labkit/patches.py), the mutant files' fields, stale mutants, --new/--save, and the catalogue itself
(every mutant applies, and none is a copy of its solution).
Run: python3 -m unittest discover -s tools/tests"""
from __future__ import annotations

import shutil
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labkit import labs, mutants, patches, testrun  # noqa: E402
from labkit.labs import Lab  # noqa: E402
from labkit.paths import ROOT  # noqa: E402

SOLUTION = "".join(f"line {i}\n" for i in range(1, 21))  # line 1 .. line 20


def diff_of(old: str, new: str) -> list[str]:
    return patches.make(old, new, "solution.cpp")


class Parse(unittest.TestCase):
    def test_reads_what_difflib_writes(self):
        new = SOLUTION.replace("line 10\n", "line ten\n").replace("line 18\n", "")
        d = patches.parse(diff_of(SOLUTION, new))
        self.assertEqual((d.old_file, d.new_file), ("solution.cpp", "solution.cpp"))
        self.assertEqual(len(d.hunks), 2)
        self.assertEqual((d.hunks[0].old_start, d.hunks[0].old_count), (7, 7))
        self.assertEqual(d.hunks[0].old, [f"line {i}" for i in range(7, 14)])
        self.assertEqual(d.hunks[1].new, ["line 15", "line 16", "line 17", "line 19",
                                          "line 20"])

    def test_counts_may_be_left_out_and_blank_context_stripped(self):
        text = "a\n\nb\n"
        lines = ["--- solution.cpp", "+++ solution.cpp", "@@ -1,3 +1,3 @@", " a", "",
                 "-b", "+c"]
        self.assertEqual(patches.apply(patches.parse(lines), text), "a\n\nc\n")
        lines = ["--- solution.cpp", "+++ solution.cpp", "@@ -2 +2 @@", "-y", "+z"]
        self.assertEqual(patches.apply(patches.parse(lines), "x\ny\n"), "x\nz\n")

    def test_malformed_diffs_name_the_line(self):
        cases = {
            "must begin with '--- <file>'": ["@@ -1 +1 @@", "-a", "+b"],
            "line 3 should begin a hunk": ["--- s", "+++ s", "garbage"],
            "ends early": ["--- s", "+++ s", "@@ -1,3 +1,3 @@", " a", "-b"],
            "begins with '*'": ["--- s", "+++ s", "@@ -1,2 +1,2 @@", " a", "*b"],
            "line 5 should begin a hunk": ["--- s", "+++ s", "@@ -1,1 +1,1 @@", " a", " b"],
            "more new lines than its header": ["--- s", "+++ s", "@@ -1,2 +1,1 @@", " a", "+b"],
        }
        for words, lines in cases.items():
            with self.subTest(words), self.assertRaises(patches.PatchError) as e:
                patches.apply(patches.parse(lines, "m.patch"), "a\nb\n")
            self.assertIn(words, str(e.exception))
            self.assertIn("m.patch", str(e.exception))


class Apply(unittest.TestCase):
    def test_applies_at_the_stated_line(self):
        new = SOLUTION.replace("line 10\n", "line ten\n")
        self.assertEqual(patches.apply(patches.parse(diff_of(SOLUTION, new)), SOLUTION), new)

    def test_applies_with_an_offset_when_unrelated_lines_moved(self):
        new = SOLUTION.replace("line 10\n", "line ten\n")
        d = patches.parse(diff_of(SOLUTION, new))
        moved = "a new include\nanother\n" + SOLUTION.replace("line 19\n", "")
        self.assertEqual(patches.apply(d, moved),
                         "a new include\nanother\n" + new.replace("line 19\n", ""))

    def test_several_hunks_apply_together(self):
        new = SOLUTION.replace("line 2\n", "two\n").replace("line 19\n", "nineteen\n")
        d = patches.parse(diff_of(SOLUTION, new))
        self.assertEqual(len(d.hunks), 2)
        self.assertEqual(patches.apply(d, "x\n" + SOLUTION), "x\n" + new)

    def stale(self, diff_lines: list[str], text: str) -> str:
        with self.assertRaises(patches.PatchError) as e:
            patches.apply(patches.parse(diff_lines, "m.patch"), text, "m.patch")
        self.stale_kind = isinstance(e.exception, patches.StalePatch)
        return str(e.exception)

    def test_a_changed_context_line_is_stale_and_named(self):
        d = diff_of(SOLUTION, SOLUTION.replace("line 10\n", "line ten\n"))
        why = self.stale(d, SOLUTION.replace("line 9\n", "line nine\n"))
        self.assertTrue(self.stale_kind)
        self.assertIn("m.patch: hunk 1 (@@ -7,7 +7,7 @@) no longer matches the file", why)
        self.assertIn("line 9 is 'line nine', the hunk expects 'line 9'", why)

    def test_a_removed_line_is_stale(self):
        d = diff_of(SOLUTION, SOLUTION.replace("line 10\n", "line ten\n"))
        why = self.stale(d, SOLUTION.replace("line 10\n", ""))
        self.assertTrue(self.stale_kind)
        self.assertIn("line 10 is 'line 11', the hunk expects 'line 10'", why)

    def test_a_hunk_that_fits_two_other_places_is_ambiguous(self):
        d = diff_of(SOLUTION, SOLUTION.replace("line 10\n", "line ten\n"))
        block = "".join(f"line {i}\n" for i in range(7, 14))
        twice = "head\n" * 3 + block + "middle\n" + block
        why = self.stale(d, twice)
        self.assertTrue(self.stale_kind)
        self.assertIn("at 2 other places (lines 4, 12)", why)
        # ...while a copy elsewhere does not matter when the stated place still fits.
        copy = SOLUTION + "".join(f"line {i}\n" for i in range(7, 14))
        self.assertTrue(patches.apply(patches.parse(d), copy).startswith(
            SOLUTION.replace("line 10\n", "line ten\n")))

    def test_overlapping_hunks_and_empty_changes_are_problems(self):
        a = ["--- s", "+++ s", "@@ -3,3 +3,3 @@", " line 3", "-line 4", "+four", " line 5"]
        b = ["@@ -4,3 +4,3 @@", " line 4", "-line 5", "+five", " line 6"]
        self.assertIn("hunks 1 and 2 overlap", self.stale(a + b, SOLUTION))
        self.assertFalse(self.stale_kind)
        same = ["--- s", "+++ s", "@@ -3,2 +3,2 @@", "-line 3", "+line 3", " line 4"]
        self.assertIn("changes nothing", self.stale(same, SOLUTION))
        self.assertIn("no hunks", self.stale(["--- s", "+++ s"], SOLUTION))


def scratch_tree(labs: list[Lab]) -> Path:
    """A copy of the parts of this tree the catalogue reads: each lab's README and solutions/."""
    root = Path(tempfile.mkdtemp(prefix="pa-mutants-"))
    for lab in labs:
        (root / "labs" / lab.room).mkdir(parents=True)
        shutil.copy(ROOT / "labs" / lab.room / "README.md", root / "labs" / lab.room)
        shutil.copytree(ROOT / "solutions" / lab.room, root / "solutions" / lab.room)
    return root


@unittest.skipUnless(labs.has_solutions(), "a student release has no mutants")
class Catalogue(unittest.TestCase):
    def test_every_mutant_has_its_fields_and_applies(self):
        found = mutants.catalogue(labs.labs())
        self.assertGreaterEqual(len(found), 45)
        for m in found:
            with self.subTest(f"{m.lab.number}/{m.stem}"):
                self.assertEqual(m.problems, [])
                self.assertTrue(m.bug and m.effect and m.caught_by)
                self.assertIsNotNone(m.source)
                solution = mutants.solution_path(m.lab).read_text()
                self.assertNotEqual(m.source, solution)

    def test_no_mutant_is_a_copy_of_its_solution(self):
        for lab in labs.labs():
            folder = ROOT / "solutions" / lab.room / "mutants"
            with self.subTest(lab.number):
                self.assertEqual(sorted(p.name for p in folder.iterdir()
                                        if not p.name.endswith(mutants.SUFFIX)), [])
                solution = set(mutants.solution_path(lab).read_text().splitlines())
                for patch in folder.glob("*" + mutants.SUFFIX):
                    # a diff carries its context: never more than a few dozen of the solution's lines
                    shared = [l for l in patch.read_text().splitlines()
                              if l[1:] in solution and l.strip()]
                    self.assertLess(len(shared), 40, patch.name)

    def test_a_solution_edited_under_its_mutant_makes_it_stale(self):
        """The scenario: a scratch copy of the tree, one line of a solution changed where a mutant
        has its context; the catalogue (what check and mutants read) names that mutant stale,
        with its file, hunk and line, and leaves the others alone."""
        lab = next(l for l in labs.labs() if l.number == "02")
        root = scratch_tree([lab])
        self.addCleanup(shutil.rmtree, root)
        target = root / "solutions" / lab.room / "mutants" / "corr_dropped.patch"
        _, diff_lines, _ = mutants.split(target.read_text())
        hunk = patches.parse(diff_lines).hunks[0]
        context = hunk.old[0]
        solution = root / "solutions" / lab.room / "solution.cpp"
        text = solution.read_text()
        self.assertEqual(text.count(context + "\n"), 1)
        solution.write_text(text.replace(context + "\n", context + "  // edited\n"))

        found = {m.stem: m for m in mutants.catalogue([lab], root)}
        stale = found["corr_dropped"]
        self.assertTrue(stale.stale)
        self.assertIsNone(stale.source)
        why = stale.problems[0]
        self.assertIn(f"solutions/{lab.room}/mutants/corr_dropped.patch: hunk 1 ({hunk.header}) "
                      "no longer matches the file", why)
        self.assertIn(f"line {hunk.old_start} is", why)
        self.assertFalse(stale.killed)
        self.assertIn("mutant 02/corr_dropped: stale: ", "\n".join(mutants.problems(
            list(found.values()))))
        # The stale mutant gets no source to build, and an old one is removed.
        sources = root / "build" / "mutants" / "sources"
        (sources / lab.room).mkdir(parents=True)
        (sources / lab.room / "corr_dropped.cpp").write_text("old")
        mutants.write_sources(list(found.values()), sources)
        self.assertFalse((sources / lab.room / "corr_dropped.cpp").exists())
        self.assertTrue((sources / lab.room / "denom_not_rescaled.cpp").exists())

    def test_sources_are_written_only_when_their_bytes_change(self):
        lab = labs.labs()[0]
        root = scratch_tree([lab])
        self.addCleanup(shutil.rmtree, root)
        found = mutants.catalogue([lab], root)
        sources = root / "sources"
        mutants.write_sources(found, sources)
        first = {p.name: p.stat().st_mtime_ns for p in (sources / lab.room).iterdir()}
        self.assertEqual(len(first), len(found))
        mutants.write_sources(found, sources)
        self.assertEqual({p.name: p.stat().st_mtime_ns for p in (sources / lab.room).iterdir()},
                         first)


class Record(unittest.TestCase):
    def test_one_line_per_mutant_with_each_failing_test_and_its_most_telling_kind(self):
        lab = labs.labs()[0]
        m = mutants.Mutant(lab, Path("a_bug.patch"))
        m.results = {name: testrun.TestResult(name, status, detail=detail) for name, status, detail in (
            ("lab01.S.Fine/Emulator", "passed", ""),
            ("lab01.S.Twice/Emulator", "failed", "worst element [0]: expected 1, actual 2"),
            ("lab01.S.Twice/Reference", "failed", "actual holds nan at [0] (expected 1)"),
            ("lab01.S.Crash", "crashed", "SIGSEGV"),
            ("lab01.S.Gpu", "skipped", "no CUDA device"))}
        unbuilt = mutants.Mutant(lab, Path("not_built.patch"))
        out = Path(tempfile.mkdtemp()) / "record.json"
        self.addCleanup(shutil.rmtree, out.parent)
        self.assertEqual(mutants.write_record([m, unbuilt], out), 1)
        self.assertEqual(out.read_text().splitlines(), [
            "{", f'"{lab.room}/a_bug": {{"failing": {{"S.Crash": "crashed", "S.Twice": "NaN"}}}}', "}"])
        self.assertEqual(mutants.read_record(out),
                         {f"{lab.room}/a_bug": {"S.Crash": "crashed", "S.Twice": "NaN"}})


class Fields(unittest.TestCase):
    def test_fields_and_continuations(self):
        fields, diff, problems = mutants.split(
            "Mutant: a bug\nBug: it goes\n  wrong here\nChapter: \\ref x\nCaught by: A.B, C.D\n"
            "\n--- solution.cpp\n")
        self.assertEqual(problems, [])
        self.assertEqual(fields["Bug"], "it goes wrong here")
        self.assertEqual(diff, ["--- solution.cpp"])

    def test_a_missing_field_or_a_stray_line_is_a_problem(self):
        _, _, problems = mutants.split("Mutant: a\nChapter: \\ref x\nCaught by: A.B\n\n")
        self.assertEqual(problems, ["the header has no 'Bug:' field"])
        _, _, problems = mutants.split("Mutant: a\n// Bug: b\n\n")
        self.assertIn("line 2: the header holds 'Field: value' lines", problems[0])

    def test_render_reads_back(self):
        fields = {"Mutant": "m", "Bug": "word " * 40, "Chapter": "\\ref x",
                  "Caught by": ", ".join(f"Suite.Test{i}" for i in range(20))}
        text = mutants.render(fields, ["--- solution.cpp"])
        self.assertTrue(all(len(l) <= 100 for l in text.splitlines()[:-4]))
        back, diff, problems = mutants.split(text)
        self.assertEqual(problems, [])
        self.assertEqual({k: v.strip() for k, v in back.items()},
                         {k: v.strip() for k, v in fields.items()})


@unittest.skipUnless(labs.has_solutions(), "a student release has no solutions")
class NewAndSave(unittest.TestCase):
    def test_new_edit_save_round_trip(self):
        lab = next(l for l in labs.labs() if l.number == "01")
        root = scratch_tree([lab])
        self.addCleanup(shutil.rmtree, root)
        scratch, stale = mutants.new(lab, "my_new_bug", root)
        self.assertEqual(stale, [])
        self.assertEqual(scratch, root / "build/mutants/edit" / lab.room / "my_new_bug.cpp")
        text = scratch.read_text()
        solution = mutants.solution_path(lab, root).read_text()
        self.assertTrue(text.endswith("\n\n" + solution))
        # The instructor fills in the fields and plants the bug.
        line = next(l for l in solution.splitlines() if "std::sqrt" in l)
        text = (text.replace("// Mutant: \n", "// Mutant: the scale is squared\n")
                    .replace("// Bug: \n", "// Bug: logits are too small,\n//   far too flat\n")
                    .replace("// Chapter: \\ref \n", "// Chapter: \\ref lab_01_attention\n")
                    .replace("// Caught by: \n", "// Caught by: PagedAttention.BlockSizeOne\n")
                    .replace(line, line.replace("std::sqrt", "")))
        scratch.write_text(text)
        path, problems = mutants.save(lab, "my_new_bug", root)
        self.assertEqual(problems, [])
        m = mutants.read_mutant(lab, path, root)
        self.assertEqual((m.bug, m.effect, m.chapter, m.caught_by),
                         ("the scale is squared", "logits are too small, far too flat",
                          "lab_01_attention", ["PagedAttention.BlockSizeOne"]))
        self.assertEqual(m.source, solution.replace(line, line.replace("std::sqrt", "")))
        self.assertNotIn(solution.splitlines()[0], path.read_text())  # a diff, not a copy
        # --new on an existing mutant starts from it.
        again, _ = mutants.new(lab, "my_new_bug", root)
        self.assertIn("// Mutant: the scale is squared\n", again.read_text())
        self.assertTrue(again.read_text().endswith("\n\n" + m.source))
        # A stale one keeps its fields over the plain solution, and says why.
        mutants.solution_path(lab, root).write_text(solution.replace(line, line + " // moved"))
        again, stale = mutants.new(lab, "my_new_bug", root)
        self.assertTrue(stale[0].startswith("stale: "), stale)
        self.assertIn("// Caught by: PagedAttention.BlockSizeOne\n", again.read_text())
        self.assertTrue(again.read_text().endswith(line + " // moved\n" +
                                                   solution.split(line + "\n", 1)[1]))

    def test_save_refuses_an_unchanged_copy_and_a_missing_field(self):
        lab = next(l for l in labs.labs() if l.number == "01")
        root = scratch_tree([lab])
        self.addCleanup(shutil.rmtree, root)
        mutants.new(lab, "nothing", root)
        _, problems = mutants.save(lab, "nothing", root)
        self.assertIn("the header has no 'Mutant:' field", "\n".join(problems))
        with self.assertRaises(ValueError):
            mutants.new(lab, "Bad Name", root)


if __name__ == "__main__":
    unittest.main()
