#!/usr/bin/env python3
"""Typography Doxygen gets wrong, fixed in the built pages: `tidy_html.py HTML_DIR`.

Run by the docs build (docs/CMakeLists.txt, after Doxygen) over the book's pages:
- Doxygen writes a space before every inline formula, so "(\\f$B\\f$)" shows as "( B)": the space
  after an opening bracket and before a formula is dropped.
- A browser may break inline code after a hyphen or a slash, so `-fsanitize=address` wrapped as
  "-" / "fsanitize" and paths split mid-name, and short expressions broke at their spaces
  ("[N +" / "1]"): inline code of one word (no space, at most 64 characters: the longest path
  of the book), linked or not, and any inline code of at most 40 characters gets class
  `book-nowrap` (white-space: nowrap in book.css). Longer spans, long shapes with spaces among
  them, still wrap at their spaces; an opening bracket before such code and the punctuation after
  it stay on its line.
- Doxygen starts every section heading with an empty line (the anchor, then a newline) and ends a
  page title with a space: both are dropped, so a heading's text is its first line.
Standard library only; a page is rewritten only when something changed.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

SPACE_BEFORE_MATH = re.compile(r"([(\[]) +(\\\(|\\\[)")
# One word up to 64 characters, or a short expression with spaces up to 40 (entities such as
# &gt; count a few characters more than they show, which only errs towards wrapping).
NOWRAP_CODE = re.compile(r"<code>([^<\s]{1,64}|[^<]{1,40})</code>")
# The same, where Doxygen made the code a link to the API reference.
NOWRAP_LINKED_CODE = re.compile(r"<code>(<a [^>]*>[^<\s]{1,64}</a>)</code>")
HEADING_ANCHOR_NEWLINE = re.compile(r'(<h[1-6]><a class="anchor" id="[^"]*"></a>)\n')
TITLE_TRAILING_SPACE = re.compile(r'(<div class="title">[^<]*?) +(</div>)')
# The theme draws inline code as an inline block, which a line may break around: "(" then
# `lab05_bench` on the next line. An opening bracket before such code and the punctuation after it
# stay on its line.
CODE_WITH_PUNCTUATION = re.compile(r'(\(?)(<code class="book-nowrap">[^<]*</code>)([)\],;:.]*)')


def _keep_together(m: re.Match) -> str:
    if not m.group(1) and not m.group(3):
        return m.group(0)
    return f'<span class="book-nowrap">{m.group(1)}{m.group(2)}{m.group(3)}</span>'


def tidy(text: str) -> str:
    text = SPACE_BEFORE_MATH.sub(r"\1\2", text)
    text = NOWRAP_CODE.sub(r'<code class="book-nowrap">\1</code>', text)
    text = NOWRAP_LINKED_CODE.sub(r'<code class="book-nowrap">\1</code>', text)
    text = HEADING_ANCHOR_NEWLINE.sub(r"\1", text)
    text = TITLE_TRAILING_SPACE.sub(r"\1\2", text)
    return CODE_WITH_PUNCTUATION.sub(_keep_together, text)


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
