#!/usr/bin/env python3
"""Typography Doxygen gets wrong, fixed in the built pages: `tidy_html.py HTML_DIR`.

Run by the docs build (docs/CMakeLists.txt, after Doxygen) over the book's pages:
- Doxygen writes a space before every inline formula, so "(\\f$B\\f$)" shows as "( B)": the space
  after an opening bracket and before a formula is dropped.
- A browser may break inline code after a hyphen or a slash, so `-fsanitize=address` wrapped as
  "-" / "fsanitize" and paths split mid-name: inline code of one word (no space, at most 40
  characters) gets class `book-nowrap` (white-space: nowrap in book.css). Longer spans, shapes
  with spaces among them, still wrap at their spaces.
Standard library only; a page is rewritten only when something changed.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

SPACE_BEFORE_MATH = re.compile(r"([(\[]) +(\\\(|\\\[)")
ONE_WORD_CODE = re.compile(r"<code>([^<\s]{1,40})</code>")


def tidy(text: str) -> str:
    text = SPACE_BEFORE_MATH.sub(r"\1\2", text)
    return ONE_WORD_CODE.sub(r'<code class="book-nowrap">\1</code>', text)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    changed = 0
    for page in sorted(Path(argv[0]).glob("*.html")):
        text = page.read_text(encoding="utf-8")
        new = tidy(text)
        if new != text:
            page.write_text(new, encoding="utf-8")
            changed += 1
    print(f"tidy_html: {changed} page(s) tidied")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
