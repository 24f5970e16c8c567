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
- A test's name in a chapter's test table (docs/doxygen_filter.py writes it in a cell of class
  book-test-name) gets a <wbr> before each word of it and after each dot, so a name longer than
  its line (book.css gives it a line of its own; a phone's is narrower than some names) breaks
  `ReshapeAndCacheMatchesHostReference` between its words, never inside one, and a copied name
  has no character the test's own name lacks.
- A date in a table cell ("v1, 2026-11-22" in a column heading) is never broken at its hyphens:
  it gets a span of class `book-date` (white-space: nowrap in book.css). A measured range after
  a median in a cell, "38.8 (37.1–39.6)", gets a span of class `book-range`: smaller and lighter
  than the median, so a column of medians reads at a glance.
- Doxygen writes a "Related Pages" index (pages.html) even with its tab hidden; when it lists
  nothing it is removed, with its line in the sidebar's index (navtreeindexN.js).
- Doxygen starts every section heading with an empty line (the anchor, then a newline) and ends a
  page title with a space: both are dropped, so a heading's text is its first line.
- Figures are numbered per chapter, in order ("Figure 7.3." before the caption of lab_07.html's
  third picture; the introduction, index.html, is chapter 0; the figure gets the anchor
  fig-<picture name>). A chapter is four pages, its lesson lab_NN.html (a long one goes on on
  lab_NN_lesson2.html), its bench lab_NN_bench.html, its notes lab_NN_review.html and its
  measurements lab_NN_measurements.html (docs/doxygen_filter.py cuts it), numbered as one: the
  bench's first figure follows the lesson's last, the notes' the bench's, the measurements' the
  notes', and so do its formulas and tables. An interlude before a chapter (lab_05_gpu.html, from
  docs/interlude_05.md; any docs/interlude_NN.md) is numbered on its own, by a Roman numeral for
  its place among the interludes: Figure I.1, Table I.1 before lab 05, Figure II.1 before lab 07.
  A long interlude's further pages (lab_05_speed.html, from docs/interlude_05_2.md) go on from
  its first page's numbers, in the sidebar's order. The text refers to a figure as {{fig:lab07_tiles}}, written in the
  chapter's Markdown, which becomes a link "Figure 7.3" on any page. A reference to a figure no
  chapter shows stops the build.
- A chapter's display formulas are numbered per chapter too, (7.1), (7.2), ..., by a \\tag that
  KaTeX draws at the right margin (docs/render_math.py typesets the formulas after this).
- Tables with a caption are numbered too. In the Markdown, a paragraph that starts with
  `Table: ` directly above a table (a blank line between) is its caption; it becomes
  "Table 7.2. caption" above the table, numbered per chapter in order. The introduction and the
  other front matter (setup, conventions) share number 0, in the sidebar's order; an appendix
  uses its letter ("Table C.1", from its title "Appendix C — ..." or "A.3 ..."). The table gets
  the anchor tab-<chapter>-<n> ("tab-7-2"), or tab-NAME where the caption starts with
  `{tab:NAME}` (`Table: {tab:lab07_smem} Shared memory per block.`), and the text refers to a
  named one as {{tab:NAME}}, which becomes a link "Table 7.2". A reference to no table stops the
  build; a `Table:` paragraph that no table follows is left as it is, for book_check to report.
- A lab's own pages (lab_NN.html, lab_NN_bench.html, lab_NN_review.html,
  lab_NN_measurements.html, given_code_labNN.html) never link into another lab's header:
  Doxygen resolves a name that two labs' headers both define (kNumThreads, kWarpSize,
  cuda_device_present) to the first it met, so lab 06's code linked to lab 05's constants and
  showed their tooltips. Such a link is dropped and its text kept.
- A lesson's second page (lab_NN_lesson2.html), a notes page and a measurements page show their
  first heading only as their title ("Lab 06: notes", not also "Notes" under it): the heading
  itself is dropped, its anchor kept.
- A fold (details.book-fold) keeps the numbers of the tables and figures inside it, so its summary
  line names them ("… (Table 6.10)"): a closed fold never leaves an unexplained gap between
  6.9 and 6.11.
- The API reference (Doxygen's pages of a header, a class or struct, a namespace or a folder)
  opens with a one-line lead, so it does not read as one more chapter: a generated page, for
  which header, and which chapter explains the ideas (api_lead).
- A picture never shrinks below legible: each SVG picture's tag gets a min-width at which its
  smallest text is 11 px; a column narrower than that scrolls it sideways in its own box
  (book.css) instead of shrinking it further.
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
# A test's name in its table's test column, not yet given its break opportunities.
TEST_NAME_CELL = re.compile(r'(<td class="book-test-name"><code>)([^<]+)(</code>)')
# Where a test's name may break: before a capital that follows a small letter or a digit
# (Reshape|And|Cache, Paged|AttentionV1), before a word after an acronym (GQA|Heads), and after
# a dot or an underscore.
NAME_BREAK = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[._])(?=.)")
HEADING_ANCHOR_NEWLINE = re.compile(r'(<h[1-6]><a class="anchor" id="[^"]*"></a>)\n')
TITLE_TRAILING_SPACE = re.compile(r'(<div class="title">[^<]*?) +(</div>)')
# The theme draws inline code as an inline block, which a line may break around: "(" then
# `lab05_bench` on the next line. An opening bracket before such code and the punctuation after it
# stay on its line.
CODE_WITH_PUNCTUATION = re.compile(r'(\(?)(<code class="book-nowrap">[^<]*</code>)([)\],;:.]*)')
# The same for an inline formula (still TeX between \( and \) here; docs/render_math.py typesets
# it next): "10^{-12}" at a line's end and its comma alone at the next line's start.
MATH_WITH_PUNCTUATION = re.compile(r'(\(?)(\\\((?:[^<>"\\]|\\(?!\)))*\\\))([)\],;:.]+)')
# A table cell, and an ISO date in its text: a browser may break "2026-11-22" after a hyphen in a
# narrow column heading; the date gets a span of class book-date (white-space: nowrap).
TABLE_CELL = re.compile(r"(<t[hd]\b[^>]*>)(.*?)(</t[hd]>)", re.DOTALL)
ISO_DATE = re.compile(r"(?<![\w-])(\d{4}-\d\d-\d\d)(?![\w-])")
DATE_SPAN = '<span class="book-date">'
# A measured range in a table cell, "(37.1–39.6)" after its median: set smaller and lighter than the
# median it qualifies, and kept on one line.
MEASURED_RANGE = re.compile(r"(?<![\w.])(\(\d[\d.,]*–\d[\d.,]*\))")
RANGE_SPAN = '<span class="book-range">'


# A chapter's picture as Doxygen writes `\image html NAME.svg "caption"`, up to its caption's text.
FIGURE = re.compile(r'<div class="image">(\n<(?:object|img)\b[^>]*?\b(?:data|src)="([\w.-]+?)'
                    r'\.(?:svg|png)"[^>]*>(?:</object>)?\n?<div class="caption">\n?)')
# A chapter's page, its interlude (lab_NN_NAME.html from docs/interlude_NN.md, read before the
# lesson; docs/CMakeLists.txt names it so), its lesson, its bench or its notes; the introduction
# is chapter 0.
CHAPTER_PAGE = re.compile(r"^(?:lab_(\d\d)(_[a-z0-9]+)?|index)\.html$")
# The order of a chapter's pages by their suffix; any other suffix is its interlude, read first.
CHAPTER_PAGE_ORDER = {"": 1, "_lesson2": 2, "_bench": 3, "_review": 4, "_measurements": 5}


def chapter_pages(names, order: list[str] | None = None) -> list[str]:
    """The chapter pages among `names`, in reading order: by chapter, each lesson before its
    bench and the bench before its notes (what numbers a chapter's figures, formulas and tables
    as one sequence). An interlude's pages (a long one has several: lab_05_gpu.html, then
    lab_05_speed.html) come first, in the sidebar's `order`, or by name without it."""
    order = order or []

    def key(name: str) -> tuple[int, int, int, str]:
        m = CHAPTER_PAGE.match(name)
        return (int(m.group(1) or 0), CHAPTER_PAGE_ORDER.get(m.group(2) or "", 0),
                order.index(name) if name in order else len(order), name)
    return sorted((name for name in names if CHAPTER_PAGE.match(name)), key=key)


# The labels the interludes' figures, formulas and tables are numbered under, in reading order:
# the first interlude's Figure I.1, I.2, ..., the second's II.1, ...
INTERLUDE_LABELS = ("I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X")


def is_interlude(name: str) -> bool:
    """Whether a chapter page is an interlude (lab_05_gpu.html): any suffix but the lesson's,
    the bench's and the notes'."""
    m = CHAPTER_PAGE.match(name)
    return bool(m and m.group(2) and m.group(2) not in CHAPTER_PAGE_ORDER)


def number_label(name: str, names) -> str:
    """What a chapter page's figures, formulas and tables are numbered under: "7" for lab_07.html
    and its bench and notes, "0" for the introduction, and for an interlude a Roman numeral, its
    place among the interludes of `names` (the book's pages) in reading order: "I" for the first
    (lab_05_gpu.html and its second page, lab_05_speed.html), "II" for the second."""
    m = CHAPTER_PAGE.match(name)
    if is_interlude(name):
        chapters = sorted({CHAPTER_PAGE.match(n).group(1)
                           for n in set(names) | {name} if is_interlude(n)})
        return INTERLUDE_LABELS[chapters.index(m.group(1))]
    return str(int(m.group(1) or 0))


FIGURE_REFERENCE = re.compile(r"\{\{fig:([\w.-]+)\}\}")


def number_figures(pages: dict[str, str], order: list[str] | None = None) -> dict[str, str]:
    """Numbers the figures of the chapter pages (lab_NN.html, then lab_NN_bench.html, then
    lab_NN_review.html: Figure N.1, N.2, ... in order) and resolves every {{fig:NAME}} on every
    page to a link to it; `pages` maps a page's file name to its HTML, `order` is the sidebar's
    reading order (chapter_pages). Raises ValueError naming the page and the name of a reference
    to no figure."""
    numbers: dict[str, tuple[str, str]] = {}  # picture name -> (page, "N.M")
    counts: dict[str, int] = {}  # chapter -> figures numbered so far (lesson, bench, notes)
    for name in chapter_pages(pages, order):
        chapter = number_label(name, pages)
        for figure in FIGURE.finditer(pages[name]):
            counts[chapter] = counts.get(chapter, 0) + 1
            numbers[figure.group(2)] = (name, f"{chapter}.{counts[chapter]}")

    def label(figure: re.Match) -> str:
        picture = figure.group(2)
        return (f'<div class="image" id="fig-{picture}">{figure.group(1)}'
                f'<span class="book-fignum">Figure {numbers[picture][1]}.</span> ')

    out = {}
    for name, text in pages.items():
        if CHAPTER_PAGE.match(name):
            text = FIGURE.sub(label, text)

        def link(reference: re.Match) -> str:
            picture = reference.group(1)
            if picture not in numbers:
                raise ValueError(f"{name}: {{{{fig:{picture}}}}} refers to no figure of a chapter")
            page, number = numbers[picture]
            href = f"#fig-{picture}" if page == name else f"{page}#fig-{picture}"
            return f'<a href="{href}">Figure {number}</a>'
        out[name] = FIGURE_REFERENCE.sub(link, text)
    return out


# Figures never shrink below legible. A picture is drawn for the column (820 px wide, text 13 px)
# and scales down with a narrower one: in a window under 768 px, or at 900 px with the sidebar
# opened beside the text, it would be drawn at 70 % or less, its text at 9 px. Each picture gets a
# min-width at which its smallest text is MIN_FIGURE_TEXT_PX; a narrower column scrolls it
# sideways in its own box (a.book-figure-link, overflow-x: auto in docs/book.css) instead of
# shrinking it further. Every column the book is checked at (docs/book_check.py, COLUMN_AT) is at
# least that wide, so there nothing scrolls.
def _book_check():
    """docs/book_check.py, which owns the figure-text rule: MIN_FIGURE_TEXT_PX and how an SVG's
    text size is read (figure_text). Loaded by path, so the build and the tests share it."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "book_check", Path(__file__).resolve().parent / "book_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


_CHECK = _book_check()
MIN_FIGURE_TEXT_PX = _CHECK.MIN_FIGURE_TEXT_PX
# A picture's tag with its file (an SVG beside the page) and its style attribute.
FIGURE_TAG = re.compile(r'(<(?:object|img)\b[^>]*?\b(?:data|src)="([\w.-]+\.svg)"[^>]*?\bstyle=")'
                        r'([^"]*)(")')


def figure_min_width(svg: Path) -> int | None:
    """The narrowest width, in CSS px, at which the SVG's smallest text is still
    MIN_FIGURE_TEXT_PX (never more than the picture's own width); None without text. Text sizes
    are read as docs/book_check.py reads them (figure_text)."""
    import math
    per_px = min((px for px, _ in _CHECK.figure_text(svg, 1.0)[1]), default=None)  # in a 1 px column
    if not per_px:
        return None
    own = min(px for px, _ in _CHECK.figure_text(svg, math.inf)[1])  # at the picture's own width
    return min(math.ceil(MIN_FIGURE_TEXT_PX / per_px), math.ceil(own / per_px - 1e-9))


def legible_figures(text: str, html_dir: Path) -> str:
    """`text` with each SVG picture's style given its min-width (figure_min_width); a picture
    whose file is not in `html_dir` is left as it is. Idempotent."""
    def widen(tag: re.Match) -> str:
        svg = html_dir / tag.group(2)
        style = re.sub(r"\s*min-width:[^;]*;?", "", tag.group(3)).strip()
        if not svg.is_file():
            return tag.group(0)
        least = figure_min_width(svg)
        if least is None:
            return tag.group(0)
        style = f"{style} " if style and style.endswith(";") else (f"{style}; " if style else "")
        return f"{tag.group(1)}{style}min-width: {least}px;{tag.group(4)}"
    return FIGURE_TAG.sub(widen, text)


# A display formula as Doxygen writes \f[ ... \f] (the formula, up to its closing \]).
DISPLAY_FORMULA = re.compile(r'(<p class="formulaDsp">\n\\\[)(.*?)(\\\]\n</p>)', re.S)


def number_formulas(name: str, text: str, start: int = 0, label: str | None = None) -> str:
    """Tags every display formula of a chapter page (lab_NN.html, _bench, _review) with
    (N.start+1), (N.start+2), ... in order, N being `label` (number_label among the book's pages),
    or for a chapter page taken alone its number; other pages, and formulas that carry a tag
    already, are left as they are."""
    chapter = CHAPTER_PAGE.match(name)
    if not chapter:
        return text
    label = label or number_label(name, (name,))
    count = start

    def tag(formula: re.Match) -> str:
        nonlocal count
        if "\\tag" in formula.group(2):
            return formula.group(0)
        count += 1
        return (f"{formula.group(1)}{formula.group(2).rstrip()}\n"
                f"  \\tag{{{label}.{count}}}\n{formula.group(3)}")
    return DISPLAY_FORMULA.sub(tag, text)


def number_all_formulas(pages: dict[str, str], order: list[str] | None = None) -> dict[str, str]:
    """number_formulas over every page, a chapter's bench going on from its lesson's last
    number and its notes from the bench's (an interlude's pages in the sidebar's `order`)."""
    out = dict(pages)
    counts: dict[str, int] = {}
    for name in chapter_pages(pages, order):
        chapter = number_label(name, pages)
        start = counts.get(chapter, 0)
        out[name] = number_formulas(name, pages[name], start, chapter)
        counts[chapter] = start + out[name].count("\\tag{") - pages[name].count("\\tag{")
    return out


# A caption paragraph as Doxygen writes it, directly followed by its table: a Markdown table, or
# a chapter's test table that docs/doxygen_filter.py wrote as HTML. The caption may not run past
# its own paragraph.
TABLE_CAPTION = re.compile(r'<p[^>]*>Table:\s+(?:\{tab:([\w.-]+)\}\s*)?((?:(?!</p>).)*?)\s*</p>\s*'
                           r'<table class="(markdownTable|book-tests)">', re.S)
TABLE_REFERENCE = re.compile(r"\{\{tab:([\w.-]+)\}\}")
PAGE_TITLE = re.compile(r'<div class="title">([^<]*)</div>')
APPENDIX_TITLE = re.compile(r"Appendix ([A-Z])\b|([A-Z])\.\d+ ")


def table_chapter(name: str, text: str, names) -> str:
    """The chapter number or appendix letter a page's tables are numbered under: "7" for
    lab_07.html, "C" for Appendix C (and "A" for its part pages "A.3 ..."), "0" for the
    introduction and the rest of the front matter; an interlude's numeral among `names`
    (number_label)."""
    chapter = CHAPTER_PAGE.match(name)
    if chapter and chapter.group(1):
        return number_label(name, names)
    title = PAGE_TITLE.search(text)
    appendix = APPENDIX_TITLE.match(title.group(1).strip()) if title else None
    return (appendix.group(1) or appendix.group(2)) if appendix else "0"


def number_tables(pages: dict[str, str], order: list[str] | None = None) -> dict[str, str]:
    """Turns each `Table:` caption paragraph above a table into a numbered caption and resolves
    every {{tab:NAME}} on every page to a link to it; `pages` maps a page's file name to its
    HTML, `order` is the sidebar's reading order (pages not in it come after, by name). Raises
    ValueError naming the page, for a reference to no table or a name given twice."""
    order = order or []
    ranked = sorted(pages, key=lambda n: (order.index(n) if n in order else len(order), n))
    counts: dict[str, int] = {}
    anchors: dict[str, tuple[str, str]] = {}  # NAME -> (page, "N.M")
    out: dict[str, str] = {}
    for name in ranked:
        chapter = table_chapter(name, pages[name], pages)

        def caption(m: re.Match) -> str:
            counts[chapter] = counts.get(chapter, 0) + 1
            number = f"{chapter}.{counts[chapter]}"
            anchor = f"tab-{m.group(1)}" if m.group(1) else f"tab-{chapter}-{counts[chapter]}"
            if m.group(1):
                if m.group(1) in anchors:
                    raise ValueError(f"{name}: {{tab:{m.group(1)}}} names a second table")
                anchors[m.group(1)] = (name, number)
            return (f'<div class="book-table-caption" id="{anchor}">'
                    f'<span class="book-tabnum">Table {number}.</span> {m.group(2)}</div>\n'
                    f'<table class="{m.group(3)}" aria-labelledby="{anchor}">')
        out[name] = TABLE_CAPTION.sub(caption, pages[name])
    for name, text in out.items():
        def link(reference: re.Match) -> str:
            table = reference.group(1)
            if table not in anchors:
                raise ValueError(f"{name}: {{{{tab:{table}}}}} refers to no table (a caption "
                                 f"that starts with {{tab:{table}}})")
            page, number = anchors[table]
            href = f"#tab-{table}" if page == name else f"{page}#tab-{table}"
            return f'<a href="{href}">Table {number}</a>'
        out[name] = TABLE_REFERENCE.sub(link, text)
    return {name: out[name] for name in pages}


# A fold (<details class="book-fold">) keeps its tables' and figures' numbers, so a closed one would
# leave a gap in the numbering the reader sees (6.9, then 6.11). Its summary line says which
# numbers it holds: "… (Table 6.10)".
FOLD_TAG = re.compile(r"<details\b[^>]*>|</details>")
NUMBERED = re.compile(r'<span class="book-(?:tab|fig)num">((?:Table|Figure) [0-9A-Z]+\.\d+)\.</span>')


def label_folds(text: str) -> str:
    """Appends to the summary of each book-fold the table and figure numbers inside it (nested
    folds included), e.g. ' (Tables 7.8 and 7.9, Figure 7.5)'."""
    spans: list[tuple[int, int]] = []  # (start, end) of each book-fold, outermost too
    stack: list[tuple[int, bool]] = []
    for tag in FOLD_TAG.finditer(text):
        if tag.group(0).startswith("</"):
            if stack:
                start, is_fold = stack.pop()
                if is_fold:
                    spans.append((start, tag.end()))
        else:
            stack.append((tag.start(), "book-fold" in tag.group(0)))
    inserts: list[tuple[int, str]] = []
    for start, end in spans:
        summary_end = text.find("</summary>", start, end)
        if summary_end < 0:
            continue
        held = NUMBERED.findall(text, summary_end, end)
        if not held:
            continue
        tables = [h.split()[1] for h in held if h.startswith("Table")]
        figures = [h.split()[1] for h in held if h.startswith("Figure")]
        parts = []
        for word, numbers in (("Table", tables), ("Figure", figures)):
            if numbers:
                parts.append((word + ("s " if len(numbers) > 1 else " "))
                             + (numbers[0] if len(numbers) == 1
                                else ", ".join(numbers[:-1]) + " and " + numbers[-1]))
        inserts.append((summary_end, f' <span class="book-fold-holds">({"; ".join(parts)})</span>'))
    for at, label in sorted(inserts, reverse=True):
        text = text[:at] + label + text[at:]
    return text


def sidebar_order(html_dir: Path) -> list[str]:
    """The pages of Doxygen's sidebar (navtreedata.js) in reading order; [] without one."""
    path = html_dir / "navtreedata.js"
    if not path.is_file():
        return []
    order: list[str] = []
    for page in re.findall(r'"([\w.-]+\.html)(?:#[^"]*)?"', path.read_text(encoding="utf-8")):
        if page not in order:
            order.append(page)
    return order


def _keep_together(m: re.Match) -> str:
    if not m.group(1) and not m.group(3):
        return m.group(0)
    return f'<span class="book-nowrap">{m.group(1)}{m.group(2)}{m.group(3)}</span>'


def _unbroken_dates(cell: re.Match) -> str:
    """The cell with each date of its text (not of a tag's attributes) kept on one line, and each
    measured range after a median set as a range (MEASURED_RANGE)."""
    parts = re.split(r"(<[^>]*>)", cell.group(2))
    for i in range(0, len(parts), 2):  # the text between tags; a date already wrapped stays
        if i == 0 or parts[i - 1] != DATE_SPAN:
            parts[i] = ISO_DATE.sub(DATE_SPAN + r"\1</span>", parts[i])
        if i == 0 or parts[i - 1] != RANGE_SPAN:
            parts[i] = MEASURED_RANGE.sub(RANGE_SPAN + r"\1</span>", parts[i])
    return cell.group(1) + "".join(parts) + cell.group(3)


def _breakable_name(m: re.Match) -> str:
    return m.group(1) + NAME_BREAK.sub("<wbr>", m.group(2)) + m.group(3)


# A lab's pages (lab_06.html, given_code_lab06.html) and the Doxygen page of a lab's header, by
# the lab's number: labs/06-*/paged_attention_v2.hpp is paged__attention__v2_8hpp.html.
LAB_PAGE = re.compile(r"(?:lab_|given_code_lab)(\d\d)(?:_[a-z]+)?\.html")
HEADER_LINK = re.compile(r'<a class="(?:el|code[^"]*)" href="([\w]+_8hpp)\.html#\w+"[^>]*>([^<]*)</a>')
HEADER_TOOLTIP = re.compile(r'<div class="ttc" id="a(\w+?_8hpp)_html_\w+">'
                            r'(?:<div class="tt\w+">(?:[^<]|<(?!/?div\b))*</div>)*</div>\n?')


def header_pages(repo: Path) -> dict[str, str]:
    """Doxygen's page stem of each lab's header -> the lab's number ("paged__attention__v1_8hpp"
    -> "05")."""
    found = {}
    for header in repo.glob("labs/[0-9][0-9]-*/*.hpp"):
        stem = header.name.replace("_", "__").replace(".", "_8")
        found[stem] = header.parent.name[:2]
    return found


def unlink_other_labs(name: str, text: str, headers: dict[str, str]) -> str:
    """Drops, on lab NN's own pages, every link into another lab's header (module docstring)."""
    page = LAB_PAGE.fullmatch(name)
    if not page:
        return text

    def keep_own(link: re.Match) -> str:
        owner = headers.get(link.group(1))
        return link.group(2) if owner is not None and owner != page.group(1) else link.group(0)

    def drop_other(tip: re.Match) -> str:
        owner = headers.get(tip.group(1))
        return "" if owner is not None and owner != page.group(1) else tip.group(0)

    # The link's tooltip (a hidden div.ttc, keyed by the link's target) goes with it: it named
    # the other lab's symbol and its contract.
    return HEADER_TOOLTIP.sub(drop_other, HEADER_LINK.sub(keep_own, text))


# The API reference's pages: a header's (paged__attention__v1_8hpp.html; a name two headers share
# is written with its folders, labs_207-cuda-gqa-decode_2given_2backend_8hpp.html), a class's,
# struct's or union's, a namespace's and a folder's; not their member lists, their source
# listings or the indexes (classes.html).
API_PAGE = re.compile(r"(?!classes\.html)(class|struct|union|namespace|dir_)\w*\.html"
                      r"|[\w-]+_8(?:hpp|cuh)\.html")
API_LEAD_CLASS = "book-bench-intro book-api-intro"
# The header a class's page names in its `#include <...>` line (a link to its source listing).
INCLUDE_LINK = re.compile(r'<code>#include &lt;<a class="el" '
                          r'href="([\w-]+_8(?:hpp|cuh))_source\.html"')
# A link to a header's page (a folder's page lists its headers so).
HEADER_HREF = re.compile(r'href="([\w-]+_8(?:hpp|cuh))\.html"')
CONTENTS_OPEN = '<div class="contents">\n'
# The headers the reference documents (= docs/CMakeLists.txt's pa_lab_headers and
# pa_common_headers).
API_INPUTS = ("labs/[0-9][0-9]-*/*.hpp", "labs/[0-9][0-9]-*/given/*.hpp",
              "labs/[0-9][0-9]-*/given/*.cuh", "common/pa/*.hpp", "common/pa/*.cuh",
              "common/simt/cuda.hpp", "common/simt/errors_and_settings.hpp",
              "common/simt/timing.hpp", "common/simt/emu/runtime.hpp", "common/simt/emu/wmma.hpp")


def _doxygen_stem(path: str) -> str:
    """Doxygen's file name for a header path (without .html): "_" doubled, "/" as "_2", "." as
    "_8": labs/07-x/given/backend.hpp -> labs_207-x_2given_2backend_8hpp."""
    return path.replace("_", "__").replace("/", "_2").replace(".", "_8")


def api_headers(repo: Path) -> dict[str, str]:
    """Doxygen's page stem of every header the reference documents -> its path in the
    repository. Doxygen names a page by the shortest tail of the path no other header shares
    (backend_8hpp, or given_2backend_8hpp, or the whole path), so every tail no two headers share
    is a key."""
    paths = [str(h.relative_to(repo)) for pattern in API_INPUTS for h in sorted(repo.glob(pattern))]
    tails: dict[str, set[str]] = {}
    for path in paths:
        parts = path.split("/")
        for k in range(len(parts)):
            tails.setdefault(_doxygen_stem("/".join(parts[k:])), set()).add(path)
    return {stem: next(iter(found)) for stem, found in tails.items() if len(found) == 1}


def api_lead(name: str, text: str, headers: dict[str, str], chapters: dict[str, str]) -> str:
    """`text` of an API reference page with its one-line lead, first in its contents: that it is
    generated, for which header (a type's: the one its `#include` line names; a folder's: the
    headers it lists), and that the chapter explains the ideas, linked when the headers are one
    lab's. `headers`: api_headers; `chapters`: a lab's number -> its chapter's title ("05" ->
    "Lab 05 — CUDA paged attention (v1)"). Other pages, and a page that has its lead, are left as
    they are."""
    page = API_PAGE.fullmatch(name)
    if not page or API_LEAD_CLASS in text or CONTENTS_OPEN not in text:
        return text
    stem, kind = name[:-len(".html")], page.group(1)
    include = INCLUDE_LINK.search(text)
    if kind is None:  # a header's page
        own = [headers[stem]] if stem in headers else []
        where = f"the header <code>{own[0]}</code>" if own else "a header"
        holds = "each name it declares and the contract its comment states"
    elif kind in ("class", "struct", "union"):
        own = [headers[include.group(1)]] if include and include.group(1) in headers else []
        where = f"a type declared in <code>{own[0]}</code>" if own else "a type of the book's code"
        holds = "its members and the contract each one's comment states"
    else:  # a folder's or a namespace's page: the headers it lists
        holds = ("its headers, each with a page of its own" if kind == "dir_"
                 else "its names and the contract each one's comment states")
        own = list(dict.fromkeys(headers[h] for h in HEADER_HREF.findall(text) if h in headers))
        folder = str(Path(own[0]).parent) if own and kind == "dir_" else ""
        where = (f"the folder <code>{folder}/</code>" if folder and all(
                     str(Path(path).parent) == folder for path in own)
                 else "a folder of the book's code" if kind == "dir_"
                 else "a namespace of the book's code")
    labs = {path[5:7] for path in own if path.startswith("labs/")}
    if len(labs) == 1 and all(path.startswith("labs/") for path in own):
        lab = next(iter(labs))
        title = chapters.get(lab, f"Lab {lab}")
        ideas = (f'The ideas behind them are explained in the chapter, '
                 f'<a href="lab_{lab}.html">{title}</a>.')
    elif own and all(path.startswith("common/") for path in own):
        where += ", which the labs share"
        ideas = "The chapters explain the ideas behind them."
    else:
        ideas = "The chapters explain the ideas behind them."
    lead = (f'<div class="{API_LEAD_CLASS}">A generated reference page for {where}: {holds}. '
            f'{ideas}</div>\n')

    return text.replace(CONTENTS_OPEN, CONTENTS_OPEN + lead, 1)


# Doxygen's "Related Pages" index, written even with its tab hidden (docs/DoxygenLayout.xml.in),
# and what it lists (nothing, when its directory holds no row), and its line in the sidebar's
# index of pages (navtreeindexN.js), which the link check follows.
RELATED_PAGES = "pages.html"
EMPTY_DIRECTORY = re.compile(r'<div class="directory">\s*</div>')
NAVTREE_INDEX_LINE = re.compile(r'^"pages\.html":\[[^\]]*\],?\n', re.M)


def drop_empty_related_pages(html_dir: Path) -> bool:
    """Removes pages.html when it lists nothing (the sidebar lists every page; no page links to
    it) and its entry in navtreeindex*.js; returns whether it did."""
    page = html_dir / RELATED_PAGES
    if not page.is_file() or not EMPTY_DIRECTORY.search(page.read_text(encoding="utf-8")):
        return False
    page.unlink()
    for index in html_dir.glob("navtreeindex*.js"):
        text = index.read_text(encoding="utf-8")
        kept = NAVTREE_INDEX_LINE.sub("", text)
        if kept != text:
            index.write_text(kept, encoding="utf-8")
    return True


# The heading a lesson's second page, a notes page and a measurements page start at
# (docs/doxygen_filter.py): the page's title says it already ("Lab 06: the reduce, ...",
# "Lab 06: notes" over "Notes"), so only its anchor stays, for links and the contents.
TITLE_HEADING = re.compile(r'<h1>(<a class="anchor" id="lab_\d\d_(?:part2|notes|measured)"></a>)'
                           r'(?:(?!</h1>).)*</h1>', re.S)


# An entry of the contents column (Doxygen's div.toc): a file or folder name in it may break
# after a "/" or before a ".", never inside a word ("paged_attention_v1" / ".hpp", not "v1." /
# "hpp"), and not at a hyphen inside a piece ("05-cuda-paged-v1/" stays whole).
TOC_ENTRY = re.compile(r'(<li class="level\d"><a href="#[\w-]+">)([^<]*)(</a>)')


def _breakable_path(m: re.Match) -> str:
    pieces = re.split(r"(?<=/)(?=.)|(?<=\w)(?=\.\w)", m.group(2))
    if len(pieces) == 1:
        return m.group(0)
    # Each piece kept whole (no break at its hyphens: "05-cuda-paged-v1/" stays one line).
    name = "<wbr>".join(f'<span class="book-nowrap">{p}</span>' for p in pieces)
    return m.group(1) + name + m.group(3)


GLOSSARY_PAGE = "glossary.html"
GLOSSARY_ROW = re.compile(r'<tr class="markdownTableRow(?:Odd|Even)">\n'
                          r'<td class="markdownTableBodyNone">(.*?)</td>', re.DOTALL)
GLOSSARY_INTRO_END = re.compile(r'(<div class="textblock"><p\b.*?</p>\n)', re.DOTALL)


def _term_key(cell: str) -> str:
    """The words a term is filed under: its cell without tags, formulas or a leading symbol."""
    words = re.sub(r"\\\(.*?\\\)", "", re.sub(r"<[^>]+>", "", cell))
    words = re.sub(r"\(\s*\)", "", words).strip(" ,")
    return re.sub(r"^[^A-Za-z0-9]+", "", words).lower()


def glossary_index(name: str, text: str) -> str:
    """Appendix B's terms in A to Z order, above its tables of terms by subject.

    Every row of the glossary's tables gets an id (term-...), and the page opens with a row of
    letters and, under each letter, its terms linking to their rows, so a reader who meets a word
    finds it without knowing its subject. Raises ValueError when the glossary has no rows or no
    opening paragraph to put the index after."""
    if name != GLOSSARY_PAGE or 'id="glossary_az"' in text:
        return text
    entries: list[tuple[str, str, str]] = []
    used: set[str] = set()

    def mark(row: re.Match) -> str:
        cell = row.group(1).strip()
        key = _term_key(cell)
        slug = "term-" + (re.sub(r"[^a-z0-9]+", "-", key).strip("-") or "x")
        while slug in used:
            slug += "-2"
        used.add(slug)
        entries.append((key, slug, cell))
        return row.group(0).replace("<tr class=", f'<tr id="{slug}" class=', 1)

    text = GLOSSARY_ROW.sub(mark, text)
    if not entries:
        raise ValueError(f"{name}: no glossary rows to index")
    by_letter: dict[str, list[tuple[str, str, str]]] = {}
    for key, slug, cell in sorted(entries):
        letter = key[:1].upper() if key[:1].isalpha() else "#"
        by_letter.setdefault(letter, []).append((key, slug, cell))
    letters = ['<a href="#az-%s">%s</a>' % (c.lower(), c) if c in by_letter
               else '<span class="book-az-none">%s</span>' % c
               for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]
    def links(terms: list[tuple[str, str, str]]) -> str:
        return " · ".join('<a href="#%s">%s</a>' % (slug, cell) for _, slug, cell in terms)
    rows = "".join('<dt id="az-%s">%s</dt><dd>%s</dd>\n'
                   % (c.lower() if c != "#" else "digits", c, links(terms))
                   for c, terms in sorted(by_letter.items()))
    block = ('<div class="book-az" id="glossary_az"><p class="book-az-letters">'
             f'<span class="book-az-label">A to Z</span> {" ".join(letters)}</p>\n'
             f'<dl class="book-az-list">\n{rows}</dl></div>\n')
    placed, count = GLOSSARY_INTRO_END.subn(lambda m: m.group(1) + block, text, count=1)
    if count != 1:
        raise ValueError(f"{name}: no opening paragraph to put the A to Z index after")
    return placed


def tidy(text: str) -> str:
    text = TOC_ENTRY.sub(_breakable_path, text)
    text = TEST_NAME_CELL.sub(_breakable_name, text)  # before NOWRAP_CODE would claim the name
    text = SPACE_BEFORE_MATH.sub(r"\1\2", text)
    text = NOWRAP_CODE.sub(r'<code class="book-nowrap">\1</code>', text)
    text = NOWRAP_LINKED_CODE.sub(r'<code class="book-nowrap">\1</code>', text)
    text = HEADING_ANCHOR_NEWLINE.sub(r"\1", text)
    text = TITLE_HEADING.sub(r"\1", text)
    text = TITLE_TRAILING_SPACE.sub(r"\1\2", text)
    text = TABLE_CELL.sub(_unbroken_dates, text)
    text = MATH_WITH_PUNCTUATION.sub(_keep_together, text)
    return CODE_WITH_PUNCTUATION.sub(_keep_together, text)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    changed = 0
    if drop_empty_related_pages(Path(argv[0])):
        print("tidy_html: dropped the empty Related Pages index (pages.html)")
    paths = sorted(Path(argv[0]).glob("*.html"))
    before = {page.name: page.read_text(encoding="utf-8") for page in paths}
    try:
        repo = Path(__file__).resolve().parent.parent
        headers = header_pages(repo)
        order = sidebar_order(Path(argv[0]))
        documented = api_headers(repo)
        chapters = {m.group(1): title.group(1).strip() for name, text in before.items()
                    if (m := re.fullmatch(r"lab_(\d\d)\.html", name))
                    and (title := PAGE_TITLE.search(text))}
        led = {name: glossary_index(name, api_lead(name, text, documented, chapters))
               for name, text in before.items()}
        numbered = number_tables(number_figures(number_all_formulas(
                                     {name: legible_figures(unlink_other_labs(name, tidy(text),
                                                                              headers),
                                                            Path(argv[0]))
                                      for name, text in led.items()}, order), order), order)
    except ValueError as e:
        print(f"tidy_html: {e}", file=sys.stderr)
        return 1
    numbered = {name: label_folds(text) for name, text in numbered.items()}
    for page in paths:
        if numbered[page.name] != before[page.name]:
            page.write_text(numbered[page.name], encoding="utf-8")
            changed += 1
    print(f"tidy_html: {changed} page(s) tidied")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
