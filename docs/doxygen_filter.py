#!/usr/bin/env python3
"""Doxygen input filter for the course book (FILTER_PATTERNS): `doxygen_filter.py FILE`.

Prints FILE as Doxygen should parse it, with every line kept in place so warnings name the
right line:
- C++ headers: snippet markers (a line that is only `/// [name]`) become empty lines. They
  delimit the code the book shows with \\snippet; read as documentation they would prefix the
  next function's contract with "[name]". \\snippet reads the unfiltered file.
- Markdown pages: each chapter's "What the tests prove" table (columns test | pts | what it pins
  | hint, the form tools/lab grade reads) becomes an HTML table that gives every test a row of
  its own for its name and points, above its two text columns side by side: with four columns,
  the long test names squeezed the text to a word per line. A page without a table of contents
  gets `\\tableofcontents` appended at the end, so every chapter has the interactive contents in
  its margin.
"""
from __future__ import annotations

import re
import sys

MARKER = re.compile(r"[ \t]*//[/!][ \t]*\[[A-Za-z0-9_.-]+\][ \t]*\r?\n?")
TESTS_HEADER = re.compile(r"\|\s*test\s*\|\s*pts\s*\|\s*what it pins\s*\|\s*hint\s*\|\s*")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


TESTS_COLUMNS = ("<tr><th>what it pins</th><th>hint, printed by <code>tools/lab grade</code> "
                 "when the test fails</th></tr>")


def _has_caption(lines: list[str], i: int) -> bool:
    """Whether the paragraph above line i (past blank lines) is a `Table: ` caption."""
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    while j > 0 and lines[j - 1].strip():
        j -= 1
    return j >= 0 and lines[j].startswith("Table: ")


def tests_table(lines: list[str], lab: str | None = None) -> list[str]:
    """The lines of a markdown file with each test table rewritten as HTML, line for line. A
    table with no `Table: ` caption above it gets the book's caption for a test table (every
    chapter table has a numbered caption, docs/tidy_html.py): its header and |---| lines become
    the caption paragraph and a blank line, and the table opens on the first test's line, so
    every line after it keeps its number. `lab`: the chapter's number, "05"."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not TESTS_HEADER.fullmatch(line.rstrip("\n")):
            out.append(line)
            i += 1
            continue
        rows = i + 2 < len(lines) and lines[i + 2].startswith("|")
        if rows and not _has_caption(lines, i):
            whose = f"lab {lab}" if lab else "this lab"
            out.append(f"Table: The graded tests of {whose}: what each one pins, and the hint "
                       f"`tools/lab grade` prints when it fails.\n")
            out.append("\n")
            opening = f'<table class="book-tests">{TESTS_COLUMNS}'
        else:
            # Header and |---| line, then one line per test.
            out.append('<table class="book-tests">\n')
            out.append(TESTS_COLUMNS + "\n")
            opening = ""
        i += 2
        while i < len(lines) and lines[i].startswith("|"):
            test, pts, pins, hint = (_cells(lines[i]) + ["", "", "", ""])[:4]
            if pts.isdigit():
                points = f'{pts} point{"s" if pts != "1" else ""}'
            else:
                points = "not graded"
            row = (f'<tr class="book-test"><td colspan="2">{test}'
                   f'<span class="book-pts">{points}</span></td></tr>'
                   f"<tr><td>{pins}</td><td>{hint}</td></tr>")
            last = i + 1 >= len(lines) or not lines[i + 1].startswith("|")
            out.append(opening + row + ("</table>" if last else "") + "\n")
            opening = ""
            i += 1
    return out


def main(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".md"):
        chapter = re.search(r"labs/(\d\d)-[^/]*/README\.md$", path.replace("\\", "/"))
        sys.stdout.write("".join(tests_table(text.splitlines(keepends=True),
                                             chapter.group(1) if chapter else None)))
        if "[TOC]" not in text and "\\tableofcontents" not in text:
            sys.stdout.write("\n\n\\tableofcontents\n")
    else:
        for line in text.splitlines(keepends=True):
            sys.stdout.write("\n" if MARKER.fullmatch(line) else line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
