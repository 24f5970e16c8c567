#!/usr/bin/env python3
"""The workbook's command line (run it through tools/lab). Python 3 standard library only.

  grade [NN ...] [--json FILE]   build every lab from its starter, run the graded tests and print
                                 one table per lab (exit 0 only when every graded test passes)
  test                           build every lab from its solution and run the whole suite
                                 (graded tests, the given checks, the emulator's own tests)
  docs [--check]                 build the book; --check also checks its links and renders every
                                 page in headless Chromium
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What building and testing the labs needs, as Debian/Ubuntu package names.
BUILD_PACKAGES = [
    "cmake", "ninja-build", "g++", "libgtest-dev", "libeigen3-dev",
    "libboost-context-dev", "libbenchmark-dev",
]


# ---- installing what is missing -------------------------------------------------------------

def missing_packages(packages: list[str]) -> list[str]:
    """The packages of `packages` that dpkg does not report as installed."""
    if shutil.which("dpkg-query") is None:
        return []  # not a Debian-family system: let CMake say what it cannot find
    missing = []
    for pkg in packages:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg],
                             capture_output=True, text=True)
        if out.returncode != 0 or "install ok installed" not in out.stdout:
            missing.append(pkg)
    return missing


def ensure_packages(packages: list[str]) -> None:
    """Installs the missing ones of `packages` with apt-get when root or with password-less sudo;
    otherwise prints the exact command to run and exits with status 1."""
    missing = missing_packages(packages)
    if not missing:
        return
    install = ["apt-get", "install", "-y", "--no-install-recommends", *missing]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    if os.geteuid() == 0:
        prefix = []
    elif shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"],
                                                 capture_output=True).returncode == 0:
        prefix = ["sudo", "-n"]
    else:
        print("tools/lab: these Debian packages are missing: " + " ".join(missing))
        print("Install them with:\n  sudo apt-get update && sudo " + " ".join(install))
        sys.exit(1)
    print("tools/lab: installing " + " ".join(missing), flush=True)
    subprocess.run(prefix + ["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(prefix + install, check=True, env=env)


# ---- building ---------------------------------------------------------------------------------

def labs() -> list[tuple[str, str, str]]:
    """(number, folder name, title) of every lab room, in the book's order."""
    found = []
    for room in sorted((ROOT / "labs").glob("[0-9][0-9]-*")):
        title = room.name[3:]
        readme = room / "README.md"
        if readme.exists():
            first = readme.read_text(encoding="utf-8").splitlines()[0]
            m = re.match(r"#\s*Lab\s+\d+\s*[—-]\s*(.*?)\s*(\{#[^}]*\})?\s*$", first)
            if m:
                title = m.group(1)
        found.append((room.name[:2], room.name, title))
    return found


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT, **kw)


def configure(impl: str) -> Path:
    """Configures build/<impl> exactly as the CMake preset of that name does."""
    build = ROOT / "build" / impl
    cmd = ["cmake", "-S", str(ROOT), "-B", str(build), "-G", "Ninja",
           "-DCMAKE_BUILD_TYPE=Release", f"-DLAB_IMPL={impl}"]
    if (build / "CMakeCache.txt").exists():
        cmd = ["cmake", "-B", str(build), f"-DLAB_IMPL={impl}"]
    if run(cmd, stdout=subprocess.DEVNULL).returncode != 0:
        sys.exit("tools/lab: CMake could not configure the project (see above)")
    return build


def build_env() -> dict:
    return dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 2))


# ---- running ctest and reading its results ---------------------------------------------------

STATUS_LINE = re.compile(r"Test\s+#\d+:\s+(.*?)\s+[\d.]+\s+sec\s*$", re.M)


def parse_status_lines(stdout: str, names: list[str]) -> dict[str, str]:
    """Maps each test name to the status word ctest printed for it ("Passed", "***Failed",
    "***Exception: SegFault", "***Timeout", "***Skipped" ...). Names may hold spaces (value-
    parameterised tests end in "  # GetParam() = ..."), so each line is matched against the
    known names, longest first, rather than split on whitespace."""
    by_length = sorted(names, key=len, reverse=True)
    found = {}
    for m in STATUS_LINE.finditer(stdout):
        rest = m.group(1)
        for name in by_length:
            if rest.startswith(name):
                found[name] = rest[len(name):].strip(" .")
                break
    return found


def ctest(build: Path, labels: str | None, junit: Path) -> dict[str, dict]:
    """Runs ctest (optionally only tests with a label matching `labels`) and returns, by test
    name, its status word (passed / failed / not implemented / crashed / timed out / skipped),
    its labels and its output."""
    listing = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1"],
                             capture_output=True, text=True, check=True)
    labels_of = {}
    for test in json.loads(listing.stdout)["tests"]:
        props = {p["name"]: p["value"] for p in test.get("properties", [])}
        labels_of[test["name"]] = props.get("LABELS", [])
    cmd = ["ctest", "--test-dir", str(build), "--output-junit", str(junit),
           "-j", str(os.cpu_count() or 2)]
    if labels:
        cmd += ["-L", labels]
    done = subprocess.run(cmd, capture_output=True, text=True)
    raw = parse_status_lines(done.stdout, list(labels_of))
    outputs = {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            out = case.find("system-out")
            outputs[case.get("name")] = out.text if out is not None and out.text else ""
    results = {}
    for name, word in raw.items():
        output = outputs.get(name, "")
        if word == "Passed":
            status = "passed"
        elif "Timeout" in word:
            status = "timed out"
        elif "Skipped" in word or "Not Run" in word or "Disabled" in word:
            status = "skipped"
        elif "not implemented yet" in output:
            status = "not implemented"
        elif "Exception" in word or "[  FAILED  ]" not in output:
            status = "crashed"  # a signal, an abort, or a death before gtest could report
        else:
            status = "failed"
        results[name] = {"status": status, "labels": labels_of.get(name, []), "output": output,
                         "ctest": word}
    return results


def first_reason(result: dict) -> str:
    """The most telling words about a test that did not pass, for the grade table."""
    output = result["output"]
    m = re.search(r"not implemented yet: ([^\n\"]*?) —", output)
    if m:
        return m.group(1)
    if result["status"] in ("crashed", "timed out"):
        return result["ctest"].lstrip("*")  # e.g. "Exception: SegFault", "Timeout"
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.rstrip().endswith("Failure"):
            block = []
            for follow in lines[i + 1:]:
                if not follow.strip() or follow.startswith("["):
                    break
                block.append(follow.strip())
            for text in block:  # "Actual: false (first difference at [0]: 6 vs 0)"
                m = re.match(r"Actual: false \((.*)\)$", text)
                if m:
                    return m.group(1)[:100]
            return " ".join(block)[:100]
    return ""


def skip_reason(results: dict[str, dict], names: list[str]) -> str:
    """Why the tests `names` were skipped, from GoogleTest's output (e.g. "no CUDA device")."""
    reasons = set()
    for name in names:
        m = re.search(r"Skipped\s*\n?(.*)", results[name]["output"])
        reasons.add(m.group(1).strip() if m and m.group(1).strip() else "skipped")
    return "; ".join(sorted(reasons))


# ---- the commands ---------------------------------------------------------------------------

def cmd_grade(args) -> int:
    ensure_packages(BUILD_PACKAGES)
    wanted = [n.zfill(2) for n in args.labs] or [n for n, _, _ in labs()]
    rooms = {n: (name, title) for n, name, title in labs()}
    for n in wanted:
        if n not in rooms:
            sys.exit(f"tools/lab: there is no lab {n} (labs: {', '.join(rooms)})")
    build = configure("starter")
    env = build_env()
    # Build each lab on its own, so a lab that does not compile does not hide the others.
    compiled = {}
    for n in wanted:
        done = run(["cmake", "--build", str(build), "--target", f"lab{n}"], env=env,
                   capture_output=True, text=True)
        compiled[n] = done.returncode == 0
        if not compiled[n]:
            errors = [l for l in done.stdout.splitlines() if "error" in l][:8]
            print(f"\nLab {n} does not compile:\n  " + "\n  ".join(errors or done.stdout.splitlines()[-8:]))
    selected = "|".join(f"^lab{n}$" for n in wanted if compiled[n])
    results = ctest(build, selected, build / "grade-junit.xml") if selected else {}

    report = {}
    all_passed = True
    print()
    for n in wanted:
        name, title = rooms[n]
        in_lab = {t: r for t, r in results.items() if f"lab{n}" in r["labels"]}
        # The CUDA twins of an emulator test skip on a machine without a GPU: not graded there.
        skipped = [t for t, r in in_lab.items() if r["status"] == "skipped"]
        graded = {t: r for t, r in in_lab.items() if r["status"] != "skipped"}
        passed = sum(r["status"] == "passed" for r in graded.values())
        if not compiled[n]:
            print(f"Lab {n} — {title}: does not compile (see the errors above)")
            report[n] = {"compiled": False, "tests": {}}
            all_passed = False
            continue
        note = f" ({len(skipped)} skipped: {skip_reason(in_lab, skipped)})" if skipped else ""
        print(f"Lab {n} — {title}: {passed}/{len(graded)} tests passed{note}")
        width = max((len(t.split("  # GetParam()")[0]) for t in graded), default=0) - len(f"lab{n}.")
        for test, r in sorted(graded.items()):
            if r["status"] != "passed":
                short = test[len(f"lab{n}."):].split("  # GetParam()")[0]
                print(f"  {short:<{width}}  {r['status']:<15}  {first_reason(r)}")
        report[n] = {"compiled": True,
                     "tests": {t: r["status"] for t, r in graded.items()},
                     "skipped": {t: skip_reason(in_lab, [t]) for t in skipped}}
        all_passed &= passed == len(graded) and len(graded) > 0
        print()
    print("Grade one lab: tools/lab grade NN    Details of a test: "
          "ctest --test-dir build/starter -R <name> --output-on-failure")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0 if all_passed else 1


def cmd_test(args) -> int:
    ensure_packages(BUILD_PACKAGES)
    if not (ROOT / "solutions").is_dir():
        sys.exit("tools/lab test builds the reference solutions, and this tree has no solutions/ "
                 "folder (a student release). Use: tools/lab grade")
    start = time.monotonic()
    build = configure("solution")
    if run(["cmake", "--build", str(build)], env=build_env()).returncode != 0:
        return 1
    done = run(["ctest", "--test-dir", str(build), "--output-on-failure",
                "-j", str(os.cpu_count() or 2)])
    print(f"tools/lab test: configure + build + test took {time.monotonic() - start:.0f} s")
    return done.returncode


def main() -> int:
    if sys.argv[1:2] == ["docs"]:  # its options belong to tools/docs.py
        sys.path.insert(0, str(ROOT / "tools"))
        import docs
        return docs.main(sys.argv[2:], ensure_packages)
    parser = argparse.ArgumentParser(prog="tools/lab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    grade = sub.add_parser("grade", help="grade the starters (the student's command)")
    grade.add_argument("labs", nargs="*", help="lab numbers, e.g. 02 (default: every lab)")
    grade.add_argument("--json", help="also write the results to this JSON file")
    grade.set_defaults(func=cmd_grade)
    test = sub.add_parser("test", help="run the reference solutions' suite (instructors)")
    test.set_defaults(func=cmd_test)
    sub.add_parser("docs", help="build the book (--check: links and browser check)")
    args = parser.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
