#!/usr/bin/env python3
"""The workbook's command line (run it through tools/lab). Python 3 standard library only.

Students
  grade [NN ...] [--json F] [--junit F]   build each lab from its starter on its own, run the
                                          graded tests, print score and a line per test
  watch NN                                re-grade lab NN each time a file in its room is saved
  bench [NN ...]                          time the labs (Google Benchmark) against this machine's
                                          memory bandwidth; JSON, a summary and one SVG plot per lab
  docs [--check]                          build the book (and check its links and pages)
Instructors (need solutions/)
  test                                    build the solutions and run every test
  mutants [NN ...]                        build each mutant and show which tests kill it
  mutants --new NN STEM, --save NN STEM   write a new mutant in a scratch copy of the solution,
                                          then save it as solutions/NN-*/mutants/STEM.patch
  check                                   starters fail, solutions pass, mutants die: one matrix
  release OUTDIR                          write the student edition and verify it
  autograder OUTDIR                       write a Gradescope autograder bundle
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import labcore
from labcore import ROOT, BUILD_PACKAGES, ensure_packages

sys.path.insert(0, str(Path(__file__).resolve().parent))


def build_dir_for(impl: str, root: Path = ROOT) -> Path:
    return root / "build" / impl


# ---- grade ----------------------------------------------------------------------------------

def cmd_grade(args) -> int:
    import grading
    ensure_packages(BUILD_PACKAGES)
    picked = labcore.pick_labs(args.labs)
    if args.impl == "solution":
        labcore.require_solutions("grade --impl solution")
    build = Path(args.build_dir) if args.build_dir else build_dir_for(args.impl)
    labcore.configure(build, {"LAB_IMPL": args.impl, "PA_TEST_TIMEOUT": str(args.timeout)})
    grades, seconds = grading.timed_grade(picked, build, ROOT, args.timeout)
    print()
    grading.print_table(grades, build)
    if args.json:
        Path(args.json).write_text(json.dumps(grading.gradescope(grades, seconds), indent=2) + "\n")
        print(f"Gradescope results: {args.json}")
    if args.junit:
        grading.junit(grades).write(args.junit, encoding="utf-8", xml_declaration=True)
        print(f"JUnit XML: {args.junit}")
    complete = all(g.built and g.tests and g.score == g.max_score for g in grades)
    return 0 if complete else 1


# ---- test -----------------------------------------------------------------------------------

def cmd_test(args) -> int:
    ensure_packages(BUILD_PACKAGES)
    labcore.require_solutions("test")
    start = time.monotonic()
    build = build_dir_for("solution")
    labcore.configure(build, {"LAB_IMPL": "solution"})
    if labcore.run(["cmake", "--build", str(build)], env=labcore.build_env()).returncode != 0:
        return 1
    done = labcore.run(["ctest", "--test-dir", str(build), "--output-on-failure",
                        "-j", str(os.cpu_count() or 2)])
    print(f"tools/lab test: configure + build + test took {time.monotonic() - start:.0f} s")
    return done.returncode


# ---- the rest live in their own modules -----------------------------------------------------

def cmd_watch(args) -> int:
    import watch
    return watch.main(args)


def cmd_bench(args) -> int:
    import bench
    return bench.main(args)


def cmd_mutants(args) -> int:
    import instructor
    return instructor.cmd_mutants(args)


def cmd_check(args) -> int:
    import instructor
    return instructor.cmd_check(args)


def cmd_release(args) -> int:
    import instructor
    return instructor.cmd_release(args)


def cmd_autograder(args) -> int:
    import instructor
    return instructor.cmd_autograder(args)


def main() -> int:
    if sys.argv[1:2] == ["docs"]:  # its options belong to tools/docs.py
        import docs
        return docs.main(sys.argv[2:], ensure_packages)
    parser = argparse.ArgumentParser(prog="tools/lab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("grade", help="grade the starters (the student's command)")
    p.add_argument("labs", nargs="*", help="lab numbers, e.g. 02 (default: every lab)")
    p.add_argument("--json", help="also write Gradescope's results.json to this file")
    p.add_argument("--junit", help="also write JUnit XML to this file")
    p.add_argument("--impl", choices=["starter", "solution"], default="starter",
                   help="grade the starters (default) or, instructors, the solutions")
    p.add_argument("--timeout", type=int, default=30,
                   help="seconds one test may run before it counts as timed out (default 30)")
    p.add_argument("--build-dir", help="where to build (default: build/<impl>)")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("watch", help="re-grade one lab each time a file in its room is saved")
    p.add_argument("lab", help="lab number, e.g. 02")
    p.add_argument("--impl", choices=["starter", "solution"], default="starter")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between looks (0.5)")
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("bench", help="run the labs' benchmarks, summarise them, plot them")
    p.add_argument("labs", nargs="*", help="lab numbers (default: every lab with a bench_lab.cpp)")
    p.add_argument("--impl", choices=["starter", "solution"], default=None,
                   help="time the starters or the solutions (default: solutions if present)")
    p.add_argument("--min-time", type=float, default=0.2,
                   help="Google Benchmark's minimum seconds per benchmark (0.2)")
    p.add_argument("--book", action="store_true",
                   help="also copy the plots and the machine's description into docs/figures/bench")
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
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("release", help="write the student edition to OUTDIR and verify it")
    p.add_argument("outdir")
    p.add_argument("--no-verify", action="store_true", help="write it, skip the verification")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("autograder", help="write a Gradescope autograder bundle to OUTDIR")
    p.add_argument("outdir")
    p.set_defaults(func=cmd_autograder)

    sub.add_parser("docs", help="build the book (--check: links and browser check)")
    args = parser.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
