"""Grading: each graded test's points and hint (from its chapter's "What the tests prove" table),
grading a tree's labs one build at a time, and the three reports: the terminal table,
Gradescope's results.json and JUnit XML. Python 3 standard library only."""
from __future__ import annotations

import json
import re
import shutil
import sys
import textwrap
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from labkit import build as cmake
from labkit import testrun
from labkit.labs import Lab
from labkit.paths import ROOT, build_dir, shown

# ---- how the grader builds and runs a lab ------------------------------------------------------

# The one time limit of a graded test, in seconds, for grade, watch, check and the mutants: a
# test past it is "timed out" (the slowest graded test takes about a second on 2 busy cores, so
# only a loop that does not end, or a far too slow one, reaches it).
TEST_TIMEOUT = 30
# grade and watch build the student's code fast: -O1 compiles lab 05's 54 kernel instantiations
# in about half the time of Release's -O3 and grades the same (no -ffast-math either way);
# tools/lab test and bench keep Release.
FAST_FLAGS = "-O1 -DNDEBUG"
# A build under ASan and UBSan runs several times slower; its tests get this many times the limit.
SANITIZER_SLOWDOWN = 4


def sanitizer_options(root: Path = ROOT) -> dict[str, str]:
    """The cache variables of the `asan` preset in CMakePresets.json (one place for the
    sanitizer flags), without its choice of LAB_IMPL."""
    presets = json.loads((root / "CMakePresets.json").read_text())
    preset = next(p for p in presets["configurePresets"] if p["name"] == "asan")
    return {k: v for k, v in preset.get("cacheVariables", {}).items() if k != "LAB_IMPL"}


def grade_build(impl: str, sanitize: bool = False, root: Path = ROOT) -> tuple[Path, dict[str, str]]:
    """The build folder and the CMake options tools/lab grade and watch use: one folder per
    implementation (build/starter, build/solution; build/asan-starter under --asan) shared by
    both commands with the same options, so neither reconfigures the other's build. Without an
    NVIDIA GPU nvcc is left out (the CUDA twins of lab 05 would only skip)."""
    options = {"LAB_IMPL": impl, "PA_TEST_TIMEOUT": str(test_timeout(sanitize))}
    if sanitize:
        options.update(sanitizer_options(root))
    else:
        options["CMAKE_CXX_FLAGS_RELEASE"] = FAST_FLAGS
        if not cmake.gpu_present():
            options["PA_CUDA"] = "OFF"
    return build_dir(f"asan-{impl}" if sanitize else impl, root), options


def test_timeout(sanitize: bool = False) -> int:
    return TEST_TIMEOUT * (SANITIZER_SLOWDOWN if sanitize else 1)


def sanitizer_env() -> dict[str, str]:
    """What a test under the sanitizers runs with: a stack for every report, and an abort (not a
    silent carry-on) at the first one."""
    import os
    return dict(os.environ,
                ASAN_OPTIONS="abort_on_error=0:halt_on_error=1:detect_leaks=1:"
                             "print_summary=1:handle_abort=1",
                UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")

# ---- points and hints: the chapter's table ---------------------------------------------------


@dataclass
class Row:
    key: str          # "Suite.Test"
    points: int       # 0 for the rows of given checks (pts "—")
    pins: str         # what the test pins, as the chapter says it
    hint: str         # one sentence, Markdown/Doxygen as written
    section: str      # the anchor the hint points at, e.g. "lab_02_recurrence"


class TableError(ValueError):
    pass


def section_titles(readme: str) -> dict[str, str]:
    """Anchor -> heading text of every `## Heading {#anchor}` of a chapter."""
    return {m.group(2): m.group(1).strip()
            for m in re.finditer(r"^#+\s*(.*?)\s*\{#(\w+)\}\s*$", readme, re.M)}


def read_table(lab: Lab, root: Path = ROOT) -> dict[str, Row]:
    """The rows of lab's "What the tests prove" table (columns test | pts | what it pins | hint),
    by `Suite.Test`. Raises TableError naming the file and line of anything malformed."""
    path = lab.folder(root) / "README.md"
    lines = path.read_text(encoding="utf-8").splitlines()
    anchor = f"{{#lab_{lab.number}_tests}}"
    try:
        start = next(i for i, l in enumerate(lines) if l.startswith("## ") and anchor in l)
    except StopIteration:
        raise TableError(f"{path}: no '## ... {anchor}' section") from None
    rows, header_seen = {}, False
    for i in range(start + 1, len(lines)):
        line = lines[i]
        if line.startswith("## "):
            break
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        where = f"{path.relative_to(root)}:{i + 1}"
        if not header_seen:
            if [c.split(" ")[0].lower() for c in cells] != ["test", "pts", "what", "hint"]:
                raise TableError(f"{where}: the table's columns must be "
                                 "'test | pts | what it pins | hint'")
            header_seen = True
            continue
        if set("".join(cells)) <= set("-: "):
            continue  # the |---| line
        if len(cells) != 4:
            raise TableError(f"{where}: {len(cells)} cells, expected 4")
        names = re.findall(r"`([^`]+)`", cells[0])
        if len(names) != 1:
            raise TableError(f"{where}: the test cell must name one test as `Suite.Test`")
        key = names[0]
        if cells[1] in ("—", "-", ""):
            points = 0
        elif cells[1].isdigit() and int(cells[1]) > 0:
            points = int(cells[1])
        else:
            raise TableError(f"{where}: pts must be a positive whole number or '—', got {cells[1]!r}")
        m = re.search(r"→\s*\\ref\s+(\w+)\s*$", cells[3])
        if points and not m:
            raise TableError(f"{where}: the hint must end with '→ \\ref <section anchor>'")
        hint = cells[3][:m.start()].strip() if m else cells[3]
        if key in rows:
            raise TableError(f"{where}: {key} has two rows")
        rows[key] = Row(key, points, cells[2], hint, m.group(1) if m else "")
    if not header_seen:
        raise TableError(f"{path}: the {anchor} section has no table")
    return rows


def plain(text: str, titles: dict[str, str] | None = None) -> str:
    """Markdown/Doxygen text as terminal text: no backticks, \\ref as § title, no \\f$."""
    text = re.sub(r"\\ref\s+(\w+)", lambda m: "§ " + (titles or {}).get(m.group(1), m.group(1)),
                  text)
    return text.replace("`", "").replace("\\f$", "").replace("\\", "")


# ---- grading ---------------------------------------------------------------------------------

@dataclass
class Graded:
    lab: Lab
    key: str                # Suite.Test
    name: str               # the test's own name (ctest name without `labNN.`), unique
    status: str
    detail: str
    points: int             # earned
    max_points: int
    hint: str               # terminal text, with its section
    seconds: float = 0.0
    failures: list[testrun.Failure] = field(default_factory=list)   # each failed assertion


@dataclass
class LabGrade:
    lab: Lab
    built: bool
    build_error: str = ""
    tests: list[Graded] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)   # name -> reason (not graded)
    unlisted: list[str] = field(default_factory=list)       # graded tests with no table row
    unrun: list[str] = field(default_factory=list)          # table rows with no test
    sources: dict[str, str] = field(default_factory=dict)   # the sources graded, by hash
    table: dict[str, Row] = field(default_factory=dict)     # the chapter's rows

    @property
    def score(self) -> int:
        return sum(t.points for t in self.tests)

    @property
    def max_score(self) -> int:
        return sum(t.max_points for t in self.tests)


def hint_text(lab: Lab, row: Row | None, root: Path) -> str:
    if row is None or not row.hint:
        return ""
    readme = (lab.folder(root) / "README.md").read_text(encoding="utf-8")
    titles = section_titles(readme)
    return f"{plain(row.hint, titles)} (§ {titles.get(row.section, row.section)})"


class Progress:
    """One line per step of a grading run, with the time since it began: `[ 1:23] lab 02 ...`."""

    def __init__(self, quiet: bool = False):
        self.start = time.monotonic()
        self.quiet = quiet

    def __call__(self, text: str) -> None:
        if not self.quiet:
            seconds = int(time.monotonic() - self.start)
            print(f"{BuildTicker.clear()}[{seconds // 60:2d}:{seconds % 60:02d}] {text}", flush=True)


class BuildTicker:
    """On a terminal, "building… 37 s" on one line that counts up while a lab builds (the next
    line printed through Progress or clear() replaces it)."""
    active = False

    def __init__(self, prefix: str = ""):
        self.prefix = prefix

    def __call__(self, lab: Lab, seconds: float) -> None:
        sys.stdout.write(f"\r\033[K{self.prefix}lab {lab.number} building… {seconds:.0f} s")
        sys.stdout.flush()
        BuildTicker.active = True

    @staticmethod
    def clear() -> str:
        """What to print first to replace a ticking line ("" when none is showing)."""
        if not BuildTicker.active:
            return ""
        BuildTicker.active = False
        return "\r\033[K"


def grade(labs: list[Lab], build: Path, root: Path = ROOT, timeout: int = TEST_TIMEOUT,
          quiet: bool = False, progress: Progress | None = None,
          tick: Callable[[Lab, float], None] | None = None,
          env: dict[str, str] | None = None) -> list[LabGrade]:
    """Builds each lab's test target on its own in `build` (already configured) and runs its
    graded tests, one lab after the other (a line for each step unless `quiet`), and scores them
    from their chapters' tables. The binaries tested always match the sources as they were when
    their build ended (build.build_lab); `tick(lab, seconds)` is called while a lab builds."""
    say = progress or Progress(quiet)
    grades: list[LabGrade] = []
    for lab in labs:
        say(f"lab {lab.number} building   ({lab.title})")
        ok, output, sources = cmake.build_lab(
            build, lab, lab.target, root, say=say,
            tick=(lambda seconds, lab=lab: tick(lab, seconds)) if tick else None)
        error = "" if ok else (cmake.first_compiler_error(output, root) if sources else output)
        g = LabGrade(lab, ok, error, sources=sources)
        results = {}
        if ok:
            say(f"lab {lab.number} testing")
            results = testrun.ctest(build, f"^{lab.target}$", build / "grade-junit.xml", timeout,
                                    env=env)
        score(g, results, root)
        say(f"lab {lab.number} " + (f"done       {g.score} / {g.max_score} points" if ok else
                                    f"did not build: {g.build_error}"))
        grades.append(g)
    return grades


def score(g: LabGrade, results: dict[str, testrun.TestResult], root: Path = ROOT) -> None:
    """Fills in `g` from its lab's test results (none when it did not build) and the chapter's
    table: points, hints, skipped tests, and the tests the table and the binary disagree on."""
    lab = g.lab
    table = read_table(lab, root)
    g.table = table
    graded_rows = {k: r for k, r in table.items() if r.points}
    if not g.built:
        for key, row in graded_rows.items():
            g.tests.append(Graded(lab, key, key, "did not build", g.build_error, 0, row.points,
                                  hint_text(lab, row, root)))
        return
    mine = {n: r for n, r in results.items() if n.startswith(lab.target + ".")
            and not testrun.is_checks(r.key)}
    seen = set()
    for name, r in sorted(mine.items()):
        if r.status == "skipped":
            g.skipped[name[len(lab.target) + 1:]] = r.detail
            continue
        row = table.get(r.key)
        seen.add(r.key)
        if row is None:
            g.unlisted.append(r.key)
        max_points = row.points if row else 1
        g.tests.append(Graded(lab, r.key, name[len(lab.target) + 1:].split("  # ")[0],
                              r.status, r.detail,
                              max_points if r.status == "passed" else 0, max_points,
                              hint_text(lab, row, root), r.seconds,
                              testrun.failures(r.output) if r.status == "failed" else []))
    order = {key: i for i, key in enumerate(table)}  # the chapter's order, not the alphabet
    g.tests.sort(key=lambda t: (order.get(t.key, len(order)), t.name))
    skipped_keys = {testrun.test_key(n) for n in g.skipped}
    g.unrun = sorted(k for k in graded_rows if k not in seen and k not in skipped_keys)


# ---- the test to fix first -------------------------------------------------------------------

# What a failing test's result says, most telling first. A sanitizer's report and an emulator
# error name the line and the threads; two schedules of the same code that disagree are a race;
# NaN in the output and a wrong value come next (a NaN from a test whose hint is about NaN before
# the rest); a crash or a timeout says little; "not implemented" says only where the work is.
KINDS = ("sanitizer report", "emulator error", "race", "NaN", "wrong value", "crashed",
         "timed out", "not implemented", "did not build")
PLAIN_STATUSES = {"passed", "failed", "not implemented", "crashed", "timed out", "skipped",
                  "did not build"}


def failure_kind(status: str, detail: str) -> str:
    """Which of KINDS a test's (status, detail) is ("passed" and "skipped" are not failures)."""
    if status not in PLAIN_STATUSES:
        return "sanitizer report"   # testrun.sanitizer_report's statuses
    if status == "failed":
        if detail.startswith("simt"):
            return "emulator error"
        if re.search(r"first difference\b.*\bschedule\b", detail):
            return "race"
        if re.search(r"\b(holds|got) -?(nan|inf)\b", detail, re.I):
            return "NaN"
        return "wrong value"
    return status


def first_to_fix(tests: list, table: dict[str, Row]):
    """The failing test to show first (watch shows it; grade names it), from anything with .key,
    .status and .detail. First the failures that name their cause: a sanitizer's report, an
    emulator error, a race (in that order); then NaN in a test whose hint is about NaN; then every
    other NaN or wrong value, in the chapter table's order (the table lists the narrow tests, the
    first functions, before the tests that combine them, so the earliest failing row is the
    closest to the bug: a NaN further down is usually its consequence); then crashes, timeouts
    and "not implemented". None when every test passes."""
    order = {key: i for i, key in enumerate(table)}

    def rank(t):
        kind = failure_kind(t.status, t.detail)
        row = table.get(t.key)
        if kind == "NaN" and row is not None and "NaN" in row.hint:
            tier = 3
        elif kind in ("NaN", "wrong value"):
            tier = 4
        else:
            tier = KINDS.index(kind) + (0 if KINDS.index(kind) < 3 else 1)
        return (tier, order.get(t.key, len(order)), t.key)

    failing = [t for t in tests if t.status not in ("passed", "skipped")]
    return min(failing, key=rank) if failing else None


# ---- the reports -----------------------------------------------------------------------------

COLUMNS = ("points", "result", "test", "where or why")


def why(t: Graded) -> str:
    """The table's last column: where a test stopped, or why it did not pass."""
    if t.status == "passed":
        return ""
    if t.status == "not implemented":
        return f"reached {t.detail}()" if t.detail else ""
    if t.status == "crashed":
        return f"signal {t.detail}" if t.detail.startswith("SIG") else t.detail
    return t.detail


def exit_line(grades: list[LabGrade]) -> str:
    """The last line of a grading run: what its exit status will be, and why."""
    if complete(grades):
        return "Exit status 0: full marks."
    return ("Exit status 1: not every graded test passes yet. That is expected while you work, "
            "not an error; it is 0 at full marks.")


def complete(grades: list[LabGrade]) -> bool:
    return all(g.built and g.tests and g.score == g.max_score for g in grades)


def terminal_width() -> int:
    """The terminal's width (COLUMNS, else 100 when the output is not a terminal)."""
    return max(60, shutil.get_terminal_size((100, 24)).columns)


def wrapped(text: str, first: str, indent: int, width: int | None = None) -> str:
    """`first` followed by `text`, wrapped (never cut) at the terminal width, the lines after the
    first indented by `indent` spaces; a line of the text stays a line."""
    width = width or terminal_width()
    out, lead = [], first
    for line in text.splitlines() or [""]:
        out.append(textwrap.fill(line, width=max(width, len(lead) + 20), initial_indent=lead,
                                 subsequent_indent=" " * indent, break_long_words=False,
                                 break_on_hyphens=False) or lead.rstrip())
        lead = " " * indent
    return "\n".join(out)


def failure_lines(t: Graded, indent: int) -> list[str]:
    """Every failed assertion of a test in full: its message (the emulator's where-is-every-thread
    report included) and the configuration it failed in."""
    out = []
    for i, f in enumerate(t.failures, start=1):
        head = f"failure {i} of {len(t.failures)}" + (f" (in {'; '.join(f.trace)})" if f.trace
                                                        else "") + ":"
        out.append(wrapped(head, " " * indent, indent))
        out.append(wrapped(f.message, " " * (indent + 2), indent + 2))
    return out


def why_more(t: Graded, command: str) -> str:
    """A note after a failure's headline when its whole report is longer."""
    if not t.failures:
        return ""
    more = t.failures[0].more_lines
    extra = len(t.failures) - 1
    parts = []
    if more:
        parts.append(f"{more} more lines")
    if extra:
        parts.append(f"{extra} more failed assertion{'s' if extra > 1 else ''}")
    return f"({' and '.join(parts)}: {command})" if parts else ""


def print_table(grades: list[LabGrade], build: Path, verbose: bool = False) -> None:
    width = terminal_width()
    for g in grades:
        lab = g.lab
        print(f"Lab {lab.number} — {lab.title}: {g.score} / {g.max_score} points")
        if not g.built:
            print(wrapped(g.build_error, "  did not build: ", 4, width))
            print(f"  ({len(g.tests)} graded tests not run)\n")
            continue
        name_width = max([len(t.name) for t in g.tests] + [len(COLUMNS[2])])
        status_width = max([len(t.status) for t in g.tests] + [15])   # a sanitizer's is longer
        column = 2 + 6 + 2 + status_width + 2 + name_width + 2   # where "where or why" starts
        under = 2 + 6 + 2 + status_width + 2                      # where the test name starts
        if column + 30 <= width:
            print(f"  {COLUMNS[0]:>6}  {COLUMNS[1]:<{status_width}}  {COLUMNS[2]:<{name_width}}  "
                  f"{COLUMNS[3]}")
        else:   # a narrow terminal: the reasons go under the rows
            print(f"  {COLUMNS[0]:>6}  {COLUMNS[1]:<{status_width}}  {COLUMNS[2]}\n"
                  f"{'':{under}}{COLUMNS[3]}")
        from labkit import diagnosis
        first, diagnosed = diagnosis.first_message(g)
        for t in g.tests:
            pts = f"{t.points}/{t.max_points}"
            row = f"  {pts:>6}  {t.status:<{status_width}}  {t.name:<{name_width}}  "
            text = why(t)
            if not verbose:
                text = " ".join(x for x in (text, why_more(t, f"tools/lab grade {lab.number} "
                                                               "--verbose")) if x)
            if not text:
                print(row.rstrip())
            elif column + 30 <= width:
                print(wrapped(text, row, column, width))
            else:   # a narrow terminal: the reason goes under the row
                print(row.rstrip())
                print(wrapped(text, " " * under, under, width))
            if t.status not in ("passed", "not implemented", "did not build") and t.hint:
                print(wrapped(t.hint, f"{'':{under}}hint: ", under + 6, width))
            if verbose and t.failures:
                print("\n".join(failure_lines(t, under)))
        if first is not None and first.status != "not implemented":
            kind = failure_kind(first.status, first.detail)
            print(wrapped(f"{first.name} ({kind}; tools/lab watch {lab.number} shows it first)",
                          "  Start with: ", 14, width))
            for line in diagnosed:
                print(wrapped(line, " " * 14, 14, width))
        if g.skipped:
            reasons = "; ".join(sorted(set(g.skipped.values())))
            print(f"  ({len(g.skipped)} tests skipped and not graded: {reasons})")
        print()
    total = sum(g.score for g in grades)
    most = sum(g.max_score for g in grades)
    print(f"Total: {total} / {most} points")
    print(wrapped(f"ctest --test-dir {shown(build)} -R <test> --output-on-failure",
                  "Full output of one test: ", 2, width))
    if len(grades) > 1:
        print("Grade one lab: tools/lab grade NN")
    from labkit import hints
    unfinished = [g for g in grades if g.built and g.score < g.max_score
                  and any(t.status != "not implemented" and t.status != "passed" for t in g.tests)]
    if unfinished:
        print(wrapped(hints.usage_line(unfinished[0].lab), "", 0, width))
    print(wrapped(exit_line(grades), "", 0, width))


def gradescope(grades: list[LabGrade], seconds: float) -> dict:
    """Gradescope's results.json for these grades."""
    tests = []
    for g in grades:
        for i, t in enumerate(g.tests, start=1):
            lines = [t.status + (f": {t.detail}" if t.detail else "")]
            if t.status != "passed" and t.hint:
                lines.append(f"Hint: {t.hint}")
            if why_more(t, "below"):   # the whole report, when the headline leaves some out
                for n, f in enumerate(t.failures, start=1):
                    where = f" (in {'; '.join(f.trace)})" if f.trace else ""
                    lines.append(f"\nFailure {n} of {len(t.failures)}{where}:\n{f.message}")
            tests.append({
                "name": f"Lab {g.lab.number} — {t.name}",
                "number": f"{int(g.lab.number)}.{i}",
                "score": t.points,
                "max_score": t.max_points,
                "status": "passed" if t.status == "passed" else "failed",
                "output": "\n".join(lines),
                "visibility": "visible",
                "execution_time": round(t.seconds, 3),
                "tags": [f"lab{g.lab.number}", t.status],
            })
    summary = []
    for g in grades:
        line = f"Lab {g.lab.number} — {g.lab.title}: {g.score} / {g.max_score}"
        if not g.built:
            line += f" (did not build: {g.build_error})"
        if g.skipped:
            line += f" ({len(g.skipped)} GPU tests skipped: not graded here)"
        summary.append(line)
    return {
        "score": sum(g.score for g in grades),
        "max_score": sum(g.max_score for g in grades),
        "execution_time": round(seconds, 1),
        "output": "\n".join(summary),
        "visibility": "visible",
        "stdout_visibility": "visible",
        "tests": tests,
    }


def validate_gradescope(obj) -> list[str]:
    """What is wrong with `obj` as a Gradescope results.json (empty when nothing is)."""
    problems = []

    def need(where, d, key, types):
        if not isinstance(d, dict) or key not in d:
            problems.append(f"{where}: missing '{key}'")
        elif not isinstance(d[key], types) or isinstance(d[key], bool):
            problems.append(f"{where}.{key}: {type(d[key]).__name__}, expected "
                            f"{' or '.join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))}")

    number = (int, float)
    for key, types in (("score", number), ("max_score", number), ("execution_time", number),
                       ("output", str), ("visibility", str), ("tests", list)):
        need("results", obj, key, types)
    if problems:
        return problems
    names = set()
    for i, t in enumerate(obj["tests"]):
        where = f"tests[{i}]"
        for key, types in (("name", str), ("score", number), ("max_score", number),
                           ("status", str), ("output", str), ("visibility", str),
                           ("execution_time", number)):
            need(where, t, key, types)
        if not isinstance(t, dict):
            continue
        if t.get("status") not in ("passed", "failed"):
            problems.append(f"{where}.status: {t.get('status')!r}, expected 'passed' or 'failed'")
        if t.get("visibility") not in ("visible", "hidden", "after_due_date", "after_published"):
            problems.append(f"{where}.visibility: {t.get('visibility')!r}")
        if isinstance(t.get("score"), number) and isinstance(t.get("max_score"), number):
            if not 0 <= t["score"] <= t["max_score"]:
                problems.append(f"{where}: score {t['score']} outside 0..{t['max_score']}")
            if (t["score"] == t["max_score"]) != (t.get("status") == "passed"):
                problems.append(f"{where}: status {t.get('status')} with score "
                                f"{t['score']}/{t['max_score']}")
        if t.get("name") in names:
            problems.append(f"{where}: name {t.get('name')!r} is not unique")
        names.add(t.get("name"))
    if not problems:
        if abs(sum(t["score"] for t in obj["tests"]) - obj["score"]) > 1e-9:
            problems.append("results.score is not the sum of the tests' scores")
        if abs(sum(t["max_score"] for t in obj["tests"]) - obj["max_score"]) > 1e-9:
            problems.append("results.max_score is not the sum of the tests' max_score")
    return problems


def junit(grades: list[LabGrade]) -> ET.ElementTree:
    """JUnit XML: one <testsuite> per lab, one <testcase> per graded test."""
    suites = ET.Element("testsuites", name="tools/lab grade")
    for g in grades:
        failures = sum(t.status in ("failed", "not implemented") for t in g.tests)
        errors = sum(t.status in ("crashed", "timed out", "did not build") for t in g.tests)
        suite = ET.SubElement(suites, "testsuite", name=f"lab{g.lab.number}",
                              tests=str(len(g.tests) + len(g.skipped)), failures=str(failures),
                              errors=str(errors), skipped=str(len(g.skipped)),
                              time=f"{sum(t.seconds for t in g.tests):.3f}")
        ET.SubElement(ET.SubElement(suite, "properties"), "property", name="score",
                      value=f"{g.score}/{g.max_score}")
        for t in g.tests:
            suite_name, _, test_name = t.name.partition(".")
            case = ET.SubElement(suite, "testcase", classname=f"lab{g.lab.number}.{suite_name}",
                                 name=test_name, time=f"{t.seconds:.3f}")
            message = t.status + (f": {t.detail}" if t.detail else "")
            text = f"Hint: {t.hint}" if t.hint else None
            if t.status in ("failed", "not implemented"):
                ET.SubElement(case, "failure", message=message, type=t.status).text = text
            elif t.status != "passed":
                ET.SubElement(case, "error", message=message, type=t.status).text = text
        for name, reason in g.skipped.items():
            suite_name, _, test_name = name.partition(".")
            case = ET.SubElement(suite, "testcase", classname=f"lab{g.lab.number}.{suite_name}",
                                 name=test_name, time="0")
            ET.SubElement(case, "skipped", message=reason)
    ET.indent(suites)
    return ET.ElementTree(suites)
