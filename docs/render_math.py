#!/usr/bin/env python3
"""The book's formulas, typeset at build time by KaTeX:
`render_math.py HTML_DIR --node NODE --katex KATEX_DIR`.

Run by the docs build (docs/CMakeLists.txt) after docs/tidy_html.py, which numbers the display
formulas with \\tag while they are still TeX. Doxygen (USE_MATHJAX) writes a formula as its TeX
between \\( and \\) (inline) or \\[ and \\] (display, in a p.formulaDsp); each one becomes the
HTML KaTeX renders for it, so a page shows finished formulas with no script of its own: nothing
to wait for on a loaded machine, no raw TeX before a script gets to it. Every formula of the
book goes through one `node` process (docs/katex_render.js, JSON in and out), each distinct
one once.

A formula KaTeX cannot parse (or that is not plain LaTeX: strict mode) stops the build, naming
the page, the formula and KaTeX's message; so does a \\( or \\[ left without its closing
delimiter. Nothing falls back to raw TeX or to a script in the browser.

KaTeX's stylesheet and every font it references are copied from Debian's libjs-katex and
fonts-katex into HTML_DIR/katex/ (docs/header.html links the stylesheet from every page), so
the book still opens from disk with no network. Code (pre, code, Doxygen's fragments), scripts
and comments are left alone. Standard library only.
"""
from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

# The one macro the book's MathJax setup had, carried over: an identifier from the code in a formula,
# \mathtt{warp\_idx}, is set as text (not as math in a typewriter font), so book.css can give it
# the code spans' font and colour (.katex .texttt).
MACROS = {r"\mathtt": r"\texttt{#1}"}

# Where the TeX is not a formula: code shown as code, scripts, styles and comments.
PROTECTED = re.compile(r"<(pre|code|script|style|textarea)\b[^>]*>.*?</\1\s*>"
                       r'|<div class="fragment">.*?</div><!-- fragment -->'
                       r"|<!--.*?-->", re.S | re.I)
# A formula as Doxygen writes it: display \[...\] or inline \(...\), never across a tag.
FORMULA = re.compile(r"\\\[(?P<display>[^<]*?)\\\]|\\\((?P<inline>[^<]*?)\\\)", re.S)
# A delimiter still there once every formula is replaced: one without its other half.
LONE_DELIMITER = re.compile(r"\\[()\[\]]")
# What the stylesheet loads: its fonts, relative to the stylesheet.
CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+?)['\"]?\s*\)")
KATEX_OUT = "katex"  # HTML_DIR/katex/katex.min.css, HTML_DIR/katex/fonts/...
KATEX_JS = Path(__file__).resolve().parent / "katex_render.js"


class MathError(Exception):
    """Formulas that did not render; its message names each (page, formula, KaTeX's error)."""


def _unprotected(text: str) -> list[tuple[int, int]]:
    """The (start, end) spans of `text` outside PROTECTED regions."""
    spans, at = [], 0
    for m in PROTECTED.finditer(text):
        spans.append((at, m.start()))
        at = m.end()
    spans.append((at, len(text)))
    return spans


def find_formulas(text: str) -> list[tuple[int, int, str, bool]]:
    """Each formula of a page: (start, end, TeX with its HTML entities decoded, display)."""
    found = []
    for start, end in _unprotected(text):
        for m in FORMULA.finditer(text, start, end):
            display = m.group("display") is not None
            tex = m.group("display") if display else m.group("inline")
            found.append((m.start(), m.end(), html.unescape(tex), display))
    return found


def lone_delimiters(text: str) -> list[str]:
    """The context of each \\( \\) \\[ \\] of a page outside code and outside its formulas:
    a formula Doxygen's markup left without its other half."""
    formulas = [(start, end) for start, end, _, _ in find_formulas(text)]
    out = []
    for start, end in _unprotected(text):
        for m in LONE_DELIMITER.finditer(text, start, end):
            if not any(a <= m.start() < b for a, b in formulas):
                context = text[max(start, m.start() - 40):min(end, m.end() + 40)]
                out.append(" ".join(context.split()))
    return out


def katex_render(formulas: list[tuple[str, bool]], node: str, katex_js: Path,
                 macros: dict[str, str] | None = None) -> list[dict]:
    """Renders (TeX, display) pairs in one node process: for each, {"html": ...} or
    {"error": KaTeX's message}. Raises MathError when node itself fails."""
    request = {"macros": MACROS if macros is None else macros,
               "formulas": [{"tex": tex, "display": display} for tex, display in formulas]}
    try:
        done = subprocess.run([node, str(KATEX_JS), str(katex_js)], input=json.dumps(request),
                              capture_output=True, text=True, encoding="utf-8")
    except OSError as e:
        raise MathError(f"cannot run {node} (apt-get install nodejs): {e}") from e
    if done.returncode != 0:
        raise MathError(f"{node} {KATEX_JS.name} failed ({done.returncode}):\n{done.stderr}")
    answer = json.loads(done.stdout)
    if len(answer) != len(formulas):
        raise MathError(f"{KATEX_JS.name} answered {len(answer)} of {len(formulas)} formulas")
    return answer


def render_pages(pages: dict[str, str], node: str, katex_js: Path) -> dict[str, str]:
    """`pages` (name -> HTML) with every formula replaced by KaTeX's HTML. Raises MathError
    listing every formula KaTeX rejected and every lone delimiter, by page."""
    found = {name: find_formulas(text) for name, text in pages.items()}
    distinct = sorted({(tex, display) for formulas in found.values()
                       for _, _, tex, display in formulas})
    rendered = dict(zip(distinct, katex_render(distinct, node, katex_js))) if distinct else {}
    problems, out = [], {}
    for name, text in pages.items():
        parts, at = [], 0
        for start, end, tex, display in found[name]:
            result = rendered[(tex, display)]
            if "error" in result:
                shown = f"\\[{tex}\\]" if display else f"\\({tex}\\)"
                problems.append(f"{name}: KaTeX cannot render {shown}\n    {result['error']}")
                continue
            parts += [text[at:start], result["html"]]
            at = end
        parts.append(text[at:])
        out[name] = "".join(parts)
        for context in lone_delimiters(text):
            problems.append(f"{name}: a formula delimiter without its other half: …{context}…")
    if problems:
        raise MathError("the book's formulas did not all render (KaTeX, strict LaTeX):\n"
                        + "\n".join(problems))
    return out


def copy_katex_assets(katex_dir: Path, out_dir: Path) -> int:
    """Copies katex.min.css and every file its url()s name (the fonts) into out_dir, following
    Debian's links (fonts/ links to fonts-katex's folder); returns the number of fonts. Raises
    MathError naming a file that is missing."""
    css = katex_dir / "katex.min.css"
    if not css.is_file():
        raise MathError(f"{css} not found (apt-get install libjs-katex)")
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    shutil.copyfile(css, out_dir / css.name)
    urls = sorted(set(CSS_URL.findall(css.read_text(encoding="utf-8"))))
    for url in urls:
        source = katex_dir / url
        if not source.is_file():
            raise MathError(f"{source}, which {css.name} uses, is missing "
                            f"(apt-get install fonts-katex)")
        (out_dir / url).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, out_dir / url)  # copyfile follows links: real files land
    return len(urls)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html_dir", type=Path)
    parser.add_argument("--node", default="node", help="Node.js (Debian: nodejs)")
    parser.add_argument("--katex", type=Path, default=Path("/usr/share/javascript/katex"),
                        help="KaTeX's folder, with katex.min.js and katex.min.css "
                             "(Debian: libjs-katex)")
    args = parser.parse_args(argv)
    paths = sorted(p for p in args.html_dir.rglob("*.html")
                   if KATEX_OUT not in p.relative_to(args.html_dir).parts)
    before = {str(p.relative_to(args.html_dir)): p.read_text(encoding="utf-8") for p in paths}
    try:
        fonts = copy_katex_assets(args.katex, args.html_dir / KATEX_OUT)
        after = render_pages(before, args.node, args.katex / "katex.min.js")
    except MathError as e:
        print(f"render_math: {e}", file=sys.stderr)
        return 1
    changed = 0
    for name, text in after.items():
        if text != before[name]:
            (args.html_dir / name).write_text(text, encoding="utf-8")
            changed += 1
    count = sum(len(find_formulas(text)) for text in before.values())
    print(f"render_math: {count} formula(s) on {changed} page(s) typeset by KaTeX "
          f"(stylesheet and {fonts} font files in {KATEX_OUT}/)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
