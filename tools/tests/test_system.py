"""Unit tests of what tools/lab does around the build: the package list (tools/packages.txt), the
install command it prints for a user as they are (root, sudo, or only su), refusing to build as
root in another user's tree, explaining a build folder the user cannot write, the bash wrapper on a
machine without python3, lab discovery, and the Gradescope bundle's own scripts.
Run: python3 -m unittest discover -s tools/tests"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labkit import build, labs, paths, system  # noqa: E402

TOOLS = Path(__file__).resolve().parent.parent


def temp_dir(test: unittest.TestCase) -> Path:
    d = Path(tempfile.mkdtemp(prefix="pa-system-"))
    test.addCleanup(shutil.rmtree, d, True)
    return d


class PackageList(unittest.TestCase):
    def test_the_groups_of_tools_packages_txt(self):
        groups = system.package_groups()
        self.assertEqual(set(groups), {"lab", "book", "book-check", "bench"})
        self.assertEqual(groups["lab"][0], "python3")
        for p in ("cmake", "ninja-build", "g++", "libgtest-dev", "libeigen3-dev",
                  "libboost-context-dev", "libbenchmark-dev"):
            self.assertIn(p, groups["lab"])
        both = system.packages("lab", "book")
        self.assertEqual(len(both), len(set(both)))  # each once
        with self.assertRaises(KeyError):
            system.packages("nope")

    def test_a_malformed_line_is_named(self):
        bad = temp_dir(self) / "packages.txt"
        bad.write_text("# comment\nlab: cmake\nno colon here\n")
        with self.assertRaisesRegex(ValueError, r"packages.txt:3: expected"):
            system.package_groups(bad)


class InstallCommand(unittest.TestCase):
    def test_root_sudo_and_su(self):
        with mock.patch.object(system.os, "geteuid", return_value=0):
            self.assertEqual(system.install_command(["cmake"]),
                             "apt-get update && apt-get install -y --no-install-recommends cmake")
        with mock.patch.object(system.os, "geteuid", return_value=1000), \
                mock.patch.object(system, "may_sudo", return_value=True):
            self.assertEqual(system.install_command(["cmake", "g++"]),
                             "sudo sh -c 'apt-get update && apt-get install -y "
                             "--no-install-recommends cmake g++'")
        with mock.patch.object(system.os, "geteuid", return_value=1000), \
                mock.patch.object(system, "may_sudo", return_value=False):
            self.assertEqual(system.install_command(["cmake"]),
                             "su -c 'apt-get update && apt-get install -y "
                             "--no-install-recommends cmake'")

    def test_every_missing_package_in_one_message_for_a_user_without_sudo(self):
        wanted = system.packages("lab")
        err = io.StringIO()
        with mock.patch.object(system.os, "geteuid", return_value=1000), \
                mock.patch.object(system, "may_sudo", return_value=False), \
                mock.patch.object(system, "passwordless_sudo", return_value=False), \
                mock.patch.object(system, "missing_packages", return_value=wanted), \
                contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            system.ensure_packages(wanted, "tools/lab grade")
        self.assertEqual(e.exception.code, 1)
        text = err.getvalue()
        self.assertIn(f"{len(wanted)} Debian packages are missing: {' '.join(wanted)}", text)
        self.assertIn("su -c 'apt-get update && apt-get install -y --no-install-recommends "
                      + " ".join(wanted) + "'", text)
        self.assertIn("this account has no sudo", text)
        self.assertIn("tools/lab setup", text)
        self.assertIn("then run tools/lab grade again as yourself", text)
        self.assertNotIn("sudo apt-get", text)

    def test_nothing_missing_installs_nothing(self):
        with mock.patch.object(system, "missing_packages", return_value=[]), \
                mock.patch.object(system, "install") as install:
            system.ensure_packages(["cmake"])
        install.assert_not_called()


class Ownership(unittest.TestCase):
    def test_root_does_not_build_in_another_users_tree(self):
        tree = temp_dir(self)
        with mock.patch.object(system.os, "geteuid", return_value=0), \
                mock.patch.object(system, "owner_of", return_value=1000), \
                mock.patch.object(system, "user_name", return_value="student"), \
                self.assertRaises(SystemExit) as e:
            system.refuse_root_in_foreign_tree("grade", tree)
        self.assertIn("this tree belongs to student", str(e.exception.code))
        self.assertIn("run it as student, without sudo:\n\n  tools/lab grade", str(e.exception.code))
        self.assertIn("set LAB_ROOT_BUILD=1", str(e.exception.code))
        # root in root's tree, and anyone in their own, go on.
        with mock.patch.object(system.os, "geteuid", return_value=0), \
                mock.patch.object(system, "owner_of", return_value=0):
            system.refuse_root_in_foreign_tree("grade", tree)
        with mock.patch.object(system.os, "geteuid", return_value=1000):
            system.refuse_root_in_foreign_tree("grade", tree)
        # A container that runs as root in a checkout it did not make says so, and goes on.
        with mock.patch.object(system.os, "geteuid", return_value=0), \
                mock.patch.object(system, "owner_of", return_value=1000), \
                mock.patch.dict(system.os.environ, {"LAB_ROOT_BUILD": "1"}):
            system.refuse_root_in_foreign_tree("grade", tree)

    @staticmethod
    def as_student(blocked: set[Path]) -> contextlib.ExitStack:
        """The calls as the user "student" (uid 1000, no sudo) would make them, where the folders
        in `blocked` (the set, read at each call) belong to root and cannot be written."""
        real_access = os.access
        stack = contextlib.ExitStack()
        for patch in (mock.patch.object(system.os, "geteuid", return_value=1000),
                      mock.patch.object(system.os, "access", side_effect=lambda path, mode: Path(
                          path) not in blocked and real_access(path, mode)),
                      mock.patch.object(system, "may_sudo", return_value=False),
                      mock.patch.object(system, "user_name", side_effect=lambda uid=None:
                                        "root" if uid == 0 else "student"),
                      mock.patch.object(system, "owner_of", return_value=0)):
            stack.enter_context(patch)
        return stack

    def test_a_build_folder_made_by_root_is_explained_with_its_fix(self):
        tree = temp_dir(self)
        (tree / "build" / "starter" / "CMakeFiles").mkdir(parents=True)
        blocked = {tree / "build"}
        with self.as_student(blocked), self.assertRaises(SystemExit) as e:
            system.require_writable(tree / "build" / "starter", tree)
        text = str(e.exception.code)
        self.assertIn("student cannot write build: it belongs to root", text)
        self.assertIn(f"su -c 'chown -R student: {tree / 'build'}'", text)
        self.assertIn(f"rm -rf {tree / 'build'}", text)
        # A folder deep inside is found too.
        blocked.clear()
        blocked.add(tree / "build" / "starter" / "CMakeFiles")
        with self.as_student(blocked):
            self.assertEqual(system.unwritable([tree / "build" / "starter"]),
                             [tree / "build" / "starter" / "CMakeFiles"])
        # Nothing blocked: it goes on.
        blocked.clear()
        with self.as_student(blocked):
            system.require_writable(tree / "build" / "starter", tree)

    def test_the_build_lock_diagnoses_a_root_made_build_folder_before_opening_its_file(self):
        # The lock file lives in build/: opened first, it raised PermissionError (a traceback)
        # in a build/ that root made, before the diagnosis with its fix could run.
        tree = temp_dir(self)
        (tree / "build").mkdir()
        with self.as_student({tree / "build"}), \
                mock.patch.object(build, "open", create=True,
                                  side_effect=PermissionError(13, "Permission denied")), \
                self.assertRaises(SystemExit) as e:
            with build.lock(tree / "build" / "starter", "grade"):
                self.fail("the lock was taken in a folder this user cannot write")
        self.assertIn("student cannot write build: it belongs to root", str(e.exception.code))
        self.assertIn(f"su -c 'chown -R student: {tree / 'build'}'", str(e.exception.code))


@unittest.skipIf(shutil.which("bash") is None, "needs bash")
class WrapperWithoutPython(unittest.TestCase):
    """tools/lab on a machine with no python3, as a user without sudo: a PATH of fakes (id says
    uid 1000, dpkg-query knows no package) and only the tools the script itself needs."""

    def run_wrapper(self, *args: str) -> subprocess.CompletedProcess:
        bin_dir = temp_dir(self)
        for tool in ("bash", "sed", "grep", "tr", "dirname", "sh"):
            os.symlink(shutil.which(tool), bin_dir / tool)
        (bin_dir / "id").write_text("#!/bin/sh\n[ \"$1\" = -u ] && echo 1000 || echo student\n")
        (bin_dir / "dpkg-query").write_text("#!/bin/sh\nexit 1\n")
        for f in ("id", "dpkg-query"):
            (bin_dir / f).chmod(0o755)
        return subprocess.run([str(bin_dir / "bash"), str(TOOLS / "lab"), *args],
                              env={"PATH": str(bin_dir)}, capture_output=True, text=True)

    def test_names_every_missing_package_and_an_su_command(self):
        done = self.run_wrapper("grade")
        self.assertEqual(done.returncode, 1, done.stderr)
        wanted = system.packages("lab")
        self.assertIn(f"{len(wanted)} Debian packages are missing: {' '.join(wanted)}",
                      done.stderr)
        self.assertIn("su -c 'apt-get update && apt-get install -y --no-install-recommends "
                      + " ".join(wanted) + "'", done.stderr)
        self.assertIn(f"su -c '{TOOLS / 'lab'} setup'", done.stderr)

    def test_docs_names_the_books_packages(self):
        done = self.run_wrapper("docs", "--check")
        self.assertIn(" ".join(system.packages("book", "book-check")), done.stderr)


class Discovery(unittest.TestCase):
    def test_rooms_in_order_with_their_titles(self):
        tree = temp_dir(self)
        for room, first in (("02-two", "# Lab 02 — The second {#lab_02}"), ("01-one", None),
                            ("x-not-a-lab", None)):
            (tree / "labs" / room).mkdir(parents=True)
            if first:
                (tree / "labs" / room / "README.md").write_text(first + "\n")
        found = labs.labs(tree)
        self.assertEqual([(l.number, l.room, l.title) for l in found],
                         [("01", "01-one", "one"), ("02", "02-two", "The second")])
        self.assertEqual(found[1].folder(tree), tree / "labs" / "02-two")
        self.assertEqual(labs.pick(["2"], tree), [found[1]])
        with self.assertRaises(SystemExit):
            labs.pick(["7"], tree)

    def test_build_folders_live_under_build(self):
        self.assertEqual(paths.build_dir("starter"), paths.ROOT / "build" / "starter")
        self.assertEqual(paths.shown(paths.build_dir("mutants")), "build/mutants")
        self.assertEqual(paths.shown(Path("/elsewhere/x")), "/elsewhere/x")


class AutograderScripts(unittest.TestCase):
    def test_the_shell_scripts_parse(self):
        for name in ("setup.sh", "run_autograder"):
            with self.subTest(name):
                path = TOOLS / "autograder" / name
                self.assertTrue(os.access(path, os.X_OK))
                self.assertEqual(subprocess.run(["bash", "-n", str(path)]).returncode, 0)

    def test_collect_submission_puts_files_in_their_rooms(self):
        work, submission = temp_dir(self), temp_dir(self)
        shutil.copytree(TOOLS / "labkit", work / "tools" / "labkit")
        for room in ("01-one", "02-two", "03-three"):
            (work / "labs" / room).mkdir(parents=True)
            (work / "labs" / room / "starter.cpp").write_text("untouched")
        (submission / "repo" / "labs" / "01-one").mkdir(parents=True)
        (submission / "repo" / "labs" / "01-one" / "starter.cpp").write_text("mine 1")
        (submission / "lab02.cpp").write_text("mine 2")
        done = subprocess.run([sys.executable, str(TOOLS / "autograder" / "collect_submission.py"),
                               str(submission), str(work)], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertEqual((work / "labs/01-one/starter.cpp").read_text(), "mine 1")
        self.assertEqual((work / "labs/02-two/starter.cpp").read_text(), "mine 2")
        self.assertEqual((work / "labs/03-three/starter.cpp").read_text(), "untouched")
        self.assertIn("lab 01: graded repo/labs/01-one/starter.cpp", done.stdout)
        self.assertIn("lab 03: no file submitted", done.stdout)
        # --finish writes a results.json that says why when grading produced none.
        results, notes = work / "results.json", work / "notes.txt"
        notes.write_text(done.stdout)
        subprocess.run([sys.executable, str(TOOLS / "autograder" / "collect_submission.py"),
                        "--finish", str(results), str(notes)], check=True)
        self.assertIn("could not run", results.read_text())


if __name__ == "__main__":
    unittest.main()
