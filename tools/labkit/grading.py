"""The grade: each graded test's points and hint (from its chapter's "What the tests prove"
table), grading a tree's labs one build at a time, the score, and which failing test to fix first.
How a grade is shown or written (terminal, Gradescope, JUnit) is reports.py's job.
Python 3 standard library only."""
from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from labkit import build as cmake
from labkit import testrun
from labkit.labs import Lab
from labkit.paths import ROOT, build_dir

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


# A row of a chapter's classic-stumbles table: `\\anchor name **Title**` in its first cell.
STUMBLE_ROW = re.compile(r"\\anchor\s+(\w+)\s+\*\*(.*?)\*\*")


def section_titles(readme: str) -> dict[str, str]:
    """Anchor -> heading text of every `## Heading {#anchor}` of a chapter, and -> the bold
    title of every table row that starts `\\anchor name **Title**` (the classic stumbles)."""
    titles = {m.group(1): m.group(2) for m in STUMBLE_ROW.finditer(readme)}
    titles.update((m.group(2), m.group(1).strip())
                  for m in re.finditer(r"^#+\s*(.*?)\s*\{#(\w+)\}\s*$", readme, re.M))
    return titles


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


# A formula's TeX as terminal text (plain): the few commands the chapters' tables use.
TEX_SYMBOLS = {"\\sum": "Σ", "\\cdot": "·", "\\times": "×", "\\le": "≤", "\\ge": "≥",
               "\\infty": "∞", "\\lambda": "λ", "\\beta": "β", "\\rho": "ρ", "\\tau": "τ",
               "\\lfloor": "⌊", "\\rfloor": "⌋", "\\lceil": "⌈", "\\rceil": "⌉",
               "\\,": "", "\\;": " ", "\\!": "", "\\_": "_", "\\bmod": "mod"}


def _formula_text(tex: str) -> str:
    """e^{m_p - M} -> e^(m_p - M); \\mathrm{denom}_p -> denom_p; \\sum_p -> Σ_p."""
    tex = re.sub(r"\\(?:mathrm|mathtt|text|mathit|operatorname)\{([^{}]*)\}", r"\1", tex)
    for command, symbol in TEX_SYMBOLS.items():  # \le, not the start of \left
        tail = r"(?![A-Za-z])" if command[-1].isalpha() else ""
        tex = re.sub(re.escape(command) + tail, symbol, tex)
    while True:  # innermost groups first: e^{s_t - s_{t'}}
        done = re.sub(r"_\{([^{}]*)\}", r"_\1", tex)
        done = re.sub(r"\^\{([^{}]*)\}", lambda m: "^(" + m.group(1).strip() + ")", done)
        if done == tex:
            break
        tex = done
    return tex.replace("{", "").replace("}", "")


def plain(text: str, titles: dict[str, str] | None = None) -> str:
    """Markdown/Doxygen text as terminal text: no backticks, \\ref as § title, each formula's
    TeX as plain symbols (e^{m_p - M} as e^(m_p - M))."""
    text = re.sub(r"\\ref\s+(\w+)", lambda m: "§ " + (titles or {}).get(m.group(1), m.group(1)),
                  text)
    text = re.sub(r"\\f\$(.*?)\\f\$", lambda m: _formula_text(m.group(1)), text)
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


def stumble_anchors(readme: str) -> set[str]:
    """The anchors of a chapter's classic-stumbles rows (`\\anchor name **Title**` in a cell)."""
    return {m.group(1) for m in STUMBLE_ROW.finditer(readme)}


def where_to_read(readme: str, anchor: str) -> str:
    """A hint's pointer in the student's terms: "§ Title" for a heading of the chapter, and for a
    row of the notes' stumbles table, which has no heading to look for, "the stumble “Title” in
    the notes" (the book's test table says the same)."""
    title = section_titles(readme).get(anchor, anchor)
    return (f"the stumble “{title}” in the notes" if anchor in stumble_anchors(readme)
            else f"§ {title}")


def hint_text(lab: Lab, row: Row | None, root: Path) -> str:
    if row is None or not row.hint:
        return ""
    readme = (lab.folder(root) / "README.md").read_text(encoding="utf-8")
    titles = section_titles(readme)
    return f"{plain(row.hint, titles)} ({where_to_read(readme, row.section)})"


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
    line printed through Progress or clear() replaces it). Elsewhere (a log, CI, a pipe) a line
    "lab 05 still building: 1:30 so far" after LOG_FIRST seconds and every LOG_EVERY after, so
    that a long build (the first --asan one takes minutes) never looks stuck."""
    active = False
    LOG_FIRST = 10   # a build shorter than this needs no word
    LOG_EVERY = 30

    def __init__(self, prefix: str = "", tty: bool = True):
        self.prefix = prefix
        self.tty = tty
        self.logged: dict[str, int] = {}

    def __call__(self, lab: Lab, seconds: float) -> None:
        if not self.tty:
            due = self.LOG_FIRST + self.LOG_EVERY * self.logged.get(lab.number, 0)
            if seconds >= due:
                self.logged[lab.number] = self.logged.get(lab.number, 0) + 1
                s = int(seconds)
                print(f"{self.prefix}lab {lab.number} still building: {s // 60}:{s % 60:02d} so far",
                      flush=True)
            return
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
        hint = hint_text(lab, row, root)
        if r.status == "failed" and checker_finding(r.detail):
            hint = checker_hint(lab, r.detail, root) or hint
        g.tests.append(Graded(lab, r.key, name[len(lab.target) + 1:].split("  # ")[0],
                              r.status, r.detail,
                              max_points if r.status == "passed" else 0, max_points,
                              hint, r.seconds,
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
KINDS = ("race or out of bounds", "sanitizer report", "emulator error", "race", "NaN", "wrong value", "crashed",
         "timed out", "not implemented", "did not build")
PLAIN_STATUSES = {"passed", "failed", "not implemented", "crashed", "timed out", "skipped",
                  "did not build"}


def failure_kind(status: str, detail: str) -> str:
    """Which of KINDS a test's (status, detail) is ("passed" and "skipped" are not failures)."""
    if status not in PLAIN_STATUSES:
        return "sanitizer report"   # testrun.sanitizer_report's statuses
    if status == "failed":
        if checker_finding(detail):
            return "race or out of bounds"
        if detail.startswith("simt"):
            return "emulator error"
        if re.search(r"first difference\b.*\bschedule\b", detail):
            return "race"
        if re.search(r"\b(holds|got) -?(nan|inf)\b", detail, re.I):
            return "NaN"
        return "wrong value"
    return status


def first_to_fix(tests: list, table: dict[str, Row], kind_of: Callable | None = None):
    """The failing test to show first (watch shows it; grade names it), from anything with .key,
    .status and .detail (or with .key and whatever `kind_of(test)` reads its kind from). First the failures that name their cause: a sanitizer's report, an
    emulator error, a race (in that order); then NaN in a test whose hint is about NaN; then every
    other NaN or wrong value, in the chapter table's order (the table lists the narrow tests, the
    first functions, before the tests that combine them, so the earliest failing row is the
    closest to the bug: a NaN further down is usually its consequence); then crashes, timeouts
    and "not implemented". None when every test passes."""
    order = {key: i for i, key in enumerate(table)}

    kind_of = kind_of or (lambda t: failure_kind(t.status, t.detail))

    def rank(t):
        kind = kind_of(t)
        row = table.get(t.key)
        if kind == "NaN" and row is not None and "NaN" in row.hint:
            tier = 4
        elif kind in ("NaN", "wrong value"):
            tier = 5
        else:
            tier = KINDS.index(kind) + (0 if KINDS.index(kind) < 4 else 1)
        return (tier, order.get(t.key, len(order)), t.key)

    failing = [t for t in tests if kind_of(t) not in ("passed", "skipped")]
    return min(failing, key=rank) if failing else None


# ---- the emulator's memory checker ---------------------------------------------------------------

# "simt: race in <kernel>, ..." / "simt: out of bounds in <kernel>, ...": the emulator watched the
# kernel's loads and stores (common/simt/README.md, "The memory checker").
CHECKER_FINDING = re.compile(r"\bsimt: (race|out of bounds) in ")
# A step of the student's file: "// TODO 3. For each tile ...", "// TODO. Goal: ..." (a function with
# one step) (starters) or "// ---- Step 3a: ..."
STEP = re.compile(r"^\s*//\s*(TODO(?: \d+[a-z]?)?\.|-{4} Step [^:]*:)\s*(.*?)[\s-]*$")
CHECKER_NOTE = ("A kernel with a race or an out-of-bounds access cannot have full marks, even where "
                "its answers come out right: on a GPU it fails some runs and not others.")


def checker_finding(detail: str) -> bool:
    """Whether a failure is the emulator's memory checker reporting a race or an access outside a
    buffer."""
    return bool(CHECKER_FINDING.search(detail or ""))


def checker_hint(lab: Lab, detail: str, root: Path = ROOT) -> str:
    """For a memory-checker finding: the step of the student's file that owns the line the report
    is about (for a race, its write inside the kernel (diagnosis.report_line); else the first of the
    lab's lines it names) ("starter.cpp:216 is in TODO 3: For each tile ..."), so the hint
    points where the bug is rather than at what the failing test was about. "" when the report
    names no line of the lab's own files."""
    for name, line in re.findall(r"\b([\w.-]+\.(?:cpp|cuh|hpp|h)):(\d+)", detail):
        for folder in (lab.folder(root), lab.folder(root) / "given", lab.solution_folder(root)):
            path = folder / name
            if not path.is_file():
                continue
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
            # A race names two accesses: the line the diagnosis reads (labkit/diagnosis.py).
            from labkit import diagnosis
            line = str(diagnosis.report_line(detail, name, lines) or line)
            for text in reversed(lines[:int(line)]):
                m = STEP.match(text)
                if m:
                    readme = (lab.folder(root) / "README.md").read_text(encoding="utf-8")
                    section = section_titles(readme).get(f"lab_{lab.number}_implement",
                                                         "What to implement")
                    # An overrun is one access whose index is wrong, often from a value an
                    # earlier step computed; a race is two accesses that no barrier orders.
                    finding = CHECKER_FINDING.search(detail)
                    overrun = bool(finding) and finding.group(1) == "out of bounds"
                    question = ("which of the indices in this access runs past the buffer, and "
                                "which step computed it?" if overrun else
                                "which barrier orders the two accesses the report names?")
                    return (f"{name}:{line} lies in {m.group(1).rstrip('.:')} ({m.group(2)}): "
                            f"{question} (§ {section})")
            return ""
    return ""


def complete(grades: list[LabGrade]) -> bool:
    """Whether every lab built and every graded test of it passed (grade's exit status 0)."""
    return all(g.built and g.tests and g.score == g.max_score for g in grades)
