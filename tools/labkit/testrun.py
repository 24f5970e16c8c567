"""Running tests and reading what happened: ctest over a build folder, or one GoogleTest test of
a binary in its own process (as ctest would), each classified as passed / failed / not
implemented / crashed / timed out / skipped, with the detail that explains it."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


# ---- running tests ---------------------------------------------------------------------------

STATUS_LINE = re.compile(r"Test\s+#\d+:\s+(.*?)\s+[\d.]+\s+sec\s*$", re.M)

# ctest's words for a test killed by a signal, and the signal.
SIGNALS = {"SegFault": "SIGSEGV", "Subprocess aborted": "SIGABRT", "Numerical": "SIGFPE",
           "Illegal": "SIGILL", "Bus error": "SIGBUS", "Interrupt": "SIGINT",
           "Child aborted": "SIGABRT"}


def test_key(ctest_name: str) -> str:
    """`Suite.Test` of a ctest name: without the `labNN.` prefix, the value-parameterised
    instance (`Prefix/`, `/Emulator`, `/0`) and the `  # GetParam() = ...` tail."""
    name = ctest_name.split("  # ")[0]
    name = re.sub(r"^lab\d\d\.", "", name)
    name = re.sub(r"^simt\.", "", name)
    suite, _, test = name.partition(".")
    return f"{suite.split('/')[-1]}.{test.split('/')[0]}"


def is_checks(key: str) -> bool:
    return key.split(".")[0].endswith("Checks")


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


@dataclass
class TestResult:
    name: str          # the ctest name, e.g. "lab02.PagedOnlineAttention.BlockSizeOne"
    status: str        # passed / failed / not implemented / crashed / timed out / skipped / did not build
    output: str = ""
    seconds: float = 0.0
    detail: str = ""   # the signal of a crash, the first mismatch of a failure, the compiler error

    @property
    def key(self) -> str:
        return test_key(self.name)


def classify(word: str, output: str) -> tuple[str, str]:
    """(status, detail) of a test from ctest's status word and the test's output."""
    if word == "Passed":
        return "passed", ""
    if "Timeout" in word:
        return "timed out", ""
    if "Skipped" in word or "Not Run" in word or "Disabled" in word:
        m = re.search(r"Skipped\s*\n?(.*)", output)
        return "skipped", (m.group(1).strip() if m else "") or "skipped"
    m = re.search(r"not implemented yet: ([^\n\"]*?) —", output)
    if m:
        return "not implemented", m.group(1)
    if "Exception" in word:
        sig = next((s for w, s in SIGNALS.items() if w in word), word.split(":")[-1].strip())
        return "crashed", sig
    if "[  FAILED  ]" not in output:
        return "crashed", "exited early: " + (word.lstrip("*") or "no GoogleTest verdict")
    return "failed", first_mismatch(output)


def first_mismatch(output: str) -> str:
    """The assertion's own words of the first failure in a GoogleTest output."""
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
                    return m.group(1)[:160]
            return " ".join(block)[:160]
    return ""


def ctest(build: Path, labels: str | None, junit: Path, timeout: int | None = None,
          ) -> dict[str, TestResult]:
    """Runs ctest in `build` (only the tests whose label matches `labels`, when given) and returns
    each test's result, by ctest name."""
    listing = subprocess.run(["ctest", "--test-dir", str(build), "--show-only=json-v1"],
                             capture_output=True, text=True, check=True)
    names = [t["name"] for t in json.loads(listing.stdout)["tests"]]
    cmd = ["ctest", "--test-dir", str(build), "--output-junit", str(junit),
           "-j", str(os.cpu_count() or 2)]
    if labels:
        cmd += ["-L", labels]
    if timeout:
        cmd += ["--timeout", str(timeout)]
    if junit.exists():
        junit.unlink()
    done = subprocess.run(cmd, capture_output=True, text=True)
    words = parse_status_lines(done.stdout, names)
    outputs, seconds = {}, {}
    if junit.exists():
        for case in ET.parse(junit).getroot().iter("testcase"):
            out = case.find("system-out")
            outputs[case.get("name")] = out.text if out is not None and out.text else ""
            seconds[case.get("name")] = float(case.get("time") or 0)
    results = {}
    for name, word in words.items():
        output = outputs.get(name, "")
        status, detail = classify(word, output)
        results[name] = TestResult(name, status, output, seconds.get(name, 0.0), detail)
    return results


def run_gtest_one(exe: Path, gtest_name: str, timeout: float) -> TestResult:
    """Runs one GoogleTest test of `exe` in its own process (as ctest would) and classifies it."""
    try:
        done = subprocess.run([str(exe), f"--gtest_filter={gtest_name}", "--gtest_brief=0"],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return TestResult(gtest_name, "timed out")
    output = done.stdout + done.stderr
    if done.returncode == 0 and "[  PASSED  ] 1 test" in output:
        return TestResult(gtest_name, "passed", output)
    if done.returncode == 0 and "[  SKIPPED ]" in output:
        return TestResult(gtest_name, "skipped", output)
    if done.returncode < 0:
        return TestResult(gtest_name, "crashed", output,
                          detail=signal.Signals(-done.returncode).name)
    status, detail = classify("***Failed", output)
    return TestResult(gtest_name, status, output, detail=detail)


def list_gtests(exe: Path) -> list[str]:
    """The full GoogleTest names (`Suite.Test`, `Suite.Test/Param`) that `exe` holds."""
    out = subprocess.run([str(exe), "--gtest_list_tests"], capture_output=True, text=True,
                         check=True).stdout
    names, suite = [], ""
    for line in out.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            names.append(suite + line.split("#")[0].strip())
    return names
