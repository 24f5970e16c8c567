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
    """(status, detail) of a test from ctest's status word and the test's output. A sanitizer's
    report (tools/lab grade --asan) is the status itself, e.g. "read outside a buffer"."""
    if word == "Passed":
        return "passed", ""
    report = sanitizer_report(output)
    if report:
        return report
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


# ---- what a failure says ---------------------------------------------------------------------

@dataclass
class Failure:
    """One failed assertion of a GoogleTest output: its message in the assertion's own words
    (several lines for some, e.g. the emulator's where-is-every-thread report), and the
    SCOPED_TRACE lines active at it (which configuration it was)."""
    message: str
    trace: list[str]
    structured: bool   # the message is the test's own text (not GoogleTest's "Value of:" form)

    @property
    def headline(self) -> str:
        """The failure in one paragraph, never cut: the message's first line (its whole text
        when it is GoogleTest's own form), then the configuration it failed in."""
        if self.structured:
            text = self.message.splitlines()[0] if self.message else ""
        else:
            text = " ".join(self.message.split())
        return text + (f" — in {'; '.join(self.trace)}" if self.trace else "")

    @property
    def more_lines(self) -> int:
        """How many lines of the message the headline leaves out."""
        return max(0, len(self.message.splitlines()) - 1) if self.structured else 0


FAILURE_HEADER = re.compile(r"^\S.*:(\d+:)? Failure$")


def failures(output: str) -> list[Failure]:
    """Every failed assertion of a GoogleTest output, in order."""
    found, lines = [], output.splitlines()
    i = 0
    while i < len(lines):
        if not FAILURE_HEADER.match(lines[i].rstrip()):
            i += 1
            continue
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not FAILURE_HEADER.match(lines[j].rstrip()) \
                and not lines[j].startswith("[") and lines[j].strip() != "Google Test trace:":
            body.append(lines[j])
            j += 1
        trace: list[str] = []
        if j < len(lines) and lines[j].strip() == "Google Test trace:":
            j += 1
            while j < len(lines) and re.match(r"^\S+:\d+: ", lines[j]) \
                    and not FAILURE_HEADER.match(lines[j].rstrip()):
                trace.append(re.sub(r"^\S+:\d+: ", "", lines[j]).strip())
                j += 1
        while body and not body[-1].strip():
            body.pop()
        found.append(failure_of("\n".join(body), trace))
        i = j
    return found


def failure_of(body: str, trace: list[str]) -> Failure:
    # EXPECT_TRUE(check) << "what": the check's words, then the test's own after "Expected: true".
    m = re.search(r"^\s*Actual: false \((.*?)\)[ \t]*(?:\nExpected: true[ \t]*(?:\n(.*))?)?\Z",
                  body, re.S | re.M)
    if m:
        said = " ".join((m.group(2) or "").split())
        lines = m.group(1).strip().split("\n", 1)
        first = lines[0] + (f" — {said}" if said else "")
        return Failure("\n".join([first] + lines[1:]), trace, True)
    m = re.search(r'C\+\+ exception with description "(.*)" thrown in (the test body|.*)\.?\s*$',
                  body, re.S)
    if m:
        text = m.group(1).strip()
        return Failure(text if text.startswith("simt") else "threw: " + text, trace, True)
    return Failure(body.strip(), trace, False)


def first_mismatch(output: str) -> str:
    """The first failure of a GoogleTest output in one paragraph, whole (see Failure.headline)."""
    found = failures(output)
    return found[0].headline if found else ""


# ---- sanitizer reports (tools/lab grade --asan) -------------------------------------------------

ASAN_KINDS = {   # AddressSanitizer's bug kind -> the status, in the student's words
    "heap-buffer-overflow": "{access} outside a buffer",
    "stack-buffer-overflow": "{access} outside a buffer",
    "global-buffer-overflow": "{access} outside a buffer",
    "container-overflow": "{access} outside a buffer",
    "stack-buffer-underflow": "{access} outside a buffer",
    "heap-use-after-free": "{access} freed memory",
    "stack-use-after-return": "{access} a dead stack variable",
    "stack-use-after-scope": "{access} a dead stack variable",
    "double-free": "freed memory twice",
    "attempting double-free": "freed memory twice",
    "alloc-dealloc-mismatch": "freed memory the wrong way",
    "new-delete-type-mismatch": "freed memory the wrong way",
    "negative-size-param": "passed a negative size",
    "SEGV": "{access} an invalid address",
}
FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ in (.*?) (/\S+?):(\d+)(?::\d+)?\s*$", re.M)


def short_path(path: str) -> str:
    """A source path from its labs/, solutions/, common/ or build/ folder on."""
    for root in ("/labs/", "/solutions/", "/common/", "/build/"):
        if root in path:
            return root[1:] + path.rsplit(root, 1)[1]
    return path


def student_frame(text: str) -> tuple[str, str] | None:
    """(file:line, function) of the frame a student should look at: the first one in an
    implementation file (a starter, a solution, a mutant's source), else the first in a lab's
    room, else the first outside the system's headers and libraries."""
    frames = [(m.group(1), m.group(2), m.group(3)) for m in FRAME.finditer(text)]
    if not frames:
        return None

    def pick(test):
        return next(((f"{short_path(p)}:{line}", fn) for fn, p, line in frames if test(p)), None)

    found = (pick(lambda p: re.search(r"/(starter|solution)\.c\w*$", p) or "/mutants/" in p)
             or pick(lambda p: "/labs/" in p)
             or pick(lambda p: not p.startswith(("/usr/", "/lib")))
             or pick(lambda p: True))
    fn = re.sub(r"\(.*$", "", found[1])            # no argument list
    fn = re.sub(r"<.*>", "", fn).split("::")[-1]   # no templates, no namespaces
    return found[0], fn


def buffer_name(report: str, size: int, function: str) -> str:
    """The buffer a sanitizer's report is about, in the student's terms where its allocation says
    what it is: the emulator's dynamic shared memory of a kernel (launch.cpp's DynamicShared);
    else "a N-byte buffer"."""
    m = re.search(r"allocated by thread \S+ here:\n((?:.*\n?)*?)(?:\n\s*\n|SUMMARY|$)", report)
    allocation = m.group(1) if m else ""
    if "DynamicShared" in allocation:
        return (f"the dynamic shared memory of {function or 'the kernel'} ({size} bytes: what "
                "SIMT_DYNAMIC_SHARED hands out)")
    return f"a {size}-byte buffer"


def first_stack(text: str) -> str:
    """The first stack trace of a sanitizer report (the access, not where the memory came from)."""
    first = FRAME.search(text)
    if not first:
        return ""
    lines = []
    for line in text[first.start():].splitlines():
        if not FRAME.match(line):
            break
        lines.append(line)
    return "\n".join(lines)


def sanitizer_report(output: str) -> tuple[str, str] | None:
    """(status, detail) of the first AddressSanitizer, LeakSanitizer or UBSan report in a test's
    output, or None: e.g. ("read outside a buffer", "labs/04-x/starter.cpp:97 in attn_paged:
    8 bytes before a 4096-byte buffer")."""
    m = re.search(r"ERROR: AddressSanitizer: (attempting double-free|[\w-]+)(.*)$", output, re.M)
    if m:
        kind = m.group(1)
        rest = output[m.start():]
        access = re.search(r"^(READ|WRITE) of size (\d+)", rest, re.M) or \
            re.search(r"caused by a (READ|WRITE) memory access", rest)
        verb = {"READ": "read", "WRITE": "wrote"}.get(access.group(1) if access else "", "touched")
        status = ASAN_KINDS.get(kind, "memory error: {access}").format(access=verb)
        where = re.search(r"is located (\d+) bytes (to the left of|to the right of|inside of) "
                          r"(\d+)-byte region", rest)
        what = kind
        if kind == "SEGV":
            what = ("a null pointer (SEGV)" if "zero page" in rest
                    else "an address on no mapped page, outside every buffer (SEGV)")
        frame = student_frame(first_stack(rest))
        if where:
            side = {"to the left of": "before", "to the right of": "after",
                    "inside of": "inside"}[where.group(2)]
            what = (f"{where.group(1)} bytes {side} "
                    f"{buffer_name(rest, int(where.group(3)), frame[1] if frame else '')}")
        return status, (f"{frame[0]} in {frame[1]}: " if frame else "") + what
    if "ERROR: LeakSanitizer: detected memory leaks" in output:
        rest = output[output.index("ERROR: LeakSanitizer"):]
        frame = student_frame(first_stack(rest))
        return "leaked memory", (f"allocated at {frame[0]} in {frame[1]}" if frame else
                                 "memory allocated and never freed")
    m = re.search(r"^(/\S+?):(\d+):\d+: runtime error: (.*)$", output, re.M)
    if m:
        frame = student_frame(first_stack(output[m.start():])) or (f"{short_path(m.group(1))}:{m.group(2)}", "")
        at = f"{short_path(m.group(1))}:{m.group(2)}"
        where = at if frame[0] == at else f"{frame[0]} (reached {at})"
        return "undefined behaviour", f"{where}{' in ' + frame[1] if frame[1] else ''}: {m.group(3)}"
    return None


def ctest(build: Path, labels: str | None, junit: Path, timeout: int | None = None,
          env: dict[str, str] | None = None) -> dict[str, TestResult]:
    """Runs ctest in `build` (only the tests whose label matches `labels`, when given; the tests
    in `env` when given) and returns each test's result, by ctest name."""
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
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
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
