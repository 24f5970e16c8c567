"""The book's reader checks (the course book's check script: tools/docs_check.py, later
docs/book_check.py): each is shown a planted instance of the defect it exists for and must
report it, and a clean instance and must not. No Doxygen or browser needed: the checks read
Markdown, HTML and SVG files, so the site here is a few files in a temporary folder.
Run: python3 -m unittest discover -s tools/tests (ctest: tools.unit, label `tools`)."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _load_check():
    """The check script, wherever the tree keeps it."""
    for rel in ("docs/book_check.py", "tools/docs_check.py"):
        path = ROOT / rel
        if path.is_file():
            spec = importlib.util.spec_from_file_location("book_check_under_test", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module  # dataclasses look their module up by name
            spec.loader.exec_module(module)
            return module
    raise FileNotFoundError("no docs/book_check.py or tools/docs_check.py")


check = _load_check()

PAGE = """<!DOCTYPE html><html><head><title>t</title><script>var x = "| a | b |";</script></head>
<body><div class="contents"><div class="textblock">{body}</div></div></body></html>"""

SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="100" '
       'viewBox="0 0 {width} 100" font-size="12">{body}</svg>')


class Site:
    """A book site in a temporary folder: pages named in a sidebar (navtreedata.js) like
    Doxygen's, plus any other files."""

    def __init__(self, tmp: Path) -> None:
        self.dir = tmp / "html"
        self.dir.mkdir()
        self.pages: list[str] = []

    def page(self, name: str, body: str) -> str:
        (self.dir / name).write_text(PAGE.format(body=body), encoding="utf-8")
        self.pages.append(name)
        tree = [["Book", "index.html", [[p, p, None] for p in self.pages]]]
        (self.dir / "navtreedata.js").write_text(
            f"var NAVTREE =\n{json.dumps(tree)};\n\nvar NAVTREEINDEX =\n[];\n", encoding="utf-8")
        return name

    def svg(self, name: str, body: str, width: float = 820) -> str:
        (self.dir / name).write_text(SVG.format(width=width, body=body), encoding="utf-8")
        return name


class BookChecksTest(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.site = Site(self.tmp)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    # -- literal table syntax --
    def test_a_table_that_did_not_render_is_reported(self):
        self.site.page("lab_01.html", "<p>| <code>labs/01/starter.cpp</code> | the file you "
                                      "fill in |</p><p>|---|---|</p>")
        problems = check.reader_text_check(self.site.dir, self.site.pages)
        self.assertTrue(any("literal Markdown table syntax" in p for p in problems), problems)

    def test_a_rendered_table_code_and_formulas_pass(self):
        self.site.page("lab_01.html",
                       "<table><tr><td><code>a</code></td><td>b</td></tr></table>"
                       "<div class=\"fragment\"><div class=\"line\">| x | y |  [backend]</div></div>"
                       "<pre>|---|---|</pre><p>the norm \\(|x|_2 + |y|\\) and x[i] of a[0]</p>")
        self.assertEqual(check.reader_text_check(self.site.dir, self.site.pages), [])

    # -- snippet markers and commit hashes --
    def test_a_snippet_marker_in_the_text_is_reported(self):
        self.site.page("given_code.html", "<p><code>common/pa/backend.hpp</code> [backend]</p>")
        problems = check.reader_text_check(self.site.dir, self.site.pages)
        self.assertTrue(any("snippet marker [backend]" in p for p in problems), problems)

    def test_a_commit_hash_in_the_text_is_reported(self):
        self.site.page("lab_05.html", "<p>Built from commit f582040 of the workbook.</p>")
        problems = check.reader_text_check(self.site.dir, self.site.pages)
        self.assertTrue(any("commit hash (f582040)" in p for p in problems), problems)

    def test_an_html_tag_printed_as_text_is_reported(self):
        # What Doxygen makes of `code` in a heading: the tags escaped, shown to the reader.
        self.site.page("lab_05_review.html", "<h3>Read as if it were &lt;tt&gt;[d, B]&lt;/tt&gt;</h3>"
                                             "<p>a <code>kernel</code> and x &lt; y &gt; z</p>")
        problems = check.reader_text_check(self.site.dir, self.site.pages)
        self.assertEqual(len(problems), 2, problems)
        self.assertTrue(all("printed as text" in p for p in problems), problems)

    def test_a_doxygen_command_printed_as_text_is_reported(self):
        # What Doxygen printed of a \\ref whose quoted text ran onto the next line.
        self.site.page("lab_05_gpu.html", '<p>(<a href="x.html">lab 07,</a>wmma"); and '
                                          '(\\ref lab_07_pipeline "lab 07, the pipeline").</p>'
                                          '<p>A path C:\\temp and <code>\\ref x</code>.</p>')
        problems = check.reader_text_check(self.site.dir, self.site.pages)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("Doxygen command \\ref printed as text", problems[0])

    def test_a_link_that_shows_its_anchor_id_is_reported(self):
        self.site.page("glossary.html", '<p>(see <a class="el" href="conventions.html#'
                                        'conventions_poison">conventions_poison</a>) and '
                                        '<a class="el" href="conventions.html#conventions_poison">'
                                        'Poisoned padding</a></p>')
        problems = check.reader_text_check(self.site.dir, self.site.pages)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("its anchor's id (conventions_poison)", problems[0])

    def test_a_ref_split_across_lines_in_a_source_is_reported(self):
        md = self.tmp / "README.md"
        md.write_text('at once (\\ref lab_07_wmma "lab 07,\nwmma"); and '
                      '(\\ref lab_07_pipeline "lab 07, the pipeline").\n'
                      '\\ref lab_07_wmma\n', encoding="utf-8")
        problems = check.source_check([md], self.tmp)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("README.md:1:", problems[0])

    def test_numbers_and_words_are_not_hashes(self):
        self.site.page("lab_05.html", "<p>33554432 bytes, 1234567 tokens, a facade, "
                                      "0x7f3a2b1c, sha256 and e5m2 at 2026-11-22.</p>")
        self.assertEqual(check.reader_text_check(self.site.dir, self.site.pages), [])

    # -- instructor markers inside a table --
    def test_an_instructor_marker_inside_a_table_is_reported(self):
        md = self.tmp / "README.md"
        md.write_text("| file | what |\n|---|---|\n| `a` | b |\n<!-- instructor -->\n"
                      "| `solutions/a` | the reference |\n<!-- /instructor -->\n| `c` | d |\n",
                      encoding="utf-8")
        problems = check.source_check([md], self.tmp)
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("README.md:4:", problems[0])

    def test_an_instructor_block_after_a_table_passes(self):
        md = self.tmp / "README.md"
        md.write_text("| file | what |\n|---|---|\n| `a` | b |\n\n<!-- instructor -->\n"
                      "Instructors: `solutions/a` is the reference.\n<!-- /instructor -->\n",
                      encoding="utf-8")
        self.assertEqual(check.source_check([md], self.tmp), [])

    def test_a_form_feed_in_a_source_is_reported(self):
        md = self.tmp / "README.md"
        md.write_text("The saving tends to \\f$R = 8\\f$.\nIt never \f$R = 8\\f$ passes it.\n",
                      encoding="utf-8")
        problems = check.source_check([md], self.tmp)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("README.md:2: control character '\\x0c'", problems[0])

    def test_the_books_sources_have_no_marker_inside_a_table(self):
        problems = check.source_check(check.book_sources(ROOT), ROOT)
        self.assertEqual(problems, [], "\n".join(problems))

    # -- figure text at the column width --
    def test_small_figure_text_is_reported(self):
        self.site.svg("lab05_map.svg", '<text x="1" y="1" font-size="8">T0</text>'
                                       '<g font-size="9"><text x="1" y="9">T1</text></g>')
        self.site.page("lab_05.html", '<div class="image"><object type="image/svg+xml" '
                                      'data="lab05_map.svg"></object></div>')
        problems = check.figure_text_check(self.site.dir, self.site.pages, 840)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("2 text(s) smaller than 11 px", problems[0])

    def test_a_figure_wider_than_the_column_is_scaled_before_measuring(self):
        # 12 px text in a 1200 px figure shows at 12 * 840 / 1200 = 8.4 px.
        self.site.svg("wide.svg", '<text x="1" y="1">12 px as drawn</text>', width=1200)
        self.site.page("lab_05.html", '<div class="image"><img src="wide.svg"/></div>')
        problems = check.figure_text_check(self.site.dir, self.site.pages, 840)
        self.assertTrue(problems and "8.4 px" in problems[0], problems)

    def test_figure_text_of_11_px_and_more_passes(self):
        self.site.svg("ok.svg", '<text x="1" y="1" font-size="11">T0</text>'
                                '<text x="1" y="9" style="font-size: 14px">title</text>'
                                '<text x="1" y="20">root size, 12</text>')
        self.site.page("lab_05.html", '<div class="image"><object type="image/svg+xml" '
                                      'data="ok.svg"></object></div>')
        self.assertEqual(check.figure_text_check(self.site.dir, self.site.pages, 840), [])

    def test_figure_text_at_a_narrow_window(self):
        # 11 px text in an 820 px figure shows at 11 * 638 / 820 = 8.6 px at a 900 px window;
        # 12 px at 9.3 px.
        self.site.svg("small.svg", '<text x="1" y="1" font-size="11">T0</text>', width=820)
        self.site.svg("fine.svg", '<text x="1" y="1" font-size="12">T0</text>', width=820)
        self.site.page("lab_05.html", '<div class="image"><img src="small.svg"/></div>'
                                      '<div class="image"><img src="fine.svg"/></div>')
        problems = check.figure_text_check(self.site.dir, self.site.pages, 638, 9)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("small.svg", problems[0])
        self.assertIn("smaller than 9 px", problems[0])

    def test_the_bar_is_12_px_at_1400_px_and_11_px_at_the_other_widths(self):
        self.assertEqual(check.min_figure_text(1400), 12)
        self.assertEqual({w: check.min_figure_text(w) for w in check.WIDTHS if w != 1400},
                         {w: check.MIN_FIGURE_TEXT_PX for w in check.WIDTHS if w != 1400})
        self.assertEqual(check.MIN_FIGURE_TEXT_PX, 11)  # the floor docs/tidy_html.py's min-width keeps
        self.assertEqual(check.min_figure_text(None), 11)

    def test_12_px_text_shrunk_to_the_1400_px_column_fails_there(self):
        # The readers' defect: labels under 12 px at a 1400 px window. 12 px in an 820 px figure
        # shows at 12 * 808 / 820 = 11.8 px in the 808 px column, over the old 11 px floor and
        # under the 12 px bar; at 1920 px (991 px column) it shows at its own 12 px and passes.
        self.site.svg("map.svg", '<text x="1" y="1" font-size="12">T0</text>', width=820)
        self.site.page("lab_05.html", '<div class="image"><img src="map.svg"/></div>')
        at = {w: check.figure_text_check(self.site.dir, self.site.pages, check.COLUMN_AT[w],
                                         window=w) for w in check.WIDTHS}
        self.assertEqual(len(at[1400]), 1, at[1400])
        self.assertIn("smaller than 12 px at the 808 px column of a 1400 px window", at[1400][0])
        self.assertIn("sizes 11.8 px", at[1400][0])
        self.assertEqual(at[1920], [])
        self.assertEqual(check.figure_text_check(self.site.dir, self.site.pages,
                                                 check.COLUMN_AT[1400], min_px=11), [])

    def test_a_figure_that_reads_at_1400_px_fails_at_the_1000_px_column(self):
        # 12.3 px in an 820 px figure: 12.1 px at the 808 px column of a 1400 px window, but
        # 12.3 * 723 / 820 = 10.8 px at the 1000 px window's column, where the sidebar still shows.
        self.site.svg("map.svg", '<text x="1" y="1" font-size="12.3">T0</text>', width=820)
        self.site.page("lab_05.html", '<div class="image"><img src="map.svg"/></div>')
        self.assertIn(1000, check.WIDTHS)  # the check runs at the narrowest column
        at = {w: check.figure_text_check(self.site.dir, self.site.pages, check.COLUMN_AT[w],
                                         window=w) for w in check.WIDTHS}
        self.assertEqual(at[1400], [])
        self.assertEqual(len(at[1000]), 1, at[1000])
        self.assertIn("smaller than 11 px at the 723 px column of a 1000 px window", at[1000][0])
        self.assertIn("sizes 10.8 px", at[1000][0])

    def test_14_px_figure_text_passes_at_every_width(self):
        # 14 * 723 / 820 = 12.3 px at the narrowest column, 14 * 808 / 820 = 13.8 px at 1400 px:
        # svgfig.py's smallest size. 13 px, the size before it, passes too (11.5 and 12.8 px).
        self.site.page("lab_05.html", '<div class="image"><img src="map.svg"/></div>')
        for size in (14, 13):
            self.site.svg("map.svg", f'<text x="1" y="1" font-size="{size}">T0</text>', width=820)
            for width in check.WIDTHS:
                self.assertEqual(check.figure_text_check(self.site.dir, self.site.pages,
                                                         check.COLUMN_AT[width], window=width),
                                 [], (size, width))

    # -- table captions --
    TABLE = '<table class="markdownTable">\n<tr class="markdownTableHead">\n<th>file </th><th>what it is </th></tr>\n<tr><td>a</td><td>b</td></tr></table>'

    def test_a_chapter_table_without_a_caption_is_reported(self):
        self.site.page("lab_01.html", "<p>The files:</p>" + self.TABLE)
        problems = check.table_caption_check(self.site.dir, self.site.pages, frozenset())
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("lab_01.html: a table without a caption (header: file | what it is)",
                      problems[0])

    def test_a_test_table_without_a_caption_is_reported(self):
        self.site.page("lab_02.html", '<table class="book-tests"><tr><th>what it pins</th></tr>'
                                      '</table>')
        problems = check.table_caption_check(self.site.dir, self.site.pages, frozenset())
        self.assertEqual(len(problems), 1, problems)

    def test_captioned_tables_front_matter_and_pending_chapters_pass(self):
        captioned = ('<div class="book-table-caption" id="tab-1-1"><span class="book-tabnum">'
                     'Table 1.1.</span> The files.</div>\n' + self.TABLE.replace(
                         '">', '" aria-labelledby="tab-1-1">', 1))
        self.site.page("lab_01.html", captioned)
        self.site.page("glossary.html", self.TABLE)  # outside a chapter a caption is optional
        self.site.page("lab_06.html", self.TABLE)  # a chapter whose captions are pending
        self.assertEqual(check.table_caption_check(self.site.dir, self.site.pages,
                                                   frozenset({"06"})), [])

    def test_a_caption_with_no_table_below_it_is_reported(self):
        self.site.page("conventions.html", "<p>Table: The names.</p><p>Some text.</p>"
                                           + self.TABLE)
        problems = check.table_caption_check(self.site.dir, self.site.pages, frozenset())
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("conventions.html: a `Table:` caption with no table directly below it",
                      problems[0])

    def test_the_whole_check_fails_on_a_planted_site(self):
        """run_checks (what `tools/lab docs --check` runs), without the browser: a site with one
        defect of each reader class fails, naming each."""
        self.site.page("index.html", "<p>Welcome.</p>")
        self.site.svg("tiny.svg", '<text x="1" y="1" font-size="7">x</text>')
        self.site.page("lab_01.html", '<p>| a | b |</p><p>see [backend] at 0123abc</p>'
                                      '<div class="image"><object data="tiny.svg"></object></div>'
                                      '<p>Table: lost.</p><p>the sum \\(\\sum_i x_i\\)</p>'
                                      + self.TABLE)
        repo = self.tmp / "repo"
        (repo / "labs" / "01-x").mkdir(parents=True)
        (repo / "labs" / "01-x" / "README.md").write_text(
            "| a | b |\n<!-- instructor -->\n| c | d |\n<!-- /instructor -->\n", encoding="utf-8")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            count = check.run_checks(self.site.dir, repo, self.tmp / "shots", browser=False)
        text = out.getvalue()
        self.assertGreater(count, 0)
        for what in ("inside a Markdown table", "literal Markdown table syntax",
                     "snippet marker [backend]", "commit hash (0123abc)",
                     "smaller than 11 px", "a table without a caption",
                     "a `Table:` caption with no table", "raw TeX in the text"):
            self.assertIn(what, text)


def _load_docs(name: str):
    """docs/NAME.py, the book's build step under test, loaded from its file."""
    spec = importlib.util.spec_from_file_location(f"{name}_under_test", ROOT / "docs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load_tidy():
    return _load_docs("tidy_html")


class TidyHtmlTest(unittest.TestCase):
    """docs/tidy_html.py, run after Doxygen: the typography it exists to fix."""

    def setUp(self) -> None:
        self.tidy = _load_tidy().tidy

    def test_a_contents_entry_breaks_at_a_slash_or_before_a_dot_only(self):
        nw = '<span class="book-nowrap">'
        self.assertEqual(
            self.tidy('<li class="level1"><a href="#x">labs/05-cuda-paged-v1/given/</a>'),
            f'<li class="level1"><a href="#x">{nw}labs/</span><wbr>{nw}05-cuda-paged-v1/</span>'
            f'<wbr>{nw}given/</span></a>')
        self.assertEqual(
            self.tidy('<li class="level2"><a href="#y">paged_attention_v1.hpp</a>'),
            f'<li class="level2"><a href="#y">{nw}paged_attention_v1</span><wbr>{nw}.hpp</span></a>')
        plain = '<li class="level2"><a href="#z">The partial (TODO 3 to 5)</a>'
        self.assertEqual(self.tidy(plain), plain)

    def test_the_glossary_opens_with_an_a_to_z_index_of_its_rows(self):
        index = _load_tidy().glossary_index
        row = ('<tr class="markdownTableRowOdd">\n<td class="markdownTableBodyNone">{}   </td>'
               '<td class="markdownTableBodyNone">meaning</td></tr>\n')
        page = ('<div class="textblock"><p >The words of the book.</p>\n<table>'
                + row.format("slot") + row.format("<code>seq_len</code>")
                + row.format("block size (\\(B\\))") + "</table>")
        out = index("glossary.html", page)
        # Every row gets an id, and the index links to it under its first letter, in A to Z order.
        for slug in ("term-slot", "term-seq-len", "term-block-size"):
            self.assertIn(f'<tr id="{slug}"', out)
            self.assertIn(f'href="#{slug}"', out)
        self.assertLess(out.index('href="#term-seq-len"'), out.index('href="#term-slot"'))
        self.assertIn('<a href="#az-b">B</a>', out)
        self.assertIn('<span class="book-az-none">C</span>', out)
        self.assertLess(out.index("The words of the book."), out.index('id="glossary_az"'))
        self.assertEqual(index("glossary.html", out), out)  # a second pass adds nothing
        self.assertEqual(index("lab_01.html", page), page)  # other pages are left alone
        with self.assertRaisesRegex(ValueError, "no glossary rows"):
            index("glossary.html", '<div class="textblock"><p >Nothing.</p>\n')

    def test_no_space_between_a_bracket_and_a_formula(self):
        self.assertEqual(self.tidy("block size ( \\(B\\))"),
                         'block size <span class="book-nowrap">(\\(B\\))</span>')

    def test_a_formula_keeps_its_punctuation_on_its_line(self):
        out = self.tidy("to \\(10^{-12}\\), and \\(m\\) alone, or \\(a &lt; b\\).")
        self.assertIn('<span class="book-nowrap">\\(10^{-12}\\),</span> and \\(m\\) alone', out)
        self.assertIn('<span class="book-nowrap">\\(a &lt; b\\).</span>', out)

    def test_one_word_code_does_not_break_and_keeps_its_punctuation(self):
        out = self.tidy("read (<code>lab05_bench</code>; and <code>-fsanitize=address</code>")
        self.assertIn('<span class="book-nowrap">(<code class="book-nowrap">lab05_bench</code>;'
                      '</span>', out)
        self.assertIn('<code class="book-nowrap">-fsanitize=address</code>', out)

    def test_long_code_with_spaces_still_wraps(self):
        text = "<code>[num_blocks, num_kv_heads, head_size / x, block_size, x]</code>"
        self.assertEqual(self.tidy(text), text)

    def test_short_expressions_and_linked_paths_do_not_break(self):
        for code in ("[N + 1]", "is_causal = (q_len == kv_len)", "(num_heads, num_seqs)",
                     "page_stride = num_kv_heads × head_size"):
            self.assertEqual(self.tidy(f"<code>{code}</code>"),
                             f'<code class="book-nowrap">{code}</code>', code)
        path = "labs/02-online-softmax/online_softmax.hpp"
        self.assertEqual(self.tidy(f'<code><a class="el" href="x.html">{path}</a></code>'),
                         f'<code class="book-nowrap"><a class="el" href="x.html">{path}</a></code>')

    def test_a_test_tables_names_break_between_their_words_only(self):
        cell = '<td class="book-test-name"><code>{}</code></td>'
        out = self.tidy(cell.format("ReshapeAndCacheMatchesHostReference")
                        + cell.format("GroupedQueryEightHeadsOverTwo")
                        + cell.format("PagedAttentionV1Checks.*") + "<code>KeepsItsWhole</code>")
        self.assertIn(cell.format("Reshape<wbr>And<wbr>Cache<wbr>Matches<wbr>Host<wbr>Reference"),
                      out)
        self.assertIn(cell.format("Grouped<wbr>Query<wbr>Eight<wbr>Heads<wbr>Over<wbr>Two"), out)
        self.assertIn(cell.format("Paged<wbr>Attention<wbr>V1<wbr>Checks.<wbr>*"), out)
        self.assertIn('<code class="book-nowrap">KeepsItsWhole</code>', out)  # prose: no breaks
        self.assertEqual(self.tidy(out), out)  # a second run changes nothing

    def test_a_date_in_a_table_does_not_break_at_its_hyphens(self):
        heading = ('<th class="markdownTableHeadRight"> v1, 2026-11-22 </th>'
                   '<td><a href="m.html#run" title="run of 2026-11-26">2026-11-26</a></td>')
        out = self.tidy(heading + "<p>the run of 2026-11-22</p>")
        self.assertIn('v1, <span class="book-date">2026-11-22</span> </th>', out)
        self.assertIn('title="run of 2026-11-26"><span class="book-date">2026-11-26</span></a>', out)
        self.assertIn("<p>the run of 2026-11-22</p>", out)  # prose wraps at spaces anyway
        self.assertEqual(self.tidy(out), out)  # a second run changes nothing

    def test_a_measured_range_in_a_table_is_set_as_a_range(self):
        cells = ("<td>38.8 (37.1–39.6)</td><td>1.27 (1.17–1.37)<br>48%</td>"
                 "<td>GQA (32/4)</td><td>f(2, 3)</td>")
        out = self.tidy(cells + "<p>1.27 (1.17–1.37) in prose</p>")
        self.assertIn('<td>38.8 <span class="book-range">(37.1–39.6)</span></td>', out)
        self.assertIn('<td>1.27 <span class="book-range">(1.17–1.37)</span><br>48%</td>', out)
        self.assertIn("<td>GQA (32/4)</td><td>f(2, 3)</td>", out)  # not ranges: left alone
        self.assertIn("<p>1.27 (1.17–1.37) in prose</p>", out)  # only in tables
        self.assertEqual(self.tidy(out), out)  # a second run changes nothing

    def test_an_empty_related_pages_index_is_dropped_with_its_sidebar_entry(self):
        module = _load_tidy()
        with tempfile.TemporaryDirectory() as tmp:
            site = Path(tmp)
            (site / "pages.html").write_text('<div class="directory">\n</div>', encoding="utf-8")
            (site / "navtreeindex0.js").write_text('var NAVTREEINDEX0 =\n{\n"lab_01.html":[1],\n'
                                                   '"pages.html":[],\n"setup.html":[2]\n};\n',
                                                   encoding="utf-8")
            self.assertTrue(module.drop_empty_related_pages(site))
            self.assertFalse((site / "pages.html").exists())
            self.assertEqual((site / "navtreeindex0.js").read_text(encoding="utf-8"),
                             'var NAVTREEINDEX0 =\n{\n"lab_01.html":[1],\n"setup.html":[2]\n};\n')
            # A Related Pages index that lists a page stays.
            listing = '<div class="directory">\n<table><tr><td>a page</td></tr></table></div>'
            (site / "pages.html").write_text(listing, encoding="utf-8")
            self.assertFalse(module.drop_empty_related_pages(site))
            self.assertTrue((site / "pages.html").exists())

    def test_a_labs_pages_do_not_link_into_another_labs_header(self):
        module = _load_tidy()
        headers = module.header_pages(ROOT)
        self.assertEqual(headers["paged__attention__v1_8hpp"], "05")
        v1 = '<a class="code hl_variable" href="paged__attention__v1_8hpp.html#a08">kNumThreads</a>'
        v2 = '<a class="el" href="paged__attention__v2_8hpp.html#a11">kPartitionSize</a>'
        text = f"<code>{v1}</code> and <code>{v2}</code>"
        self.assertEqual(module.unlink_other_labs("lab_06.html", text, headers),
                         f"<code>kNumThreads</code> and <code>{v2}</code>")
        self.assertEqual(module.unlink_other_labs("given_code_lab06.html", text, headers),
                         f"<code>kNumThreads</code> and <code>{v2}</code>")
        self.assertEqual(module.unlink_other_labs("lab_05.html", text, headers),
                         f"<code>{v1}</code> and <code>kPartitionSize</code>")
        self.assertEqual(module.unlink_other_labs("glossary.html", text, headers), text)
        # The hidden tooltip of an unlinked name goes with its link; the page's own lab's stays.
        tip_v1 = ('<div class="ttc" id="apaged__attention__v1_8hpp_html_a08"><div class="ttname">'
                  'pa::cuda_v1::kNumThreads</div><div class="ttdoc">lab 05\'s threads</div></div>\n')
        tip_v2 = ('<div class="ttc" id="apaged__attention__v2_8hpp_html_a11"><div class="ttname">'
                  'pa::cuda_v2::kPartitionSize</div></div>\n')
        self.assertEqual(module.unlink_other_labs("lab_06_bench.html", tip_v1 + tip_v2, headers),
                         tip_v2)
        self.assertEqual(module.unlink_other_labs("lab_05_bench.html", tip_v1 + tip_v2, headers),
                         tip_v1)

    def test_headings_and_titles_start_and_end_with_their_text(self):
        self.assertEqual(self.tidy('<h1><a class="anchor" id="lab_03_why"></a>\nWhy</h1>'),
                         '<h1><a class="anchor" id="lab_03_why"></a>Why</h1>')
        self.assertEqual(self.tidy('<div class="title">Introduction </div>'),
                         '<div class="title">Introduction</div>')


class FigureNumbersTest(unittest.TestCase):
    """docs/tidy_html.py numbers each chapter's figures and resolves {{fig:NAME}} references."""

    @staticmethod
    def figure(name: str) -> str:
        return (f'<div class="image">\n<object type="image/svg+xml" data="{name}.svg" '
                f'style="pointer-events: none;"></object>\n<div class="caption">\nWhat it shows.'
                f'</div></div>')

    def test_chapter_figures_are_numbered_in_order_and_references_link_to_them(self):
        number_figures = _load_tidy().number_figures
        pages = {"lab_07.html": self.figure("lab07_gqa_reads") + "as {{fig:lab07_tiles}} shows"
                 + self.figure("lab07_tiles"),
                 "lab_06.html": "see {{fig:lab07_tiles}}", "index.html": self.figure("overview"),
                 "setup.html": self.figure("tools")}
        out = number_figures(pages)
        self.assertIn('<div class="image" id="fig-lab07_tiles">', out["lab_07.html"])
        self.assertIn('<span class="book-fignum">Figure 7.2.</span> What it shows.',
                      out["lab_07.html"])
        self.assertIn('as <a href="#fig-lab07_tiles">Figure 7.2</a> shows', out["lab_07.html"])
        self.assertIn('<a href="lab_07.html#fig-lab07_tiles">Figure 7.2</a>', out["lab_06.html"])
        self.assertIn("Figure 0.1.", out["index.html"])  # the introduction is chapter 0
        self.assertEqual(out["setup.html"], pages["setup.html"])  # other front matter: not numbered
        self.assertEqual(number_figures(out), out)  # a second run changes nothing

    def test_chapter_display_formulas_are_numbered_once(self):
        number_formulas = _load_tidy().number_formulas
        page = ('<p class="formulaDsp">\n\\[\n  m = \\max_i s_i\n\\]\n</p>'
                '<p class="formulaDsp">\n\\[ a = b \\]\n</p>')
        out = number_formulas("lab_02.html", page)
        self.assertIn("m = \\max_i s_i\n  \\tag{2.1}\n\\]", out)
        self.assertIn("a = b\n  \\tag{2.2}\n\\]", out)
        self.assertEqual(number_formulas("lab_02.html", out), out)  # tagged once
        self.assertEqual(number_formulas("setup.html", page), page)  # front matter: not numbered

    def test_a_figure_never_shrinks_below_eleven_px_text(self):
        # An 820 px picture whose smallest text is 13 px (one label under a scale(0.5) of 26 px)
        # may shrink to 694 px (13 px * 694/820 = 11.0 px) and no further: its tag gets that
        # min-width, and book.css scrolls it sideways in a narrower column. A picture whose
        # smallest text is under 11 px at its own width never shrinks at all.
        tidy = _load_tidy()
        self.assertEqual(tidy.MIN_FIGURE_TEXT_PX, _load_check().MIN_FIGURE_TEXT_PX)  # one rule
        svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="820" height="100" '
               'viewBox="0 0 820 100" font-size="14"><text>big</text>'
               '<g transform="scale(0.5)"><text font-size="26">small</text></g></svg>')
        with tempfile.TemporaryDirectory() as where:
            small = Path(where, "small.svg")
            small.write_text(svg.replace('"26"', '"20"'), encoding="utf-8")
            Path(where, "lab07_tiles.svg").write_text(svg, encoding="utf-8")
            self.assertEqual(tidy.figure_min_width(Path(where, "lab07_tiles.svg")), 694)
            self.assertEqual(tidy.figure_min_width(small), 820)
            page = FigureNumbersTest.figure("lab07_tiles") + FigureNumbersTest.figure("missing")
            out = tidy.legible_figures(page, Path(where))
            self.assertIn('data="lab07_tiles.svg" style="pointer-events: none; min-width: 694px;"',
                          out)
            self.assertIn('data="missing.svg" style="pointer-events: none;"', out)
            self.assertEqual(tidy.legible_figures(out, Path(where)), out)  # once

    def test_an_interlude_is_read_first_and_numbered_on_its_own(self):
        # docs/interlude_NN.md becomes lab_NN_<name>.html: read before the lesson, whatever its
        # name, with figures, formulas and tables of its own (I.1, ...); the chapter's own pages
        # keep their order and start at N.1.
        tidy = _load_tidy()
        names = ["lab_05_review.html", "lab_05.html", "lab_05_bench.html", "lab_05_gpu.html",
                 "lab_04_review.html", "lab_06_warps.html", "index.html", "setup.html"]
        self.assertEqual(tidy.chapter_pages(names),
                         ["index.html", "lab_04_review.html", "lab_05_gpu.html", "lab_05.html",
                          "lab_05_bench.html", "lab_05_review.html", "lab_06_warps.html"])
        pages = {"lab_05_gpu.html": self.figure("lab05_hierarchy"),
                 "lab_05.html": self.figure("lab05_key_lanes") + "see {{fig:lab05_hierarchy}}"}
        out = tidy.number_figures(pages)
        self.assertIn("Figure I.1.", out["lab_05_gpu.html"])
        self.assertIn("Figure 5.1.", out["lab_05.html"])
        self.assertIn("Figure I.1</a>", out["lab_05.html"])
        formula = '<p class="formulaDsp">\n\\[ a = b \\]\n</p>'
        tagged = tidy.number_all_formulas({"lab_05_gpu.html": formula, "lab_05.html": formula})
        self.assertIn("\\tag{I.1}", tagged["lab_05_gpu.html"])
        self.assertIn("\\tag{5.1}", tagged["lab_05.html"])
        self.assertEqual(tidy.table_chapter("lab_05_gpu.html", "", ["lab_05_gpu.html"]), "I")

    def test_each_interlude_has_its_own_numeral(self):
        # A second interlude (before lab 07) is numbered II.1, ..., so that no two figures,
        # formulas or tables of the book share a number; references resolve across pages.
        tidy = _load_tidy()
        pages = {"lab_07_tools.html":
                 self.figure("lab07_commit_groups") + "{{fig:lab05_hierarchy}}",
                 "lab_05_gpu.html": self.figure("lab05_hierarchy"),
                 "lab_07.html": self.figure("lab07_tiles") + "{{fig:lab07_commit_groups}}"}
        self.assertEqual(tidy.number_label("lab_07_tools.html", pages), "II")
        self.assertEqual(tidy.number_label("lab_05_gpu.html", pages), "I")
        out = tidy.number_figures(pages)
        self.assertIn("Figure I.1.", out["lab_05_gpu.html"])
        self.assertIn("Figure II.1.", out["lab_07_tools.html"])
        self.assertIn('href="lab_05_gpu.html#fig-lab05_hierarchy">Figure I.1</a>',
                      out["lab_07_tools.html"])
        self.assertIn('href="lab_07_tools.html#fig-lab07_commit_groups">Figure II.1</a>',
                      out["lab_07.html"])
        self.assertIn("Figure 7.1.", out["lab_07.html"])
        formula = '<p class="formulaDsp">\n\\[ a = b \\]\n</p>'
        tagged = tidy.number_all_formulas({"lab_05_gpu.html": formula,
                                           "lab_07_tools.html": formula})
        self.assertIn("\\tag{I.1}", tagged["lab_05_gpu.html"])
        self.assertIn("\\tag{II.1}", tagged["lab_07_tools.html"])
        self.assertEqual(tidy.table_chapter("lab_07_tools.html", "", pages), "II")

    def test_api_reference_pages_open_with_a_lead_naming_the_header_and_the_chapter(self):
        # Doxygen's pages of a header, a type and a folder say they are generated reference and
        # send the reader to the chapter for the ideas; the book's own pages get no lead.
        tidy = _load_tidy()
        headers = {"paged__attention__v1_8hpp": "labs/05-x/paged_attention_v1.hpp",
                   "tensor_8hpp": "common/pa/tensor.hpp"}
        chapters = {"05": "Lab 05 — X"}
        page = '<div class="header">T</div>\n<div class="contents">\n<p>Text.</p>'
        out = tidy.api_lead("paged__attention__v1_8hpp.html", page, headers, chapters)
        self.assertIn('<div class="book-bench-intro book-api-intro">A generated reference page '
                      'for the header <code>labs/05-x/paged_attention_v1.hpp</code>', out)
        self.assertIn('<a href="lab_05.html">Lab 05 — X</a>', out)
        self.assertEqual(tidy.api_lead("paged__attention__v1_8hpp.html", out, headers, chapters),
                         out)  # once
        typed = page + ('<p><code>#include &lt;<a class="el" href="tensor_8hpp_source.html">'
                        'tensor.hpp</a>&gt;</code></p>')
        out = tidy.api_lead("classpa_1_1Tensor.html", typed, headers, chapters)
        self.assertIn("a type declared in <code>common/pa/tensor.hpp</code>, which the labs share",
                      out)
        self.assertIn("The chapters explain the ideas", out)
        folder = page + '<a class="el" href="paged__attention__v1_8hpp.html">h</a>'
        out = tidy.api_lead("dir_abc.html", folder, headers, chapters)
        self.assertIn("the folder <code>labs/05-x/</code>: its headers", out)
        for name in ("lab_05.html", "classes.html", "classpa_1_1Tensor-members.html",
                     "tensor_8hpp_source.html", "files.html"):
            self.assertEqual(tidy.api_lead(name, page, headers, chapters), page)

    def test_an_interlude_of_two_pages_is_numbered_as_one(self):
        # A long interlude goes on on a second page (docs/interlude_05_2.md, lab_05_speed.html):
        # both pages are Interlude I, in the sidebar's order (not the names'), the second's
        # figures, formulas and tables going on from the first's; the next interlude is still II.
        tidy = _load_tidy()
        pages = {"lab_05_speed.html": self.figure("lab05_coalescing"),
                 "lab_05_gpu.html": self.figure("lab05_hierarchy"),
                 "lab_05.html": self.figure("lab05_key_lanes"),
                 "lab_07_tools.html": self.figure("lab07_commit_groups")}
        order = ["index.html", "lab_05_gpu.html", "lab_05_speed.html", "lab_05.html",
                 "lab_07_tools.html"]
        self.assertEqual(tidy.number_label("lab_05_speed.html", pages), "I")
        self.assertEqual(tidy.number_label("lab_07_tools.html", pages), "II")
        self.assertEqual(tidy.chapter_pages(reversed(order[1:]), order), order[1:])
        # Named the other way round, the sidebar's order still decides.
        renamed = ["lab_05_aaa.html", "lab_05_gpu.html"]
        self.assertEqual(tidy.chapter_pages(renamed, ["lab_05_gpu.html", "lab_05_aaa.html"]),
                         ["lab_05_gpu.html", "lab_05_aaa.html"])
        out = tidy.number_figures(pages, order)
        self.assertIn("Figure I.1.", out["lab_05_gpu.html"])
        self.assertIn("Figure I.2.", out["lab_05_speed.html"])
        self.assertIn("Figure 5.1.", out["lab_05.html"])
        self.assertIn("Figure II.1.", out["lab_07_tools.html"])
        formula = '<p class="formulaDsp">\n\\[ a = b \\]\n</p>'
        tagged = tidy.number_all_formulas({"lab_05_speed.html": formula,
                                           "lab_05_gpu.html": formula}, order)
        self.assertIn("\\tag{I.1}", tagged["lab_05_gpu.html"])
        self.assertIn("\\tag{I.2}", tagged["lab_05_speed.html"])
        caption = '<p>Table: x</p>\n<table class="markdownTable"><tr><td>1</td></tr></table>'
        tables = tidy.number_tables({"lab_05_speed.html": caption, "lab_05_gpu.html": caption},
                                    order)
        self.assertIn("Table I.1.", tables["lab_05_gpu.html"])
        self.assertIn("Table I.2.", tables["lab_05_speed.html"])

    def test_a_reference_to_no_figure_stops_the_build(self):
        with self.assertRaisesRegex(ValueError, "lab_06.html: .*lab07_tile"):
            _load_tidy().number_figures({"lab_06.html": "see {{fig:lab07_tile}}"})


class TableNumbersTest(unittest.TestCase):
    """docs/tidy_html.py turns `Table: ` paragraphs into numbered captions and resolves
    {{tab:NAME}} references."""

    TABLE = '<table class="markdownTable">\n<tr><th>a</th></tr></table>'

    @staticmethod
    def page(title: str, body: str) -> str:
        return f'<div class="headertitle"><div class="title">{title}</div></div>{body}'

    def test_tables_are_numbered_per_chapter_appendix_and_front_matter(self):
        number_tables = _load_tidy().number_tables
        cap = lambda text: f"<p >Table: {text}</p>\n"  # noqa: E731
        pages = {
            "lab_07.html": self.page("Lab 07 — GQA", cap("First.") + self.TABLE + "<p>x</p>"
                                     + cap("{tab:lab07_smem} Shared memory,\nper block.")
                                     + self.TABLE + "<p>see {{tab:lab07_smem}}</p>"),
            "lab_06.html": self.page("Lab 06 — Split", "<p>as {{tab:lab07_smem}}</p>"
                                     + cap("Tests.") + '<table class="book-tests">'),
            "glossary.html": self.page("Appendix B — Glossary", cap("Terms.") + self.TABLE),
            "given_code_lab01.html": self.page("A.1 Lab 01", cap("Files.") + self.TABLE),
            "index.html": self.page("Introduction", cap("Labs.") + self.TABLE),
            "setup.html": self.page("Setup", cap("Presets.") + self.TABLE),
            "conventions.html": self.page("Conventions", cap("Names.") + self.TABLE),
        }
        out = number_tables(pages, ["index.html", "setup.html", "conventions.html"])
        lab07 = out["lab_07.html"]
        self.assertIn('<div class="book-table-caption" id="tab-7-1"><span class="book-tabnum">'
                      'Table 7.1.</span> First.</div>\n<table class="markdownTable" '
                      'aria-labelledby="tab-7-1">', lab07)
        self.assertIn('id="tab-lab07_smem"><span class="book-tabnum">Table 7.2.</span> '
                      'Shared memory,\nper block.</div>', lab07)
        self.assertIn('see <a href="#tab-lab07_smem">Table 7.2</a>', lab07)
        self.assertIn('as <a href="lab_07.html#tab-lab07_smem">Table 7.2</a>', out["lab_06.html"])
        self.assertIn('Table 6.1.</span> Tests.</div>\n<table class="book-tests"',
                      out["lab_06.html"])
        self.assertIn("Table B.1.", out["glossary.html"])
        self.assertIn("Table A.1.", out["given_code_lab01.html"])
        # The front matter shares chapter 0, in the sidebar's order.
        self.assertIn("Table 0.1.", out["index.html"])
        self.assertIn("Table 0.2.", out["setup.html"])
        self.assertIn("Table 0.3.", out["conventions.html"])
        self.assertEqual(number_tables(out), out)  # a second run changes nothing

    def test_a_caption_with_no_table_is_left_for_the_check(self):
        number_tables = _load_tidy().number_tables
        page = "<p >Table: Lost.</p>\n<p>Text.</p>\n" + self.TABLE
        # The caption does not reach over the next paragraph to the table after it.
        self.assertEqual(number_tables({"lab_02.html": page}), {"lab_02.html": page})

    def test_a_reference_to_no_table_stops_the_build(self):
        with self.assertRaisesRegex(ValueError, "lab_03.html: .*lab03_none"):
            _load_tidy().number_tables({"lab_03.html": "see {{tab:lab03_none}}"})

    def test_a_fold_names_the_numbers_it_holds(self):
        tab = lambda n: f'<span class="book-tabnum">Table 6.{n}.</span>'  # noqa: E731
        page = ("<p>" + tab(9) + '</p><details class="book-fold"><summary>Why</summary>'
                + tab(10) + '<details class="book-hint"><summary>Hint</summary>h</details>'
                + '<details class="book-fold"><summary>Inner</summary>'
                + '<span class="book-fignum">Figure 6.4.</span></details></details>'
                + '<details class="book-fold"><summary>Empty</summary>x</details>' + tab(11))
        out = _load_tidy().label_folds(page)
        self.assertIn('<summary>Why <span class="book-fold-holds">(Table 6.10; Figure 6.4)'
                      '</span></summary>', out)
        self.assertIn('<summary>Inner <span class="book-fold-holds">(Figure 6.4)</span>', out)
        self.assertIn("<summary>Empty</summary>", out)
        self.assertIn("<summary>Hint</summary>", out)

    def test_a_name_given_twice_stops_the_build(self):
        cap = "<p >Table: {tab:twice} A.</p>\n" + self.TABLE
        with self.assertRaisesRegex(ValueError, "twice"):
            _load_tidy().number_tables({"lab_03.html": cap + cap})


class TestTableCaptionTest(unittest.TestCase):
    """docs/doxygen_filter.py turns a chapter's test table (the Markdown tools/lab grade reads)
    into the book's three-column HTML table, keeping every line in place (Doxygen's warnings name
    lines), and gives it the book's caption when the chapter gives it none."""

    @staticmethod
    def filter_module():
        spec = importlib.util.spec_from_file_location("doxygen_filter_under_test",
                                                      ROOT / "docs" / "doxygen_filter.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    TABLE = ["| test | pts | what it pins | hint |\n", "|---|---|---|---|\n",
             "| `A.B` | 1 | this | Why? → \\ref lab_05_why |\n",
             "| `A.C` | 2 | more | How? → \\ref lab_05_how |\n", "\n", "After.\n"]

    def test_an_uncaptioned_test_table_gets_the_caption_line_for_line(self):
        lines = ["Intro.\n", "\n"] + self.TABLE
        out = self.filter_module().tests_table(lines, "05")
        self.assertEqual(len(out), len(lines))
        self.assertTrue(out[2].startswith("Table: The graded tests of lab 05: "), out[2])
        self.assertEqual(out[3], "\n")
        self.assertTrue(out[4].startswith('<table class="book-tests"><tr class="book-tests-about">'),
                        out[4])
        self.assertTrue(out[5].rstrip().endswith("</table>"))
        self.assertEqual(out[7], "After.\n")

    def test_a_note_after_the_name_keeps_the_row_in_its_suite(self):
        table = self.TABLE[:2] + ["| `A.B` *emulator only so far* | 1 | this | Why? → \\ref lab_05_why |\n"] + self.TABLE[3:]
        out = "".join(self.filter_module().tests_table(table, "05"))
        self.assertIn('<td class="book-test-name">`B`<br><span class="book-test-note">'
                      '*emulator only so far*</span></td>', out)
        self.assertNotIn("Other tests", out)
        self.assertIn("all in suite `A`", out)

    def test_a_hint_to_a_stumbles_row_links_with_the_rows_title(self):
        # A bare \ref to an \anchor would show the anchor's name; a heading's \ref shows its own.
        table = self.TABLE[:2] + ["| `A.B` | 1 | this | Why? → \\ref lab_05_note_tail |\n"]
        notes = ["| \\anchor lab_05_note_tail **The tail of the last block**<br>`T` | NaN |\n"]
        out = "".join(self.filter_module().tests_table(table + ["\n"] + notes, "05"))
        self.assertIn('\\ref lab_05_note_tail "The tail of the last block"', out)
        plain = "".join(self.filter_module().tests_table(self.TABLE, "05"))
        self.assertIn("\\ref lab_05_why</span>", plain)

    def test_a_captioned_test_table_keeps_its_caption(self):
        lines = ["Table: Our own words,\n", "on two lines.\n", "\n"] + self.TABLE
        out = self.filter_module().tests_table(lines, "05")
        self.assertEqual(len(out), len(lines))
        self.assertEqual(sum(line.startswith("Table:") for line in out), 1)
        self.assertTrue(out[5].startswith('<table class="book-tests">'), out[5])

    def test_three_columns_the_suite_said_once_and_the_hint_folded_under_its_row(self):
        out = "".join(self.filter_module().tests_table(self.TABLE, "05", {"A": ["Emulator",
                                                                                "Cuda"]}))
        self.assertIn("2 graded tests, 3 points, all in suite `A`", out)
        self.assertIn("each runs as `/Emulator` and `/Cuda`, one row for both", out)
        self.assertEqual(out.count("<th"), 3)
        self.assertIn('<td class="book-test-name">`C`</td><td class="book-test-pts">2</td>'
                      '<td class="book-test-hinted"><span class="book-test-pins">more</span>'
                      '<details class="book-hint"><summary>Hint</summary>'
                      '<span class="book-hint-text">How? →&nbsp;§&nbsp;\\ref lab_05_how</span>'
                      '</details></td>', out)
        # Folded, closed: the hint comes when asked for, as `tools/lab hint` gives it.
        self.assertNotIn("<details class=\"book-hint\" open", out)
        self.assertEqual(out.count("<details"), out.count("</details>"))
        self.assertEqual(out.count("<summary>Hint</summary>"), 2)
        self.assertEqual(out.count("`A"), 1)  # said once above the rows, not on each
        self.assertNotIn("book-tests-suite", out)  # one suite: no heading rows

    def test_a_long_listing_of_a_bench_page_folds_behind_its_summary_line_for_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            body = ["  // TODO 1: a", "  // TODO 2: b"] + ["  x;"] * 50
            (root / "starter.cpp").write_text("\n".join(["/// [long]"] + body + ["/// [long]",
                                                         "/// [short]", "x;", "/// [short]",
                                                         "/// [api]"] + body + ["/// [api]"]))
            (root / "long.hpp").write_text("\n".join(["/// [api]"] + ["x;"] * 61 + ["/// [api]"]))
            lines = ["Text.\n", "\\snippet starter.cpp long\n", "\\snippet starter.cpp short\n",
                     "\\snippet starter.cpp long\n", "\\snippet starter.cpp api\n"]
            out = self.filter_module().fold_listings(lines, root, 0, 3)
            api = self.filter_module().fold_listings(lines, root, 4, 5)[4]
            long_api = self.filter_module().fold_listings(["\\snippet long.hpp api\n"], root)[0]
        self.assertEqual(api, lines[4])  # the lab's API: open up to 60 lines (this one has 52)
        self.assertIn("<details", long_api)  # past 60 lines even the API folds
        self.assertEqual(len(out), len(lines))
        self.assertEqual(out[0], "Text.\n")
        self.assertEqual(out[1], '<details class="book-listing"><summary>starter.cpp — '
                                 '<code>long</code>, 52 lines with TODOs 1–2</summary>\\ilinebr '
                                 '\\snippet starter.cpp long \\ilinebr </details>\n')
        self.assertEqual(out[2], lines[2])  # short: stays open
        self.assertEqual(out[3], lines[3])  # past the bench page's end: left alone

    def test_the_your_job_box_comes_from_the_files_table_the_hints_and_the_tests(self):
        lines = ["| file | what it is |\n", "|---|---|\n",
                 "| `labs/05-x/starter.cpp` | your file: two kernels |\n", "\n"] + self.TABLE
        steps = [{"id": "reshape", "function": "k1", "todo": "", "title": "the scatter",
                  "section": "lab_05_a"},
                 {"id": "attention.1", "function": "k2", "todo": "1", "title": "the query",
                  "section": "lab_05_b"},
                 {"id": "attention.2", "function": "k2", "todo": "2", "title": "q·k",
                  "section": "lab_05_c"}]
        box = self.filter_module().your_job(lines, "05", steps)
        self.assertNotIn("\n", box)  # one line: the chapter keeps its line numbers
        self.assertIn("<code>labs/05-x/starter.cpp</code>", box)
        self.assertIn('<li><code>k1</code> — \\ref lab_05_a "the scatter"</li>', box)
        self.assertIn('<li><code>k2</code>: TODO <b>1</b>&nbsp;\\ref lab_05_b "the query" · '
                      '<b>2</b>&nbsp;\\ref lab_05_c "q·k"</li>', box)
        self.assertIn("<code>tools/lab grade 05</code> runs the graded tests: 2 tests, 3 points",
                      box)
        self.assertIn("<code>tools/lab hint 05 reshape</code>", box)
        self.assertEqual(self.filter_module().your_job(self.TABLE, "05", steps), "")  # no file
        self.assertNotIn("Still stuck?", box)  # no table of classic stumbles in these lines
        # The box points the stuck student to the notes' classic stumbles: the section above
        # the table's caption.
        notes = ["## Notes {#lab_05_notes}\n", "\n", "Text.\n", "\n",
                 "Table: Classic stumbles of lab 05: under each, the test.\n"]
        self.assertEqual(self.filter_module().stumbles_section(notes), "lab_05_notes")
        box = self.filter_module().your_job(lines + notes, "05", steps)
        self.assertNotIn("\n", box)
        self.assertIn('<li><b>Still stuck?</b> The notes page\'s table of \\ref lab_05_notes '
                      '"classic stumbles"', box)

    def test_a_kernel_of_three_todos_or_more_lists_them_one_a_line(self):
        lines = ["| file | what it is |\n", "|---|---|\n",
                 "| `labs/05-x/starter.cpp` | your file: one kernel |\n", "\n"] + self.TABLE
        steps = [{"id": f"attention.{n}", "function": "k2", "todo": n, "title": f"step {n}",
                  "section": f"lab_05_{n}"} for n in ("1", "2", "3b")]
        box = self.filter_module().your_job(lines, "05", steps)
        self.assertNotIn("\n", box)
        self.assertIn('<li><code>k2</code>:<ul class="book-job-todos">'
                      '<li><b>TODO&nbsp;1</b>&nbsp; \\ref lab_05_1 "step 1"</li>'
                      '<li><b>TODO&nbsp;2</b>&nbsp; \\ref lab_05_2 "step 2"</li>'
                      '<li><b>TODO&nbsp;3b</b>&nbsp; \\ref lab_05_3b "step 3b"</li></ul></li>', box)

    def test_several_suites_get_a_heading_each_and_ungraded_rows_keep_their_names(self):
        table = self.TABLE[:2] + ["| `S.One` | 1 | a | A? → \\ref x |\n",
                                  "| `S.Two` | 2 | b | B? → \\ref x |\n",
                                  "| `T.Three` | 1 | c | C? → \\ref x |\n",
                                  "| `SChecks.*` | — | the checks, not graded | — |\n"]
        out = self.filter_module().tests_table(table, "01")
        self.assertEqual(len(out), len(table))
        self.assertIn("3 graded tests, 4 points, in 2 suites", out[2])
        self.assertNotIn("runs as", out[2])  # no suite of backends
        self.assertIn("The `S` suite: 2 tests, 3 points", out[2])
        self.assertNotIn("book-tests-suite", out[3])  # S's heading came with its first row
        self.assertIn("The `T` suite: 1 test, 1 point", out[4])
        self.assertIn('<td colspan="3">Not graded</td>', out[5])
        self.assertIn('<td class="book-test-name">`SChecks.*`</td><td class="book-test-pts">—</td>'
                      '<td>the checks, not graded</td>', out[5])  # no hint line for "—"

    def test_the_backends_come_from_the_suites_instantiation(self):
        source = ("INSTANTIATE_TEST_SUITE_P(, GqaDecode, ::testing::Values(Backend::kEmulator, "
                  "Backend::kCuda),\n    pa::testing::backend_test_name);\n"
                  "INSTANTIATE_TEST_SUITE_P(, Sizes, ::testing::Values(1, 2));\n")
        self.assertEqual(self.filter_module().suite_backends([source]),
                         {"GqaDecode": ["Emulator", "Cuda"]})


class ChapterSplitTest(unittest.TestCase):
    """A chapter reads as four pages, its lesson (lab_NN.html: At a glance, Why, Background),
    its bench (lab_NN_bench.html: Files to the tests), its notes (lab_NN_review.html: Notes to
    References) and its measurements (lab_NN_measurements.html: Measured), cut from the one
    README by docs/doxygen_filter.py; docs/book_check.py holds the built book to that shape, and
    docs/tidy_html.py numbers the pages' figures, formulas and tables as one chapter."""

    README = ["# Lab 05 — The kernel {#lab_05}\n", "\n", "Lesson.\n", "\n",
              "## Background {#lab_05_background}\n", "\n", "- a list item that a line after it\n",
              "  would continue\n", "\n", "## Files {#lab_05_files}\n", "\n", "Files.\n", "\n",
              "## What the tests prove {#lab_05_tests}\n", "\n", "Tests.\n", "\n",
              "## Notes {#lab_05_notes}\n", "\n", "Notes.\n", "\n",
              "## References {#lab_05_references}\n", "\n", "Papers.\n", "\n",
              "## Measured {#lab_05_measured}\n", "\n", "Rates.\n"]

    @staticmethod
    def filter_module():
        return TestTableCaptionTest.filter_module()

    def _in_order(self, line: str, *parts: str) -> None:
        for before, after in zip(parts, parts[1:]):
            self.assertIn(before, line)
            self.assertIn(after, line)
            self.assertLess(line.index(before), line.index(after), (before, after))

    def test_the_filter_cuts_the_chapter_at_its_files_and_notes_headings_line_for_line(self):
        out = self.filter_module().split_chapter(self.README, "05")
        self.assertEqual(len(out), len(self.README))  # Doxygen's warnings keep their line numbers
        files = self.README.index("## Files {#lab_05_files}\n")
        notes = self.README.index("## Notes {#lab_05_notes}\n")
        measured = self.README.index("## Measured {#lab_05_measured}\n")
        self.assertEqual(out[:files], self.README[:files])
        self.assertEqual(out[files + 1:notes], self.README[files + 1:notes])
        self.assertEqual(out[notes + 1:measured], self.README[notes + 1:measured])
        self.assertEqual(out[measured + 1:], self.README[measured + 1:])
        # The lesson ends with its own contents (no box pointing on: the Previous / Next links
        # do that), then the bench page starts with the chapter's strip of pages (its title,
        # the other pages linked, this one in bold) and opens with the Files section under its
        # old id.
        line = out[files]
        self.assertNotIn("book-way-on", line)
        self.assertNotIn("\\subpage", line)
        self._in_order(line, "\\tableofcontents",
                       "\\page lab_05_bench Lab 05: at the bench",
                       'Lab 05 — The kernel: \\ref lab_05 "lesson" · <b>at the bench</b> · '
                       '\\ref lab_05_review "notes" · \\ref lab_05_measurements "measurements"',
                       "\\section lab_05_files Files")
        self.assertTrue(line.endswith("\\section lab_05_files Files\n"), line)
        self.assertEqual(line.count("\n"), 1)  # the breaks inside are Doxygen's \ilinebr
        # The same at Notes: the bench ends with its contents, the notes page names the bench.
        line = out[notes]
        self.assertNotIn("book-way-on", line)
        self._in_order(line, "\\tableofcontents",
                       "\\page lab_05_review Lab 05: notes",
                       "\\ref lab_05_bench", "\\section lab_05_notes Notes")
        self.assertTrue(line.endswith("\\section lab_05_notes Notes\n"), line)
        self.assertEqual(line.count("\n"), 1)
        # And at Measured: the notes end with their contents, the measurements name the notes.
        line = out[measured]
        self._in_order(line, "\\tableofcontents",
                       "\\page lab_05_measurements Lab 05: measurements",
                       "\\ref lab_05_review", "\\section lab_05_measured Measured")
        self.assertTrue(line.endswith("\\section lab_05_measured Measured\n"), line)
        self.assertEqual(line.count("\n"), 1)

    def test_the_lessons_first_page_has_the_strip_on_its_subtitles_line(self):
        readme = list(self.README)
        readme[1] = '<div class="book-subtitle">The kernel, in short</div>\n'
        out = self.filter_module().split_chapter(readme, "05")
        self.assertEqual(len(out), len(readme))
        self._in_order(out[1], '<div class="book-subtitle">The kernel, in short</div>',
                       'Lab 05 — The kernel: <b>lesson</b> · \\ref lab_05_bench "at the bench"',
                       '\\ref notation_lab05 "symbols"')
        self.assertTrue(out[1].endswith("</div>\n") and out[1].count("\n") == 1)

    def test_a_long_lesson_goes_on_on_a_second_page_at_its_part2_heading(self):
        readme = list(self.README)
        background = readme.index("## Background {#lab_05_background}\n")
        readme[background + 2:background + 2] = ["## The Reductions {#lab_05_part2}\n", "\n"]
        out = self.filter_module().split_chapter(readme, "05")
        self.assertEqual(len(out), len(readme))
        line = out[background + 2]
        self._in_order(line, "\\tableofcontents",
                       "\\page lab_05_lesson2 Lab 05: the Reductions",
                       '\\ref lab_05 "lesson" · <b>lesson, part 2</b> · \\ref lab_05_bench',
                       "\\section lab_05_part2 The Reductions")
        self.assertEqual(line.count("\n"), 1)
        # The bench names both pages of the lesson; without the heading it names one.
        bench = out[readme.index("## Files {#lab_05_files}\n")]
        self._in_order(bench, '\\ref lab_05 "', '\\ref lab_05_lesson2 "lesson, part 2"',
                       "\\section lab_05_files")
        plain = self.filter_module().split_chapter(self.README, "05")
        self.assertNotIn("lab_05_lesson2", "".join(plain))
        # tidy_html numbers its figures after the lesson's and before the bench's.
        self.assertEqual(_load_tidy().chapter_pages(
            ["lab_05_bench.html", "lab_05_lesson2.html", "lab_05_gpu.html", "lab_05.html"]),
            ["lab_05_gpu.html", "lab_05.html", "lab_05_lesson2.html", "lab_05_bench.html"])

    def test_a_lessons_second_page_keeps_its_first_headings_anchor_not_its_text(self):
        page = ('<div class="book-bench-intro">After.</div> <h1><a class="anchor" '
                'id="lab_06_part2"></a>\nThe reduce, <code>x</code></h1>\n<p>Text.</p>'
                '<h1><a class="anchor" id="lab_06_reduce"></a>\nThe reduce kernel</h1>')
        out = _load_tidy().tidy(page)
        self.assertIn('</div> <a class="anchor" id="lab_06_part2"></a>\n<p>Text.</p>', out)
        self.assertIn('id="lab_06_reduce"></a>The reduce kernel</h1>', out)

    def test_the_check_wants_a_lessons_second_page_between_it_and_the_bench(self):
        with tempfile.TemporaryDirectory() as tmp:
            html, repo = self._site(Path(tmp), split=True)
            (html / "lab_05_lesson2.html").write_text(
                '<div class="book-bench-intro">After <a class="el" href="lab_05.html">it</a>.'
                '</div><h1><a class="anchor" id="lab_05_part2"></a>part2</h1>')
            problems = "\n".join(check.structure_check(html, repo))
            # (the test site's sidebar lists no second page, and the bench's link is to lab_05)
            self.assertIn("sidebar: no entry for lab_05_lesson2.html", problems)
            self.assertIn("lab_05_bench.html: does not start with the link back to "
                          "lab_05_lesson2.html", problems)

    def test_a_chapter_without_its_files_heading_stays_one_page(self):
        module = self.filter_module()
        readme = [line for line in self.README if not line.startswith("## Files")]
        self.assertEqual(module.split_chapter(readme, "05"), readme)
        self.assertEqual(module.split_chapter(self.README, "06"), self.README)  # not its chapter

    def test_a_chapter_without_its_notes_heading_is_two_pages(self):
        readme = [line for line in self.README if not line.startswith("## Notes")]
        out = self.filter_module().split_chapter(readme, "05")
        self.assertIn("\\page lab_05_bench", "".join(out))
        self.assertNotIn("lab_05_review", "".join(out))

    def _site(self, tmp: Path, split: bool) -> tuple[Path, Path]:
        site = Site(tmp)
        site.page("index.html", '<p><a href="lab_05.html">Lab 05</a> · '
                                '<a href="lab_05_bench.html">at the bench</a></p>')
        anchors = lambda *ids: "".join(f'<h1><a class="anchor" id="lab_05_{i}"></a>{i}</h1>'
                                       for i in ids)  # noqa: E731
        lesson = anchors(*check.LESSON_SECTIONS)
        bench = anchors(*check.BENCH_SECTIONS)
        notes = anchors(*check.NOTES_SECTIONS)
        measured = anchors(*check.MEASURED_SECTIONS)
        if split:
            site.page("lab_05.html", lesson)
            site.page("lab_05_bench.html", '<div class="book-bench-intro">Of <a class="el" '
                                           'href="lab_05.html">Lab 05</a>.</div>' + bench)
            site.page("lab_05_review.html", '<div class="book-bench-intro">After <a class="el" '
                                            'href="lab_05_bench.html">the bench</a>.</div>'
                      + notes)
            site.page("lab_05_measurements.html", '<div class="book-bench-intro">After <a '
                                                  'class="el" href="lab_05_review.html">the '
                                                  'notes</a>.</div>' + measured)
        else:
            site.page("lab_05.html", lesson + bench + notes + measured)
        repo = tmp / "repo"
        (repo / "labs" / "05-kernel").mkdir(parents=True)
        (repo / "labs" / "05-kernel" / "README.md").write_text("# Lab 05 — K {#lab_05}\n")
        return site.dir, repo

    def test_the_check_reports_a_chapter_on_one_page_and_passes_the_split_one(self):
        with tempfile.TemporaryDirectory() as tmp:
            html, repo = self._site(Path(tmp), split=False)
            problems = check.structure_check(html, repo)
            self.assertTrue(any("lab_05_bench.html: missing" in p for p in problems), problems)
            self.assertTrue(any("lab_05_review.html: missing" in p for p in problems), problems)
            self.assertTrue(any("lab_05_measurements.html: missing" in p for p in problems),
                            problems)
        with tempfile.TemporaryDirectory() as tmp:
            html, repo = self._site(Path(tmp), split=True)
            self.assertEqual(check.structure_check(html, repo), [])

    def test_the_check_wants_each_section_on_its_page_and_the_link_back(self):
        with tempfile.TemporaryDirectory() as tmp:
            html, repo = self._site(Path(tmp), split=True)
            lesson = (html / "lab_05.html").read_text(encoding="utf-8")
            (html / "lab_05.html").write_text(
                lesson.replace("</h1>", '</h1><a class="anchor" id="lab_05_tests"></a>', 1))
            bench = (html / "lab_05_bench.html").read_text(encoding="utf-8")
            (html / "lab_05_bench.html").write_text(
                bench.replace("</h1>", '</h1><a class="anchor" id="lab_05_measured"></a>'
                                       '<a class="anchor" id="lab_05_check"></a>', 1))
            review = (html / "lab_05_review.html").read_text(encoding="utf-8")
            (html / "lab_05_review.html").write_text(
                review.replace('href="lab_05_bench.html"', 'href="lab_05.html"'))
            problems = "\n".join(check.structure_check(html, repo))
            self.assertIn("lab_05.html: holds section(s) lab_05_tests of another page", problems)
            self.assertIn("lab_05_bench.html: holds section(s) lab_05_check, lab_05_measured of "
                          "another page", problems)
            self.assertIn("lab_05_review.html: does not start with the link back to "
                          "lab_05_bench.html", problems)

    def test_figures_formulas_and_tables_go_on_from_the_lesson_to_the_bench_and_notes(self):
        tidy = _load_tidy()
        figure = FigureNumbersTest.figure
        formula = '<p class="formulaDsp">\n\\[ a = b \\]\n</p>'
        table = "<p >Table: T.</p>\n" + TableNumbersTest.TABLE
        pages = {"lab_05_review.html": figure("measured") + formula + table,
                 "lab_05_bench.html": figure("bench_plot") + formula + table,
                 "lab_05.html": figure("layout") + figure("warps") + formula + formula + table,
                 "lab_06.html": figure("split") + formula + table}
        order = ["lab_05.html", "lab_05_bench.html", "lab_05_review.html", "lab_06.html"]
        out = tidy.number_tables(tidy.number_figures(tidy.number_all_formulas(pages)), order)
        bench = out["lab_05_bench.html"]
        self.assertIn("Figure 5.3.", bench)
        self.assertIn("\\tag{5.3}", bench)
        self.assertIn("Table 5.2.", bench)
        review = out["lab_05_review.html"]
        self.assertIn("Figure 5.4.", review)
        self.assertIn("\\tag{5.4}", review)
        self.assertIn("Table 5.3.", review)
        self.assertIn("Figure 6.1.", out["lab_06.html"])  # the next chapter starts again
        self.assertIn("\\tag{6.1}", out["lab_06.html"])
        self.assertIn("Table 6.1.", out["lab_06.html"])


BOOK = ROOT / "build" / "docs" / "html"


@unittest.skipUnless((BOOK / "lab_05.html").is_file(), f"the book is not built ({BOOK})")
class BuiltBookSplitTest(unittest.TestCase):
    """The built book (tools/lab docs): lab 05's lesson ends with its background, before Files,
    its bench page holds the work up to the tests, its notes page the notes to the references and
    its measurements page the rest, the three right after it in the sidebar."""

    @staticmethod
    def text(page: str) -> str:
        html = (BOOK / page).read_text(encoding="utf-8")
        return html[html.find('<div class="contents">'):html.find("<!-- contents -->")]

    def test_lab_05s_lesson_stops_before_files_its_bench_holds_the_tests_its_notes_the_rest(self):
        for page in ("lab_05_bench.html", "lab_05_review.html"):
            self.assertTrue((BOOK / page).is_file(),
                            f"no {page} in {BOOK}: a book built before the split? build it "
                            f"again: tools/lab docs")
        lesson, bench = self.text("lab_05.html"), self.text("lab_05_bench.html")
        review = self.text("lab_05_review.html")
        self.assertIn('id="lab_05_background"', lesson)
        for moved in ("lab_05_files", "lab_05_tests"):
            self.assertNotIn(f'id="{moved}"', lesson)
            self.assertIn(f'id="{moved}"', bench)
        for moved in ("lab_05_notes", "lab_05_check", "lab_05_references"):
            self.assertNotIn(f'id="{moved}"', lesson)
            self.assertNotIn(f'id="{moved}"', bench)
            self.assertIn(f'id="{moved}"', review)
        measured = self.text("lab_05_measurements.html")
        self.assertIn('id="lab_05_measured"', measured)
        self.assertNotIn('id="lab_05_measured"', lesson + bench + review)
        self.assertIn('href="lab_05_review.html"',
                      check._bench_intro(BOOK / "lab_05_measurements.html"))
        self.assertIn("What the tests prove</h1>", bench)
        self.assertNotIn("What the tests prove</h1>", lesson)
        self.assertNotIn("book-way-on", lesson + bench)  # the Previous / Next links lead on
        self.assertIn('href="lab_05.html"', check._bench_intro(BOOK / "lab_05_bench.html"))
        self.assertIn('href="lab_05_bench.html"', check._bench_intro(BOOK / "lab_05_review.html"))
        self.assertIn('href="lab_05_lesson2.html"', check._bench_intro(BOOK / "lab_05_bench.html"))
        self.assertIn('href="lab_05.html"', check._bench_intro(BOOK / "lab_05_lesson2.html"))
        self.assertIn('id="lab_05_reductions"', self.text("lab_05_lesson2.html"))
        self.assertNotIn('id="lab_05_reductions"', lesson)
        pages = [file for file, _ in check.book_pages(BOOK)]
        at = pages.index("lab_05.html")
        self.assertEqual(pages[at:at + 6], ["lab_05.html", "lab_05_lesson2.html",
                                            "lab_05_bench.html", "lab_05_review.html",
                                            "lab_05_measurements.html", "lab_06.html"])


# A formula as docs/render_math.py leaves it: KaTeX's HTML (the MathML for find, copy and screen
# readers, then the drawn boxes), made at build time.
KATEX_FORMULA = ('<span class="katex"><span class="katex-mathml"><math><semantics><mrow><mi>x'
                 '</mi></mrow><annotation encoding="application/x-tex">\\sum_i x</annotation>'
                 '</semantics></math></span><span class="katex-html" aria-hidden="true">'
                 '<span class="base"><span class="mord mathnormal">x</span></span></span></span>')
KATEX_LINK = '<link href="katex/katex.min.css" rel="stylesheet" type="text/css"/>'


class MathCheckTest(unittest.TestCase):
    """math_check: every formula typeset at build time; a planted raw formula, KaTeX error box,
    MathJax script, missing stylesheet or missing font each fails it; a rendered page passes."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.site = Site(Path(self._tmp.name))
        katex = self.site.dir / "katex"
        (katex / "fonts").mkdir(parents=True)
        (katex / "katex.min.css").write_text(
            "@font-face{font-family:KaTeX_Main;src:url(fonts/KaTeX_Main-Regular.woff2) "
            "format('woff2')}.katex{font:normal 1.21em KaTeX_Main}", encoding="utf-8")
        (katex / "fonts" / "KaTeX_Main-Regular.woff2").write_bytes(b"wOF2")

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def _check(self, body: str) -> tuple[int, list[str]]:
        self.site.page("lab_02.html", KATEX_LINK + body)
        return check.math_check(self.site.dir)

    def test_rendered_formulas_pass(self):
        # TeX inside code is code, and the MathML's annotation holds the formula's source.
        count, problems = self._check(f"<p>the sum {KATEX_FORMULA} of <code>\\(x\\)</code></p>"
                                      f'<p class="formulaDsp"><span class="katex-display">'
                                      f"{KATEX_FORMULA}</span></p>")
        self.assertEqual(problems, [])
        self.assertEqual(count, 2)

    def test_raw_tex_is_reported(self):
        count, problems = self._check(f"<p>{KATEX_FORMULA} and \\(m_{{\\mathrm{{new}}}}\\) and "
                                      f"a lone \\[ here</p>")
        self.assertEqual(len(problems), 2, problems)
        self.assertIn('lab_02.html: raw TeX in the text (a formula KaTeX did not typeset): '
                      '"\\(m_{\\mathrm{new}}\\)"', problems[0])
        self.assertIn('"\\["', problems[1])

    def test_a_katex_error_box_is_reported(self):
        # What KaTeX writes with throwOnError: false: the source in red, the message as title.
        _, problems = self._check('<p><span class="katex-error" title="ParseError: KaTeX parse '
                                  'error: Expected \'}\'" style="color:#cc0000">x^{</span></p>')
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("lab_02.html: a formula KaTeX could not render (katex-error): "
                      "ParseError: KaTeX parse error", problems[0])

    def test_a_mathjax_script_is_reported(self):
        _, problems = self._check(f'<script type="text/javascript" async="async" '
                                  f'src="mathjax/MathJax.js"></script><p>{KATEX_FORMULA}</p>')
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("loads MathJax (mathjax/MathJax.js)", problems[0])

    def test_a_missing_stylesheet_or_font_is_reported(self):
        (self.site.dir / "katex" / "fonts" / "KaTeX_Main-Regular.woff2").unlink()
        _, problems = self._check(f"<p>{KATEX_FORMULA}</p>")
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("katex/katex.min.css: fonts/KaTeX_Main-Regular.woff2 does not resolve",
                      problems[0])
        (self.site.dir / "katex" / "katex.min.css").unlink()
        _, problems = self._check(f"<p>{KATEX_FORMULA}</p>")
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("1 formula(s) but no katex.min.css linked that exists", problems[0])


def _load_render_math():
    return _load_docs("render_math")


def _katex_missing() -> str | None:
    import shutil
    if not shutil.which("node"):
        return "no node (Debian: nodejs)"
    if not Path("/usr/share/javascript/katex/katex.min.js").is_file():
        return "no KaTeX (Debian: libjs-katex)"
    return None


@unittest.skipIf(_katex_missing(), _katex_missing() or "")
class RenderMathTest(unittest.TestCase):
    """docs/render_math.py: the build's KaTeX step, on pages as Doxygen and tidy_html.py leave
    them."""
    KATEX = Path("/usr/share/javascript/katex/katex.min.js")

    def setUp(self) -> None:
        self.render = _load_render_math()

    def _pages(self, **pages: str) -> dict[str, str]:
        return self.render.render_pages(pages, "node", self.KATEX)

    def test_inline_and_display_formulas_become_katex_html_with_mathml(self):
        out = self._pages(**{"lab_02.html": (
            '<p>from \\(m = -\\infty\\), \\(a &lt; b\\) and <code>\\(kept\\)</code></p>\n'
            '<p class="formulaDsp">\n\\[\n\\begin{aligned} x &amp;= 1 \\\\ y &amp;= 2'
            '\\end{aligned}\n  \\tag{2.1}\n\\]\n</p>')})["lab_02.html"]
        self.assertNotIn("\\(m", out)
        self.assertIn("<code>\\(kept\\)</code>", out)  # code is code
        self.assertEqual(out.count('<span class="katex">'), 3)
        self.assertEqual(out.count('<span class="katex-display">'), 1)
        self.assertIn("(2.1)", out)  # the tag tidy_html.py numbered it with
        # The MathML text beside the drawing: find-in-page, copying and screen readers see it.
        self.assertIn('<annotation encoding="application/x-tex">a &lt; b</annotation>', out)

    def test_the_code_identifier_macro_sets_code_as_text(self):
        out = self._pages(**{"a.html": "<p>\\(\\mathtt{warp\\_idx} + 1\\)</p>"})["a.html"]
        self.assertIn('<span class="mord texttt">warp_idx</span>', out)

    def test_a_formula_katex_rejects_stops_the_build_naming_page_formula_and_error(self):
        with self.assertRaises(self.render.MathError) as caught:
            self._pages(**{"lab_03.html": "<p>fine \\(x\\), broken \\(e^{m\\)</p>",
                           "index.html": "<p>a lone \\( delimiter</p>"})
        message = str(caught.exception)
        self.assertIn("lab_03.html: KaTeX cannot render \\(e^{m\\)", message)
        self.assertIn("KaTeX parse error: Expected '}'", message)
        self.assertIn("index.html: a formula delimiter without its other half", message)
        self.assertNotIn("lab_03.html: a formula delimiter", message)

    def test_strict_mode_rejects_what_latex_would(self):
        with self.assertRaises(self.render.MathError) as caught:
            self._pages(**{"a.html": "<p>\\(x_{é}\\)</p>"})  # a text letter in math mode
        self.assertIn("a.html: KaTeX cannot render \\(x_{é}\\)", str(caught.exception))
        self.assertIn("unicodeTextInMathMode", str(caught.exception))

    def test_the_stylesheet_and_every_font_it_names_are_copied(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "katex"
            fonts = self.render.copy_katex_assets(self.KATEX.parent, out)
            css = (out / "katex.min.css").read_text(encoding="utf-8")
            urls = set(self.render.CSS_URL.findall(css))
            self.assertEqual(fonts, len(urls))
            self.assertGreater(fonts, 0)
            for url in urls:
                self.assertTrue((out / url).is_file() and not (out / url).is_symlink(), url)


class FigureLinksTest(unittest.TestCase):
    def test_figures_open_full_size(self):
        """docs/book-figures.js wraps each figure in a link to its SVG, and every page loads
        it (the Doxygen header and HTML_EXTRA_FILES)."""
        script = (ROOT / "docs" / "book-figures.js").read_text(encoding="utf-8")
        self.assertIn("book-figure-link", script)
        self.assertIn("book-figures.js", (ROOT / "docs" / "header.html").read_text())
        self.assertIn("book-figures.js", (ROOT / "docs" / "CMakeLists.txt").read_text())


if __name__ == "__main__":
    unittest.main()


def _browser_missing() -> str | None:
    """Why the browser checks cannot run here (None when they can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "no Selenium for this Python (Debian: python3-selenium, run with /usr/bin/python3)"
    if not (check._find_chromium() and check._find_chromedriver()):
        return "no chromium and chromedriver (Debian: chromium, chromium-driver)"
    return None


class BrowserTestCase(unittest.TestCase):
    """A test class that shares one headless Chromium (the book check's own) and a scratch
    folder over all its tests."""

    @classmethod
    def setUpClass(cls) -> None:
        cls._tmp = tempfile.TemporaryDirectory()
        cls.tmp = Path(cls._tmp.name)
        cls.driver = check._start_browser(cls.tmp / "chromedriver.log")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.driver.quit()
        cls._tmp.cleanup()


@unittest.skipIf(_browser_missing(), _browser_missing() or "")
class FigureTextInTheBrowserTest(BrowserTestCase):
    """The browser's figure-text check measures text as the page draws it: a figure that CSS
    shrinks, or whose small text comes from a <style> rule, is reported although its SVG file
    says 12 px; the same figure drawn at full size passes. (The file-only estimate,
    figure_text_check, passes all three: that is why the browser measures.)"""

    STYLE_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="820" height="100" '
                 'viewBox="0 0 820 100" font-size="12"><style>.note { font-size: 7px; }</style>'
                 '<text x="10" y="20">label at 12</text>'
                 '<text x="10" y="60" class="note">a note a style rule shrinks</text></svg>')

    def setUp(self) -> None:
        self.site = Site(Path(tempfile.mkdtemp(dir=self.tmp)))

    def _problems(self, page: str, width: int = 1400) -> list[str]:
        self.driver.set_window_size(width, 900)
        self.driver.get((self.site.dir / page).as_uri())
        return check._figure_text(self.driver, width, 12)

    def test_a_figure_css_shrinks_is_reported(self):
        # 12 px text in an 820 px figure that CSS draws 500 px wide: 12 * 500 / 820 = 7.3 px.
        self.site.svg("shrunk.svg", '<text x="1" y="20">12 px in the file</text>')
        page = self.site.page("lab_05.html", '<style>object { width: 500px; }</style>'
                                             '<div class="image"><object type="image/svg+xml" '
                                             'data="shrunk.svg"></object></div>')
        self.assertEqual(check.figure_text_check(self.site.dir, self.site.pages, 840), [])
        problems = self._problems(page)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("shrunk.svg: 1 text(s) smaller than 12 px", problems[0])
        self.assertIn("sizes 7.3 px", problems[0])

    def test_a_shrunk_img_is_reported_too(self):
        self.site.svg("shrunk.svg", '<text x="1" y="20">12 px in the file</text>')
        page = self.site.page("lab_05.html", '<div class="image"><img src="shrunk.svg" '
                                             'style="width: 410px"/></div>')
        problems = self._problems(page)
        self.assertTrue(problems and "sizes 6 px" in problems[0], problems)

    def test_small_text_from_a_style_rule_is_reported(self):
        (self.site.dir / "styled.svg").write_text(self.STYLE_SVG, encoding="utf-8")
        page = self.site.page("lab_05.html", '<div class="image"><object type="image/svg+xml" '
                                             'data="styled.svg"></object></div>')
        problems = self._problems(page)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn('"a note a style rule shrinks"', problems[0])
        self.assertNotIn("label at 12", problems[0])

    def test_a_figure_is_measured_at_every_width_and_fails_at_the_narrow_column(self):
        # The book's column is 723 px at a 1000 px window (the sidebar beside it) and wider at
        # the others; planted here with a media rule. 12 px in an 820 px figure: 12 px where the
        # column holds it (the 12 px bar at 1400 px met), 12 * 723 / 820 = 10.6 px at 1000 px,
        # under the 11 px floor.
        self.site.svg("map.svg", '<text x="1" y="20">12 px in the file</text>')
        page = self.site.page("lab_05.html",
                              '<style>body { margin: 0 } div.contents { width: 900px }'
                              ' @media (max-width: 1100px) and (min-width: 950px) {'
                              ' div.contents { width: 723px } }'
                              ' object { max-width: 100%; height: auto }</style>'
                              '<div class="image"><object type="image/svg+xml" '
                              'data="map.svg"></object></div>')
        self.driver.get((self.site.dir / page).as_uri())
        found = {}
        for width in check.WIDTHS:
            self.driver.set_window_size(width, 900)
            found[width] = check._figure_text(self.driver, width, check.min_figure_text(width))
        self.assertEqual([w for w, p in found.items() if p], [1000], found)
        self.assertIn("smaller than 11 px as drawn at a 1000 px window", found[1000][0])
        self.assertIn("sizes 10.6 px", found[1000][0])

    def test_text_under_12_px_at_1400_px_is_reported_though_over_the_floor(self):
        # 12 px in an 820 px figure the column draws 780 px wide: 12 * 780 / 820 = 11.4 px, over
        # the 11 px floor but under the 1400 px window's 12 px bar.
        self.site.svg("map.svg", '<text x="1" y="20">12 px in the file</text>')
        page = self.site.page("lab_05.html",
                              '<style>body { margin: 0 } div.contents { width: 780px }'
                              ' object { max-width: 100%; height: auto }</style>'
                              '<div class="image"><object type="image/svg+xml" '
                              'data="map.svg"></object></div>')
        self.driver.set_window_size(1400, 900)
        self.driver.get((self.site.dir / page).as_uri())
        self.assertEqual(check._figure_text(self.driver, 1400, check.MIN_FIGURE_TEXT_PX), [])
        problems = check._figure_text(self.driver, 1400, check.min_figure_text(1400))
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("smaller than 12 px as drawn at a 1400 px window", problems[0])
        self.assertIn("sizes 11.4 px", problems[0])

    def test_a_figure_drawn_at_its_own_size_passes(self):
        self.site.svg("fine.svg", '<text x="1" y="20">12 px</text>'
                                  '<g transform="scale(1.5)"><text x="1" y="40">9 px × 1.5</text></g>'
                                  .replace("<text x=\"1\" y=\"40\">", '<text x="1" y="40" font-size="9">'))
        page = self.site.page("lab_05.html", '<div class="image"><object type="image/svg+xml" '
                                             'data="fine.svg"></object></div>')
        self.assertEqual(self._problems(page), [])


@unittest.skipIf(_browser_missing(), _browser_missing() or "")
class FigureViewerInTheBrowserTest(BrowserTestCase):
    """A click on a figure opens docs/book-figures.js's viewer: the picture larger than in the
    column, with its caption, closed by Escape. A page whose figure is only a link to its SVG
    (no viewer) is reported."""

    FIGURE = ('<div class="image"><a class="book-figure-link" href="fig.svg" target="_blank">'
              '<object type="image/svg+xml" data="fig.svg" style="pointer-events: none">'
              '</object></a><div class="caption">Figure 1.1. A planted figure.</div></div>')

    def _problems(self, body: str) -> list[str]:
        site = Site(Path(tempfile.mkdtemp(dir=self.tmp)))
        site.svg("fig.svg", '<text x="1" y="20">a label</text>', width=600)
        for name in ("book-figures.js", "book.css"):
            (site.dir / name).write_text((ROOT / "docs" / name).read_text(encoding="utf-8"),
                                         encoding="utf-8")
        page = site.page("lab_01.html", body)
        self.driver.set_window_size(1400, 900)
        self.driver.get((site.dir / page).as_uri())
        return check._viewer_problems(self.driver)

    def test_the_books_viewer_passes(self):
        # The page's own link is made by the script, as in the book.
        body = ('<link rel="stylesheet" href="book.css"><script src="book-figures.js"></script>'
                '<div class="contents"><div class="image"><object type="image/svg+xml" '
                'data="fig.svg" style="pointer-events: none; width: 600px"></object>'
                '<div class="caption">Figure 1.1. A planted figure.</div></div></div>')
        self.assertEqual(self._problems(body), [])

    def test_a_figure_that_is_only_a_link_is_reported(self):
        problems = self._problems(self.FIGURE)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("did not open the figure viewer", problems[0])


def _load_search_index():
    return _load_docs("search_index")


class SearchIndexTest(unittest.TestCase):
    """docs/search_index.py cuts each page into its sections (heading, anchor, text) and keeps
    the prose and inline code, not code blocks, the page's contents or KaTeX's rendering (a
    formula gives its TeX's words)."""

    def test_sections_keep_prose_and_inline_code_not_code_blocks_or_katex_html(self):
        with tempfile.TemporaryDirectory() as tmp:
            site = Site(Path(tmp))
            site.page("lab_01.html",
                      '<div class="toc"><h3>Table of Contents</h3><a href="#s">Secret toc</a></div>'
                      '<p>Before any heading.</p>'
                      '<h1><a class="anchor" id="lab_01_tol"></a>How tolerances are chosen</h1>'
                      '<p>A <code>kTolerance</code> per test, a '
                      '<span class="katex"><span class="katex-mathml"><math><semantics><mi>x</mi>'
                      '<annotation encoding="application/x-tex">\\mathrm{denom}_i</annotation>'
                      '</semantics></math></span><span class="katex-html" aria-hidden="true">'
                      'd e n o m</span></span> each.</p>'
                      '<div class="fragment"><div class="line">int hidden_code = 1;</div></div>')
            index = _load_search_index().build(site.dir)
        self.assertEqual(index["pages"], [["lab_01.html", "lab_01.html"]])
        sections = index["sections"]
        self.assertEqual([s[1:3] for s in sections],
                         [["", "lab_01.html"], ["lab_01_tol", "How tolerances are chosen"]])
        self.assertEqual(sections[0][3], "Before any heading.")
        self.assertEqual(sections[1][3], "A kTolerance per test, a denom i each.")

    def test_a_formula_keeps_its_symbols_in_the_text(self):
        # Greek letters, relations and operator names stay as symbols, so a snippet still reads;
        # commands that draw nothing (\mathrm) go.
        tex_words = _load_search_index().tex_words
        self.assertEqual(tex_words("[\\phi B, (\\phi+1)B)"), "[φ B, (φ+1)B)")
        self.assertEqual(tex_words("m_{\\mathrm{new}} = \\max(m, s_i)"), "m new = max(m, s i)")
        self.assertEqual(tex_words("i \\le n \\cdot B"), "i ≤ n · B")


@unittest.skipIf(_browser_missing(), _browser_missing() or "")
class SearchInTheBrowserTest(BrowserTestCase):
    """The browser check types a word of the prose into the search box (docs/book-search.js):
    the book's box over the index docs/search_index.py writes finds it and a click on the
    first result lands on the page that holds it; without the index, or with an index that
    does not hold the word (a box that finds nothing), the check fails."""

    HEADER = ('<link rel="stylesheet" href="book.css"><script src="book-search.js"></script>'
              '<script>BookSearch.init()</script><div id="MSearchBox"><span class="left">'
              '<input type="text" id="MSearchField" onkeyup="searchBox.OnSearchFieldChange(event)"'
              '/></span></div>')

    def _problems(self, index: bool = True, word_in_code_only: bool = False) -> list[str]:
        site = Site(Path(tempfile.mkdtemp(dir=self.tmp)))
        for name in ("book-search.js", "book.css"):
            (site.dir / name).write_text((ROOT / "docs" / name).read_text(encoding="utf-8"),
                                         encoding="utf-8")
        site.page("index.html", self.HEADER + "<p>The front page says nothing of the kind.</p>")
        where = ('<div class="fragment"><div class="line">double tolerance = 1e-12;</div></div>'
                 if word_in_code_only else "<p>A tolerance is a named constant.</p>")
        site.page("conventions.html", self.HEADER + '<h1><a class="anchor" id="conv_tol"></a>'
                  "Constants</h1>" + where)
        if index:
            with contextlib.redirect_stdout(io.StringIO()):
                self.assertEqual(_load_search_index().main([str(site.dir)]), 0)
        return check._search_problems(self.driver, site.dir, "index.html", "tolerance")

    def test_the_books_search_finds_a_prose_word_and_its_first_result_lands_there(self):
        self.assertEqual(self._problems(), [])
        self.assertTrue(self.driver.current_url.endswith("conventions.html#conv_tol"),
                        self.driver.current_url)

    def test_a_missing_index_is_reported(self):
        problems = self._problems(index=False)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("no search index", problems[0])

    def test_a_search_that_finds_nothing_is_reported(self):
        # The word is in a code block only, which the index leaves out: the box finds nothing.
        problems = self._problems(word_in_code_only=True)
        self.assertEqual(len(problems), 2, problems)   # at 900 and at 1400 px
        self.assertTrue(all("shows no result" in p for p in problems), problems)


@unittest.skipIf(_browser_missing() or _katex_missing(), _browser_missing() or _katex_missing() or "")
class FormulasInTheBrowserTest(BrowserTestCase):
    """The browser check sees what a reader sees of the formulas: KaTeX's HTML drawn in KaTeX's
    fonts passes; without the stylesheet, with a font gone, or with a KaTeX error box or raw
    TeX in the text, the page fails."""

    @classmethod
    def setUpClass(cls) -> None:
        cls._tmp = tempfile.TemporaryDirectory()
        cls.tmp = Path(cls._tmp.name)
        cls.driver = check._start_browser(cls.tmp / "chromedriver.log")
        render = _load_render_math()
        cls.formula = render.render_pages({"p": "\\(\\sum_{i \\in \\mathcal{S}} e^{s_i - m}\\)"},
                                          "node", RenderMathTest.KATEX)["p"]

    @classmethod
    def tearDownClass(cls) -> None:
        cls.driver.quit()
        cls._tmp.cleanup()

    def _problems(self, body: str, drop: str | None = None) -> list[str]:
        site = Site(Path(tempfile.mkdtemp(dir=self.tmp)))
        _load_render_math().copy_katex_assets(RenderMathTest.KATEX.parent, site.dir / "katex")
        if drop:
            for path in (site.dir / "katex").rglob(drop):
                path.unlink()
        page = site.page("lab_02.html", KATEX_LINK + body)
        self.driver.set_window_size(1400, 900)
        self.driver.get((site.dir / page).as_uri())
        fonts = self.driver.execute_async_script(check.WAIT_FOR_FONTS)
        audit = self.driver.execute_script(check.AUDIT)
        layout = self.driver.execute_script(check.LAYOUT)
        return (check._font_problems(fonts, audit["shown"], audit["styled"])
                + [f"katex-error: {e}" for e in audit["errors"]] + layout["problems"])

    def test_a_rendered_formula_in_katexs_fonts_passes(self):
        self.assertEqual(self._problems(f"<p>the sum {self.formula} over the blocks</p>"), [])

    def test_formulas_only_in_a_closed_fold_need_no_font_yet(self):
        # The browser loads KaTeX's fonts for laid-out text only: a page whose formulas all sit
        # in a closed fold has loaded none, and that is not a fault; once shown, they must load.
        fold = f"<details><summary>More</summary><p>{self.formula}</p></details>"
        self.assertEqual(self._problems(f"<p>No formula here.</p>{fold}"), [])
        self.assertEqual(self._problems(f"<p>No formula here.</p>{fold}".replace(
            "<details>", "<details open>")), [])

    def test_a_missing_stylesheet_or_font_is_reported(self):
        problems = self._problems(f"<p>{self.formula}</p>", drop="katex.min.css")
        self.assertEqual(problems, ["the formulas are not in KaTeX's fonts: katex/katex.min.css "
                                    "did not load"])
        problems = self._problems(f"<p>{self.formula}</p>", drop="KaTeX_Main-Regular.*")
        self.assertTrue(any("KaTeX font KaTeX_Main (normal, 400) did not load" in p
                            for p in problems), problems)

    def test_hidden_mathml_placed_against_the_window_is_reported(self):
        # Doxygen's layout: the window fixed, the text scrolling in #doc-content. KaTeX's hidden
        # MathML is absolutely positioned: without book.css's `.katex { position: relative }`
        # a formula far down the text makes the window scroll too.
        page = ('<style>html, body {{ height: 100%; margin: 0 }} #doc-content {{ height: 100%; '
                'overflow: auto }}</style>{css}<div id="doc-content"><div class="contents">'
                '<div class="textblock"><p style="margin-top: 3000px">{formula}</p></div></div>'
                '</div>')
        site = Site(Path(tempfile.mkdtemp(dir=self.tmp)))
        _load_render_math().copy_katex_assets(RenderMathTest.KATEX.parent, site.dir / "katex")
        (site.dir / "book.css").write_text((ROOT / "docs" / "book.css").read_text(encoding="utf-8"),
                                           encoding="utf-8")
        found = {}
        for css in ("", '<link rel="stylesheet" href="book.css">'):
            (site.dir / "lab_02.html").write_text(
                KATEX_LINK + page.format(css=css, formula=self.formula), encoding="utf-8")
            self.driver.get((site.dir / "lab_02.html").as_uri())
            self.driver.execute_async_script(check.WAIT_FOR_FONTS)
            found[bool(css)] = [p for p in self.driver.execute_script(check.LAYOUT)["problems"]
                                if "the window scrolls" in p]
        self.assertEqual(len(found[False]), 1, found)
        self.assertEqual(found[True], [])

    def test_raw_tex_and_a_katex_error_box_are_reported(self):
        problems = self._problems('<p>left as TeX: \\(e^{s_i}\\)</p><p><span class="katex-error" '
                                  'title="ParseError: KaTeX parse error: Expected \'}\'">x^{'
                                  '</span></p>')
        self.assertTrue(any(p.startswith("raw TeX") for p in problems), problems)
        self.assertIn("katex-error: ParseError: KaTeX parse error: Expected '}'", problems)
