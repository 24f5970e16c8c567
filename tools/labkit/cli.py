"""tools/lab, the workbook's one command. Python 3 standard library only.

Everyone
  setup [--book] [--bench] [--all]        install the Debian packages the labs need (tools/
                                          packages.txt): the one command that needs root
Students
  grade [NN ...] [--json F] [--junit F]   build each lab from its starter on its own, run the
        [--asan] [--verbose]              graded tests, print score and a line per test
        [--schedule reverse]              (--asan: under AddressSanitizer and UBSan; --schedule:
                                          the emulated threads in another order)
  watch NN                                re-grade lab NN each time a file in its room is saved
  hint NN [STEP] [--reset]                the steps of lab NN; with STEP, one more hint level each
                                          time (the idea, the invariant, the shape of the code)
  bench [NN ...] [--repetitions N]        time the labs (Google Benchmark) against this machine's
                                          memory bandwidth; JSON, a summary and one SVG plot per lab
                                          (--repetitions: the median and range of N runs each)
  docs [--check]                          build the book (and check its links and pages)
Instructors (need solutions/)
  test                                    build the solutions and run every test
  mutants [NN ...]                        build each mutant and show which tests kill it
  mutants --new NN STEM, --save NN STEM   write a new mutant in a scratch copy of the solution,
                                          then save it as solutions/NN-*/mutants/STEM.patch
  check [NN ...] [--record]               starters fail, solutions pass, mutants die: one matrix
                                          (--record: each mutant's failing tests, for the unit tests)
  release OUTDIR                          write the student edition and verify it
  autograder OUTDIR                       write a Gradescope autograder bundle

Every command but setup installs what it needs when that takes no password (as root in a tree of
root's, or with password-less sudo); otherwise it names every missing package and the one command
that installs them. None of them builds as root in a tree that belongs to another user.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from labkit import build as cmake
from labkit import grading, reports, system
from labkit.labs import pick, require_solutions
from labkit.paths import ROOT, build_dir, shown

# The package groups (tools/packages.txt) each command needs; tools/lab (bash) mirrors this for
# the one case it handles itself, a machine without python3.
NEEDS = {"grade": ["lab"], "watch": ["lab"], "test": ["lab"], "mutants": ["lab"],
         "check": ["lab"], "release": ["lab"], "autograder": [], "bench": ["lab", "bench"]}
INSTRUCTOR_ONLY = {"test", "mutants", "check", "release", "autograder"}


# ---- setup ----------------------------------------------------------------------------------

def setup_groups(args) -> list[str]:
    groups = ["lab"]
    if args.book or args.all:
        groups += ["book", "book-check"]
    if args.bench or args.all:
        groups += ["bench"]
    return groups


def cmd_setup(args) -> int:
    wanted = system.packages(*setup_groups(args))
    missing = system.missing_packages(wanted)
    if not missing:
        print(f"tools/lab setup: all {len(wanted)} Debian packages are installed: "
              + " ".join(wanted))
        return 0
    if os.geteuid() == 0:
        system.install(missing, [])
    elif system.passwordless_sudo():
        system.install(missing, ["sudo", "-n"])
    else:
        options = "".join(f" --{o}" for o in ("book", "bench", "all") if getattr(args, o))
        again = system.as_root(f"{ROOT / 'tools' / 'lab'} setup{options}")
        print(f"tools/lab setup installs Debian packages, which needs root. Run it as root:\n\n"
              f"  {again}\n\n(it installs: {' '.join(missing)})", file=sys.stderr)
        return 1
    still = system.missing_packages(wanted)
    if still:
        print("tools/lab setup: still missing after apt-get: " + " ".join(still), file=sys.stderr)
        return 1
    owner = system.owner_of(ROOT)
    who = "" if owner == os.geteuid() else f", as {system.user_name(owner)} (not as root)"
    print(f"tools/lab setup: done ({len(missing)} installed). Now{who}: tools/lab grade")
    return 0


# ---- grade ----------------------------------------------------------------------------------

def cmd_grade(args) -> int:
    picked = pick(args.labs)
    if args.impl == "solution":
        require_solutions("grade --impl solution")
    build, options = grading.grade_build(args.impl, args.asan)
    if args.build_dir:
        build = Path(args.build_dir).resolve()
    progress = grading.Progress()
    ticker = grading.BuildTicker(tty=sys.stdout.isatty())
    with cmake.lock(build, "grade " + " ".join(args.labs), progress):
        progress(f"configuring {shown(build)} (CMake)")
        cmake.configure(build, options, quiet=True)
        env = grading.sanitizer_env() if args.asan else None
        if args.schedule:
            env = dict(env or os.environ, SIMT_SCHEDULE=args.schedule)
            progress(f"the emulator runs every thread block's threads in {args.schedule} order")
        grades = grading.grade(picked, build, ROOT, grading.test_timeout(args.asan),
                               progress=progress, tick=ticker, env=env)
    seconds = time.monotonic() - progress.start
    print()
    if args.json:
        Path(args.json).write_text(json.dumps(reports.gradescope(grades, seconds), indent=2) + "\n")
        print(f"Gradescope results: {args.json}")
    if args.junit:
        reports.junit(grades).write(args.junit, encoding="utf-8", xml_declaration=True)
        print(f"JUnit XML: {args.junit}")
    if args.json or args.junit:
        print()
    reports.print_table(grades, build, verbose=args.verbose)
    return 0 if grading.complete(grades) else 1


# ---- test -----------------------------------------------------------------------------------

def cmd_test(args) -> int:
    start = time.monotonic()
    build = build_dir("solution")
    with cmake.lock(build, "test"):
        cmake.configure(build, {"LAB_IMPL": "solution"})
        if cmake.run(["cmake", "--build", str(build)], env=cmake.build_env()).returncode != 0:
            return 1
        done = cmake.run(["ctest", "--test-dir", str(build), "--output-on-failure",
                          "-j", str(os.cpu_count() or 2)])
    print(f"tools/lab test: configure + build + test took {time.monotonic() - start:.0f} s")
    return done.returncode


# ---- the rest live in their own modules -----------------------------------------------------

def cmd_watch(args) -> int:
    from labkit import watch
    return watch.main(args)


def cmd_hint(args) -> int:
    from labkit import hints
    return hints.main(args)


def cmd_bench(args) -> int:
    from labkit import bench
    return bench.main(args)


def cmd_mutants(args) -> int:
    from labkit import check
    return check.cmd_mutants(args)


def cmd_check(args) -> int:
    from labkit import check
    return check.cmd_check(args)


def cmd_release(args) -> int:
    from labkit import release
    return release.cmd_release(args)


def cmd_autograder(args) -> int:
    from labkit import release
    return release.cmd_autograder(args)


def cmd_docs(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT / "docs"))   # the book's scripts live beside the book
    import book_build  # docs/book_build.py: it takes its own options
    system.refuse_root_in_foreign_tree("docs " + " ".join(argv))
    return book_build.main(argv, system.ensure_packages)


def prepare(args, argv: list[str]) -> None:
    """What every command but setup and docs does first: an instructor command in a student
    release is named as such; the packages it needs are there (or it stops with the command that
    installs them); it does not go on as root in another user's tree."""
    command = args.command
    if command in INSTRUCTOR_ONLY:
        require_solutions(command)
    editing = command == "mutants" and (args.new or args.save)
    verifying = not (command == "release" and args.no_verify)
    if NEEDS.get(command) and not editing and verifying:
        rerun = "tools/lab " + " ".join(argv)
        system.ensure_packages(system.packages(*NEEDS[command]), rerun)
    system.refuse_root_in_foreign_tree(" ".join(argv))


def schedule_name(text: str) -> str:
    """An emulator schedule as SIMT_SCHEDULE takes it (common/simt/errors_and_settings.hpp)."""
    if text in ("forward", "reverse", "random") or (
            text.startswith("random:") and text[7:].isdigit()):
        return text
    raise argparse.ArgumentTypeError(f"{text!r}: forward, reverse, random or random:SEED")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="tools/lab", description=__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("setup", help="install the Debian packages tools/lab needs (needs root)")
    p.add_argument("--book", action="store_true", help="also what tools/lab docs --check needs")
    p.add_argument("--bench", action="store_true", help="also what tools/lab bench's plots need")
    p.add_argument("--all", action="store_true", help="everything: the labs, the book, the plots")
    p.set_defaults(func=cmd_setup)

    p = sub.add_parser("grade", help="grade the starters (the student's command)")
    p.add_argument("labs", nargs="*", help="lab numbers, e.g. 02 (default: every lab)")
    p.add_argument("--json", help="also write Gradescope's results.json to this file")
    p.add_argument("--junit", help="also write JUnit XML to this file")
    p.add_argument("--impl", choices=["starter", "solution"], default="starter",
                   help="grade the starters (default) or, instructors, the solutions")
    p.add_argument("--asan", action="store_true",
                   help="build under AddressSanitizer and UBSan (build/asan-<impl>): a read "
                        "outside a buffer is the test's result, at your line")
    p.add_argument("--verbose", action="store_true",
                   help="every failed assertion in full (e.g. the emulator's report of where "
                        "each thread waits)")
    p.add_argument("--schedule", type=schedule_name, metavar="ORDER",
                   help="run the emulated threads in another order: forward (the default), "
                        "reverse, random or random:SEED (a missing barrier shows up as a "
                        "different result)")
    p.add_argument("--build-dir", help="where to build (default: build/<impl>)")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("watch", help="re-grade one lab each time a file in its room is saved")
    p.add_argument("lab", help="lab number, e.g. 02")
    p.add_argument("--impl", choices=["starter", "solution"], default="starter")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between looks (0.5)")
    p.add_argument("--verbose", action="store_true",
                   help="show the first failing test's every failed assertion in full")
    p.add_argument("--schedule", type=schedule_name, metavar="ORDER",
                   help="the emulated threads in another order, as grade --schedule")
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("hint", help="one more hint for a step of a lab, each time you ask")
    p.add_argument("lab", help="lab number, e.g. 06")
    p.add_argument("step", nargs="?", help="the step (e.g. attention.5, or 5); none: list them")
    p.add_argument("--reset", action="store_true", help="hide the levels seen so far again")
    p.set_defaults(func=cmd_hint)

    p = sub.add_parser("bench", help="run the labs' benchmarks, summarise them, plot them")
    p.add_argument("labs", nargs="*", help="lab numbers (default: every lab with a bench_lab.cpp)")
    p.add_argument("--impl", choices=["starter", "solution"], default=None,
                   help="time the starters or the solutions (default: solutions if present)")
    p.add_argument("--min-time", type=float, default=0.2,
                   help="Google Benchmark's minimum seconds per benchmark (0.2)")
    p.add_argument("--repetitions", type=int, default=1, metavar="N",
                   help="run each benchmark N times, randomly interleaved, and report the median "
                        "and the range (min–max) of the N (default 1: one run, as CI does)")
    p.add_argument("--book", action="store_true",
                   help="also copy the plots' data (bench_labNN.json) into docs/figures/bench, "
                        "from which the book draws them")
    p.add_argument("--ptxas", action="store_true",
                   help="no timing: compile the benchmarked kernels with nvcc -Xptxas -v and put "
                        "their design table (registers, blocks/SM, waves, bytes in flight on an "
                        "H100) into the chapter (labs 06 and 07; needs nvcc, not a GPU)")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("test", help="run the reference solutions' whole suite (instructors)")
    p.set_defaults(func=cmd_test)

    p = sub.add_parser("mutants", help="build every mutant and show which tests kill it")
    p.add_argument("labs", nargs="*", help="lab numbers (default: every lab)")
    edit = p.add_mutually_exclusive_group()
    edit.add_argument("--new", nargs=2, metavar=("NN", "STEM"),
                      help="write a scratch copy of lab NN's solution (or of mutant STEM, if it "
                           "exists) to edit into a mutant")
    edit.add_argument("--save", nargs=2, metavar=("NN", "STEM"),
                      help="save the edited scratch copy as solutions/NN-*/mutants/STEM.patch")
    p.set_defaults(func=cmd_mutants)

    p = sub.add_parser("check", help="starters fail, solutions pass, mutants die (instructors)")
    p.add_argument("labs", nargs="*", help="lab numbers (default: every lab)")
    p.add_argument("--record", action="store_true",
                   help="also write each mutant's failing tests to tools/tests/mutants/"
                        "first_shown.json (after a change to a lab's tests or its table)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("release", help="write the student edition to OUTDIR and verify it")
    p.add_argument("outdir")
    p.add_argument("--no-verify", action="store_true", help="write it, skip the verification")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("autograder", help="write a Gradescope autograder bundle to OUTDIR")
    p.add_argument("outdir")
    p.set_defaults(func=cmd_autograder)

    sub.add_parser("docs", help="build the book (--check: links and browser check)")
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["docs"]:
        return cmd_docs(argv[1:])
    args = parser().parse_args(argv)
    if args.command != "setup":
        prepare(args, argv)
    return args.func(args)
