"""The mutant catalogue: `solutions/NN-name/mutants/<stem>.patch`, one classic bug each, stored as
what the bug changes in the lab's solution.cpp, never as a copy of it. Python 3 standard library.

A mutant file is a header of fields, a blank line, and a unified diff against solution.cpp:

    Mutant: <the bug as the student would make it, one line>
    Bug: <what goes wrong; continuation lines are indented>
    Chapter: \\ref <section anchor of the lab's README>
    Caught by: Suite.Test, Suite.Test2

    --- solution.cpp
    +++ solution.cpp
    @@ -120,7 +120,7 @@
    ...

tools/lab applies each one to the current solution (labkit/patches.py) and writes the result to
build/mutants/sources/<NN-name>/<stem>.cpp, which CMake (PA_MUTANT_SOURCES) builds into
labNN_mutant_<stem>. A mutant whose diff no longer fits the solution is stale, and fails.

`tools/lab check --record` also writes what each mutant's graded tests did to RECORD
(tools/tests/mutants/first_shown.json), a JSON object with one line per mutant:

    "NN-name/stem": {"failing": {"Suite.Test": "<kind>", ...}, "at": "<step>"},

every graded test that fails on the mutant (by its Suite.Test key, parameters folded in, its most
telling kind kept) with its kind from grading.KINDS ("wrong value", "NaN", "crashed", ...), and
"at" (only when the first failure shown is a report that names a line of the mutant's source):
the hint step that owns that line (labkit/diagnosis.py, located_step). The
unit tests read it to check the first-to-fix rule without building the mutants, and a mutant's
failing set is what a diagnosis of the bug from its symptoms starts from."""
from __future__ import annotations

import json
import os
import re
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from labkit import build as cmake
from labkit import grading, patches, testrun
from labkit.text import terminal_width
from labkit.labs import Lab
from labkit.paths import ROOT, TOOLS, build_dir, shown

FIELDS = ("Mutant", "Bug", "Chapter", "Caught by")
TARGET = "solution.cpp"      # the file every mutant patches, relative to solutions/NN-name/
SUFFIX = ".patch"
STEM = re.compile(r"^[a-z0-9_]+$")
MUTANT_TEST_TIMEOUT = grading.TEST_TIMEOUT   # a mutant's test running longer counts as timed out
RECORD = TOOLS / "tests" / "mutants" / "first_shown.json"   # see this file's docstring


@dataclass
class Mutant:
    lab: Lab
    path: Path
    bug: str = ""            # Mutant: the mistake, in the student's terms
    effect: str = ""         # Bug: what goes wrong
    chapter: str = ""        # the anchor of Chapter: \ref <anchor>
    caught_by: list[str] = field(default_factory=list)
    source: str | None = None     # solution.cpp with the diff applied; None when it cannot be
    stale: bool = False
    problems: list[str] = field(default_factory=list)
    results: dict[str, testrun.TestResult] = field(default_factory=dict)  # by Suite.Test[/param]
    shown_first: testrun.TestResult | None = None   # the test `watch` would show for it
                                                    # (diagnosis.check_shown_first fills it in)

    @property
    def stem(self) -> str:
        return self.path.name[:-len(SUFFIX)] if self.path.name.endswith(SUFFIX) else self.path.stem

    @property
    def killers(self) -> list[str]:
        """The graded tests that fail on this mutant by an assertion (not a crash or timeout)."""
        return sorted(n for n, r in self.results.items() if r.status == "failed")

    @property
    def killed(self) -> bool:
        return bool(self.killers) and not self.problems


# ---- the file format ---------------------------------------------------------------------------

def split(text: str) -> tuple[dict[str, str], list[str], list[str]]:
    """(fields, diff lines, problems) of a mutant file: the header up to the first blank line,
    the unified diff after it. A field's continuation lines join it with one space."""
    lines = text.splitlines()
    blank = next((i for i, l in enumerate(lines) if not l.strip()), len(lines))
    fields: dict[str, str] = {}
    problems: list[str] = []
    last = None
    for number, line in enumerate(lines[:blank], start=1):
        m = re.match(r"^(Mutant|Bug|Chapter|Caught by):\s*(.*)$", line)
        if m:
            last = m.group(1)
            if last in fields:
                problems.append(f"line {number}: a second '{last}:' field")
            fields[last] = m.group(2).strip()
        elif last and line[:1].isspace():
            fields[last] = (fields[last] + " " + line.strip()).strip()
        else:
            problems.append(f"line {number}: the header holds 'Field: value' lines "
                            f"({', '.join(FIELDS)}) and indented continuations, up to the first "
                            f"blank line; got {line.strip()[:60]!r}")
            break
    for name in FIELDS:
        if not fields.get(name):
            problems.append(f"the header has no '{name}:' field")
    return fields, lines[blank + 1:], problems


def render(fields: dict[str, str], diff_lines: list[str], width: int = 100) -> str:
    """A mutant file: the fields (a long Bug: wrapped onto indented lines; Caught by: stays one
    line, to grep), a blank line, the diff."""
    out = []
    for name in FIELDS:
        value = fields.get(name, "")
        if name == "Bug":
            out += textwrap.wrap(value, width=width, initial_indent=f"{name}: ",
                                 subsequent_indent="  ", break_long_words=False) or [f"{name}:"]
        else:
            out.append(f"{name}: {value}")
    return "\n".join(out) + "\n\n" + "\n".join(diff_lines) + "\n"


def solution_path(lab: Lab, root: Path = ROOT) -> Path:
    return lab.solution_folder(root) / TARGET


def read_mutant(lab: Lab, path: Path, root: Path = ROOT) -> Mutant:
    """Parses a mutant file and applies it to the lab's current solution.cpp; a mutant that does
    not apply is stale (its problems say where)."""
    mutant = Mutant(lab, path)
    where = shown(path, root)
    fields, diff_lines, problems = split(path.read_text(encoding="utf-8"))
    mutant.problems += problems
    mutant.bug = fields.get("Mutant", "")
    mutant.effect = fields.get("Bug", "")
    m = re.search(r"\\ref\s+(\w+)", fields.get("Chapter", ""))
    mutant.chapter = m.group(1) if m else fields.get("Chapter", "")
    mutant.caught_by = [t.strip() for t in fields.get("Caught by", "").split(",") if t.strip()]
    if not STEM.match(mutant.stem):
        mutant.problems.append(f"the name {path.name!r} is not <lowercase_words>{SUFFIX}")
    readme = (lab.folder(root) / "README.md").read_text(encoding="utf-8")
    if mutant.chapter and mutant.chapter not in grading.section_titles(readme):
        mutant.problems.append(f"Chapter: {mutant.chapter} is not a section of the chapter")
    try:
        diff = patches.parse(diff_lines, where)
        for name in (diff.old_file, diff.new_file):
            if name != TARGET:
                raise patches.PatchError(f"{where}: the diff names {name!r}; a mutant patches "
                                         f"{TARGET} (relative to solutions/{lab.room}/)")
        mutant.source = patches.apply(diff, solution_path(lab, root).read_text(encoding="utf-8"),
                                      where)
    except patches.PatchError as e:
        mutant.stale = isinstance(e, patches.StalePatch)
        mutant.problems.append(("stale: " if mutant.stale else "") + str(e))
    return mutant


def catalogue(picked: list[Lab], root: Path = ROOT) -> list[Mutant]:
    found = []
    for lab in picked:
        for path in sorted((lab.solution_folder(root) / "mutants").glob("*" + SUFFIX)):
            found.append(read_mutant(lab, path, root))
    return found


# ---- building and running them -----------------------------------------------------------------

def write_sources(mutants: list[Mutant], sources: Path) -> None:
    """Writes each applicable mutant's source to sources/<NN-name>/<stem>.cpp (only when its bytes
    change, so ninja rebuilds only what changed) and removes the sources of the picked labs that
    are gone from the catalogue or stale."""
    for lab in {m.lab for m in mutants}:
        folder = sources / lab.room
        folder.mkdir(parents=True, exist_ok=True)
        wanted = {m.stem + ".cpp": m.source for m in mutants if m.lab == lab and m.source}
        for old in folder.glob("*.cpp"):
            if old.name not in wanted:
                old.unlink()
        for name, text in wanted.items():
            path = folder / name
            data = text.encode("utf-8")
            if not path.exists() or path.read_bytes() != data:
                path.write_bytes(data)


def configure(mutants: list[Mutant], root: Path = ROOT) -> Path:
    """Writes the mutants' sources and configures the mutants' build folder; returns it."""
    build = build_dir("mutants", root)
    sources = build / "sources"
    write_sources(mutants, sources)
    # Built like grade builds a student's code (-O1): a mutant is a student's bug, and the CUDA
    # labs' mutants each recompile every kernel instantiation.
    cmake.configure(build, {"LAB_IMPL": "solution", "PA_MUTANTS": "ON",
                              "PA_MUTANT_SOURCES": str(sources), "PA_CUDA": "OFF",
                              "PA_BENCHMARKS": "OFF",
                              "CMAKE_CXX_FLAGS_RELEASE": grading.FAST_FLAGS}, root)
    return build


def run(mutants: list[Mutant], build: Path) -> None:
    """Builds every applicable mutant's test executable in `build` and runs each graded test of it
    in its own process; fills in each mutant's results and problems."""
    live = [m for m in mutants if m.source is not None]
    for lab in sorted({m.lab for m in live}, key=lambda lab: lab.number):
        ok, output = cmake.build_target(build, f"{lab.target}_mutants")
        if not ok:
            # Build them one by one, so one that does not compile is named.
            for m in (m for m in live if m.lab == lab):
                ok, output = cmake.build_target(build, f"{lab.target}_mutant_{m.stem}",
                                                  quiet=True)
                if not ok:
                    m.problems.append("does not compile: " + cmake.first_compiler_error(output))
    jobs = []
    for m in live:
        exe = build / f"{m.lab.target}_mutant_{m.stem}"
        if not exe.exists() or any(p.startswith("does not compile") for p in m.problems):
            continue
        for name in testrun.list_gtests(exe):
            if not testrun.is_checks(testrun.test_key(name)):
                jobs.append((m, exe, name))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        outcomes = pool.map(lambda job: testrun.run_gtest_one(job[1], job[2], MUTANT_TEST_TIMEOUT),
                            jobs)
        for (m, _, name), result in zip(jobs, outcomes):
            m.results[name] = result
    for m in live:
        if not m.results:
            continue
        failing_keys = {testrun.test_key(n) for n in m.killers}
        known_keys = {testrun.test_key(n) for n in m.results}
        for key in m.caught_by:
            if key not in known_keys:
                m.problems.append(f"Caught by: {key} is not a graded test of lab {m.lab.number}")
            elif key not in failing_keys:
                statuses = {r.status for n, r in m.results.items() if testrun.test_key(n) == key}
                m.problems.append(f"Caught by: {key} does not fail by an assertion "
                                  f"({', '.join(sorted(statuses))})")
        if not m.killers:
            crashed = [n for n, r in m.results.items() if r.status in ("crashed", "timed out")]
            m.problems.append("survives every algorithm test" +
                              (f" (only crashes/timeouts: {', '.join(crashed)})" if crashed else ""))


def problems(found: list[Mutant]) -> list[str]:
    """One line per problem of each mutant, naming it as `mutant NN/stem`."""
    return [f"mutant {m.lab.number}/{m.stem}: {p}" for m in found for p in m.problems]


# ---- the record: each mutant's failing tests -------------------------------------------------

def failing_kinds(m: Mutant) -> dict[str, str]:
    """Suite.Test -> failure kind of every graded test that fails on `m`; a test that fails under
    several parameters keeps its most telling kind (the first in grading.KINDS), which is the one
    first_to_fix ranks it by."""
    kinds: dict[str, str] = {}
    for name, r in m.results.items():
        if r.status in ("passed", "skipped"):
            continue
        key, kind = testrun.test_key(name), grading.failure_kind(r.status, r.detail)
        if key not in kinds or grading.KINDS.index(kind) < grading.KINDS.index(kinds[key]):
            kinds[key] = kind
    return dict(sorted(kinds.items()))


def record_entry(m: Mutant) -> dict:
    """A ran mutant's line of the record: its failing tests and, when the first failure shown is
    a report that names a line of its source (a race, an access out of bounds, a sanitizer's
    report), the step that owns that line ("at"), which is what the diagnosis names then."""
    from labkit import diagnosis
    entry: dict = {"failing": failing_kinds(m)}
    at = diagnosis.located_step(m.lab, list(m.results.values()), m.source or "", m.stem + ".cpp")
    if at:
        entry["at"] = at
    return entry


def write_record(found: list[Mutant], path: Path = RECORD) -> int:
    """Writes the record (the format: this file's docstring) of every mutant in `found` that ran,
    keeping the entries of the labs `found` has none of; returns how many it holds."""
    rooms = {m.lab.room for m in found}
    kept = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    entries = {key: entry for key, entry in kept.items() if key.split("/")[0] not in rooms}
    entries.update({f"{m.lab.room}/{m.stem}": record_entry(m) for m in found if m.results})
    lines = [f"{json.dumps(key)}: {json.dumps(entry, ensure_ascii=False)}"
             for key, entry in sorted(entries.items())]
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")
    return len(lines)


def read_record(path: Path = RECORD) -> dict[str, dict[str, str]]:
    """NN-name/stem -> {Suite.Test: kind} of each recorded mutant."""
    return {key: entry["failing"] for key, entry in json.loads(path.read_text()).items()}


def print_report(mutants: list[Mutant]) -> None:
    lab = None
    for m in mutants:
        if m.lab != lab:
            lab = m.lab
            print(f"\nLab {lab.number} — {lab.title}: mutants")
        graded = sum(r.status != "skipped" for r in m.results.values())
        verdict = ("STALE   " if m.stale else "killed  " if m.killed
                   else "SURVIVES" if m.source is not None and not m.killers else "PROBLEM ")
        names = [testrun.test_key(n) for n in m.killers]
        shown = ", ".join(dict.fromkeys(names))
        counts = f"{len(m.killers):>2}/{graded} tests" if m.source is not None else "  not built"
        print(f"  {verdict} {m.stem:<32} {counts}  {m.bug}")
        if shown:
            print(textwrap.fill(shown, width=terminal_width(), break_long_words=False,
                                initial_indent=f"{'':14}killed by: ",
                                subsequent_indent=" " * 25))
        if m.shown_first is not None:
            kind = grading.failure_kind(m.shown_first.status, m.shown_first.detail)
            print(f"{'':14}shown first: {m.shown_first.key} ({kind})")
        for p in m.problems:
            print(f"{'':14}! {p}")


# ---- writing a new one: --new and --save -------------------------------------------------------

def scratch_path(lab: Lab, stem: str, root: Path = ROOT) -> Path:
    return build_dir("mutants", root) / "edit" / lab.room / f"{stem}.cpp"


def patch_path(lab: Lab, stem: str, root: Path = ROOT) -> Path:
    return lab.solution_folder(root) / "mutants" / f"{stem}{SUFFIX}"


def new(lab: Lab, stem: str, root: Path = ROOT) -> tuple[Path, list[str]]:
    """Writes the scratch file for mutant `stem` of `lab`: its four fields as `// Field:` lines, a
    blank line, then the code: solution.cpp, or the mutant applied to it when it exists. A stale
    mutant keeps its fields over the plain solution. Returns (the scratch file, why the existing
    mutant did not apply, if it did not)."""
    if not STEM.match(stem):
        raise ValueError(f"the mutant's name {stem!r} must be lowercase words joined by '_'")
    body = solution_path(lab, root).read_text(encoding="utf-8")
    fields = {name: "" for name in FIELDS}
    fields["Chapter"] = "\\ref "
    stale: list[str] = []
    existing = patch_path(lab, stem, root)
    if existing.exists():
        fields, _, _ = split(existing.read_text(encoding="utf-8"))
        m = read_mutant(lab, existing, root)
        if m.source is None:
            stale = m.problems
        else:
            body = m.source
    header = "".join(f"// {name}: {fields.get(name, '')}\n" for name in FIELDS)
    scratch = scratch_path(lab, stem, root)
    scratch.parent.mkdir(parents=True, exist_ok=True)
    scratch.write_text(header + "\n" + body, encoding="utf-8")
    return scratch, stale


def save(lab: Lab, stem: str, root: Path = ROOT) -> tuple[Path, list[str]]:
    """Reads the scratch file of mutant `stem`, writes solutions/NN-name/mutants/<stem>.patch (its
    fields and the diff of its code against solution.cpp) and checks it by reading it back.
    Returns (the patch's path, its problems); nothing is written when the scratch is unusable."""
    scratch = scratch_path(lab, stem, root)
    if not scratch.exists():
        return patch_path(lab, stem, root), [f"{scratch} does not exist: start with "
                                             f"tools/lab mutants --new {lab.number} {stem}"]
    text = scratch.read_text(encoding="utf-8")
    head, _, body = text.partition("\n\n")
    header = []
    for line in head.splitlines():
        if not line.startswith("//"):
            return patch_path(lab, stem, root), [
                f"{scratch}: the header is the '// Field: value' lines up to the first blank line"]
        text = line[2:].strip()
        header.append(text if re.match(r"^(Mutant|Bug|Chapter|Caught by):", text) else "  " + text)
    fields, _, problems = split("\n".join(header) + "\n\n")
    if problems:
        return patch_path(lab, stem, root), [f"{scratch}: {p}" for p in problems]
    solution = solution_path(lab, root).read_text(encoding="utf-8")
    diff = patches.make(solution, body, TARGET)
    if not diff:
        return patch_path(lab, stem, root), [f"{scratch}: the code is solution.cpp unchanged"]
    out = patch_path(lab, stem, root)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(fields, diff), encoding="utf-8")
    check = read_mutant(lab, out, root)
    if check.source is not None and check.source.splitlines() != body.splitlines():
        check.problems.append("applying the written patch does not give the scratch file's code")
    return out, check.problems
