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
import re
import sys

MARKER = re.compile(r"[ \t]*//[/!][ \t]*\[[A-Za-z0-9_.-]+\][ \t]*\r?\n?")
TESTS_HEADER = re.compile(r"\|\s*test\s*\|\s*pts\s*\|\s*what it pins\s*\|\s*hint\s*\|\s*")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tests_table(lines: list[str]) -> list[str]:
    """The lines of a markdown file with each test table rewritten as HTML, line for line."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not TESTS_HEADER.fullmatch(line.rstrip("\n")):
            out.append(line)
            i += 1
            continue
        # Header and |---| line, then one line per test.
        out.append('<table class="book-tests">\n')
        out.append("<tr><th>what it pins</th><th>hint, printed by <code>tools/lab grade</code> "
                   "when the test fails</th></tr>\n")
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
            out.append(row + ("</table>" if last else "") + "\n")
            i += 1
    return out


def main(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".md"):
        sys.stdout.write("".join(tests_table(text.splitlines(keepends=True))))
        if "[TOC]" not in text and "\\tableofcontents" not in text:
            sys.stdout.write("\n\n\\tableofcontents\n")
    else:
        for line in text.splitlines(keepends=True):
            sys.stdout.write("\n" if MARKER.fullmatch(line) else line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
