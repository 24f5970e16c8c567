#!/usr/bin/env python3
"""Copies a student's submitted starter.cpp files into the workbook's lab rooms (Gradescope's
run_autograder calls it; so does tools/tests/autograder_selftest.sh).

Accepted: a file at any depth whose path ends in <NN-name>/starter.cpp (the labs/ folder or the
whole repository, uploaded or from GitHub), or a file named labNN.cpp. A lab with no file keeps
its untouched starter (and scores 0). With --finish it adds what was found to results.json, or
writes a results.json that says why grading produced none.

Usage: collect_submission.py SUBMISSION WORKBOOK
       collect_submission.py --finish RESULTS_JSON NOTES_TXT"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def rooms(work: Path) -> list[str]:
    """The workbook's lab rooms (NN-name), as tools/lab finds them."""
    sys.path.insert(0, str(work / "tools"))
    from labkit.labs import labs  # the workbook's own lab discovery
    return [lab.room for lab in labs(work)]


def collect(submission: Path, work: Path) -> None:
    files = [p for p in submission.rglob("*.cpp") if p.is_file()] if submission.is_dir() else []
    for room in rooms(work):
        number = room[:2]
        found = [p for p in files if p.name == "starter.cpp" and p.parent.name == room]
        found += [p for p in files if p.name == f"lab{number}.cpp"]
        if not found:
            print(f"lab {number}: no file submitted (looked for {room}/starter.cpp or "
                  f"lab{number}.cpp); its untouched starter is graded")
            continue
        chosen = min(found, key=lambda p: len(p.parts))
        (work / "labs" / room / "starter.cpp").write_bytes(chosen.read_bytes())
        print(f"lab {number}: graded {chosen.relative_to(submission)}")


def finish(results: Path, notes: Path) -> None:
    text = notes.read_text() if notes.exists() else ""
    if results.exists():
        report = json.loads(results.read_text())
        report["output"] = text + "\n" + report.get("output", "")
    else:
        report = {"score": 0, "max_score": 0, "execution_time": 0, "visibility": "visible",
                  "output": text + "\nThe grader could not run; see the autograder's log.",
                  "tests": []}
    results.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--finish"] and len(sys.argv) == 4:
        finish(Path(sys.argv[2]), Path(sys.argv[3]))
    elif len(sys.argv) == 3:
        collect(Path(sys.argv[1]), Path(sys.argv[2]))
    else:
        sys.exit(__doc__.split("\n\n")[-1])
