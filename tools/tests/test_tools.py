"""Unit tests of tools/lab's grading pieces that need no build: the chapters' points-and-hints
tables, the status words, Gradescope's results.json shape and the JUnit XML.
Run: python3 -m unittest discover -s tools/tests (ctest runs it as tools.unit, label `tools`)."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labkit import grading, labs, release, reports, testrun  # noqa: E402
from labkit.labs import Lab  # noqa: E402
from labkit.paths import ROOT  # noqa: E402

LAB = Lab("02", "02-online-softmax", "Online softmax")


def sample_grades() -> list[grading.LabGrade]:
    """Two labs: one with every status a test can have, one that did not build."""
    g = grading.LabGrade(LAB, True)
    for i, (status, detail) in enumerate([("passed", ""), ("failed", "first difference at [3]"),
                                          ("not implemented", "paged_online_attention"),
                                          ("crashed", "SIGSEGV"), ("timed out", "")]):
        pts = 2 if i == 0 else 1
        g.tests.append(grading.Graded(LAB, f"S.T{i}", f"S.T{i}", status, detail,
                                      pts if status == "passed" else 0, pts, "a hint (§ x)", 0.01))
    g.skipped["S.Gpu/Cuda"] = "no CUDA device"
    other = Lab("03", "03-flash-decoding", "Flash-decoding")
    h = grading.LabGrade(other, False, "starter.cpp:3: error: expected ';'")
    h.tests.append(grading.Graded(other, "A.B", "A.B", "did not build", h.build_error, 0, 1, ""))
    return [g, h]


class GradescopeShape(unittest.TestCase):
    def test_results_of_every_status_are_valid(self):
        report = reports.gradescope(sample_grades(), 12.5)
        self.assertEqual(reports.validate_gradescope(json.loads(json.dumps(report))), [])
        self.assertEqual(report["score"], 2)
        self.assertEqual(report["max_score"], 7)
        self.assertEqual(len(report["tests"]), 6)  # the skipped GPU test is not graded
        statuses = [t["output"].split(":")[0].splitlines()[0] for t in report["tests"]]
        self.assertEqual(statuses, ["passed", "failed", "not implemented", "crashed",
                                    "timed out", "did not build"])
        self.assertIn("Hint: a hint", report["tests"][1]["output"])

    def test_validator_catches_broken_results(self):
        good = reports.gradescope(sample_grades(), 1.0)
        cases = {
            "missing 'tests'": {k: v for k, v in good.items() if k != "tests"},
            "status": dict(good, tests=[dict(good["tests"][0], status="ok")] + good["tests"][1:]),
            "sum of the tests' scores": dict(good, score=99),
            "not unique": dict(good, tests=good["tests"] + good["tests"][:1]),
            "execution_time": dict(good, tests=[{k: v for k, v in good["tests"][0].items()
                                                 if k != "execution_time"}] + good["tests"][1:]),
            "outside": dict(good, tests=[dict(good["tests"][1], score=5)] + good["tests"][2:]),
        }
        for words, broken in cases.items():
            with self.subTest(words):
                problems = reports.validate_gradescope(broken)
                self.assertTrue(any(words in p for p in problems), problems)


class Table(unittest.TestCase):
    def printed(self, grades) -> list[str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            reports.print_table(grades, ROOT / "build" / "starter")
        return out.getvalue().splitlines()

    def test_every_column_has_a_header_and_the_last_line_explains_the_exit_status(self):
        lines = self.printed(sample_grades())
        header = lines[1].split()
        self.assertEqual(header[:3], ["points", "result", "test"])
        self.assertEqual(" ".join(header[3:]), "where or why")
        self.assertIn("reached paged_online_attention()", "\n".join(lines))
        self.assertIn("signal SIGSEGV", "\n".join(lines))
        self.assertIn("Grade one lab: tools/lab grade NN", lines)
        last = " ".join(lines[next(i for i, l in enumerate(lines) if l.startswith("Exit status")):])
        self.assertTrue(last.startswith("Exit status 1: not every graded test passes yet"))
        self.assertTrue(last.endswith("0 at full marks."))   # wrapped, never cut

    def test_one_lab_graded_alone_and_full_marks(self):
        g = grading.LabGrade(LAB, True)
        g.tests.append(grading.Graded(LAB, "S.T", "S.T", "passed", "", 1, 1, ""))
        lines = self.printed([g])
        self.assertNotIn("Grade one lab: tools/lab grade NN", lines)
        self.assertEqual(lines[-1], "Exit status 0: full marks.")
        self.assertTrue(grading.complete([g]))


class JUnit(unittest.TestCase):
    def test_counts_and_kinds(self):
        root = ET.fromstring(ET.tostring(reports.junit(sample_grades()).getroot()))
        lab02, lab03 = root.findall("testsuite")
        self.assertEqual((lab02.get("tests"), lab02.get("failures"), lab02.get("errors"),
                          lab02.get("skipped")), ("6", "2", "2", "1"))
        self.assertEqual(lab03.find("testcase/error").get("type"), "did not build")


class StatusWords(unittest.TestCase):
    def test_ctest_words_map_to_statuses(self):
        failed = "[ RUN      ] S.T\nx.cpp:3: Failure\nValue of: f()\n  Actual: false (first " \
                 "difference at [0]: 6 vs 0)\n[  FAILED  ] S.T (0 ms)\n"
        cases = [("Passed", "", ("passed", "")),
                 ("***Timeout", "", ("timed out", "")),
                 ("***Exception: SegFault", "", ("crashed", "SIGSEGV")),
                 ("Subprocess aborted***Exception:", "", ("crashed", "SIGABRT")),
                 ("***Failed", "not implemented yet: merge — fill it in", ("not implemented", "merge")),
                 ("***Failed", failed, ("failed", "first difference at [0]: 6 vs 0")),
                 ("***Skipped", "[  SKIPPED ] S.T\nSkipped\nno CUDA device\n",
                  ("skipped", "no CUDA device"))]
        for word, output, expected in cases:
            with self.subTest(word):
                self.assertEqual(testrun.classify(word, output), expected)

    def test_test_key(self):
        self.assertEqual(testrun.test_key("lab05.PagedAttentionV1.OneToken/Emulator  # GetParam() = emulator"),
                         "PagedAttentionV1.OneToken")
        self.assertEqual(testrun.test_key("lab02.Suite.Test"), "Suite.Test")
        self.assertEqual(testrun.test_key("Inst/Suite.Test/3"), "Suite.Test")


class Chapters(unittest.TestCase):
    def test_every_chapter_table_parses_and_points_at_real_sections(self):
        for lab in labs.labs():
            with self.subTest(lab.number):
                rows = grading.read_table(lab)
                graded = [r for r in rows.values() if r.points]
                self.assertGreaterEqual(len(graded), 10)
                readme = (ROOT / "labs" / lab.room / "README.md").read_text()
                titles = grading.section_titles(readme)
                for r in graded:
                    self.assertIn(r.section, titles, f"{r.key}: \\ref {r.section}")
                    self.assertTrue(r.hint, f"{r.key} has no hint")
                    self.assertNotIn("\\f$", r.hint, f"{r.key}: a hint is plain words")

    def test_a_stumbles_row_anchor_is_a_section_with_its_bold_title(self):
        readme = ("## Notes {#lab_05_notes}\n\n| stumble | what you see |\n|---|---|\n"
                  "| \\anchor lab_05_note_tail **The tail of the last block**<br>`T` | NaN |\n")
        titles = grading.section_titles(readme)
        self.assertEqual(titles["lab_05_note_tail"], "The tail of the last block")
        self.assertEqual(titles["lab_05_notes"], "Notes")
        # A hint names a stumble row as such (there is no heading "The tail of ..." to look for).
        self.assertEqual(grading.where_to_read(readme, "lab_05_note_tail"),
                         "the stumble “The tail of the last block” in the notes")
        self.assertEqual(grading.where_to_read(readme, "lab_05_notes"), "§ Notes")

    def test_table_errors_name_the_line(self):
        bad = ROOT / "build" / "tools-unit" / "labs" / "02-online-softmax"
        bad.mkdir(parents=True, exist_ok=True)
        (bad / "README.md").write_text("# Lab 02 — x {#lab_02}\n\n## What the tests prove {#lab_02_tests}\n\n"
                                       "| test | pts | what it pins | hint |\n|---|---|---|---|\n"
                                       "| `S.T` | 1 | pins | no section here |\n")
        with self.assertRaisesRegex(grading.TableError, r"README.md:7: the hint must end"):
            grading.read_table(LAB, bad.parent.parent)


class Release(unittest.TestCase):
    def test_instructor_files_are_found_by_folder_not_by_name(self):
        out = Path(tempfile.mkdtemp(prefix="pa-release-"))
        self.addCleanup(shutil.rmtree, out)
        for rel in ("tools/labkit/mutants.py", "labs/01-x/starter.cpp", "build/mutants/a.cpp",
                    "solutions/01-x/notes.txt", "tools/tests/mutants/before.json",
                    "labs/01-x/solution.cpp"):
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_text("x")
        self.assertEqual(release.instructor_files(out),
                         ["labs/01-x/solution.cpp", "solutions", "solutions/01-x",
                          "solutions/01-x/notes.txt", "tools/tests/mutants",
                          "tools/tests/mutants/before.json"])


    def test_instructor_blocks_and_presets_are_dropped(self):
        text = "a\n<!-- instructor -->\nsecret\n<!-- /instructor -->\nb\n"
        self.assertEqual(release.strip_instructor_blocks(text), "a\nb\n")
        text = "a\n\\if pa_instructor\nInstructors: `solutions/`.\n\\endif\nb\n"
        self.assertEqual(release.strip_instructor_blocks(text), "a\nb\n")
        text = "a\n<!-- student\n```sh\ntools/lab watch 01\n```\n-->\nb\n"
        self.assertEqual(release.strip_instructor_blocks(text),
                         "a\n```sh\ntools/lab watch 01\n```\nb\n")
        presets = json.loads(release.student_presets(
            (ROOT / "CMakePresets.json").read_text()))
        names = [p["name"] for p in presets["configurePresets"]]
        self.assertIn("starter", names)
        self.assertNotIn("solution", names)
        for kind in ("buildPresets", "testPresets", "workflowPresets"):
            for p in presets.get(kind, []):
                self.assertNotIn("solution", json.dumps(p))


if __name__ == "__main__":
    unittest.main()
