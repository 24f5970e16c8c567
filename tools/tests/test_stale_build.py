"""The grader never grades a binary older than the sources it claims to grade.

Debian 12's ninja (1.11) judges a file by its modification time: when a student saves starter.cpp
while its own compile runs, the object written at the end of that compile is newer than the
save although it holds the code from before it, and ninja never builds it again. These tests
replay that race deterministically in a toy lab of one test: a compiler launcher compiles
starter.cpp as it is, then rewrites it (the student's save, a bug) and only then puts the object
in place. The grade must report the code as it is after the save. (On the grader before the fix,
commit 75c341f, test_a_save_during_the_compile_is_graded reports full marks for the old code.)
Run: python3 -m unittest discover -s tools/tests"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labkit import build as cmake  # noqa: E402
from labkit import grading  # noqa: E402
from labkit.labs import Lab  # noqa: E402

LAB = Lab("01", "01-toy", "A toy lab")
RIGHT = "int answer() { return 42; }\n"
BUGGY = "int answer() { return 41; }  // saved while the old version compiled\n"

CMAKELISTS = """cmake_minimum_required(VERSION 3.22)
project(toy LANGUAGES CXX)
enable_testing()
add_library(lab01_impl STATIC labs/01-toy/starter.cpp)
add_executable(lab01 labs/01-toy/test_lab.cpp)
target_link_libraries(lab01 PRIVATE lab01_impl)
add_test(NAME lab01.Toy.Answer COMMAND lab01)
set_tests_properties(lab01.Toy.Answer PROPERTIES LABELS lab01)
"""

TEST_LAB = r"""#include <cstdio>
int answer();
int main() {  // a GoogleTest-shaped report, without GoogleTest
  std::printf("[ RUN      ] Toy.Answer\n");
  if (answer() == 42) { std::printf("[       OK ] Toy.Answer\n[  PASSED  ] 1 test.\n"); return 0; }
  std::printf("test_lab.cpp:5: Failure\nExpected equality of these values:\n  answer()\n"
              "    Which is: %d\n  42\n[  FAILED  ] Toy.Answer\n", answer());
  return 1;
}
"""

README = """# Lab 01 — A toy lab {#lab_01}

## The answer {#lab_01_answer}

## What the tests prove {#lab_01_tests}

| test | pts | what it pins | hint |
|---|---|---|---|
| `Toy.Answer` | 1 | the answer | Which number is the answer? → \\ref lab_01_answer |
"""

# The compiler launcher: when it compiles starter.cpp and save-during-build exists, it compiles
# the file as it is, then writes save-during-build's text over it (the student's save), and
# only then puts the object in place, newer than the save: what a compile that ends after a save
# leaves behind.
LAUNCHER = r"""#!/usr/bin/env python3
import os, subprocess, sys, time
from pathlib import Path
args = sys.argv[1:]
save = Path(__file__).with_name("save-during-build")
source = next((a for a in args if a.endswith("starter.cpp")), None)
if source is None or not save.exists():
    os.execvp(args[0], args)
out = args[args.index("-o") + 1]
racing = list(args)
racing[racing.index("-o") + 1] = out + ".racing"
status = subprocess.call(racing)
Path(source).write_text(save.read_text())
save.with_name("saved-at").write_text(str(os.stat(source).st_mtime_ns))
save.unlink()
time.sleep(0.05)
if status == 0:
    os.utime(out + ".racing")
    os.replace(out + ".racing", out)
sys.exit(status)
"""


def toy_tree(test: unittest.TestCase) -> Path:
    root = Path(tempfile.mkdtemp(prefix="pa-stale-"))
    test.addCleanup(shutil.rmtree, root, True)
    room = root / "labs" / LAB.room
    room.mkdir(parents=True)
    (root / "CMakeLists.txt").write_text(CMAKELISTS)
    (room / "README.md").write_text(README)
    (room / "starter.cpp").write_text(RIGHT)
    (room / "test_lab.cpp").write_text(TEST_LAB)
    launcher = root / "launcher.py"
    launcher.write_text(LAUNCHER)
    launcher.chmod(0o755)
    return root


def configure(root: Path) -> Path:
    build = root / "build" / "starter"
    cmake.configure(build, {"LAB_IMPL": "starter", "CMAKE_CXX_COMPILER_LAUNCHER": str(root / "launcher.py")},
                    root, quiet=True)
    return build


def status_of(grades: list[grading.LabGrade]) -> tuple[str, str]:
    g = grades[0]
    if not g.built:
        return "did not build", g.build_error
    return g.tests[0].status, g.tests[0].detail


@unittest.skipUnless(shutil.which("cmake") and shutil.which("ninja") and shutil.which("c++"),
                     "needs cmake, ninja and a C++ compiler")
class StaleBuild(unittest.TestCase):
    def test_a_save_during_the_compile_is_graded(self):
        root = toy_tree(self)
        build = configure(root)
        (root / "save-during-build").write_text(BUGGY)
        grades = grading.grade([LAB], build, root, timeout=30, quiet=True)
        self.assertFalse((root / "save-during-build").exists(), "the race did not happen")
        self.assertEqual((root / "labs" / LAB.room / "starter.cpp").read_text(), BUGGY)
        status, detail = status_of(grades)
        self.assertEqual(status, "failed", "graded the code from before the save")
        self.assertIn("Which is: 41", detail)
        # ...and the next grade, with nothing changed, agrees (and does not build again).
        self.assertEqual(status_of(grading.grade([LAB], build, root, timeout=30, quiet=True)),
                         (status, detail))

    def test_grading_after_a_save_mid_build_leaves_the_students_file_alone(self):
        """The rebuild is forced from the build folder's side: starter.cpp keeps the time of the
        student's save (an editor comparing times would otherwise say it changed on disk)."""
        root = toy_tree(self)
        build = configure(root)
        starter = root / "labs" / LAB.room / "starter.cpp"
        (root / "save-during-build").write_text(BUGGY)
        status = status_of(grading.grade([LAB], build, root, timeout=30, quiet=True))[0]
        saved_at = int((root / "saved-at").read_text())   # the launcher's save, mid-build
        self.assertEqual(status, "failed", "graded the code from before the save")
        self.assertEqual(starter.stat().st_mtime_ns, saved_at,
                         "the grader changed starter.cpp's modification time")
        self.assertEqual(starter.read_text(), BUGGY)
        # A later save, graded with the stamp behind it, is not re-timed either.
        starter.write_text(RIGHT)
        saved_at = starter.stat().st_mtime_ns
        self.assertEqual(status_of(grading.grade([LAB], build, root, timeout=30, quiet=True))[0],
                         "passed")
        self.assertEqual(starter.stat().st_mtime_ns, saved_at)

    def test_a_binary_built_behind_the_graders_back_is_rebuilt(self):
        """A build the grader did not watch (by hand, or a grade interrupted by Ctrl-C) left an
        object older than the sources with a newer time: the stamp, or its absence, says so."""
        from labkit import stamps
        root = toy_tree(self)
        build = configure(root)
        self.assertEqual(status_of(grading.grade([LAB], build, root, timeout=30, quiet=True))[0],
                         "passed")
        # The race again, in a build the grader does not run: its stamp still holds the old code.
        (root / "labs" / LAB.room / "starter.cpp").write_text(RIGHT + "// edited\n")
        (root / "save-during-build").write_text(BUGGY)
        subprocess.run(["cmake", "--build", str(build), "--target", "lab01"], check=True,
                       capture_output=True)
        self.assertFalse((root / "save-during-build").exists())
        done = subprocess.run(["cmake", "--build", str(build), "--target", "lab01"], check=True,
                              capture_output=True, text=True)
        self.assertIn("no work to do", done.stdout)   # ninja believes it is up to date
        self.assertEqual(status_of(grading.grade([LAB], build, root, timeout=30, quiet=True))[0],
                         "failed")
        # The same with no stamp at all (a build folder an older grader, or a person, built).
        (root / "labs" / LAB.room / "starter.cpp").write_text(RIGHT)
        old = time.time() - 3600
        os.utime(root / "labs" / LAB.room / "starter.cpp", (old, old))   # older than the object
        stamps.forget(build, LAB)
        self.assertEqual(status_of(grading.grade([LAB], build, root, timeout=30, quiet=True))[0],
                         "passed")

    def test_sources_that_never_stop_changing_are_not_graded(self):
        from labkit import stamps
        root = toy_tree(self)
        build = configure(root)
        saves = iter(range(100))

        def build_target(*args, **kw):   # a student saving during every build
            (root / "labs" / LAB.room / "starter.cpp").write_text(
                f"int answer() {{ return {next(saves)}; }}\n")
            return True, ""
        real = cmake.build_target
        cmake.build_target = build_target
        try:
            ok, output, sources = cmake.build_lab(build, LAB, LAB.target, root)
        finally:
            cmake.build_target = real
        self.assertFalse(ok)
        self.assertIn(f"changed during each of {cmake.MAX_BUILDS} builds", output)
        self.assertEqual(sources, {})
        self.assertIsNone(stamps.read(build, LAB))


class Digest(unittest.TestCase):
    def test_a_touch_is_no_change_and_editor_files_are_not_sources(self):
        from labkit import stamps
        root = toy_tree(self)
        room = root / "labs" / LAB.room
        for junk in (".starter.cpp.swp", "starter.cpp~", "#starter.cpp#", "4913"):
            (room / junk).write_text("x")
        files = stamps.sources(LAB, "starter", root)
        self.assertEqual([p.name for p in files], ["README.md", "starter.cpp", "test_lab.cpp"])
        before = stamps.digest(files, root)
        for p in files:
            os.utime(p)   # a save of the same bytes
        self.assertEqual(stamps.digest(files, root), before)
        (room / "starter.cpp").write_text(BUGGY)
        self.assertEqual(stamps.changed(before, stamps.digest(files, root)),
                         [f"labs/{LAB.room}/starter.cpp"])


if __name__ == "__main__":
    unittest.main()
