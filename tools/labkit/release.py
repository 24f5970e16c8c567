"""The student edition (`tools/lab release OUTDIR`) and the Gradescope bundle built from it
(`tools/lab autograder OUTDIR`: the edition, plus tools/autograder/'s setup.sh, run_autograder and
collect_submission.py). Both need the tree's solutions/ folder."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from labkit import build as cmake
from labkit import reports
from labkit.paths import AUTOGRADER_FILES, ROOT, build_dir, build_root


# ---- release: the student edition -------------------------------------------------------------

INSTRUCTOR_ONLY = ("solutions/", ".ci/")
INSTRUCTOR_PAGES = re.compile(r"(^|/)instructor\.[\w.]+$")   # docs/instructor.md.in: its appendix

# What a student release must not mention outside <!-- instructor --> blocks: what it does not
# contain (solutions/, the solution preset), and the asan preset, which there would build the
# starters and fail every test (students: tools/lab grade --asan).
UNSHIPPED = (
    (re.compile(r"\bsolutions/"), "solutions/, which the release does not contain"),
    (re.compile(r"--preset[ =]solution\b"), "the solution preset, which the release does not have"),
    (re.compile(r"--preset[ =]asan\b"), "the asan preset (a student runs tools/lab grade --asan)"),
)
# The files a student reads: Markdown anywhere, every file of a room, the book's pages.
READ_BY_STUDENTS = re.compile(r"(\.md(\.in)?$|^labs/|^docs/.*\.(dox|html)$)")


def tree_files(root: Path = ROOT) -> list[str]:
    """The tree's files as git sees them (tracked, and untracked but not ignored)."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others",
                          "--exclude-standard", "-z"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("tools/lab release: needs a git work tree (git ls-files) to know what to ship")
    return sorted(f for f in out.stdout.split("\0") if f and (root / f).is_file())


def strip_instructor_blocks(text: str) -> str:
    """The student's text of a Markdown file: every `<!-- instructor -->` ... `<!-- /instructor -->`
    block and every `\\if pa_instructor` ... `\\endif` section (the book's instructor-only text)
    dropped, and every `<!-- student` ... `-->` comment (text only the student edition shows,
    hidden in the instructor's tree) opened."""
    text = re.sub(r"\n?<!-- instructor -->.*?<!-- /instructor -->\n?", "\n", text, flags=re.S)
    text = re.sub(r"^\\if pa_instructor[ \t]*\n.*?^\\endif[ \t]*\n", "", text, flags=re.S | re.M)
    return re.sub(r"<!-- student\n(.*?)\n?-->\n?", r"\1\n", text, flags=re.S)


def student_presets(text: str) -> str:
    """CMakePresets.json without the `solution` preset; any other preset that built the
    solutions (asan) builds the starters instead."""
    presets = json.loads(text)
    gone = {"solution"}
    presets["configurePresets"] = [p for p in presets["configurePresets"] if p["name"] not in gone]
    for p in presets["configurePresets"]:
        if p.get("cacheVariables", {}).get("LAB_IMPL") == "solution":
            p["cacheVariables"]["LAB_IMPL"] = "starter"
            if "displayName" in p:
                p["displayName"] = p["displayName"].replace("Solutions", "Starters")
    for kind in ("buildPresets", "testPresets"):
        presets[kind] = [p for p in presets.get(kind, []) if p.get("configurePreset") not in gone]
    presets["workflowPresets"] = [
        p for p in presets.get("workflowPresets", [])
        if not any(s.get("name") in gone for s in p.get("steps", []))]
    return json.dumps(presets, indent=2) + "\n"


def write_release(out: Path, root: Path = ROOT) -> int:
    """Writes the student edition of the tree at `root` into `out`; returns the file count."""
    if out.exists() and any(out.iterdir()):
        sys.exit(f"tools/lab release: {out} exists and is not empty")
    count = 0
    for rel in tree_files(root):
        if rel.startswith(INSTRUCTOR_ONLY) or "/mutants/" in rel or INSTRUCTOR_PAGES.search(rel):
            continue
        dest = out / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        if rel == "CMakePresets.json":
            dest.write_text(student_presets((root / rel).read_text(encoding="utf-8")))
        elif rel.endswith(".md"):
            dest.write_text(strip_instructor_blocks((root / rel).read_text(encoding="utf-8")))
        else:
            shutil.copy2(root / rel, dest)
        count += 1
    # What the diagnosis knows of the catalogue, without the mutants' names or diffs: each known
    # bug's step, failing tests and Caught by, numbered per lab (labkit/diagnosis.py).
    from labkit import diagnosis
    known = out / diagnosis.SHIPPED
    known.parent.mkdir(parents=True, exist_ok=True)
    known.write_text(diagnosis.shipped_catalogue(root), encoding="utf-8")
    return count + 1


def instructor_files(out: Path) -> list[str]:
    """What in the tree at `out` (build/ aside) only an instructor's tree may hold: solutions/,
    any mutants/ folder, a solution.cpp."""
    found = []
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        folders = rel.split("/") if path.is_dir() else rel.split("/")[:-1]
        if folders[:1] == ["build"]:
            continue
        if folders[:1] == ["solutions"] or "mutants" in folders or path.name == "solution.cpp":
            found.append(rel)
    return found


def unshipped_mentions(out: Path) -> list[str]:
    """Each line of a file students read in the release at `out` (build/ aside) that mentions
    what the release does not contain, as "path:line: mentions ...: the line"."""
    found = []
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        if not path.is_file() or rel.startswith("build/") or not READ_BY_STUDENTS.search(rel):
            continue
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(lines, start=1):
            for pattern, what in UNSHIPPED:
                if pattern.search(line):
                    found.append(f"{rel}:{number}: mentions {what}: {line.strip()}")
    return found


def verify_release(out: Path) -> list[str]:
    """Builds the student edition at `out` from scratch and checks it; returns the problems."""
    problems = [f"instructor file shipped: {rel}" for rel in instructor_files(out)]
    problems += unshipped_mentions(out)
    presets = json.loads((out / "CMakePresets.json").read_text())
    if any(p.get("cacheVariables", {}).get("LAB_IMPL") == "solution"
           for p in presets["configurePresets"]):
        problems.append("CMakePresets.json still builds the solutions")
    # The tree's own default must be the starter.
    probe = build_dir("default-probe", out)
    done = subprocess.run(["cmake", "-S", str(out), "-B", str(probe), "-G", "Ninja",
                           "-DPA_CUDA=OFF", "-DPA_BENCHMARKS=OFF"], capture_output=True, text=True)
    cache = (probe / "CMakeCache.txt").read_text() if (probe / "CMakeCache.txt").exists() else ""
    if done.returncode != 0 or "LAB_IMPL:STRING=starter" not in cache:
        problems.append("a plain configure does not pick LAB_IMPL=starter")
    shutil.rmtree(probe, ignore_errors=True)
    # tools/lab hint inside it: every lab's hints are there, and a step's first level shows.
    from labkit import hints
    from labkit.labs import labs as labs_of
    for lab in labs_of(out):
        steps = hints.load(lab, out)
        if not steps:
            problems.append(f"labs/{lab.room}/hints.json: missing or empty in the release")
            continue
        done = subprocess.run(["bash", str(out / "tools" / "lab"), "hint", lab.number,
                               steps[0].id], cwd=out, capture_output=True, text=True)
        if done.returncode != 0 or "1. the idea:" not in done.stdout:
            problems.append(f"tools/lab hint {lab.number} {steps[0].id} fails in the release: "
                            + (done.stdout + done.stderr)[-300:])
    shutil.rmtree(build_root(out) / "hints", ignore_errors=True)   # a fresh edition has seen none
    # tools/lab grade inside it: configures and builds every lab from scratch.
    results = build_root(out) / "release-grade.json"
    done = subprocess.run(["bash", str(out / "tools" / "lab"), "grade", "--json", str(results)],
                          cwd=out, capture_output=True, text=True)
    print(done.stdout[-3000:])
    if not results.exists():
        problems.append("tools/lab grade wrote no results: " + done.stderr[-500:])
        return problems
    report = json.loads(results.read_text())
    problems += [f"results.json: {p}" for p in reports.validate_gradescope(report)]
    if report.get("score") != 0 or not report.get("tests"):
        problems.append(f"the starters score {report.get('score')} (expected 0, with tests)")
    for t in report.get("tests", []):
        if not t["output"].startswith("not implemented"):
            problems.append(f"{t['name']}: {t['output'].splitlines()[0]}")
    # The rest of the tree builds too (the emulator's tests, the benchmarks), and the given
    # checks and the emulator's tests pass.
    build = build_dir("starter", out)
    done = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True,
                          env=cmake.build_env())
    if done.returncode != 0:
        problems.append("cmake --build of the whole release fails: " +
                        cmake.first_compiler_error(done.stdout + done.stderr, out))
    else:
        done = subprocess.run(["ctest", "--test-dir", str(build), "-L", "checks|simt",
                               "-j", str(os.cpu_count() or 2)], capture_output=True, text=True)
        summary = [l for l in done.stdout.splitlines() if "tests passed" in l]
        print("release: given checks and emulator tests: " + (summary[0] if summary else "?"))
        if done.returncode != 0:
            problems.append("the checks/simt tests fail in the release:\n" + done.stdout[-2000:])
    return problems


def cmd_release(args) -> int:
    out = Path(args.outdir).resolve()
    count = write_release(out)
    print(f"tools/lab release: wrote {count} files to {out} (no solutions/, no mutants, no .ci/; "
          "LAB_IMPL is the starter; the book has no instructor appendix)")
    if args.no_verify:
        return 0
    print("tools/lab release: verifying it (a fresh configure and build inside it) ...", flush=True)
    problems = verify_release(out)
    if problems:
        print("The release FAILS its verification:\n  " + "\n  ".join(problems))
        return 1
    print(f"tools/lab release: {out} verified: it builds from scratch, every graded test fails "
          "as not implemented, tools/lab grade and tools/lab hint work inside it, the given "
          "checks pass.")
    return 0


# ---- autograder: a Gradescope bundle ----------------------------------------------------------

AUTOGRADER_SCRIPTS = ("setup.sh", "run_autograder", "collect_submission.py")  # tools/autograder/


def cmd_autograder(args) -> int:
    out = Path(args.outdir).resolve()
    if out.exists() and any(out.iterdir()):
        sys.exit(f"tools/lab autograder: {out} exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    count = write_release(out / "workbook")
    for name in AUTOGRADER_SCRIPTS:
        shutil.copy(AUTOGRADER_FILES / name, out / name)
        (out / name).chmod(0o755)
    with zipfile.ZipFile(out / "autograder.zip", "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted(out.rglob("*")):
            if path.is_file() and path.name != "autograder.zip":
                info = zipfile.ZipInfo.from_file(path, path.relative_to(out).as_posix())
                with open(path, "rb") as f:
                    z.writestr(info, f.read(), zipfile.ZIP_DEFLATED)
    print(f"tools/lab autograder: {out}/autograder.zip (setup.sh, run_autograder, "
          f"collect_submission.py and the workbook's {count} files). Upload the zip to Gradescope; "
          "try it here first with tools/tests/autograder_selftest.sh.")
    return 0
