#!/usr/bin/env python3
"""The book's full-text search index: html/search_book.js, read by docs/book-search.js.

Doxygen's SEARCHENGINE indexes code symbols and page titles only: "tolerance" or "block table"
found nothing. After the build (docs/CMakeLists.txt runs this after render_math.py) this reads
every page of the book in the sidebar's order (the introduction, front matter, chapters,
interludes, appendices; not the API reference, whose symbols come from Doxygen's own index) and
cuts each into its sections: the text before the first heading, then one per heading h1 to h4
with an anchor. Of each section it keeps the heading, the anchor and the plain text: prose,
lists, tables, captions and inline code; not the code blocks (div.fragment), the page's contents
(div.toc) or KaTeX's rendering of a formula (letters one per span); a formula gives its TeX
source (KaTeX's MathML annotation) less the commands, braces, ^ and _ (tex_words). Doxygen's own entries (search/all_*.js: classes, functions, files) are
added as a second list, without the ones that name a page of the book.

The file assigns one global, so a page opened from disk (file://, where fetch() is refused) can
load it with a <script> tag:
  var BOOK_SEARCH = {pages: [[file, title], ...],
                     sections: [[page index, anchor, heading, text], ...],
                     symbols: [[name, url, scope], ...]};

Usage: search_index.py HTML_DIR      (Python 3 standard library)
"""
from __future__ import annotations

import ast
import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

OUTPUT = "search_book.js"
# book-bench-intro: a chapter page's strip of links to its other pages, navigation, not text
SKIP_CLASSES = {"fragment", "toc", "katex", "katex-display", "book-nav", "caption-number",
                "book-bench-intro"}
SKIP_TAGS = {"script", "style", "svg", "pre", "math", "object", "iframe"}
VOID = {"br", "img", "hr", "input", "meta", "link", "wbr", "col", "area", "source"}
BLOCK = {"p", "div", "li", "tr", "td", "th", "dt", "dd", "br", "h1", "h2", "h3", "h4", "h5",
         "h6", "table", "ul", "ol", "blockquote", "summary", "details", "figcaption"}
HEADINGS = {"h1", "h2", "h3", "h4"}


sys.path.insert(0, str(Path(__file__).resolve().parent))
from book_check import book_pages as _sidebar_pages  # noqa: E402  (one reader of the sidebar)
from book_check import read_navtree  # noqa: E402


def book_pages(html_dir: Path) -> list[tuple[str, str]]:
    """(file, title) of every page of the book in the sidebar's order, without the API
    reference: the introduction (the tree's root), then book_check's pages."""
    root = read_navtree(html_dir)[0]
    return [(root[1], root[0])] + [p for p in _sidebar_pages(html_dir) if p[0] != root[1]]


TEX_COMMAND = re.compile(r"\\[a-zA-Z]+\*?|\\.")
# Commands that stand for a symbol or a word of the formula, kept in its text so that a snippet
# still reads ("rows [φB, (φ+1)B)", "max", "≤"); every other command is dropped.
TEX_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "Delta": "Δ", "epsilon": "ε",
    "varepsilon": "ε", "theta": "θ", "lambda": "λ", "mu": "μ", "pi": "π", "rho": "ρ",
    "sigma": "σ", "Sigma": "Σ", "tau": "τ", "phi": "φ", "varphi": "φ", "psi": "ψ",
    "omega": "ω", "ell": "ℓ", "cdot": "·", "times": "×", "le": "≤", "leq": "≤", "ge": "≥",
    "geq": "≥", "ne": "≠", "neq": "≠", "approx": "≈", "in": "∈", "infty": "∞", "sum": "Σ",
    "prod": "Π", "to": "→", "rightarrow": "→", "ldots": "…", "dots": "…", "cdots": "…",
    "max": "max", "min": "min", "exp": "exp", "log": "log", "sqrt": "√", "lfloor": "⌊",
    "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "oplus": "⊕", "otimes": "⊗",
}


def tex_words(tex: str) -> str:
    """A formula as searchable words: its TeX without braces, ^, _ and the commands that draw
    no symbol ("\\mathrm{denom}_i" -> "denom i", "[\\phi B, (\\phi+1)B)" -> "[φ B, (φ+1)B)")."""
    tex = re.sub(r"\\(?:begin|end)\{[^}]*\}", " ", tex)   # \begin{aligned}: no word of the text
    tex = TEX_COMMAND.sub(lambda m: TEX_SYMBOLS.get(m.group(0)[1:], " "), tex)
    return " ".join(re.sub(r"[{}^_&]", " ", tex).split())


class _Sections(HTMLParser):
    """Splits div.contents of one page into [anchor, heading, text]."""

    def __init__(self, title: str) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[list] = [["", title, []]]
        self.inside = False      # within div.contents
        self.done = False
        self.skip_tag: str | None = None
        self.skip_depth = 0
        self.heading: list | None = None   # [anchor, words] while inside h1..h4
        self.tex: list[str] | None = None     # inside a formula's <annotation>

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        if self.done:
            return
        if not self.inside:
            if tag == "div" and "contents" in classes:
                self.inside = True
            return
        if self.skip_tag:
            if tag == self.skip_tag and tag not in VOID:
                self.skip_depth += 1
            if tag == "annotation" and self.skip_tag == "span":   # a formula's TeX
                self.tex = []
            return
        if tag in SKIP_TAGS or classes & SKIP_CLASSES or a.get("aria-hidden") == "true":
            if tag not in VOID:
                self.skip_tag, self.skip_depth = tag, 1
            return
        if tag in HEADINGS:
            self.heading = [a.get("id") or "", []]
        elif tag == "a" and self.heading is not None and "anchor" in classes and a.get("id"):
            self.heading[0] = a["id"]
        elif tag == "img" and a.get("alt"):
            self._text(" " + a["alt"] + " ")
        if tag in ("td", "th"):   # table cells stay apart in a snippet
            self._text(" · ")
        elif tag in BLOCK:
            self._text(" ")

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if self.skip_tag == tag and tag not in VOID:   # <div class="fragment"/>: nothing inside
            self.handle_endtag(tag)

    def handle_endtag(self, tag):
        if not self.inside or self.done:
            return
        if self.skip_tag:
            if tag == "annotation" and self.tex is not None:
                self._text(" " + tex_words("".join(self.tex)) + " ")
                self.tex = None
            if tag == self.skip_tag:
                self.skip_depth -= 1
                if self.skip_depth == 0:
                    self.skip_tag = None
                    self._text(" ")
            return
        if tag in HEADINGS and self.heading is not None:
            anchor, words = self.heading
            self.heading = None
            heading = " ".join("".join(words).split())
            if anchor and heading:
                self.sections.append([anchor, heading, []])
            elif heading:   # a heading without an anchor: its words stay in the text
                self._text(" " + heading + " ")
            return
        if tag in BLOCK:
            self._text(" ")

    def handle_comment(self, data):
        if self.inside and data.strip() == "contents":
            self.done = True

    def handle_data(self, data):
        if self.tex is not None:
            self.tex.append(data)
        elif self.inside and not self.done and not self.skip_tag:
            self._text(data)

    def _text(self, s: str) -> None:
        if self.heading is not None:
            self.heading[1].append(s)
        else:
            self.sections[-1][2].append(s)


def page_sections(path: Path, title: str) -> list[tuple[str, str, str]]:
    parser = _Sections(title)
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    out = []
    for anchor, heading, words in parser.sections:
        text = " ".join("".join(words).split())
        text = re.sub(r" ([,.;:!?)])", r"\1", text).replace("( ", "(")
        if text or anchor:
            out.append((anchor, heading, text))
    return out


def doxygen_symbols(html_dir: Path, book: set[str]) -> list[list[str]]:
    """[name, url, scope] of Doxygen's own index (search/all_*.js), less the book's pages."""
    out: list[list[str]] = []
    seen: set[tuple[str, str]] = set()
    for js in sorted((html_dir / "search").glob("all_*.js"),
                     key=lambda p: int(re.sub(r"\D", "", p.stem) or 0)):
        text = js.read_text(encoding="utf-8")
        m = re.search(r"var searchData\s*=\s*(\[.*\])\s*;?\s*$", text, re.S)
        if not m:
            continue
        for _id, entry in ast.literal_eval(m.group(1)):
            name, targets = entry[0], entry[1:]
            for target in targets:
                url, scope = target[0], target[2] if len(target) > 2 else ""
                url = url[3:] if url.startswith("../") else url
                if url.split("#")[0] in book or (name, url) in seen:
                    continue
                seen.add((name, url))
                out.append([name, url, scope])
    return out


def build(html_dir: Path) -> dict:
    pages = [(f, t) for f, t in book_pages(html_dir) if (html_dir / f).is_file()]
    sections = []
    for i, (file, title) in enumerate(pages):
        path = html_dir / file
        for anchor, heading, text in page_sections(path, title):
            sections.append([i, anchor, heading, text])
    symbols = doxygen_symbols(html_dir, {f for f, _ in pages})
    return {"pages": [[f, t] for f, t in pages], "sections": sections, "symbols": symbols}


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    html_dir = Path(argv[0])
    index = build(html_dir)
    if not index["sections"]:
        print("search_index: no sections found in the book's pages", file=sys.stderr)
        return 1
    text = ("/* The book's search index: docs/search_index.py writes it, docs/book-search.js "
            "reads it. */\nvar BOOK_SEARCH = "
            + json.dumps(index, ensure_ascii=False, separators=(",", ":")) + ";\n")
    out = html_dir / OUTPUT
    out.write_text(text, encoding="utf-8")
    print(f"search_index: {len(index['sections'])} section(s) of {len(index['pages'])} page(s) "
          f"and {len(index['symbols'])} symbol(s) in {OUTPUT} ({out.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
