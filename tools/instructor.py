"""The instructor's commands: `mutants`, `check`, `release`, `autograder`. Python 3 standard
library only. Each needs the tree's solutions/ folder."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import grading
import labcore
import mutants
from labcore import ROOT, BUILD_PACKAGES, Lab, ensure_packages

def cmd_mutants(args) -> int:
    labcore.require_solutions("mutants")
    if args.new or args.save:
        return edit_mutant(*(args.new or args.save), saving=bool(args.save))
    ensure_packages(BUILD_PACKAGES)
    picked = labcore.pick_labs(args.labs)
    found = mutants.catalogue(picked)
    if not found:
        sys.exit("tools/lab mutants: no mutants in solutions/*/mutants for these labs")
    mutants.run(found, mutants.configure(found))
    mutants.print_report(found)
    survivors = [m for m in found if not m.killed]
    print(f"\n{len(found) - len(survivors)} of {len(found)} mutants killed by an algorithm test")
    return 1 if survivors else 0


def edit_mutant(number: str, stem: str, saving: bool) -> int:
    """--new NN STEM: the scratch file to write a mutant in; --save NN STEM: its patch."""
    lab = labcore.pick_labs([number])[0]
    if not saving:
        try:
            scratch, stale = mutants.new(lab, stem)
        except ValueError as e:
            sys.exit(f"tools/lab mutants --new: {e}")
        patch = mutants.patch_path(lab, stem)
        if stale:
            print(f"{patch.relative_to(ROOT)} no longer applies to solution.cpp:\n  "
                  + "\n  ".join(stale) + "\nIts fields are kept; make its change again in the "
                  "code. The old diff, to see what it changed:\n")
            print(patch.read_text(encoding="utf-8").partition("\n\n")[2])
        code = "the mutant" if patch.exists() and not stale else f"solutions/{lab.room}/solution.cpp"
        print(f"tools/lab mutants --new: {scratch.relative_to(ROOT)} holds {code} under its four "
              "fields.\n"
              "  1. Fill in the fields: Mutant: (the bug, as a student would make it), Bug: (what "
              "goes wrong),\n     Chapter: \\ref <section of the lab's README>, Caught by: "
              "Suite.Test, ... (the graded tests\n     that must fail). A field may go on over "
              "more '//' lines.\n"
              "  2. Make the one change in the code below the blank line.\n"
              f"  3. tools/lab mutants --save {lab.number} {stem}   (writes "
              f"solutions/{lab.room}/mutants/{stem}.patch)\n"
              f"  4. tools/lab mutants {lab.number}   (proves that its tests kill it)")
        return 0
    path, problems = mutants.save(lab, stem)
    if problems:
        print(f"tools/lab mutants --save: {path.relative_to(ROOT)}:\n  " + "\n  ".join(problems))
        return 1
    print(path.read_text(encoding="utf-8"))
    print(f"tools/lab mutants --save: wrote {path.relative_to(ROOT)}. Now prove that its tests "
          f"kill it: tools/lab mutants {lab.number}")
    return 0


# ---- check: the instructor's self-check --------------------------------------------------------

def cmd_check(args) -> int:
    """Every starter fails every graded test as not implemented, every solution passes every
    graded test, every mutant is killed, and every chapter's table lists exactly the graded tests."""
    labcore.require_solutions("check")
    ensure_packages(BUILD_PACKAGES)
    picked = labcore.labs()
    problems: list[str] = []
    for lab in picked:
        try:
            grading.read_table(lab)
        except grading.TableError as e:
            problems.append(str(e))
    if problems:
        print("\n".join(problems))
        return 1

    print("== the starters", flush=True)
    starter_build = ROOT / "build" / "starter"
    labcore.configure(starter_build, {"LAB_IMPL": "starter", "PA_TEST_TIMEOUT": "30"})
    starters = grading.grade(picked, starter_build, timeout=30)
    print("== the solutions", flush=True)
    solution_build = ROOT / "build" / "solution"
    labcore.configure(solution_build, {"LAB_IMPL": "solution"})
    solutions = grading.grade(picked, solution_build, timeout=60)
    print("== the mutants", flush=True)
    found = mutants.catalogue(picked)
    mutants.run(found, mutants.configure(found))
    mutants.print_report(found)

    rows = []
    for lab, s, r in zip(picked, starters, solutions):
        mine = [m for m in found if m.lab == lab]
        not_impl = sum(t.status == "not implemented" for t in s.tests)
        passed = sum(t.status == "passed" for t in r.tests)
        killed = sum(m.killed for m in mine)
        ok_s = s.built and s.tests and not_impl == len(s.tests)
        ok_r = r.built and r.tests and passed == len(r.tests)
        ok_m = len(mine) >= 6 and killed == len(mine)
        for g, who in ((s, "starter"), (r, "solution")):
            if not g.built:
                problems.append(f"lab {lab.number} {who} does not build: {g.build_error}")
            for key in g.unlisted:
                problems.append(f"lab {lab.number}: {key} has no row in the chapter's table")
            for key in g.unrun:
                problems.append(f"lab {lab.number}: the table lists {key}, which did not run")
            for reason in set(g.skipped.values()):
                if "no CUDA device" not in reason:
                    problems.append(f"lab {lab.number} {who}: tests skipped ({reason})")
        for t in s.tests:
            if t.status != "not implemented":
                problems.append(f"starter {lab.number} {t.name}: {t.status} {t.detail}")
        for t in r.tests:
            if t.status != "passed":
                problems.append(f"solution {lab.number} {t.name}: {t.status} {t.detail}")
        if len(mine) < 6:
            problems.append(f"lab {lab.number}: {len(mine)} mutants (at least 6)")
        problems += mutants.problems(mine)
        rows.append((lab, len(r.tests), f"{not_impl}/{len(s.tests)}", ok_s,
                     f"{passed}/{len(r.tests)}", ok_r, f"{killed}/{len(mine)}", ok_m,
                     s.max_score))

    print("\n== tools/lab check")
    head = f"{'lab':<4} {'title':<44} {'graded':>6} {'points':>6}  {'starter: not impl.':<20} " \
           f"{'solution: passed':<18} {'mutants killed':<14}"
    print(head)
    print("-" * len(head))
    mark = {True: "ok", False: "FAIL"}
    for lab, n, st, ok_s, so, ok_r, mu, ok_m, pts in rows:
        print(f"{lab.number:<4} {lab.title[:44]:<44} {n:>6} {pts:>6}  {st + ' ' + mark[ok_s]:<20} "
              f"{so + ' ' + mark[ok_r]:<18} {mu + ' ' + mark[ok_m]:<14}")
    total_m = len(found)
    print(f"{'all':<4} {'':<44} {sum(r[1] for r in rows):>6} {sum(r[8] for r in rows):>6}  "
          f"{'':<20} {'':<18} {sum(m.killed for m in found)}/{total_m}")
    if problems:
        print("\nProblems:\n  " + "\n  ".join(problems))
        return 1
    print("\nEvery starter fails every graded test as not implemented, every solution passes "
          f"every graded test, and all {total_m} mutants are killed by an algorithm test.")
    return 0


# ---- release: the student edition -------------------------------------------------------------

INSTRUCTOR_ONLY = ("solutions/", ".ci/")


def tree_files(root: Path = ROOT) -> list[str]:
    """The tree's files as git sees them (tracked, and untracked but not ignored)."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others",
                          "--exclude-standard", "-z"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("tools/lab release: needs a git work tree (git ls-files) to know what to ship")
    return sorted(f for f in out.stdout.split("\0") if f and (root / f).is_file())


def strip_instructor_blocks(text: str) -> str:
    """Drops every `<!-- instructor -->` ... `<!-- /instructor -->` block of a Markdown file."""
    return re.sub(r"\n?<!-- instructor -->.*?<!-- /instructor -->\n?", "\n", text, flags=re.S)


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
        if rel.startswith(INSTRUCTOR_ONLY) or "/mutants/" in rel:
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
    return count


def verify_release(out: Path) -> list[str]:
    """Builds the student edition at `out` from scratch and checks it; returns the problems."""
    problems = []
    for path in out.rglob("*"):
        rel = path.relative_to(out).as_posix()
        if rel.startswith("build/"):
            continue
        if rel.startswith("solutions") or "/mutants" in rel or path.name == "solution.cpp":
            problems.append(f"instructor file shipped: {rel}")
    presets = json.loads((out / "CMakePresets.json").read_text())
    if any(p.get("cacheVariables", {}).get("LAB_IMPL") == "solution"
           for p in presets["configurePresets"]):
        problems.append("CMakePresets.json still builds the solutions")
    # The tree's own default must be the starter.
    probe = out / "build" / "default-probe"
    done = subprocess.run(["cmake", "-S", str(out), "-B", str(probe), "-G", "Ninja",
                           "-DPA_CUDA=OFF", "-DPA_BENCHMARKS=OFF"], capture_output=True, text=True)
    cache = (probe / "CMakeCache.txt").read_text() if (probe / "CMakeCache.txt").exists() else ""
    if done.returncode != 0 or "LAB_IMPL:STRING=starter" not in cache:
        problems.append("a plain configure does not pick LAB_IMPL=starter")
    shutil.rmtree(probe, ignore_errors=True)
    # tools/lab grade inside it: configures and builds every lab from scratch.
    results = out / "build" / "release-grade.json"
    done = subprocess.run([sys.executable, str(out / "tools" / "lab.py"), "grade",
                           "--json", str(results)], cwd=out, capture_output=True, text=True)
    print(done.stdout[-3000:])
    if not results.exists():
        problems.append("tools/lab grade wrote no results: " + done.stderr[-500:])
        return problems
    report = json.loads(results.read_text())
    problems += [f"results.json: {p}" for p in grading.validate_gradescope(report)]
    if report.get("score") != 0 or not report.get("tests"):
        problems.append(f"the starters score {report.get('score')} (expected 0, with tests)")
    for t in report.get("tests", []):
        if not t["output"].startswith("not implemented"):
            problems.append(f"{t['name']}: {t['output'].splitlines()[0]}")
    # The rest of the tree builds too (the emulator's tests, the benchmarks), and the given
    # checks and the emulator's tests pass.
    build = out / "build" / "starter"
    done = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True,
                          env=labcore.build_env())
    if done.returncode != 0:
        problems.append("cmake --build of the whole release fails: " +
                        labcore.first_compiler_error(done.stdout + done.stderr, out))
    else:
        done = subprocess.run(["ctest", "--test-dir", str(build), "-L", "checks|simt",
                               "-j", str(os.cpu_count() or 2)], capture_output=True, text=True)
        summary = [l for l in done.stdout.splitlines() if "tests passed" in l]
        print("release: given checks and emulator tests: " + (summary[0] if summary else "?"))
        if done.returncode != 0:
            problems.append("the checks/simt tests fail in the release:\n" + done.stdout[-2000:])
    return problems


def cmd_release(args) -> int:
    labcore.require_solutions("release")
    out = Path(args.outdir).resolve()
    count = write_release(out)
    print(f"tools/lab release: wrote {count} files to {out} (no solutions/, no mutants, no .ci/; "
          "LAB_IMPL is the starter; the book has no instructor appendix)")
    if args.no_verify:
        return 0
    ensure_packages(BUILD_PACKAGES)
    print("tools/lab release: verifying it (a fresh configure and build inside it) ...", flush=True)
    problems = verify_release(out)
    if problems:
        print("The release FAILS its verification:\n  " + "\n  ".join(problems))
        return 1
    print(f"tools/lab release: {out} verified: it builds from scratch, every graded test fails "
          "as not implemented, tools/lab grade works inside it, the given checks pass.")
    return 0


# ---- autograder: a Gradescope bundle ----------------------------------------------------------

SETUP_SH = r"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image: it installs the
# Debian/Ubuntu packages the workbook needs (only the missing ones).
set -euo pipefail
packages=(python3 @PACKAGES@)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y --no-install-recommends "${missing[@]}"
fi
echo "setup.sh: every package is installed"
"""

RUN_AUTOGRADER = r"""#!/usr/bin/env bash
# Gradescope runs this for every submission. It copies the workbook (the student edition with the
# instructor's tests) into a clean folder, puts the submitted starter.cpp files in their rooms,
# grades every lab, and writes results/results.json. AUTOGRADER_ROOT (default /autograder) lets
# it run outside Gradescope, e.g. on a fake submission folder.
set -uo pipefail
ag="${AUTOGRADER_ROOT:-/autograder}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$ag/work"
rm -rf "$work" && mkdir -p "$work" "$ag/results"
cp -r "$here/workbook/." "$work/"
python3 "$here/collect_submission.py" "$ag/submission" "$work" > "$ag/results/submission.txt"
cat "$ag/results/submission.txt"
cd "$work"
export PA_CUDA=OFF   # Gradescope has no GPU: the CUDA twins would only skip, after a long nvcc build
python3 tools/lab.py grade --json "$ag/results/results.json" --timeout @TIMEOUT@
python3 "$here/collect_submission.py" --finish "$ag/results/results.json" "$ag/results/submission.txt"
"""

COLLECT_SUBMISSION = r'''#!/usr/bin/env python3
"""Copies a student's submitted starter.cpp files into the workbook's lab rooms.

Accepted: a file at any depth whose path ends in <NN-name>/starter.cpp (the labs/ folder or the
whole repository, uploaded or from GitHub), or a file named labNN.cpp. A lab with no file keeps
its untouched starter (and scores 0). With --finish it adds what was found to results.json, or
writes a results.json that says why grading produced none."""
import json
import sys
from pathlib import Path


def collect(submission: Path, work: Path) -> None:
    rooms = sorted(p.name for p in (work / "labs").glob("[0-9][0-9]-*"))
    files = [p for p in submission.rglob("*.cpp") if p.is_file()] if submission.is_dir() else []
    for room in rooms:
        found = [p for p in files if p.name == "starter.cpp" and p.parent.name == room]
        found += [p for p in files if p.name == f"lab{room[:2]}.cpp"]
        if not found:
            print(f"lab {room[:2]}: no file submitted (looked for {room}/starter.cpp or "
                  f"lab{room[:2]}.cpp); its untouched starter is graded")
            continue
        chosen = min(found, key=lambda p: len(p.parts))
        (work / "labs" / room / "starter.cpp").write_bytes(chosen.read_bytes())
        print(f"lab {room[:2]}: graded {chosen.relative_to(submission)}")


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
    if sys.argv[1] == "--finish":
        finish(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        collect(Path(sys.argv[1]), Path(sys.argv[2]))
'''


def cmd_autograder(args) -> int:
    labcore.require_solutions("autograder")
    out = Path(args.outdir).resolve()
    if out.exists() and any(out.iterdir()):
        sys.exit(f"tools/lab autograder: {out} exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    count = write_release(out / "workbook")
    (out / "setup.sh").write_text(SETUP_SH.replace("@PACKAGES@", " ".join(BUILD_PACKAGES)))
    (out / "run_autograder").write_text(RUN_AUTOGRADER.replace("@TIMEOUT@", "60"))
    (out / "collect_submission.py").write_text(COLLECT_SUBMISSION)
    for name in ("setup.sh", "run_autograder", "collect_submission.py"):
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
