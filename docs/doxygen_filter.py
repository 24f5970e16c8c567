#!/usr/bin/env python3
"""Doxygen input filter for the course book (FILTER_PATTERNS): `doxygen_filter.py FILE`.

Prints FILE as Doxygen should parse it, with every line kept in place so warnings name the
right line:
- C++ headers: snippet markers (a line that is only `/// [name]`) become empty lines. They
  delimit the code the book shows with \\snippet; read as documentation they would prefix the
  next function's contract with "[name]". \\snippet reads the unfiltered file.
- Markdown pages: each chapter's "What the tests prove" table (columns test | pts | what it pins
  | hint, the form tools/lab grade reads) becomes an HTML table of three columns, test | pts |
  what it pins, with each hint folded (<details>, "Hint") under what its row pins. Its first row
  gives the totals (graded tests, points) and names the suite once, so a row shows only the
  test's own name; a table of several suites gets a row heading each suite, and the rows that
  are not graded a heading of their own under which they keep their full names.
  docs/tidy_html.py then lets the short names break between their words. (Four columns of long
  `Suite.Test` names and long cells read as a wall of text.) A page without a table of contents
  gets `\\tableofcontents` appended at the end, so every chapter has the interactive contents in
  its margin.
- A chapter (labs/NN-*/README.md) reads as four pages: the lesson, `lab_NN` (At a glance, Why
  this lab exists, Background), the bench, `lab_NN_bench` (the lab's files, how to run them, the
  TODO steps and the test table), the notes, `lab_NN_review` (Notes, Check yourself, Going
  further, References), and the measurements, `lab_NN_measurements` (Measured), so no page is a
  16,000 to 30,000 px scroll and the reference material sits neither inside the lesson nor
  inside the work. The README stays one file (the grader, `tools/lab hint` and the tests read it
  whole); the cuts are made here, at its `## Files {#lab_NN_files}`, `## Notes {#lab_NN_notes}`
  and `## Measured {#lab_NN_measured}` headings (split_chapter). Every section keeps
  its id, so a \\ref or a hint's § link to it still resolves, on whichever page it now is.
- The bench page opens with a "Your job" box (your_job), made from what the chapter already
  holds, so it cannot go stale: the file its Files table calls "your file", the steps of the
  lab's hints.json with their § links, `tools/lab grade NN` with the test table's totals,
  where the hints are, and a link to the notes page's table of classic stumbles. On the bench page a \\snippet of more than 30 lines is folded behind a
  summary line that names its file, region, length and TODOs (fold_listings); the lab's API,
  the region `api`, folds only past 60 lines, since the student reads it first.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

MARKER = re.compile(r"[ \t]*//[/!][ \t]*\[([A-Za-z0-9_.-]+)\][ \t]*\r?\n?")
TESTS_HEADER = re.compile(r"\|\s*test\s*\|\s*pts\s*\|\s*what it pins\s*\|\s*hint\s*\|\s*")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


TESTS_COLUMNS = ('<tr><th class="book-test-name">test</th><th class="book-test-pts">pts</th>'
                 '<th>what it pins</th></tr>')
# The one name a test cell holds, `Suite.Test` (tools/labkit/grading.py reads it the same way).
TEST_NAME = re.compile(r"`(\w+)\.([^`]+)`")
# The end of every graded row's hint (grading.py requires it): the section it points to.
HINT_SECTION = re.compile(r"→\s*\\ref\s+(\w+)\s*$")
# A table row that is a hint's target: `| \anchor name **Title**<br>...` (the classic stumbles);
# a bare \ref to it would show the anchor's name, so the hint gets the title as its text.
ROW_ANCHOR = re.compile(r"\\anchor\s+(\w+)\s+\*\*(.*?)\*\*")
# A value-parameterised suite of a lab's tests: `INSTANTIATE_TEST_SUITE_P(, Suite,
# ::testing::Values(Backend::kEmulator, Backend::kCuda), ...)` runs every test as Test/Emulator
# and Test/Cuda.
SUITE_BACKENDS = re.compile(r"INSTANTIATE_TEST_SUITE_P\(\s*\w*\s*,\s*(\w+)\s*,\s*"
                            r"::testing::Values\(([^)]*)\)")


def suite_backends(sources: list[str]) -> dict[str, list[str]]:
    """Suite -> the backends each of its tests runs on ("Emulator", "Cuda"), from the text of a
    lab's test files; suites not instantiated over backends are absent."""
    found: dict[str, list[str]] = {}
    for text in sources:
        for m in SUITE_BACKENDS.finditer(text):
            names = re.findall(r"Backend::k(\w+)", m.group(2))
            if names:
                found[m.group(1)] = names
    return found


def _has_caption(lines: list[str], i: int) -> bool:
    """Whether the paragraph above line i (past blank lines) is a `Table: ` caption."""
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    while j > 0 and lines[j - 1].strip():
        j -= 1
    return j >= 0 and lines[j].startswith("Table: ")


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _listed(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


class _Row:
    def __init__(self, line: str):
        self.test, pts, self.pins, self.hint = (_cells(line) + ["", "", "", ""])[:4]
        self.points = int(pts) if pts.isdigit() else 0
        # The cell is the test's name, then an optional note ("`S.T` *emulator only so far*"),
        # shown on a line of its own under the name.
        name = TEST_NAME.match(self.test)
        self.note = self.test[name.end():].strip() if name else ""
        self.suite, self.name = (name.group(1), name.group(2)) if name else ("", self.test)


def _about(graded: list[_Row], suites: list[str], backends: dict[str, list[str]]) -> str:
    """The table's first row: totals, the suite (named once), and the backends every test
    runs on."""
    total = sum(row.points for row in graded)
    text = f"{_count(len(graded), 'graded test')}, {_count(total, 'point')}"
    if len(suites) == 1:
        text += f", all in suite `{suites[0]}`"
    elif suites:
        text += f", in {len(suites)} suites"
    runs = {tuple(backends.get(suite, ())) for suite in suites}
    if len(runs) == 1 and (names := next(iter(runs))):
        text += (f"; each runs as {_listed([f'`/{name}`' for name in names])}, "
                 f"one row for {'both' if len(names) == 2 else 'all'}")
    return f'<tr class="book-tests-about"><td colspan="3">{text}.</td></tr>'


def _heading(text: str) -> str:
    return f'<tr class="book-tests-suite"><td colspan="3">{text}</td></tr>'


def _hint(text: str) -> str:
    """A row's hint, folded under what the row pins: it opens when asked for, as `tools/lab hint`
    gives it only on request."""
    return (f'<details class="book-hint"><summary>Hint</summary>'
            f'<span class="book-hint-text">{text}</span></details>')


def _html_rows(rows: list[_Row], backends: dict[str, list[str]],
               row_titles: dict[str, str]) -> list[str]:
    """The HTML of each row of a test table, headings of suites included; the first also opens
    the table with its totals and column headings, the last closes it."""
    graded = [row for row in rows if row.points]
    suites = list(dict.fromkeys(row.suite for row in graded if row.suite))
    shown_suite: str | None = None
    out = []
    for row in rows:
        html = ""
        if not row.points or not row.suite:
            if shown_suite != "":
                html += _heading("Not graded" if not row.points else "Other tests")
                shown_suite = ""
            name = row.test  # its full name: these rows belong to no suite headed above
        else:
            if len(suites) > 1 and row.suite != shown_suite:
                mine = [r for r in graded if r.suite == row.suite]
                html += _heading(f"The `{row.suite}` suite: {_count(len(mine), 'test')}, "
                                 f"{_count(sum(r.points for r in mine), 'point')}")
            shown_suite = row.suite
            name = f"`{row.name}`"
            if row.note:
                name += f'<br><span class="book-test-note">{row.note}</span>'
        # With a hint, what the row pins is a span and the hint's fold follows it, so that the
        # folds of all rows line up at the right of their rows (docs/book.css).
        pins = row.pins
        section = HINT_SECTION.search(row.hint)
        if section:
            question = row.hint[:section.start()].strip()
            target = section.group(1)
            # A section is marked §; a row of the notes' stumbles table (an \\anchor in a cell)
            # is named as what it is, so the reader does not look for a heading.
            link = (f'§&nbsp;\\ref {target}' if target not in row_titles else
                    'the stumble “\\ref ' + target + ' "'
                    + row_titles[target].replace('"', "'") + '"” in the notes')
            pins = (f'<span class="book-test-pins">{pins}</span>'
                    + _hint(f"{question} →&nbsp;{link}"))
        elif row.hint and row.hint not in ("—", "-"):
            pins = f'<span class="book-test-pins">{pins}</span>' + _hint(row.hint)
        cell = ' class="book-test-hinted"' if pins != row.pins else ""
        html += (f'<tr><td class="book-test-name">{name}</td>'
                 f'<td class="book-test-pts">{row.points or "—"}</td><td{cell}>{pins}</td></tr>')
        out.append(html)
    out[0] = ('<table class="book-tests">' + _about(graded, suites, backends) + TESTS_COLUMNS
              + out[0])
    out[-1] += "</table>"
    return out


def _rows_end(lines: list[str], header: int) -> int:
    """The index one past the last row of the test table whose header line is lines[header]."""
    end = header + 2
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return end


def tests_table(lines: list[str], lab: str | None = None,
                backends: dict[str, list[str]] | None = None) -> list[str]:
    """The lines of a markdown file with each test table rewritten as HTML, line for line. A
    table with no `Table: ` caption above it gets the book's caption for a test table (every
    chapter table has a numbered caption, docs/tidy_html.py): its header and |---| lines become
    the caption paragraph and a blank line, and the table opens on the first test's line, so
    every line after it keeps its number. `lab`: the chapter's number, "05"; `backends`: suite ->
    the backends its tests run on (suite_backends)."""
    out: list[str] = []
    row_titles = {m.group(1): m.group(2) for m in ROW_ANCHOR.finditer("".join(lines))}
    i = 0
    while i < len(lines):
        line = lines[i]
        if not TESTS_HEADER.fullmatch(line.rstrip("\n")):
            out.append(line)
            i += 1
            continue
        end = _rows_end(lines, i)
        if end == i + 2:  # a header with no rows: left for Doxygen and the checks to show
            out.append(line)
            i += 1
            continue
        if not _has_caption(lines, i):
            whose = f"lab {lab}" if lab else "this lab"
            out.append(f"Table: The graded tests of {whose}: what each one pins, and the hint "
                       f"`tools/lab grade` prints when it fails.\n")
            out.append("\n")
        else:
            # Two lines to fill before the rows: the table opens on the first.
            out.append("\n")
            out.append("\n")
        out.extend(html + "\n" for html in _html_rows([_Row(l) for l in lines[i + 2:end]],
                                                      backends or {}, row_titles))
        i = end
    return out


# A chapter's first line, `# Lab 05 — CUDA paged attention (v1) {#lab_05}`, and the headings
# its bench page and its notes page start at.
CHAPTER_TITLE = re.compile(r"# (Lab (\d\d) — [^{]*?)\s*\{#lab_(\d\d)\}\s*")
BENCH_START = re.compile(r"## Files \{#lab_(\d\d)_files\}\s*")
NOTES_START = re.compile(r"## Notes \{#lab_(\d\d)_notes\}\s*")
# The measurements close a chapter on a page of their own, `lab_NN_measurements`, from the
# heading `## Measured {#lab_NN_measured}` (after `## Notes`, the README's last section).
MEASURED_START = re.compile(r"## Measured \{#lab_(\d\d)_measured\}\s*")
# A long lesson goes on on a second page, `lab_NN_lesson2`, from its heading `## Title
# {#lab_NN_part2}` (before `## Files`); the page is titled "Lab NN: title".
PART2_START = re.compile(r"## (.+?) \{#lab_(\d\d)_part2\}\s*")
# Doxygen's internal line break: it ends a command's argument (the title of \page) like a new
# line, but the line count does not move, so every line after the cut keeps its number and a
# warning still names the README's line.
LINE_BREAK = "\\ilinebr "


def short_title(title: str) -> str:
    """A chapter's title, "Lab 05 — CUDA paged attention (v1)": its one name, the sidebar's and
    the page's (docs/CMakeLists.txt); its longer description is the subtitle line under it."""
    return title.strip()


def bench_title(lab: str) -> str:
    return f"Lab {lab}: at the bench"  # = the sidebar's (docs/CMakeLists.txt)


def notes_title(lab: str) -> str:
    return f"Lab {lab}: notes"  # = the sidebar's (docs/CMakeLists.txt)


def measured_title(lab: str) -> str:
    return f"Lab {lab}: measurements"  # = the sidebar's (docs/CMakeLists.txt)


def part2_title(lab: str, heading: str) -> str:
    """The title of a lesson's second page: "Lab 07: inside the tile loop" (= the sidebar's,
    docs/CMakeLists.txt)."""
    return f"Lab {lab}: {heading[:1].lower()}{heading[1:]}"


def _find(lines: list[str], heading: re.Pattern, lab: str, after: int = 0) -> int | None:
    for i in range(after, len(lines)):
        start = heading.fullmatch(lines[i].rstrip("\n"))
        if start and start.group(1) == lab:
            return i
    return None


def page_break(page: str, page_title: str, intro: str, section: str, heading: str) -> str:
    """The one line that replaces a chapter's heading where a new page starts: the page before's
    table of contents, the \\page, its intro and the heading as its \\section. (No box on the
    page before points on to the new page: the Previous / Next links at the foot of every page,
    docs/book-nav.js, and the sidebar already do.)"""
    # (\\tableofcontents after a space: first on the line, or right after \\ilinebr, Doxygen
    # 1.9.4 leaves it to the page's text, as an unknown command.)
    return LINE_BREAK.join([" \\tableofcontents", f"\\page {page} {page_title}", intro,
                            f"\\section {section} {heading}"]) + "\n"


# The Files table's row of the one file the student edits: | `labs/NN-x/starter.cpp` | your file...
YOUR_FILE = re.compile(r"\|\s*`([^`]+)`\s*\|\s*your file\b")
# The caption of a chapter's table of classic stumbles (on its notes page), and a heading with
# its id, `## Notes {#lab_NN_notes}`: the section that holds the table.
STUMBLES_CAPTION = re.compile(r"Table:\s+(?:\{tab:[\w.-]+\}\s*)?Classic stumbles\b")
HEADING_ID = re.compile(r"#{2,4} .*\{#(\w+)\}\s*")


def stumbles_section(lines: list[str]) -> str | None:
    """The id of the section that holds the chapter's table of classic stumbles (the heading
    with an id nearest above its caption); None without such a table."""
    section = None
    for line in lines:
        heading = HEADING_ID.fullmatch(line.rstrip("\n"))
        if heading:
            section = heading.group(1)
        elif STUMBLES_CAPTION.match(line):
            return section
    return None


def _test_totals(lines: list[str]) -> tuple[int, int]:
    """(graded tests, points) of the chapter's test tables."""
    tests = points = 0
    for k, line in enumerate(lines):
        if not TESTS_HEADER.fullmatch(line.rstrip("\n")):
            continue
        for row in lines[k + 2:_rows_end(lines, k)]:
            points_here = _Row(row).points
            tests += bool(points_here)
            points += points_here
    return tests, points


def your_job(lines: list[str], lab: str, steps: list[dict]) -> str:
    """The "Your job" box that opens a bench page, from what the chapter already says: the file
    its Files table marks "your file", the steps of its hints.json in the starter's order (each
    TODO linked to the section that explains it, grouped by function), the grading command with
    the test table's totals, where the hints come from, and where the table of classic stumbles
    is (the notes page's, stumbles_section). One line of HTML; "" when the chapter names no file
    of the student's."""
    mine = next((m.group(1) for line in lines if (m := YOUR_FILE.match(line.strip()))), None)
    if mine is None:
        return ""
    # One entry per function: its code name, then its steps. Up to two steps share the line
    # ("TODO 1 · 2"); three or more, a kernel's TODOs, are a list of their own, one TODO a line.
    groups: list[tuple[dict, list[dict]]] = []
    for step in steps:
        if not groups or groups[-1][0]["function"] != step["function"]:
            groups.append((step, []))
        groups[-1][1].append(step)

    def link(step: dict) -> str:
        return f'\\ref {step["section"]} "{step["title"].replace(chr(34), chr(39))}"'

    items: list[str] = []
    for first_step, group in groups:
        # (a step's "shown_as" names the code where its region's name does not: the region
        # kv_tile holds KvTile::copy)
        name = f'<code>{first_step.get("shown_as", first_step["function"])}</code>'
        if not first_step.get("todo"):
            items.append(f"{name} — " + " · ".join(link(st) for st in group))
        elif len(group) <= 2:
            items.append(f"{name}: TODO " + " · ".join(
                f'<b>{st["todo"]}</b>&nbsp;{link(st)}' for st in group))
        else:
            items.append(f'{name}:<ul class="book-job-todos">' + "".join(
                f'<li><b>TODO&nbsp;{st["todo"]}</b>&nbsp; {link(st)}</li>' for st in group)
                + "</ul>")
    tests, points = _test_totals(lines)
    graded = (f" runs the graded tests: {_count(tests, 'test')}, {_count(points, 'point')} "
              f"(§&nbsp;\\ref lab_{lab}_tests)") if tests else " builds your file and grades it"
    first = steps[0]["id"] if steps else "STEP"
    stumbles = stumbles_section(lines)
    still = (f'<li><b>Still stuck?</b> The notes page\'s table of \\ref {stumbles} "classic '
             f'stumbles" gives each usual bug, what you see and the test that shows it.</li>'
             if stumbles else "")
    return ('<div class="book-job"><div class="book-job-title">Your job</div><ul>'
            f'<li><b>Edit</b> <code>{mine}</code> and nothing else.</li>'
            f'<li><b>Steps</b>, in the starter\'s order:<ul>'
            + "".join(f"<li>{item}</li>" for item in items) + "</ul></li>"
            f'<li><b>Grade</b> <code>tools/lab grade {lab}</code>{graded}.</li>'
            f'<li><b>Stuck?</b> A failing test prints its hint, the one under its name in the '
            f'fold of graded tests below; '
            f'<code>tools/lab hint {lab}</code> lists the steps, and '
            f'<code>tools/lab hint {lab} {first}</code> gives one step\'s hints a level at a '
            f'time.</li>{still}</ul></div>')


SUBTITLE_START = '<div class="book-subtitle">'


def split_chapter(lines: list[str], lab: str, job: str = "") -> list[str]:
    """The lines of chapter `lab` ("05") cut into its pages, line for line. The lesson ends with
    its own table of contents, and the bench page, `lab_NN_bench`, starts with a line that names
    the chapter and links its other pages; all of it replaces the `## Files` heading line, with
    that heading written as the \\section it stands for. The same at the `## Notes` heading after
    it (the notes page, `lab_NN_review`), at the `## Measured` heading after that (the
    measurements page, `lab_NN_measurements`) and at a second lesson page's heading. The way on
    from a page to the next is the sidebar's and the Previous / Next links' (docs/book-nav.js). A
    chapter without the `## Files` heading stays one page; one without the `## Notes` heading
    after it, two; one without the `## Measured` heading after that, three."""
    first = CHAPTER_TITLE.fullmatch(lines[0].rstrip("\n")) if lines else None
    if not first or first.group(2) != lab or first.group(3) != lab:
        return lines
    i = _find(lines, BENCH_START, lab)
    if i is None:
        return lines
    j = _find(lines, NOTES_START, lab, i + 1)
    title = short_title(first.group(1))
    bench, notes = f"lab_{lab}_bench", f"lab_{lab}_review"
    lines = list(lines)
    part2 = next((k for k in range(1, i) if (m := PART2_START.fullmatch(lines[k].rstrip("\n")))
                  and m.group(2) == lab), None)
    k = _find(lines, MEASURED_START, lab, j + 1) if j is not None else None
    second = f"lab_{lab}_lesson2"
    # The chapter's pages in the sidebar's order, each (page, its name in the strip).
    pages = [(f"lab_{lab}", "lesson")]
    if part2 is not None:
        pages.append((second, "lesson, part 2"))
    pages.append((bench, "at the bench"))
    if j is not None:
        pages.append((notes, "notes"))
        if k is not None:
            pages.append((f"lab_{lab}_measurements", "measurements"))

    def strip(here: str) -> str:
        """The line a chapter's later page opens with: the chapter's title, then its pages, this
        one in bold and the others linked, so a reader sees where the page sits and goes to any
        other in one click; last, a link to the chapter's own table of symbols."""
        names = " · ".join(f"<b>{name}</b>" if page == here else f'\\ref {page} "{name}"'
                           for page, name in pages)
        symbols = f'<span class="book-strip-symbols">\\ref notation_lab{lab} "symbols"</span>'
        return f'<div class="book-bench-intro">{title}: {names}{symbols}</div>'

    # The lesson's first page carries the strip too, on its subtitle's line (the line count
    # stays the README's), so that its bench and notes are a click away from the start.
    subtitle = next((n for n in range(1, i) if lines[n].startswith(SUBTITLE_START)), None)
    if subtitle is not None:
        lines[subtitle] = lines[subtitle].rstrip("\n") + strip(f"lab_{lab}") + "\n"
    if part2 is not None:
        heading = PART2_START.fullmatch(lines[part2].rstrip("\n")).group(1)
        lines[part2] = page_break(second, part2_title(lab, heading), strip(second),
                                  f"lab_{lab}_part2", heading)
    lines[i] = page_break(bench, bench_title(lab), strip(bench) + job, f"lab_{lab}_files", "Files")
    if j is not None:
        lines[j] = page_break(notes, notes_title(lab), strip(notes), f"lab_{lab}_notes", "Notes")
        if k is not None:
            lines[k] = page_break(f"lab_{lab}_measurements", measured_title(lab),
                                  strip(f"lab_{lab}_measurements"), f"lab_{lab}_measured",
                                  "Measured")
    return lines


# A \\snippet line of a chapter's bench page, and the marker lines in the file it names.
SNIPPET = re.compile(r"([ \t]*)\\snippet(\{[^}]*\})?[ \t]+(\S+)[ \t]+([A-Za-z0-9_.-]+)[ \t]*")
TODO_NUMBER = re.compile(r"\bTODO\s+(\d+)")
# A listing of more lines than this is folded on a bench page: the starters' long kernels and
# the longer given code fold; every shorter listing stays open.
LONG_LISTING = 30
API_REGIONS = {"api"}  # the lab's API: read before anything else, so it folds only when longer
LONG_API = 60          # than this (lab 06's 85 lines fold; labs 01 to 05 and 07, 18 to 41, show)


def _numbers(found: list[int]) -> str:
    """TODO numbers as the summary says them: "TODO 3", "TODOs 1–6", "TODOs 1, 3 and 4"."""
    if len(found) == 1:
        return f"TODO {found[0]}"
    if found == list(range(found[0], found[-1] + 1)):
        return f"TODOs {found[0]}–{found[-1]}"
    return "TODOs " + _listed([str(n) for n in found])


def listing_summary(root: Path, file: str, name: str) -> tuple[int, str] | None:
    """(lines, summary) of the snippet `name` of `file` (relative to the repository `root`):
    "starter.cpp — `gqa_decode_kernel`, 103 lines with TODOs 1–6"; None when the file or its
    markers are not there (Doxygen then warns as usual)."""
    try:
        text = (root / file).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    marks = [k for k, line in enumerate(text)
             if (marker := MARKER.fullmatch(line)) and marker.group(1) == name]
    if len(marks) < 2:
        return None
    body = text[marks[0] + 1:marks[1]]
    todos = sorted({int(n) for n in TODO_NUMBER.findall("\n".join(body))})
    summary = f"{Path(file).name} — <code>{name}</code>, {len(body)} lines"
    if todos:
        summary += f" with {_numbers(todos)}"
    return len(body), summary


def fold_listings(lines: list[str], root: Path, start: int = 0, end: int | None = None,
                  longer_than: int = LONG_LISTING) -> list[str]:
    """Lines[start:end] with each \\snippet of more than `longer_than` lines folded behind a
    one-line summary (what it is, how long, which TODOs it holds), line for line: the snippet's
    line becomes `<details>`, its summary, the \\snippet and `</details>`, joined by Doxygen's
    internal line break."""
    lines = list(lines)
    for k in range(start, len(lines) if end is None else end):
        snippet = SNIPPET.fullmatch(lines[k].rstrip("\n"))
        if not snippet:
            continue
        found = listing_summary(root, snippet.group(3), snippet.group(4))
        limit = LONG_API if snippet.group(4) in API_REGIONS else longer_than
        if not found or found[0] <= limit:
            continue
        lines[k] = (f'{snippet.group(1)}<details class="book-listing"><summary>{found[1]}</summary>'
                    f'{LINE_BREAK}{lines[k].strip()} {LINE_BREAK}</details>\n')
    return lines


INSTRUCTOR_OPEN = ("\\htmlonly[block]<div class=\"book-instructor\"><p class=\"book-instructor-label\">"
                   "Instructors: not in the student edition</p>\\endhtmlonly\n")
INSTRUCTOR_CLOSE = "\\htmlonly[block]</div>\\endhtmlonly\n"


def mark_instructor_blocks(lines: list[str]) -> list[str]:
    """Each `<!-- instructor -->` ... `<!-- /instructor -->` block (markers on lines of their own,
    outside code fences) drawn as a labelled box: the instructor's book shows what a student's
    release leaves out (tools/labkit/release.py strips these blocks), so a reader of this edition
    can tell which commands a student cannot run."""
    out, fenced = [], False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.strip() == "<!-- instructor -->":
            out.append(INSTRUCTOR_OPEN)
        elif not fenced and line.strip() == "<!-- /instructor -->":
            out.append(INSTRUCTOR_CLOSE)
        else:
            out.append(line)
    return out


def main(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        text = "".join(mark_instructor_blocks(f.read().splitlines(keepends=True)))
    if path.endswith(".md"):
        chapter = re.search(r"labs/(\d\d)-[^/]*/README\.md$", path.replace("\\", "/"))
        sources = [test.read_text(encoding="utf-8")
                   for test in sorted(Path(path).parent.glob("test_*.cpp"))] if chapter else []
        lines = tests_table(text.splitlines(keepends=True), chapter.group(1) if chapter else None,
                            suite_backends(sources))
        if chapter:
            lab = chapter.group(1)
            bench = _find(lines, BENCH_START, lab)
            if bench is not None:
                notes = _find(lines, NOTES_START, lab, bench + 1)
                lines = fold_listings(lines, Path(path).resolve().parents[2], bench, notes)
            hints = Path(path).parent / "hints.json"
            steps = json.loads(hints.read_text(encoding="utf-8"))["steps"] if hints.exists() else []
            lines = split_chapter(lines, lab, your_job(text.splitlines(keepends=True), lab, steps))
        sys.stdout.write("".join(lines))
        if "[TOC]" not in text and "\\tableofcontents" not in text:
            sys.stdout.write("\n\n\\tableofcontents\n")
    else:
        for line in text.splitlines(keepends=True):
            sys.stdout.write("\n" if MARKER.fullmatch(line) else line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
