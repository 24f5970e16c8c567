#!/usr/bin/env python3
"""Doxygen input filter for the course book (FILTER_PATTERNS): `doxygen_filter.py FILE`.

Prints FILE as Doxygen should parse it, with every line kept in place so warnings name the
right line:
- C++ headers: snippet markers (a line that is only `/// [name]`) become empty lines. They
  delimit the code the book shows with \\snippet; read as documentation they would prefix the
  next function's contract with "[name]". \\snippet reads the unfiltered file.
- Markdown pages: a page without a table of contents gets `\\tableofcontents` appended at the
  end, so every chapter has the interactive contents in its margin.
"""
import re
import sys

MARKER = re.compile(r"[ \t]*//[/!][ \t]*\[[A-Za-z0-9_.-]+\][ \t]*\r?\n?")


def main(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".md"):
        sys.stdout.write(text)
        if "[TOC]" not in text and "\\tableofcontents" not in text:
            sys.stdout.write("\n\n\\tableofcontents\n")
    else:
        for line in text.splitlines(keepends=True):
            sys.stdout.write("\n" if MARKER.fullmatch(line) else line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
