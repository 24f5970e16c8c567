#!/usr/bin/env python3
"""The course book's checks, over a built site (build/docs/html). Python 3 standard library;
the browser check adds Debian's Selenium.

- structure_check: the book's order and shape: the index lists every chapter, in order; each
  chapter is four pages, its lesson lab_NN.html with the lesson's sections (lab_NN_glance,
  lab_NN_why, lab_NN_background; a long lesson goes on on lab_NN_lesson2.html, from its
  section lab_NN_part2), right after it in the sidebar its bench lab_NN_bench.html
  (lab_NN_files ... lab_NN_tests), then its notes lab_NN_review.html (lab_NN_notes ...
  lab_NN_references), then its measurements lab_NN_measurements.html (lab_NN_measured); each
  page ends with the link on to the next and starts with the link back to the one before.
- source_check: no `<!-- instructor -->` (or student) marker inside a Markdown table of the
  book's sources (it ends the table; the rows after it print as literal text).
- reader_text_check: the prose of every page (code and formulas left out) holds no literal
  Markdown table syntax, no snippet marker ("[backend]") and no commit hash.
- table_caption_check: every table of a chapter has a numbered caption (a `Table: ` paragraph
  above it, which docs/tidy_html.py numbers), and no `Table:` paragraph is left without its table.
- figure_text_check (without a browser only): no text in a figure smaller than 12 px at the
  column of a 1400 px window, nor than 11 px at the column of any other window width the layout
  is checked at (COLUMN_AT, min_figure_text): the SVG file's font size times the scale its width
  implies. An estimate: it cannot see CSS. The browser check measures instead.
- link_check: every local href/src/data in the HTML (and SVG) and in the sidebar's data resolves
  to a file, and every #fragment to an id in it; nothing is loaded from the network; the only
  external links are references: in a chapter's References section, or to a paper host (arXiv,
  DOI, proceedings).
- math_check: every formula typeset at build time by KaTeX (docs/render_math.py): no raw TeX
  left in any page's text, no KaTeX error box, no MathJax script, KaTeX's stylesheet linked
  wherever there are formulas and every font it names on disk beside it.
- browser_check: Debian's chromium, headless and offline, driven by Debian's Selenium
  (python3-selenium) through chromedriver (chromium-driver). Opens each page from disk, waits
  for its fonts, asserts the formulas show in KaTeX's fonts (stylesheet applied, no font that
  failed to load, no KaTeX error box, no raw TeX in the text), every diagram
  and picture loaded as SVG and is a link to itself, and the console stayed clean with no
  request leaving the machine; on the first page with a figure, a click opens the figure viewer
  (VIEWER below: larger than the page shows it, with its caption; Escape closes it);
  then, at 1400, 1920, 1200, 1000 and 900 px (WIDTHS), the layout check (LAYOUT below: nothing
  wider than the content column or cut off inside it, no Markdown left unrendered, no numbered
  list restarting; a formula measured as one box); at each of those widths, figure text as
  drawn in the page, at least 12 px at 1400 px and 11 px at the others
  (FIGURE_TEXT below: each text's computed font size times every scale between the SVG and the
  screen, CSS included); saves
  a screenshot of each page at 1400 px and of its key elements (test table, figures, widest
  snippet). Last, the search box (SEARCH below, docs/book-search.js over html/search_book.js):
  on the first page, a word found only in prose (SEARCH_WORD) typed into the box must show a
  result at 1400 px and at 900 px (the sidebar, and with it the box, opened by "☰ Chapters"),
  each result linking to a page that holds the word, and a click on the first must land there.

Run alone: /usr/bin/python3 docs/book_check.py build/docs/html [--screenshots DIR] [--no-browser]
"""
from __future__ import annotations

import argparse
import html.parser
import json
import os
import re
import shutil
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))  # labkit
from labkit.labs import labs as _labs  # noqa: E402  (lab discovery: one place, labkit)

# External links are allowed only as references: inside a chapter's References section (any
# host), or anywhere to a paper (these hosts serve papers and preprints only).
PAPER_HOSTS = {
    "arxiv.org", "www.arxiv.org", "export.arxiv.org", "doi.org", "dx.doi.org", "dl.acm.org",
    "proceedings.neurips.cc", "papers.nips.cc", "papers.neurips.cc", "openreview.net",
    "proceedings.mlr.press", "aclanthology.org",
}

# The sections every chapter has, as `lab_NN_<suffix>` ids: the lesson's, on the chapter's first
# page (lab_NN.html), the bench's, on its second (lab_NN_bench.html), the notes', on its third
# (lab_NN_review.html), and the measurements', on its fourth (lab_NN_measurements.html;
# docs/doxygen_filter.py makes the cuts).
LESSON_SECTIONS = ("glance", "why", "background")
BENCH_SECTIONS = ("files", "run", "implement", "tests")
NOTES_SECTIONS = ("notes", "check", "further", "references")
MEASURED_SECTIONS = ("measured",)
CHAPTER_SECTIONS = LESSON_SECTIONS + BENCH_SECTIONS + NOTES_SECTIONS + MEASURED_SECTIONS
# A chapter's page: its lesson (lab_05.html), its bench (lab_05_bench.html), its notes
# (lab_05_review.html) or its measurements (lab_05_measurements.html).
CHAPTER_PAGE = re.compile(r"lab_(\d\d)(?:_lesson2|_bench|_review|_measurements)?\.html")

# Attributes that load or link something, per tag (HTML and SVG).
LINK_ATTRS = {
    "a": ("href", "xlink:href"), "area": ("href",), "link": ("href",),
    "script": ("src",), "img": ("src",), "iframe": ("src",), "frame": ("src",),
    "embed": ("src",), "source": ("src",), "video": ("src",), "audio": ("src",),
    "object": ("data",), "image": ("href", "xlink:href"), "use": ("href", "xlink:href"),
}
# Tags whose URL is fetched when the page loads (never allowed to be external).
LOADED_TAGS = {"link", "script", "img", "iframe", "frame", "embed", "source", "video", "audio",
               "object", "image", "use"}


# ---- parsing ---------------------------------------------------------------------------------

class _Page(html.parser.HTMLParser):
    """Collects the ids/names (link targets) and the URLs of one HTML or SVG file."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, url)
        self.in_references: set[int] = set()  # indexes into urls of links after a References id
        self._references = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k.lower(): (v or "") for k, v in attrs}
        for key in ("id", "name"):
            if a.get(key):
                self.ids.add(a[key])
                # A chapter's last section, {#lab_NN_references}, runs to the end of the page.
                if key == "id" and re.fullmatch(r"lab_\d\d_references", a[key]):
                    self._references = True
        for attr in LINK_ATTRS.get(tag.lower(), ()):
            if attr in a:
                if self._references:
                    self.in_references.add(len(self.urls))
                self.urls.append((tag.lower(), attr, a[attr].strip()))

    handle_startendtag = handle_starttag


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    page.close()
    return page


def read_navtree(html_dir: Path) -> list:
    """Doxygen's NAVTREE (navtreedata.js) as a Python list."""
    text = (html_dir / "navtreedata.js").read_text(encoding="utf-8")
    m = re.search(r"var NAVTREE\s*=\s*(\[.*?\]);\s*\n\s*var NAVTREEINDEX", text, re.S)
    if not m:
        raise ValueError("navtreedata.js: no NAVTREE")
    return json.loads(m.group(1))


def book_pages(html_dir: Path) -> list[tuple[str, str]]:
    """(file, title) of every page of the book in reading order, from the sidebar: everything
    but the API reference, each file once."""
    pages: list[tuple[str, str]] = []
    seen: set[str] = set()

    def walk(nodes: list) -> None:
        for title, url, children in nodes:
            if url == "files.html":
                continue
            if isinstance(url, str) and re.fullmatch(r"[\w.-]+\.html", url) and url not in seen:
                seen.add(url)
                pages.append((url, title))
            if isinstance(children, list):
                walk(children)

    walk(read_navtree(html_dir)[0][2])
    return pages


def _lab_dirs(repo: Path) -> list[str]:
    return [lab.number for lab in _labs(repo)]


# ---- structure ------------------------------------------------------------------------------

def structure_check(html_dir: Path, repo: Path) -> list[str]:
    """The book's order and the chapters' shape; returns the problems found."""
    problems: list[str] = []
    index = html_dir / "index.html"
    if not index.is_file():
        return [f"{index}: missing"]
    expected = _lab_dirs(repo)
    for nn in expected:
        if not (html_dir / f"lab_{nn}.html").is_file():
            problems.append(f"lab_{nn}.html: missing (no chapter for labs/{nn}-*: "
                            f"labs/{nn}-*/README.md with first line `# Lab {nn} — Title {{#lab_{nn}}}`)")
    # The index lists the chapters in order: the first link to each comes after the previous.
    text = index.read_text(encoding="utf-8")
    body = text[text.find('<div class="contents">'):]
    positions = []
    for nn in expected:
        at = body.find(f'href="lab_{nn}.html"')
        if at < 0:
            problems.append(f"index.html: no link to chapter lab_{nn}")
        else:
            positions.append((at, nn))
    order = [nn for _, nn in sorted(positions)]
    if order != [nn for _, nn in positions]:
        problems.append(f"index.html: chapters listed in the order {order}, not {expected}")
    # Sidebar: the chapters in order.
    pages = [f for f, _ in book_pages(html_dir)]
    labs_in_sidebar = [f[4:6] for f in pages if re.fullmatch(r"lab_\d\d\.html", f)]
    if labs_in_sidebar != sorted(labs_in_sidebar):
        problems.append(f"sidebar: chapters in the order {labs_in_sidebar}")
    # Every heading of the book's pages has an explicit id (Doxygen makes up `autotoc_md<N>`
    # ids for the others, which change whenever a heading is added above them).
    for file, _ in book_pages(html_dir):
        made_up = sorted(i for i in _parse(html_dir / file).ids if i.startswith("autotoc_md"))
        if made_up:
            problems.append(f"{file}: {len(made_up)} heading(s) without an explicit {{#id}}")
    # Each chapter: the lesson's sections on its first page, the bench's on its second and the
    # notes' on its third, which follow it in the sidebar (so the Previous / Next links,
    # docs/book-nav.js, lead from each to the next), and each but the first starts with a link
    # back to the page before.
    for nn in expected:
        lesson = f"lab_{nn}.html"
        if not (html_dir / lesson).is_file():
            continue
        chapter = [(lesson, LESSON_SECTIONS), (f"lab_{nn}_bench.html", BENCH_SECTIONS),
                   (f"lab_{nn}_review.html", NOTES_SECTIONS),
                   (f"lab_{nn}_measurements.html", MEASURED_SECTIONS)]
        if (html_dir / f"lab_{nn}_lesson2.html").is_file():  # a long lesson's second page
            chapter.insert(1, (f"lab_{nn}_lesson2.html", ("part2",)))
        missing_pages = [file for file, _ in chapter if not (html_dir / file).is_file()]
        for file in missing_pages:
            page, heading = (("bench", "Files") if file.endswith("_bench.html")
                             else ("measurements", "Measured")
                             if file.endswith("_measurements.html") else ("notes", "Notes"))
            problems.append(f"{file}: missing (lab {nn}'s {page} page: docs/doxygen_filter.py "
                            f"starts it at the heading `## {heading} "
                            f"{{#lab_{nn}_{heading.lower()}}}`)")
        if missing_pages:
            continue
        for file, wanted in chapter:
            ids = _parse(html_dir / file).ids
            missing = [f"lab_{nn}_{s}" for s in wanted if f"lab_{nn}_{s}" not in ids]
            if missing:
                problems.append(f"{file}: no section with id {', '.join(missing)}")
            stray = [f"lab_{nn}_{s}" for other, sections in chapter if other != file
                     for s in sections if f"lab_{nn}_{s}" in ids]
            if stray:
                problems.append(f"{file}: holds section(s) {', '.join(stray)} of another page "
                                f"of its chapter")
        for (before, _), (after, _) in zip(chapter, chapter[1:]):
            if after not in pages:
                problems.append(f"sidebar: no entry for {after}")
            elif before in pages and pages.index(after) != pages.index(before) + 1:
                problems.append(f"sidebar: {after} does not come right after {before}")
            if f'href="{before}"' not in _bench_intro(html_dir / after):
                problems.append(f"{after}: does not start with the link back to {before}")
    return problems


def _bench_intro(path: Path) -> str:
    """The first block of text of a chapter's bench or notes page, which names the page
    before."""
    text = path.read_text(encoding="utf-8")
    m = re.search(r'<div class="textblock">\s*<div class="book-bench-intro">(.*?)</div>', text,
                  re.S)
    return m.group(1) if m else ""


def hints_check(repo: Path) -> list[str]:
    """Each lab's hints.json (labkit/hints.py): every TODO step has its three levels, every §
    link is a heading of its chapter, every step names a region and TODO of its starter."""
    from labkit import hints
    return [p for lab in _labs(repo) for p in hints.problems(lab, repo)]


# ---- what the reader reads: sources, text and figures --------------------------------------
#
# The layout check measures boxes; these read what is in them. Each defect class below once
# reached readers with every layout check green.

# The Markdown files the book is made of (the chapters and the front matter).
def book_sources(repo: Path) -> list[Path]:
    return (sorted(repo.glob("labs/[0-9][0-9]-*/README.md")) + sorted((repo / "docs").glob("*.md"))
            + sorted((repo / "docs").glob("*.md.in")))


MARKER_LINE = re.compile(r"\s*<!--\s*/?instructor\s*-->\s*|\s*<!-- student\s*|\s*-->\s*")
TABLE_ROW = re.compile(r"\s*\|.*\|\s*")


# A control character in a source (other than tab): a script's "\f$" written without a raw
# string becomes a form feed followed by "$", and the reader sees "$R = 8$" as plain text.
REF_SPLIT = re.compile(r'\\(?:ref|subpage)\s+[\w.-]+\s+"[^"]*$')
CONTROL_CHAR = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def source_check(paths: list[Path], root: Path | None = None) -> list[str]:
    """An `<!-- instructor -->` block (or a `<!-- student` comment) that holds table rows: the
    comment line ends the Markdown table, so the book prints the rows after it as literal
    `| ... |` text and the student release loses them. Put the instructor's row in a sentence
    after the table instead. A \\ref whose quoted text runs onto the next line (REF_SPLIT).
    And a control character (CONTROL_CHAR) anywhere in a source."""
    problems: list[str] = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(root) if root and root in path.parents else path
        for i, line in enumerate(text.split("\n")):
            bad = CONTROL_CHAR.search(line.rstrip("\r"))
            if bad:
                problems.append(f"{name}:{i + 1}: control character {bad.group()!r} (a \\f written "
                                f"as an escape? Doxygen's \\f$ must reach the file as backslash, f)")
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if REF_SPLIT.search(line):
                problems.append(f"{name}:{i + 1}: a \\ref whose quoted text goes on on the next "
                                f"line (Doxygen prints the rest as text): keep it on one line")
        for i, line in enumerate(lines):
            if not MARKER_LINE.fullmatch(line):
                continue
            before = lines[i - 1] if i > 0 else ""
            after = lines[i + 1] if i + 1 < len(lines) else ""
            if TABLE_ROW.fullmatch(before) or TABLE_ROW.fullmatch(after):
                problems.append(f"{name}:{i + 1}: `{line.strip()}` inside a Markdown table (it "
                                f"ends the table: the rows after it print as literal text)")
    return problems


class _ReaderText(html.parser.HTMLParser):
    """The prose of a page as the reader sees it: no code, no scripts, no formulas (KaTeX's
    HTML, or TeX that did not render: math_check reports that), one line per block element."""
    SKIP = {"pre", "code", "script", "style", "svg", "math"}
    VOID = {"br", "hr", "img", "meta", "link", "input", "area", "base", "col", "embed", "source",
            "wbr", "param", "track"}
    BLOCK = {"p", "li", "tr", "td", "th", "div", "br", "h1", "h2", "h3", "h4", "h5", "h6",
             "dt", "dd", "table", "caption", "blockquote"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[bool] = []  # per open element: does it hide its text
        self.tags: list[str] = []
        self.parts: list[str] = []

    def _hidden(self) -> bool:
        return bool(self.stack) and self.stack[-1]

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in self.BLOCK:
            self.parts.append("\n")
        if tag in self.VOID:
            return
        cls = (a.get("class") or "").split()
        hide = (self._hidden() or tag in self.SKIP or "fragment" in cls or "line" in cls
                or "katex" in cls)
        self.stack.append(hide)
        self.tags.append(tag)

    def handle_startendtag(self, tag, attrs):
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if tag in self.tags:
            while self.tags:
                self.stack.pop()
                if self.tags.pop() == tag:
                    break
        if tag in self.BLOCK:
            self.parts.append("\n")

    def handle_data(self, data):
        if not self._hidden():
            self.parts.append(data)


MATH = re.compile(r"\\\(.*?\\\)|\\\[.*?\\\]|\$\$.*?\$\$|\\begin\{(\w+\*?)\}.*?\\end\{\1\}", re.S)
LITERAL_TABLE = re.compile(r"^\|.*\|$|\|\s*:?-{3,}:?\s*\|")
# A snippet marker that escaped into prose: an identifier alone in square brackets, as the
# `/// [name]` lines of the sources spell them ("[backend]", "[check_args]"); an index such as
# x[i] or a[0] follows a name and is not one.
SNIPPET_MARKER = re.compile(r"(?<![\w\])])\[[A-Za-z_][A-Za-z0-9_.-]+\]")
# An HTML tag printed as text: Doxygen escapes the markup of a heading (code in backticks
# becomes a visible "<tt>…</tt>" in the heading and in the contents beside it).
LITERAL_TAG = re.compile(r"</?(?:tt|code|b|i|em|strong|span|div|br|p|a|sub|sup|details|summary)"
                         r"\b[^<>]*>")
# A commit hash: 7 to 40 lowercase hex digits with both a digit and a letter, standing alone.
# A Doxygen command printed as text: \ref whose quoted text ran onto the next line (Doxygen then
# reads only the first line's part and prints the rest raw), or a command Doxygen did not know.
# The prose has no backslashes of its own (formulas and code are not reader text here).
DOXYGEN_COMMAND = re.compile(r"\\(?:ref|subpage|f[$\[\]]|htmlonly|endhtmlonly|if|endif|else|"
                             r"note|warning|see|anchor|image|dot|enddot)\b")
# What Doxygen prints for \ref to an \anchor with no text of its own: the id, as the link.
ID_AS_LINK_TEXT = re.compile(r'<a class="el" href="[^"#]*#([\w-]+)">\1</a>')
COMMIT_HASH = re.compile(r"(?<![\w.#/-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")


def reader_text(path: Path) -> list[str]:
    """The lines of prose of one HTML page (see _ReaderText), formulas taken out."""
    parser = _ReaderText()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    text = MATH.sub(" ", "".join(parser.parts))
    return [line.strip() for line in text.splitlines() if line.strip()]


def reader_text_check(html_dir: Path, pages: list[str]) -> list[str]:
    """Text meant for the Markdown parser or for the project, shown to the reader: literal table
    syntax (a table that did not render), snippet markers, commit hashes, HTML tags or Doxygen
    commands printed as text."""
    problems: list[str] = []
    for file in pages:
        page = (html_dir / file).read_text(encoding="utf-8", errors="replace")
        for m in ID_AS_LINK_TEXT.finditer(page):
            problems.append(f"{file}: a link whose text is its anchor's id ({m.group(1)}): give "
                            f"the \\ref a text in quotes, or the \\anchor's section a title")
        for line in reader_text(html_dir / file):
            short = line if len(line) <= 90 else line[:89] + "…"
            if LITERAL_TABLE.search(line):
                problems.append(f"{file}: literal Markdown table syntax (a table that did not "
                                f"render): \"{short}\"")
            for m in SNIPPET_MARKER.finditer(line):
                problems.append(f"{file}: snippet marker {m.group(0)} in the text: \"{short}\"")
            for m in LITERAL_TAG.finditer(line):
                problems.append(f"{file}: HTML tag {m.group(0)} printed as text (code in a "
                                f"heading? headings take plain words): \"{short}\"")
            for m in COMMIT_HASH.finditer(line):
                problems.append(f"{file}: a commit hash ({m.group(0)}) in the text: \"{short}\"")
            for m in DOXYGEN_COMMAND.finditer(line):
                problems.append(f"{file}: Doxygen command {m.group(0)} printed as text (a \\ref "
                                f"whose quoted text runs onto the next line?): \"{short}\"")
    return problems


# Tables have numbered captions (docs/tidy_html.py turns a `Table: ` paragraph directly above a
# table into "Table 7.2. ..."): a chapter's table without one cannot be referred to by number, and a
# `Table:` paragraph left in the text is a caption whose table did not follow it.
UNCAPTIONED_TABLE = re.compile(r'<table class="(?:markdownTable|book-tests)">\s*<tr[^>]*>(.*?)</tr>', re.S)
TAG = re.compile(r"<[^>]+>")
# Chapters whose tables may still go without a caption (say, while another branch writes them):
# empty, so the rule holds for every chapter. A test table gets its caption from
# docs/doxygen_filter.py when its chapter gives it none.
CAPTIONS_PENDING: frozenset[str] = frozenset()


def table_caption_check(html_dir: Path, pages: list[str],
                        pending: frozenset[str] = CAPTIONS_PENDING) -> list[str]:
    """Every table of a chapter page (lab_NN.html or lab_NN_bench.html, NN not in `pending`)
    has a caption, and no
    page shows a `Table:` paragraph (a caption no table follows)."""
    problems: list[str] = []
    for file in pages:
        for line in reader_text(html_dir / file):
            if re.match(r"Table:\s", line):
                short = line if len(line) <= 90 else line[:89] + "…"
                problems.append(f"{file}: a `Table:` caption with no table directly below it "
                                f"(a blank line, then the table): \"{short}\"")
        chapter = CHAPTER_PAGE.fullmatch(file)
        if not chapter or chapter.group(1) in pending:
            continue
        text = (html_dir / file).read_text(encoding="utf-8", errors="replace")
        for m in UNCAPTIONED_TABLE.finditer(text):
            cells = TAG.sub("", re.sub(r"</t[hd]>", "|", m.group(1))).split("|")
            header = " | ".join(c.strip() for c in cells if c.strip())
            problems.append(f"{file}: a table without a caption (header: {header[:80]}): write "
                            f"a paragraph `Table: what it shows.` above it, a blank line between")
    return problems



# ---- formulas: typeset at build time by KaTeX (docs/render_math.py) --------------------------
# A page shows finished formulas with no script: no TeX left as text, no KaTeX error box, KaTeX's
# stylesheet linked wherever there are formulas and every font it names on disk beside it, and no
# MathJax (a script that would typeset, or show raw TeX until it did).
# A whole formula where its delimiters pair up (reported once), else any delimiter alone.
RAW_TEX = re.compile(r"\\\((?:(?!\\\)).){0,300}?\\\)|\\\[(?:(?!\\\]).){0,300}?\\\]"
                     r"|\\[()\[\]]|\\f[$\[\]{}]|\$\$|\\begin\{", re.S)
KATEX_CSS = "katex.min.css"


class _MathAudit(html.parser.HTMLParser):
    """One page's formulas: the text outside code and outside rendered formulas (where raw TeX
    would show), KaTeX's error elements, its rendered formulas, its stylesheets and scripts."""
    SKIP = {"pre", "code", "script", "style", "textarea", "svg", "math"}
    VOID = _ReaderText.VOID

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool]] = []  # open elements: (tag, hides its text)
        self.text: list[str] = []
        self.formulas = 0
        self.errors: list[str] = []
        self.stylesheets: list[str] = []
        self.mathjax: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        cls = a.get("class", "").split()
        if "katex" in cls:
            self.formulas += 1
        if "katex-error" in cls:  # KaTeX's error box (throwOnError: false): red source text
            self.errors.append(a.get("title", "") or "(no message)")
        if tag == "link" and "stylesheet" in a.get("rel", "").split():
            self.stylesheets.append(a.get("href", ""))
        if tag == "script" and ("mathjax" in a.get("src", "").lower()
                                or "mathjax" in a.get("type", "").lower()):
            self.mathjax.append(a.get("src") or a.get("type"))
        if tag in self.VOID:
            return
        hidden = bool(self.stack and self.stack[-1][1]) or tag in self.SKIP \
            or bool({"fragment", "katex", "katex-error"} & set(cls))
        self.stack.append((tag, hidden))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID and self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in self.VOID or all(t != tag for t, _ in self.stack):
            return
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if not (self.stack and self.stack[-1][1]):
            self.text.append(data)


def math_check(html_dir: Path, pages: list[str] | None = None) -> tuple[int, list[str]]:
    """Every formula of the site typeset (module comment above); `pages` defaults to every
    HTML file of the site. Returns (formulas found rendered, problems)."""
    html_dir = html_dir.resolve()
    if pages is None:
        pages = sorted(str(p.relative_to(html_dir)) for p in html_dir.rglob("*.html"))
    problems: list[str] = []
    count = 0
    stylesheets: set[Path] = set()
    for file in pages:
        path = html_dir / file
        audit = _MathAudit()
        audit.feed(path.read_text(encoding="utf-8", errors="replace"))
        audit.close()
        count += audit.formulas
        text = "".join(audit.text)
        for m in RAW_TEX.finditer(text):
            tex = " ".join(m.group(0).split())
            tex = tex if len(tex) <= 80 else tex[:79] + "…"
            problems.append(f"{file}: raw TeX in the text (a formula KaTeX did not typeset): "
                            f"\"{tex}\"")
        for message in audit.errors:
            problems.append(f"{file}: a formula KaTeX could not render (katex-error): "
                            f"{message[:120]}")
        for what in audit.mathjax:
            problems.append(f"{file}: loads MathJax ({what}): the formulas are typeset at build "
                            f"time (docs/render_math.py)")
        katex_css = [(path.parent / urllib.parse.unquote(href)).resolve()
                     for href in audit.stylesheets
                     if urllib.parse.urlsplit(href).path.endswith(KATEX_CSS)]
        if audit.formulas and not any(css.is_file() for css in katex_css):
            problems.append(f"{file}: {audit.formulas} formula(s) but no {KATEX_CSS} linked "
                            f"that exists: they show unstyled")
        stylesheets.update(css for css in katex_css if css.is_file())
    for css in sorted(stylesheets):
        for url in sorted(set(re.findall(r"url\(\s*['\"]?([^'\")]+?)['\"]?\s*\)",
                                         css.read_text(encoding="utf-8", errors="replace")))):
            if url.startswith("data:"):
                continue
            font = (css.parent / urllib.parse.unquote(urllib.parse.urlsplit(url).path)).resolve()
            if urllib.parse.urlsplit(url).scheme or not font.is_file():
                problems.append(f"{css.relative_to(html_dir)}: {url} does not resolve to a file "
                                f"beside it (KaTeX's fonts are copied with it)")
    return count, problems

# The smallest text a figure may show, in CSS px, at the size it is drawn in the column (a
# figure wider than the column is scaled down to it), at every window width the layout is
# checked at (WIDTHS). A reader can open a figure full size by clicking it
# (docs/book-figures.js); at the column it must read without that. The narrowest column is the
# 1000 px window's (the sidebar still shown): 723 px, where an 820 px figure shows at 88%, so
# its text must be drawn at 12.5 px or more (svgfig.py draws 14). Narrower columns than these (a
# phone, or 900 px with the sidebar opened) never shrink a figure further: docs/tidy_html.py gives
# each picture a min-width at the same 11 px, and the figure scrolls sideways in its box there.
MIN_FIGURE_TEXT_PX = 11
# A higher bar at the window widths where a figure is drawn at (nearly) its own size. At 1400 px,
# the laptop window the book is read in most, the column (808 px on the narrowest page) draws an
# 820 px figure at 98.5%: its 14 px text at 13.8 px, so 12 px is the bar there; a figure whose
# text is drawn at 12 px and shrunk to the column, or a label set at 12 px, fails it. (Readers
# who measure a label's glyphs see less: 14 px DejaVu Sans draws 10 px capitals, 7.5 px x-height.)
# The wider columns (1920, 1200 and 900 px windows) draw a figure at least as large as 1400 px
# does, so the 12 px bar holds there whenever it holds at 1400 px; only the 1000 px column is
# narrower, and there the floor is MIN_FIGURE_TEXT_PX.
MIN_FIGURE_TEXT_AT = {1400: 12}


def min_figure_text(window: int | None) -> float:
    """The smallest figure text allowed at a `window` px wide window (None: the floor)."""
    return MIN_FIGURE_TEXT_AT.get(window, MIN_FIGURE_TEXT_PX) if window else MIN_FIGURE_TEXT_PX

# The content column (its scrollbar shown) at each window width of WIDTHS, the narrowest of the
# book's pages as the browser measures it with docs/book.css (the browser check prints them): the
# no-browser estimate draws each figure in these. At 900 px book.css folds the sidebar away behind
# a "☰ Chapters" button, so the column is wider there than at 1000 px.
COLUMN_AT = {1400: 808, 1920: 991, 1200: 853, 1000: 723, 900: 853}
COLUMN_PX = COLUMN_AT[1400]

_LENGTH = re.compile(r"\s*([\d.]+)\s*(px|pt)?\s*")


def _px(value: str | None) -> float | None:
    m = _LENGTH.fullmatch(value or "")
    if not m:
        return None
    return float(m.group(1)) * (4 / 3 if m.group(2) == "pt" else 1)


def _font_size(element, inherited: float) -> float:
    size = _px(element.get("font-size"))
    style = element.get("style") or ""
    m = re.search(r"font-size\s*:\s*([\d.]+(?:px|pt)?)", style)
    if m:
        size = _px(m.group(1))
    return inherited if size is None else size


def _scale_of(element) -> float:
    m = re.search(r"scale\(\s*([-\d.]+)(?:[\s,]+([-\d.]+))?\s*\)", element.get("transform") or "")
    if not m:
        return 1.0
    sx = abs(float(m.group(1)))
    sy = abs(float(m.group(2))) if m.group(2) else sx
    return min(sx, sy)


def figure_text(svg: Path, column_px: float) -> tuple[float, list[tuple[float, str]]]:
    """(the scale the figure is drawn at in a column `column_px` wide, [(text px at that scale,
    the text)]) for every text of the SVG."""
    import xml.etree.ElementTree as ET
    root = ET.parse(svg).getroot()
    view = (root.get("viewBox") or "").replace(",", " ").split()
    view_w = float(view[2]) if len(view) == 4 else None
    width = _px(root.get("width")) or view_w or column_px
    shown = min(width, column_px)
    scale = shown / (view_w or width)
    out: list[tuple[float, str]] = []

    def walk(e, size: float, factor: float) -> None:
        size = _font_size(e, size)
        factor *= _scale_of(e)
        tag = e.tag.rsplit("}", 1)[-1]
        if tag in ("text", "tspan"):
            words = " ".join("".join(e.itertext()).split())
            if words and (tag == "text" or (e.text or "").strip()):
                out.append((size * factor * scale, words))
            if tag == "text":
                for child in e:
                    child_size = _font_size(child, size)
                    if child_size != size and (child.text or "").strip():
                        out.append((child_size * factor * scale, " ".join(child.text.split())))
                return
        for child in e:
            walk(child, size, factor)

    walk(root, 16.0, 1.0)  # 16 px: the browser's default font size
    return scale, out


def _figures_of(html_dir: Path, pages: list[str]) -> dict[str, list[str]]:
    """Every SVG picture the pages show (objects, images, frames): file -> pages."""
    shown: dict[str, list[str]] = {}
    for file in pages:
        for tag, attr, url in _parse(html_dir / file).urls:
            if tag in ("object", "img", "iframe", "embed") and re.search(r"\.svg($|[?#])", url) \
                    and not urllib.parse.urlsplit(url).scheme:
                name = urllib.parse.unquote(urllib.parse.urlsplit(url).path)
                shown.setdefault(name, []).append(file)
    return shown


def _too_small(texts, min_px: float) -> tuple[int, str, str] | None:
    """Of [(px, text)], those under `min_px` (a twentieth of a px of slack for rounding): (how
    many, their sizes "9.5, 10", the first three quoted), or None when there are none."""
    small = sorted((px, t) for px, t in texts if px < min_px - 0.05)
    if not small:
        return None
    sizes = ", ".join(f"{s:g}" for s in sorted({round(px, 1) for px, _ in small}))
    return len(small), sizes, "; ".join(f'"{t[:30]}"' for _, t in small[:3])


def figure_text_check(html_dir: Path, pages: list[str], column_px: float = COLUMN_PX,
                      min_px: float | None = None, window: int | None = None) -> list[str]:
    """Text in a figure smaller than `min_px` at the column width: the SVG's font size times the
    scale it is drawn at. `window`: the window width that column belongs to, for the message, and
    for the bar when `min_px` is not given (min_figure_text: 12 px at 1400 px, else 11 px)."""
    if min_px is None:
        min_px = min_figure_text(window)
    problems: list[str] = []
    for name, where in sorted(_figures_of(html_dir, pages).items()):
        svg = html_dir / name
        if not svg.is_file():
            continue  # the link check reports it
        try:
            scale, texts = figure_text(svg, column_px)
        except Exception as e:  # noqa: BLE001 (a broken SVG is reported, not raised)
            problems.append(f"{name}: not readable as SVG ({e})")
            continue
        small = _too_small(texts, min_px)
        if small:
            count, sizes, samples = small
            problems.append(f"{name} (on {', '.join(sorted(set(where)))}): {count} text(s) "
                            f"smaller than {min_px:g} px at the {column_px:.0f} px column"
                            f"{f' of a {window} px window' if window else ''} "
                            f"(drawn at {scale:.0%}; sizes {sizes} px): {samples}")
    return problems


# ---- links ----------------------------------------------------------------------------------

@dataclass
class LinkReport:
    files: int = 0
    local: int = 0
    external: dict[str, int] = field(default_factory=dict)  # host -> count
    problems: list[str] = field(default_factory=list)


def link_check(html_dir: Path) -> LinkReport:
    """Every local URL resolves (file, and #fragment to an id); no external loads; external
    links only to reference hosts."""
    html_dir = html_dir.resolve()
    report = LinkReport()
    files = sorted(p for p in html_dir.rglob("*") if p.suffix in (".html", ".svg"))
    parsed: dict[Path, _Page] = {p: _parse(p) for p in files}
    report.files = len(files)

    def ids_of(path: Path) -> set[str]:
        if path not in parsed:
            parsed[path] = _parse(path)
        return parsed[path].ids

    # The sidebar and the menu are JavaScript data: check their URLs like links of index.html.
    scripts = sorted(html_dir.glob("navtree*.js")) + sorted(html_dir.glob("menudata.js"))
    for script in scripts:
        text = script.read_text(encoding="utf-8", errors="replace")
        urls = re.findall(r'\[ *"(?:[^"\\]|\\.)*", *"([^"]*)"', text)  # NAVTREE entries
        urls += re.findall(r"url:'([^']*)'", text)                      # menudata entries
        if script.name.startswith("navtreeindex"):
            urls += re.findall(r'^"([^"]+)":', text, re.M)
        index = html_dir / "index.html"
        parsed.setdefault(index, _parse(index))
        for url in urls:
            parsed[index].urls.append(("a", f"({script.name})", url))

    for path in files:
        rel = path.relative_to(html_dir)
        for i, (tag, attr, url) in enumerate(parsed[path].urls):
            if not url or url.startswith(("javascript:", "data:")):
                continue
            parts = urllib.parse.urlsplit(url)
            if parts.scheme in ("http", "https", "ftp") or url.startswith("//"):
                host = parts.hostname or ""
                report.external[host] = report.external.get(host, 0) + 1
                if tag in LOADED_TAGS:
                    report.problems.append(f"{rel}: <{tag} {attr}> loads {url} from the network")
                elif i not in parsed[path].in_references and host not in PAPER_HOSTS:
                    report.problems.append(f"{rel}: external link to {url} outside a chapter's "
                                           f"References section (and not to a paper host)")
                continue
            if parts.scheme:  # mailto:, file:, ... nothing else belongs in the book
                report.problems.append(f"{rel}: <{tag} {attr}=\"{url}\"> unexpected scheme")
                continue
            report.local += 1
            target = path if not parts.path else (path.parent / urllib.parse.unquote(parts.path))
            target = target.resolve()
            if html_dir not in target.parents and target != html_dir:
                report.problems.append(f"{rel}: {url} points outside the site")
                continue
            if not target.is_file():
                report.problems.append(f"{rel}: <{tag} {attr}=\"{url}\"> -> no such file")
                continue
            fragment = urllib.parse.unquote(parts.fragment)
            if fragment and target.suffix == ".html" and fragment not in ids_of(target):
                report.problems.append(f"{rel}: {url} -> no id \"{fragment}\" in "
                                       f"{target.relative_to(html_dir)}")
    return report


# ---- browser: headless chromium through Selenium and chromedriver ------------------------------
#
# The route is the maintained one Debian ships: python3-selenium drives chromium-driver, which
# drives chromium. Everything below is plain WebDriver (navigate, run a script, read the logs, size
# the window, take a screenshot); the "performance" log is chromedriver's own record of the page's
# network events, which is how the check sees that nothing came from the network.

# Window widths the layout is checked at: a laptop, a desktop screen, a smaller laptop (1200 px,
# the narrow sidebar), the narrowest window with the sidebar (1000 px: the narrowest column of
# all, 723 px), and a narrow window (a split screen, where book.css folds the sidebar away).
# Screenshots are taken at the first.
WIDTHS = (1400, 1920, 1200, 1000, 900)
# Figure text, as drawn in the page, is measured at every one of these widths and must be at least
# min_figure_text(width) at each: 12 px at 1400 px (MIN_FIGURE_TEXT_AT), MIN_FIGURE_TEXT_PX (11 px)
# at the others, where the narrowest column (1000 px) is the one that decides.
WINDOW_HEIGHT = 900
MAX_SHOT_HEIGHT = 16000  # taller pages are cut at this height in their full-page screenshot

# Chromium's flags: headless, offline (every host resolves to nothing, no proxy is reachable), no
# background services, the local files allowed to read each other (the SVG diagrams in frames).
# Scrollbars stay: a reader's window has them, and the page's own (#doc-content scrolls) takes
# 15 px from the column; with them hidden a table 10 px too wide for a reader's column passed.
CHROMIUM_FLAGS = [
    "--headless=new", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--disable-domain-reliability",
    "--disable-breakpad", "--mute-audio", "--no-pings",
    "--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication",
    "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>", "--allow-file-access-from-files",
    "--force-color-profile=srgb", f"--window-size={WIDTHS[0]},{WINDOW_HEIGHT}",
]

# Waits (an async WebDriver script) for the page's web fonts, KaTeX's among them, to finish
# loading (or failing); the formulas themselves are typeset at build time (docs/render_math.py),
# so nothing else is waited for. Answers the state of every KaTeX font face the page used.
WAIT_FOR_FONTS = """
const done = arguments[arguments.length - 1];
const report = () => done([...document.fonts].filter(f => /^KaTeX_/.test(f.family))
    .map(f => ({family: f.family, style: f.style, weight: f.weight, status: f.status})));
const timer = setTimeout(report, 30000);
document.fonts.ready.then(() => { clearTimeout(timer); report(); });
"""

# What the page shows: its rendered formulas (KaTeX's HTML, made at build time), any KaTeX error
# box (red TeX: what throwOnError: false would leave), the diagrams and pictures (SVG in frames,
# objects or images) and whether each one loaded.
AUDIT = r"""
const contents = document.querySelector("div.contents") || document.body;
const rendered = contents.querySelectorAll(".katex").length;
// The formulas a reader sees with every fold closed: a browser loads KaTeX's fonts only for
// text it lays out, so a page whose formulas all sit in closed folds loads none until one opens.
const shown = [...contents.querySelectorAll(".katex")]
    .filter(k => !k.closest("details:not([open])")).length;
const errors = [...contents.querySelectorAll(".katex-error")]
    .map(e => (e.getAttribute("title") || e.textContent).slice(0, 80));
// A formula drawn in KaTeX's own fonts: the stylesheet loaded and its fonts with it (without
// them KaTeX's HTML is a jumble of the page's font at the wrong sizes).
const styled = !rendered || getComputedStyle(contents.querySelector(".katex")).fontFamily.includes("KaTeX_Main");
// An SVG in a frame or an object: its document must be an <svg> with an area.
const svgs = [...contents.querySelectorAll("iframe, object, embed")]
    .map(e => ({url: e.src || e.data || "", e}))
    .filter(f => /\.svg($|[?#])/.test(f.url))
    .map(({url, e}) => {
      let ok = false;
      try {
        const root = (e.contentDocument || e.getSVGDocument()).documentElement;
        const b = root.localName === "svg" ? root.getBBox() : {width: 0, height: 0};
        ok = b.width * b.height > 0;
      } catch (err) { ok = false; }
      return {url, ok};
    })
    .concat([...contents.querySelectorAll("img")]
      .filter(i => /\.svg($|[?#])/.test(i.src))
      .map(i => ({url: i.src, ok: i.complete && i.naturalWidth > 0})));
const figures = contents.querySelectorAll("div.dotgraph, div.image").length;
// Every picture opens full size on click (docs/book-figures.js wraps it in a link to itself).
const unlinked = [...contents.querySelectorAll("div.image object, div.image img")]
    .filter(e => { const a = e.closest("a.book-figure-link");
                   return !a || a.getAttribute("href") !== (e.getAttribute("data") || e.getAttribute("src")); })
    .map(e => e.getAttribute("data") || e.getAttribute("src") || "");
return {rendered, shown, errors, styled, svgs, figures, unlinked, title: document.title};
"""

# The layout check, in the rendered page at the window's width. The content column is the page's
# div.textblock (div.contents where there is none). Every visible element inside it must fit:
# nothing may reach past the column's right edge, and nothing that scrolls or clips (overflow other
# than visible) may hold more than it shows, since either way part of it is cut off. Only the
# outermost offender of a subtree is reported. The text must be rendered: no literal ** (Markdown
# bold that did not apply) or backtick (a code span that did not), no raw TeX, no typographic quotes or dashes inside inline code (a code
# span that was read as prose), no table cell squeezed to a word or two per line, and no numbered
# list that restarts inside a section (a list split by a snippet, or a wrapped line that began with
# a number and a dot). Each problem names the element and the section it sits in.
LAYOUT = r"""
const contents = document.querySelector("div.contents");
if (!contents) return {problems: ["the page has no div.contents"], elements: 0};
// The answers of "Check yourself", the hints of a test table and the long listings of a bench
// page are folded in <details>: open them, so that what a reader sees after a click is measured
// too (a closed one has no boxes).
for (const d of contents.querySelectorAll("details")) d.open = true;
const column = contents.querySelector(":scope > div.textblock") || contents;
const box = column.getBoundingClientRect();
const problems = [];
let section = "(top of the page)";
let elements = 0;
const flagged = new Set();
const short = (s, n) => { s = (s || "").replace(/\s+/g, " ").trim(); return s.length > n ? s.slice(0, n - 1) + "…" : s; };
const name = (e) => {
  const cls = typeof e.className === "string" && e.className.trim() ? "." + e.className.trim().split(/\s+/).join(".") : "";
  const what = e.getAttribute("src") || e.getAttribute("data") || short(e.textContent, 70);
  return `<${e.localName}${cls}> "${what}"`;
};
const where = () => `in #${section}`;
const inCode = (e) => !!e.closest("code, pre, div.fragment, script, style, .katex");
const walker = document.createTreeWalker(column, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
  acceptNode(node) {
    if (node.nodeType === Node.TEXT_NODE) return NodeFilter.FILTER_ACCEPT;
    if (node.matches("script, style, noscript, .katex-mathml")) return NodeFilter.FILTER_REJECT;  // (KaTeX's hidden MathML: text for screen readers, clipped to 1 px on purpose)
    const cs = getComputedStyle(node);
    if (cs.display === "none" || cs.visibility === "hidden" || cs.position === "fixed") return NodeFilter.FILTER_REJECT;
    for (let p = node.parentElement; p && p !== column; p = p.parentElement) {
      if (flagged.has(p)) return NodeFilter.FILTER_REJECT;
      // A formula is measured as a whole: KaTeX's inner boxes (struts, clipped stretchy
      // glyphs) are its own business.
      if (p.classList.contains("katex")) return NodeFilter.FILTER_REJECT;
    }
    return NodeFilter.FILTER_ACCEPT;
  }
});
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  if (n.nodeType === Node.TEXT_NODE) {
    const parent = n.parentElement;
    const text = n.nodeValue;
    if (!inCode(parent)) {
      if (text.includes("**")) problems.push(`literal ** (bold that did not render) ${where()}: "${short(text, 80)}"`);
      if (text.includes("`")) problems.push(`literal backtick (a code span that did not render) ${where()}: "${short(text, 80)}"`);
      const tex = text.match(/\\f[$\[\]]|\\\(|\\\)|\\\[|\\\]|\\begin\{|\$\$/);
      if (tex) problems.push(`raw TeX ${where()}: "${short(text, 80)}"`);
    } else if (parent.closest("code") && !parent.closest("pre, div.fragment") && /[\u2018\u2019\u201c\u201d\u2013]/.test(text)) {
      problems.push(`curly quote or en dash (Markdown typography) inside inline code ${where()}: "${short(text, 80)}"`);
    }
    continue;
  }
  const e = n;
  if (/^h[1-6]$/.test(e.localName)) {
    const a = e.querySelector("a.anchor[id]") || (e.id ? e : null);
    section = a ? a.id : short(e.textContent, 40);
  }
  const r = e.getBoundingClientRect();
  if (r.width === 0 && r.height === 0) continue;
  ++elements;
  if (r.right > box.right + 1) {
    flagged.add(e);
    problems.push(`${name(e)} ${where()} is ${Math.round(r.width)} px wide and reaches ${Math.round(r.right - box.right)} px past the ${Math.round(box.width)} px column`);
    continue;
  }
  const cs = getComputedStyle(e);
  if (cs.overflowX !== "visible" && e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0) {
    flagged.add(e);
    problems.push(`${name(e)} ${where()} holds ${e.scrollWidth} px in ${e.clientWidth} px: it ${cs.overflowX === "hidden" || cs.overflowX === "clip" ? "cuts off" : "scrolls sideways to show"} the rest`);
    continue;
  }
  if ((e.localName === "td" || e.localName === "th") && !inCode(e)) {
    const words = e.textContent.trim().split(/\s+/).filter(Boolean).length;
    if (words >= 6) {
      const range = document.createRange();
      range.selectNodeContents(e);
      const tops = [...range.getClientRects()].filter(q => q.width > 0 && q.height > 0).map(q => q.bottom).sort((a, b) => a - b);
      let lines = tops.length ? 1 : 0;
      for (let i = 1; i < tops.length; ++i) if (tops[i] - tops[i - 1] > 6) ++lines;
      if (lines * 2 > words) problems.push(`table cell ${where()} squeezed to ${lines} lines for ${words} words (${Math.round(r.width)} px wide): "${short(e.textContent, 60)}"`);
    }
  }
}
// Numbered lists: a list that follows another in the same section starts again at 1 (Doxygen
// writes no start number), and a one-item numbered list inside a bullet is a wrapped line that
// began with "2022." or the like.
for (const ol of column.querySelectorAll("ol")) {
  let sec = "(top of the page)";
  for (let p = ol; p && p !== column; p = p.parentElement) {
    for (let s = p.previousElementSibling; s; s = s.previousElementSibling) {
      if (/^h[1-6]$/.test(s.localName)) { const a = s.querySelector("a.anchor[id]"); sec = a ? a.id : short(s.textContent, 40); p = null; break; }
    }
    if (!p) break;
  }
  for (let s = ol.previousElementSibling; s; s = s.previousElementSibling) {
    if (/^h[1-6]$/.test(s.localName)) break;
    if (s.localName === "ol") {
      problems.push(`numbered list in #${sec} starts again at 1 after an earlier list of ${s.children.length} item(s) in the same section: "${short(ol.textContent, 60)}"`);
      break;
    }
  }
  if (ol.children.length === 1 && ol.parentElement && ol.parentElement.localName === "li" && ol.parentElement.parentElement.localName === "ul") {
    problems.push(`one-item numbered list inside a bullet in #${sec} (a wrapped line that begins with a number and a dot?): "${short(ol.textContent, 60)}"`);
  }
}
const doc = document.getElementById("doc-content") || document.scrollingElement;
if (doc.scrollWidth > doc.clientWidth + 1) problems.push(`the page scrolls sideways: ${doc.scrollWidth} px in a ${doc.clientWidth} px window`);
// Doxygen's text scrolls in #doc-content; if the window scrolls too (something placed against
// the window, such as KaTeX's hidden MathML without a positioned ancestor), a second scrollbar
// takes its width from the column.
const win = document.scrollingElement;
if (doc !== win && win.scrollHeight > win.clientHeight + 1) problems.push(`the window scrolls as well as #doc-content (${win.scrollHeight} px in ${win.clientHeight} px): a second scrollbar narrows the column`);
return {problems, elements, column: Math.round(box.width)};
"""

# Figure text as the reader sees it, in the page at the window's width: for every text of every
# SVG figure (in an object, frame or embed, or an <img>), its computed font size (attributes, CSS
# classes and <style> rules alike) times every scale between the SVG's user space and the page:
# transforms inside the SVG, the viewBox fitted to the box CSS gives the figure (max-width,
# width), and any CSS transform on the figure itself. An <img> keeps its document to itself, so
# its SVG is read again and laid out off screen in a box of the size the <img> is drawn at.
FIGURE_TEXT = r"""
const contents = document.querySelector("div.contents") || document.body;
const out = [];
const measure = (root, outerScale) => {
  const texts = [];
  for (const t of root.querySelectorAll("text, tspan")) {
    const own = [...t.childNodes].some(n => n.nodeType === Node.TEXT_NODE && n.nodeValue.trim());
    if (!own) continue;
    const cs = t.ownerDocument.defaultView.getComputedStyle(t);
    if (cs.display === "none" || cs.visibility === "hidden") continue;
    const m = t.getScreenCTM();
    if (!m) continue;
    const scale = Math.sqrt(Math.abs(m.a * m.d - m.b * m.c)) * outerScale;
    texts.push([parseFloat(cs.fontSize) * scale, t.textContent.replace(/\s+/g, " ").trim()]);
  }
  return texts;
};
for (const e of contents.querySelectorAll("object, iframe, embed, img")) {
  const url = e.getAttribute("data") || e.getAttribute("src") || "";
  if (!/\.svg($|[?#])/.test(url)) continue;
  const box = e.getBoundingClientRect();
  if (box.width === 0 || box.height === 0) continue;
  // A CSS transform on the element (or an ancestor) scales its box but not its layout size.
  const outer = e.offsetWidth ? box.width / e.offsetWidth : 1;
  let texts = null, drawn = box.width;
  if (e.localName === "img") {
    const request = new XMLHttpRequest();
    try { request.open("GET", e.src, false); request.send(); } catch (err) { }
    const svg = request.responseXML && request.responseXML.documentElement;
    if (svg && svg.localName === "svg") {
      const holder = document.createElement("div");
      holder.style.cssText = `position:absolute;left:-100000px;top:0;width:${e.clientWidth}px;height:${e.clientHeight}px`;
      const copy = document.importNode(svg, true);
      copy.setAttribute("width", e.clientWidth);
      copy.setAttribute("height", e.clientHeight);
      holder.appendChild(copy);
      document.body.appendChild(holder);
      texts = measure(copy, outer);
      holder.remove();
    }
  } else {
    let doc = null;
    try { doc = e.contentDocument || (e.getSVGDocument && e.getSVGDocument()); } catch (err) { }
    if (doc && doc.documentElement && doc.documentElement.localName === "svg") texts = measure(doc.documentElement, outer);
  }
  if (texts) out.push({url, drawn: Math.round(drawn), texts});
}
return out;
"""


def _figure_text(driver, width: int, min_px: float) -> list[str]:
    """Figure text smaller than `min_px` as drawn in the page now open, at a window `width`
    wide (FIGURE_TEXT): one problem per figure."""
    problems = []
    for figure in driver.execute_script(FIGURE_TEXT):
        small = _too_small(figure["texts"], min_px)
        if small:
            count, sizes, samples = small
            problems.append(f"figure {Path(figure['url']).name}: {count} text(s) smaller than "
                            f"{min_px:g} px as drawn at a {width} px window (the figure "
                            f"{figure['drawn']} px wide; sizes {sizes} px): {samples}")
    return problems


# The height of the whole page: the content scrolls inside #doc-content, not the document.
PAGE_HEIGHT = """
const d = document.getElementById("doc-content");
const top = d ? d.getBoundingClientRect().top : 0;
return Math.ceil(top + (d ? d.scrollHeight : document.documentElement.scrollHeight)) + 40;
"""

# The elements a reader should see whole, cut out as their own screenshots: each chapter's test
# table, every figure, and the page's widest code snippet.
KEY_ELEMENTS = r"""
const out = [];
const contents = document.querySelector("div.contents");
if (!contents) return out;
const tests = contents.querySelector("a.anchor[id$='_tests']");
if (tests) {
  let h = tests.closest("h1, h2, h3");
  for (let s = h && h.nextElementSibling; s && !/^h[12]$/.test(s.localName); s = s.nextElementSibling) {
    if (s.matches("table")) { out.push(["tests-table", s]); break; }
  }
}
contents.querySelectorAll("div.dotgraph, div.image").forEach((f, i) => {
  const m = f.querySelector("img, iframe, object");
  const src = m ? (m.getAttribute("src") || m.getAttribute("data") || "") : "";
  out.push(["figure-" + (i + 1) + "-" + src.replace(/^.*\//, "").replace(/\.[a-z]+$/, "").replace(/[^A-Za-z0-9_-]/g, "_"), f]);
});
let widest = null, most = 0;
contents.querySelectorAll("div.fragment").forEach(f => {
  const longest = Math.max(0, ...[...f.querySelectorAll("div.line")].map(l => l.textContent.length));
  if (longest > most) { most = longest; widest = f; }
});
if (widest) out.push(["widest-code", widest]);
return out;
"""


@dataclass
class PageResult:
    file: str
    formulas: int = 0
    figures: int = 0
    svgs_loaded: int = 0
    columns: dict[int, int] = field(default_factory=dict)  # window width -> column width (px)
    screenshot: str = ""
    problems: list[str] = field(default_factory=list)
    layout: int = 0  # how many of the problems the layout check found
    figure_text: int = 0  # how many of them are figure text too small as drawn (FIGURE_TEXT)


def _find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _find_chromedriver() -> str | None:
    for path in (shutil.which("chromedriver"), "/usr/bin/chromedriver",
                 "/usr/lib/chromium/chromedriver"):
        if path and os.access(path, os.X_OK):
            return path
    return None


def _start_browser(log_path: Path):
    """Chromium under chromedriver, through Selenium (python3-selenium, chromium-driver)."""
    from selenium import webdriver  # Debian: python3-selenium
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _find_chromium()
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    # Root cannot use chromium's sandbox, nor can a container without user namespaces; the pages
    # are local files the build just wrote, opened with the network off.
    options.add_argument("--no-sandbox")
    options.add_argument("--user-data-dir=" + tempfile.mkdtemp(prefix="pa-docs-chromium-"))
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    service = Service(executable_path=_find_chromedriver(), log_path=str(log_path))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_script_timeout(60)
    driver.set_page_load_timeout(60)
    # What chromium did before the first page (its new-tab page) is not the book's: drop it.
    driver.get("about:blank")
    for log in ("browser", "performance"):
        driver.get_log(log)
    return driver


def _font_problems(fonts: list[dict], formulas: int, styled: bool) -> list[str]:
    """What WAIT_FOR_FONTS and AUDIT say is wrong with a page's formulas' fonts: KaTeX's
    stylesheet not applied, a KaTeX font that failed to load, or formulas with none loaded.
    `formulas` counts the formulas shown with the folds closed (AUDIT's `shown`): only those
    make the browser load a font."""
    problems = []
    if not styled:
        problems.append("the formulas are not in KaTeX's fonts: katex/katex.min.css did not load")
    for f in fonts:
        if f["status"] == "error":
            problems.append(f"KaTeX font {f['family']} ({f['style']}, {f['weight']}) did not load")
    if formulas and styled and not any(f["status"] == "loaded" for f in fonts):
        problems.append("KaTeX's stylesheet loaded, but none of its fonts did")
    return problems


def _log_problems(driver) -> list[str]:
    """Console errors and exceptions, failed loads, and any request that left the machine."""
    problems = []
    for entry in driver.get_log("browser"):
        if entry.get("level") == "SEVERE":
            problems.append(f"console: {entry.get('message', '')[:200]}")
    for entry in driver.get_log("performance"):
        try:
            message = json.loads(entry["message"])["message"]
        except (KeyError, ValueError):
            continue
        method, params = message.get("method"), message.get("params", {})
        if method == "Network.requestWillBeSent":
            url = params.get("request", {}).get("url", "")
            if not url.startswith(("file:", "data:", "about:", "blob:")):
                problems.append(f"network request: {url}")
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            problems.append(f"failed to load a resource: {params.get('errorText')}")
    return problems


def _layout(driver, width: int) -> dict:
    driver.set_window_size(width, WINDOW_HEIGHT)
    # Doxygen's resize.js lays the sidebar and the content out again on resize: let it settle.
    # (The formulas are HTML made at build time: the browser lays them out with the text.)
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.dispatchEvent(new Event('resize')); setTimeout(done, 200);")
    return driver.execute_script(LAYOUT)


def _screenshots(driver, file: str, shots_dir: Path, width: int) -> str:
    """A full-page screenshot (the window as tall as the page, capped) and one of each key
    element; returns the full page's path."""
    total = int(driver.execute_script(PAGE_HEIGHT) or WINDOW_HEIGHT)
    driver.set_window_size(width, max(WINDOW_HEIGHT, min(total, MAX_SHOT_HEIGHT)))
    driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "window.dispatchEvent(new Event('resize')); setTimeout(done, 400);")
    stem = Path(file).stem
    page = shots_dir / f"{stem}.png"
    driver.save_screenshot(str(page))
    # Each key element on its own: the window as tall as the element, the element scrolled to
    # the top of the content (the page may be taller than the capped screenshot).
    for label, element in driver.execute_script(KEY_ELEMENTS):
        tall = int(driver.execute_script("return arguments[0].getBoundingClientRect().height",
                                         element))
        driver.set_window_size(width, max(WINDOW_HEIGHT, min(tall + 300, MAX_SHOT_HEIGHT)))
        driver.execute_async_script(
            "const [e, done] = arguments; e.scrollIntoView({block: 'start'});"
            "setTimeout(done, 150);", element)
        element.screenshot(str(shots_dir / "elements" / f"{stem}--{label}.png"))
    driver.set_window_size(width, WINDOW_HEIGHT)
    return str(page)


# A click on a figure opens the viewer (docs/book-figures.js): the picture loaded and fitted to
# the window, larger than the page shows it, with the figure's caption; Escape closes it.
VIEWER = """
const link = document.querySelector("a.book-figure-link");
const shown = (link.firstElementChild || link).getBoundingClientRect().width;
link.dispatchEvent(new MouseEvent("click", {bubbles: true, cancelable: true, button: 0}));
const done = arguments[arguments.length - 1];
setTimeout(() => {
  const viewer = document.querySelector("div.book-viewer");
  const open = viewer && !viewer.hidden && getComputedStyle(viewer).display !== "none";
  const img = viewer && viewer.querySelector("img");
  const caption = viewer ? viewer.querySelector(".book-viewer-caption").textContent : "";
  const figure = link.closest("div.image").querySelector(".caption");
  const result = {open, loaded: !!(img && img.complete && img.naturalWidth > 0),
                  width: img ? img.getBoundingClientRect().width : 0, shown,
                  caption_ok: !figure || caption === figure.textContent};
  document.dispatchEvent(new KeyboardEvent("keydown", {key: "Escape", bubbles: true}));
  result.closed = !viewer || viewer.hidden;
  done(result);
}, 500);
"""


def _viewer_problems(driver) -> list[str]:
    """What is wrong with the figure viewer on this page (docs/book-figures.js), if anything."""
    r = driver.execute_async_script(VIEWER)
    problems = []
    if not r["open"]:
        problems.append("a click on a figure did not open the figure viewer (docs/book-figures.js)")
    else:
        if not r["loaded"]:
            problems.append("the figure viewer opened without its picture")
        elif r["width"] <= r["shown"]:
            problems.append(f"the figure viewer shows the picture {r['width']:.0f} px wide, no larger "
                            f"than the page's {r['shown']:.0f} px")
        if not r["caption_ok"]:
            problems.append("the figure viewer does not show the figure's caption")
        if not r["closed"]:
            problems.append("Escape did not close the figure viewer")
    return problems


SEARCH_WORD = "tolerance"   # in the book's prose, in no code symbol or page title
SEARCH_INDEX = "search_book.js"   # docs/search_index.py writes it

# Types `arguments[0]` into the search box (opening the folded sidebar first where the box is
# hidden) and waits up to 10 s for results: {box, hits: [{href, text}], inside}. The first search
# of a page loads the 540 KiB index; on a loaded two-core machine that once took over 3 s.
SEARCH = r"""
const word = arguments[0], done = arguments[arguments.length - 1];
let field = document.getElementById("MSearchField");
if (!field) { done({box: false, hits: []}); return; }
if (field.getBoundingClientRect().width < 20 || getComputedStyle(field).visibility === "hidden") {
  const toggle = document.querySelector("button.book-contents-toggle");
  if (toggle && getComputedStyle(toggle).display !== "none") toggle.click();
}
field = document.getElementById("MSearchField");
field.focus();
field.value = word;
field.dispatchEvent(new Event("input", {bubbles: true}));
field.dispatchEvent(new KeyboardEvent("keyup", {key: word.slice(-1), bubbles: true}));
const start = Date.now();
(function poll() {
  const panel = document.getElementById("book-search-results");
  const hits = panel && !panel.hidden ? [...panel.querySelectorAll("a[href]")] : [];
  if (hits.length || Date.now() - start > 10000) {
    const r = panel && !panel.hidden ? panel.getBoundingClientRect() : null;
    done({box: true, hits: hits.map(a => ({href: a.href, text: a.textContent})),
          inside: !r || (r.left >= 0 && r.right <= window.innerWidth + 1 && r.top >= 0
                         && r.top < window.innerHeight - 100)});
  } else setTimeout(poll, 50);
})();
"""


def _search_problems(driver, html_dir: Path, page: str, word: str = SEARCH_WORD,
                     widths: tuple[int, ...] = (900, 1400)) -> list[str]:
    """What is wrong with the search box on `page`: see SEARCH. The driver is left on the page
    the first result of the last width opened."""
    from selenium.webdriver.common.by import By
    if not (html_dir / SEARCH_INDEX).is_file():
        return [f"no search index: {SEARCH_INDEX} is missing (docs/search_index.py)"]
    problems: list[str] = []
    for width in widths:
        driver.set_window_size(width, WINDOW_HEIGHT)
        driver.get((html_dir.resolve() / page).as_uri())
        r = driver.execute_async_script(SEARCH, word)
        if not r["box"]:
            return problems + [f"at {width} px: no search box (#MSearchField) on {page}"]
        if not r["hits"]:
            problems.append(f"at {width} px: \"{word}\" typed into the search box on {page} shows "
                            f"no result (docs/book-search.js, {SEARCH_INDEX})")
            continue
        if not r["inside"]:
            problems.append(f"at {width} px: the search results are not within the window")
        for hit in r["hits"]:
            target = hit["href"].split("#")[0]
            name = target.rsplit("/", 1)[-1]
            path = html_dir / name
            if not target.startswith("file:") or not path.is_file():
                problems.append(f"at {width} px: search result \"{hit['text'][:60]}\" links to "
                                f"{hit['href']}, no page of the book")
            elif word.lower() not in path.read_text(encoding="utf-8").lower():
                problems.append(f"at {width} px: search result \"{hit['text'][:60]}\" links to "
                                f"{name}, which does not hold \"{word}\"")
        first = r["hits"][0]["href"]
        driver.find_element(By.CSS_SELECTOR, "#book-search-results a[href]").click()
        deadline = time.monotonic() + 3
        while driver.current_url != first and time.monotonic() < deadline:
            time.sleep(0.05)
        if driver.current_url != first:
            problems.append(f"at {width} px: a click on the first search result did not open "
                            f"{first} (the window shows {driver.current_url})")
        elif word.lower() not in driver.execute_script(
                "return document.body.textContent.toLowerCase()"):
            problems.append(f"at {width} px: the first search result opened {first}, whose text "
                            f"does not hold \"{word}\"")
    return problems


def browser_check(html_dir: Path, pages: list[str], shots_dir: Path,
                  chapters: set[str] | None = None) -> list[PageResult]:
    """Opens each page in headless chromium from disk, offline; see the module docstring.
    `chapters`: pages that must show at least one rendered formula and one figure."""
    missing = [what for what, found in (("chromium (apt-get install chromium)", _find_chromium()),
                                        ("chromedriver (apt-get install chromium-driver)",
                                         _find_chromedriver()))
               if not found]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("Selenium for this Python (apt-get install python3-selenium; run the "
                       "check with /usr/bin/python3)")
    if missing:
        result = PageResult("(browser)")
        result.problems += [f"not found: {m}" for m in missing]
        return [result]
    from selenium.common.exceptions import WebDriverException

    chapters = chapters or set()
    shots_dir.mkdir(parents=True, exist_ok=True)
    (shots_dir / "elements").mkdir(exist_ok=True)
    for old in list(shots_dir.glob("*.png")) + list((shots_dir / "elements").glob("*.png")):
        old.unlink()
    results: list[PageResult] = []
    try:
        driver = _start_browser(shots_dir / "chromedriver.log")
    except WebDriverException as e:
        result = PageResult("(browser)")
        result.problems.append(f"chromium did not start under chromedriver: {e.msg}")
        return [result]
    viewer_checked = False  # the figure viewer, tried on the first page that has a figure
    try:
        for file in pages:
            result = PageResult(file)
            results.append(result)
            try:
                driver.set_window_size(WIDTHS[0], WINDOW_HEIGHT)
                driver.get((html_dir.resolve() / file).as_uri())
                fonts = driver.execute_async_script(WAIT_FOR_FONTS)
                time.sleep(0.3)  # late console messages and requests
                audit = driver.execute_script(AUDIT)
                result.formulas, result.figures = audit["rendered"], audit["figures"]
                result.problems += _font_problems(fonts, audit["shown"], audit["styled"])
                for tex in audit["errors"]:
                    result.problems.append(f"formula KaTeX could not render (katex-error): "
                                           f"\"{tex}\"")
                for svg in audit["svgs"]:
                    if svg["ok"]:
                        result.svgs_loaded += 1
                    else:
                        result.problems.append(f"picture {Path(svg['url']).name} did not load as SVG")
                for url in audit.get("unlinked", []):
                    result.problems.append(f"picture {Path(url).name} does not open full size on "
                                           f"click (no link to it: docs/book-figures.js)")
                if audit.get("unlinked") == [] and not viewer_checked and driver.execute_script(
                        "return document.querySelector('a.book-figure-link') !== null"):
                    viewer_checked = True
                    result.problems += _viewer_problems(driver)
                if file in chapters and result.formulas == 0:
                    result.problems.append("a chapter with no rendered formula")
                if file in chapters and result.figures == 0:
                    result.problems.append("a chapter with no figure")
                seen: set[str] = set()
                for width in WIDTHS:
                    layout = _layout(driver, width)
                    result.columns[width] = layout.get("column", 0)
                    for p in layout["problems"]:
                        key = re.sub(r"\d+ px", "N px", p)  # the same defect at both widths: once
                        if key not in seen:
                            seen.add(key)
                            result.problems.append(f"at {width} px: {p}")
                            result.layout += 1
                    found = _figure_text(driver, width, min_figure_text(width))
                    result.problems += found
                    result.figure_text += len(found)
                result.problems += _log_problems(driver)
                result.screenshot = _screenshots(driver, file, shots_dir, WIDTHS[0])
            except WebDriverException as e:
                result.problems.append(f"browser: {e.msg}")
        if pages:
            result = PageResult("(search box)")
            results.append(result)
            try:
                result.problems += _search_problems(driver, html_dir, pages[0])
            except WebDriverException as e:
                result.problems.append(f"browser: {e.msg}")
    finally:
        driver.quit()
    return results


def run_checks(html_dir: Path, repo: Path, shots_dir: Path, browser: bool = True) -> int:
    """Runs every check, prints a report; returns the number of problems."""
    count = 0
    print(f"== Book structure ({html_dir})")
    problems = structure_check(html_dir, repo)
    for p in problems:
        print(f"  FAIL {p}")
    if not problems:
        chapters = [f for f, _ in book_pages(html_dir) if re.fullmatch(r"lab_\d\d\.html", f)]
        print(f"  ok: the index and the sidebar list {len(chapters)} chapter(s) in order, "
              f"each with its {len(CHAPTER_SECTIONS)} sections on four pages, the lesson "
              f"({len(LESSON_SECTIONS)}; a long one goes on on a second page), the bench after it "
              f"({len(BENCH_SECTIONS)}), the notes ({len(NOTES_SECTIONS)}) and the measurements "
              f"({len(MEASURED_SECTIONS)}), linked both ways; every heading has an explicit "
              f"id")
    count += len(problems)

    print("== Hints (labs/NN-*/hints.json: three levels per step, every § link a heading)")
    problems = hints_check(repo)
    for p in problems:
        print(f"  FAIL {p}")
    if not problems:
        print(f"  ok: {len(_lab_dirs(repo))} labs, every step with its three levels and its "
              "§ links resolved")
    count += len(problems)

    print("== Book sources (Markdown)")
    problems = source_check(book_sources(repo), repo.resolve())
    for p in problems:
        print(f"  FAIL {p}")
    if not problems:
        print("  ok: no instructor or student marker inside a Markdown table")
    count += len(problems)

    print("== Reader text (every page of the book)")
    pages = [f for f, _ in book_pages(html_dir)]
    problems = reader_text_check(html_dir, pages)
    for p in problems:
        print(f"  FAIL {p}")
    if not problems:
        print(f"  ok: {len(pages)} pages with no literal table syntax, snippet marker or commit "
              f"hash in their text")
    count += len(problems)

    print("== Table captions")
    problems = table_caption_check(html_dir, pages)
    for p in problems:
        print(f"  FAIL {p}")
    if not problems:
        waiting = f" (not yet required in labs {', '.join(sorted(CAPTIONS_PENDING))})" \
            if CAPTIONS_PENDING else ""
        print(f"  ok: every chapter's table has a numbered caption{waiting}; every `Table:` "
              f"caption is above its table")
    count += len(problems)

    print("== Formulas (typeset at build time by KaTeX: docs/render_math.py)")
    formulas, problems = math_check(html_dir)
    for p in problems:
        print(f"  FAIL {p}")
    if not problems:
        print(f"  ok: {formulas} formulas rendered; no raw TeX, KaTeX error or MathJax script in "
              f"any page; KaTeX's stylesheet and its fonts resolve")
    count += len(problems)

    print("== Link check")
    links = link_check(html_dir)
    for p in links.problems:
        print(f"  FAIL {p}")
    hosts = ", ".join(f"{h} ({n})" for h, n in sorted(links.external.items())) or "none"
    print(f"  {links.files} files, {links.local} local links/sources"
          f"{' all resolve' if not links.problems else ''}; external links: {hosts}")
    count += len(links.problems)

    if browser:
        widths = ", ".join(f"{w}" for w in WIDTHS)
        print(f"== Browser check (headless chromium through Selenium, offline; layout at {widths} px)")
        pages = [f for f, _ in book_pages(html_dir)]
        if (html_dir / "files.html").is_file():
            pages.append("files.html")
        chapters = {f for f in pages if re.fullmatch(r"lab_\d\d\.html", f)}
        layout = 0
        results = browser_check(html_dir, pages, shots_dir, chapters)
        for r in results:
            status = "ok  " if not r.problems else "FAIL"
            columns = "/".join(str(c) for c in r.columns.values())
            print(f"  {status} {r.file:28} formulas={r.formulas:<4} figures={r.figures:<3} "
                  f"svg_loaded={r.svgs_loaded:<3} column={columns} px")
            for p in r.problems:
                print(f"       - {p}")
            count += len(r.problems)
            layout += r.layout
        print(f"  layout problems: {layout}")
        small = sum(r.figure_text for r in results)
        at = ", ".join(f"{min_figure_text(w):g} px at {w}" for w in WIDTHS)
        print(f"  figure text as drawn in the page, at least {at} px: "
              f"{'ok' if not small else f'{small} figure(s) too small'}")
        print(f"  screenshots ({WIDTHS[0]} px): {shots_dir} (whole pages), "
              f"{shots_dir / 'elements'} (test tables, figures, the widest snippet of each page)")
    if not browser:
        # Without a browser, the SVG files' own sizes at the column of every window width the
        # browser would measure; the browser's FIGURE_TEXT check, above, replaces this estimate.
        pages = [f for f, _ in book_pages(html_dir)]
        for width in WIDTHS:
            column = COLUMN_AT[width]
            least = min_figure_text(width)
            print(f"== Figure text at a {width} px window ({column} px column; at least "
                  f"{least:g} px)")
            problems = figure_text_check(html_dir, pages, column, window=width)
            for p in problems:
                print(f"  FAIL {p}")
            if not problems:
                print(f"  ok: every text of every figure is at least {least:g} px there")
            count += len(problems)
    return count


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html_dir", type=Path)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--screenshots", type=Path)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args(argv)
    shots = args.screenshots or args.html_dir.parent / "screenshots"
    problems = run_checks(args.html_dir, args.repo, shots, browser=not args.no_browser)
    print(f"== {'PASS' if problems == 0 else f'FAIL: {problems} problem(s)'}")
    return 0 if problems == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
