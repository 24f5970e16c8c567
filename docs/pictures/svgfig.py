"""svgfig: the book's pictures as SVG, written by Python (standard library only).

Every picture in the book is generated from a source in docs/pictures/ when the book is built
(make_pictures.py runs each `figures()` of the chapter modules); none is a hand-drawn binary.
This module is the small drawing kit they share, so that every picture speaks the same visual
language:

- one palette (PALETTE), each hue with a light fill and a strong ink, and fixed meanings for the
  roles that recur (request A and B, shared, free, poison, the four warps, the state);
- one font size scale and one stroke width;
- Figure: rectangles, text, lines, arrows, braces, legends, written in user units that are CSS
  pixels at 100%: a figure drawn `Figure(820, h)` shows at its natural size in the book's
  content column (about 824 px at a 1400 px window) and scales down on narrower screens (723 px
  at a 1000 px window, where the sidebar still shows);
- Figure.grid: a CuTe-style layout picture: a grid of cells, each coloured by who owns it and
  labelled with what it holds, e.g. "T3 / d8-11" (see lab05.py).

A picture is a function returning a Figure; a chapter module lists its pictures in FIGURES =
{"file_stem": function}. See docs/pictures/README.md for how to add one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence
from xml.sax.saxutils import escape

# ---- the visual language ------------------------------------------------------------------------

FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"
INK = "#1f2933"        # text and outlines
MUTED = "#52606d"      # secondary text, guides (dark enough to read at 11 px)
RULE = "#9aa5b1"       # light outlines, dashed frames
PAPER = "#ffffff"
BARRIER_INK = "#c0392b"  # __syncthreads() in every kernel timeline

SIZE_TITLE = 15        # a panel's title
SIZE = 14              # ordinary labels
SIZE_SMALL = 14        # cell contents, annotations: the smallest text. 14 px because a 1400 px
                       # window's column (808 px) draws an 820 px figure at 98.5%: 13.8 px there,
                       # well over the 12 px bar; the narrowest column (a 1000 px window, the
                       # sidebar shown) is 723 px and draws it at 88%: 12.3 px, over the 11 px floor
SIZE_LARGE = 16        # the values a dense picture is read by (a lattice's cells, a pool's rows):
                       # larger than the labels around them, with `_{...}` indices at SIZE_SMALL
NOTE_SIZE = 14         # a figure's legend lines (Figure.paragraph); what a figure means is said
                       # once, in its caption under it, not in a note inside the picture
STROKE = 1.2


@dataclass(frozen=True)
class Hue:
    fill: str   # light: cell and box backgrounds
    ink: str    # strong: arrows, outlines, text on white


# Eight hues, distinguishable in print and for the common colour-vision deficiencies when read
# together with their labels (every coloured cell also says in words whose it is).
PALETTE = (
    Hue("#cfe0f3", "#2f6db3"),   # 0 blue
    Hue("#f8dcc2", "#c26a1b"),   # 1 orange
    Hue("#d5ecd4", "#3b8a3e"),   # 2 green
    Hue("#e3d7f0", "#7a4fa8"),   # 3 purple
    Hue("#f6eec0", "#8f7a12"),   # 4 yellow
    Hue("#f4d3d8", "#b3475a"),   # 5 pink
    Hue("#cdeceb", "#237f7f"),   # 6 teal
    Hue("#e4e7eb", "#5b6570"),   # 7 grey
)

# Roles with a fixed hue across the whole book.
REQUEST_A = PALETTE[0]
REQUEST_B = PALETTE[1]
REQUEST_C = PALETTE[2]
SHARED = PALETTE[3]
STATE = PALETTE[4]
POISON = PALETTE[5]
FREE = Hue("#f5f7fa", "#9aa5b1")
WARPS = (PALETTE[0], PALETTE[1], PALETTE[2], PALETTE[3])   # warp w of a thread block
MASKED = POISON                                            # a score that is masked out: never read
VISIBLE = PALETTE[0]                                       # a score that is attended


def hue(i: int) -> Hue:
    """The i-th hue of the palette, cycling (thread i, warp i, partition i, ...)."""
    return PALETTE[i % len(PALETTE)]


def mix(a: str, b: str, t: float) -> str:
    """The colour t of the way from a to b (both #rrggbb)."""
    ca = [int(a[i:i + 2], 16) for i in (1, 3, 5)]
    cb = [int(b[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(ca, cb))


def text_width(s: str, size: float = SIZE, mono: bool = False) -> float:
    """An estimate of the width of `s` in user units (DejaVu metrics, rounded up)."""
    per_char = 0.61 if mono else 0.58
    return len(text_extent(s)) * size * per_char


SCRIPT = re.compile(r"([\^_])\{([^{}]*)\}")


def _math_spans(s: str, size: float) -> str:
    """Escaped text, with TeX-like `^{...}` and `_{...}` drawn as raised and lowered smaller
    text: e^{m − m'} is e with the exponent set as one, not "e^(m − m')". The script size is
    never below SIZE_SMALL."""
    if not SCRIPT.search(s):
        return escape(s)
    small = max(SIZE_SMALL, round(size * 0.8, 1))
    out, at, back = [], 0, None
    for m in SCRIPT.finditer(s):
        if m.start() > at:
            dy = f' dy="{back}"' if back else ""
            out.append(f"<tspan{dy}>{escape(s[at:m.start()])}</tspan>")
            back = None
        shift, undo = ("-0.45em", "0.45em") if m.group(1) == "^" else ("0.3em", "-0.3em")
        if back:  # two scripts in a row: return to the baseline first
            out.append(f'<tspan dy="{back}"></tspan>')
        out.append(f'<tspan dy="{shift}" font-size="{small:g}">{escape(m.group(2))}</tspan>')
        back, at = undo, m.end()
    if at < len(s) or back:
        dy = f' dy="{back}"' if back else ""
        out.append(f"<tspan{dy}>{escape(s[at:])}</tspan>")
    return "".join(out)


def text_extent(s: str) -> str:
    """The characters of s as drawn (the script markers taken out), for width estimates."""
    return SCRIPT.sub(r"\2", s)


# ---- the figure ---------------------------------------------------------------------------------

class Figure:
    """An SVG picture of `width` x `height` user units (CSS pixels at natural size)."""

    def __init__(self, width: float, height: float, title: str, desc: str = "") -> None:
        self.width, self.height = width, height
        self.title, self.desc = title, desc
        self._body: list[str] = []
        self._markers: dict[str, str] = {}
        # (left, right, text) of every unrotated text, estimated: make_pictures.py fails a
        # picture whose text runs past its edges.
        self.extents: list[tuple[float, float, str]] = []
        self.overflows: list[str] = []  # grid cells whose text is wider than the cell

    # -- primitives --
    def add(self, element: str) -> None:
        self._body.append(element)

    def rect(self, x: float, y: float, w: float, h: float, fill: str = "none",
             stroke: str | None = INK, sw: float = STROKE, rx: float = 0,
             dash: str | None = None, opacity: float | None = None) -> None:
        attrs = f'x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" fill="{fill}"'
        if stroke:
            attrs += f' stroke="{stroke}" stroke-width="{sw:g}"'
        if rx:
            attrs += f' rx="{rx:g}"'
        if dash:
            attrs += f' stroke-dasharray="{dash}"'
        if opacity is not None:
            attrs += f' opacity="{opacity:g}"'
        self.add(f"<rect {attrs}/>")

    def text(self, x: float, y: float, s: str, size: float = SIZE, anchor: str = "start",
             fill: str = INK, weight: str | None = None, mono: bool = False,
             italic: bool = False, rotate: float | None = None) -> None:
        """One line of text whose vertical middle is at y."""
        if rotate is None:
            w = text_width(s, size, mono) * (1.06 if weight == "bold" else 1.0)
            left = x - {"start": 0, "middle": w / 2, "end": w}[anchor]
            self.extents.append((left, left + w, s))
        attrs = f'x="{x:g}" y="{y:g}" font-size="{size:g}" text-anchor="{anchor}"'
        attrs += ' dominant-baseline="central"'
        if fill != INK:
            attrs += f' fill="{fill}"'
        if weight:
            attrs += f' font-weight="{weight}"'
        if mono:
            attrs += f' font-family="{MONO}"'
        if italic:
            attrs += ' font-style="italic"'
        if rotate is not None:
            attrs += f' transform="rotate({rotate:g} {x:g} {y:g})"'
        self.add(f"<text {attrs}>{_math_spans(s, size)}</text>")

    def lines(self, x: float, y: float, rows: Sequence[str], size: float = SIZE,
              anchor: str = "middle", gap: float = 1.3, **kw) -> None:
        """Several lines of text centred vertically on y."""
        step = size * gap
        top = y - step * (len(rows) - 1) / 2
        for i, row in enumerate(rows):
            self.text(x, top + i * step, row, size=size, anchor=anchor, **kw)

    def paragraph(self, x: float, y: float, s: str, width: float | None = None,
                  size: float = NOTE_SIZE, gap: float = 1.4, **kw) -> float:
        """Text wrapped at word boundaries to `width` (default: to the picture's right margin),
        its first line's middle at y; returns the y of the line after the last."""
        width = width if width is not None else self.width - x - 10
        line = ""
        for word in s.split(" "):
            trial = f"{line} {word}" if line else word
            if line and text_width(trial, size, kw.get("mono", False)) > width:
                self.text(x, y, line, size=size, **kw)
                y += size * gap
                line = word
            else:
                line = trial
        if line:
            self.text(x, y, line, size=size, **kw)
            y += size * gap
        return y

    def _marker(self, color: str) -> str:
        mid = "arrow-" + color.lstrip("#")
        if mid not in self._markers:
            self._markers[mid] = (
                f'<marker id="{mid}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                f'markerHeight="7" orient="auto-start-reverse">'
                f'<path d="M0,0 L10,5 L0,10 z" fill="{color}"/></marker>')
        return mid

    def barrier_line(self, x1: float, x2: float, y: float, label: str,
                     size: float = SIZE_SMALL) -> None:
        """A __syncthreads() across the picture at height y: one dash, the label, then whole
        dashes (7 on, 4 off) that start clear of the label and end at or before x2, so no dash
        runs into the text and no stub of one reads as a stray dot."""
        self.line(x1, y, x1 + 7, y, stroke=BARRIER_INK, sw=1.6)
        self.text(x1 + 15, y, label, size=size, fill=BARRIER_INK, mono=True)
        start = x1 + 15 + text_width(label, size, mono=True) + 12
        end = start + ((x2 - start + 4) // 11) * 11 - 4
        if end > start:
            self.line(start, y, end, y, stroke=BARRIER_INK, sw=1.6, dash="7 4")

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = INK,
             sw: float = STROKE, dash: str | None = None, arrow: bool = False,
             arrow_start: bool = False) -> None:
        attrs = f'x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="{stroke}"'
        attrs += f' stroke-width="{sw:g}"'
        if dash:
            attrs += f' stroke-dasharray="{dash}"'
        if arrow:
            attrs += f' marker-end="url(#{self._marker(stroke)})"'
        if arrow_start:
            attrs += f' marker-start="url(#{self._marker(stroke)})"'
        self.add(f"<line {attrs}/>")

    def path(self, d: str, stroke: str = INK, fill: str = "none", sw: float = STROKE,
             dash: str | None = None, arrow: bool = False) -> None:
        attrs = f'd="{d}" stroke="{stroke}" fill="{fill}" stroke-width="{sw:g}"'
        if dash:
            attrs += f' stroke-dasharray="{dash}"'
        if arrow:
            attrs += f' marker-end="url(#{self._marker(stroke)})"'
        self.add(f"<path {attrs}/>")

    # -- compound shapes --
    def arrow(self, x1: float, y1: float, x2: float, y2: float, color: str = INK,
              bend: float = 0, sw: float = STROKE, dash: str | None = None) -> None:
        """An arrow from (x1, y1) to (x2, y2); `bend` > 0 curves it (a cubic that leaves and
        arrives horizontally, for left-to-right pictures)."""
        if bend:
            mx = (x1 + x2) / 2
            self.path(f"M{x1:g},{y1:g} C{mx:g},{y1:g} {mx:g},{y2:g} {x2:g},{y2:g}",
                      stroke=color, sw=sw, dash=dash, arrow=True)
        else:
            self.line(x1, y1, x2, y2, stroke=color, sw=sw, dash=dash, arrow=True)

    def box(self, x: float, y: float, w: float, h: float, rows: Sequence[str] | str,
            fill: str = PAPER, stroke: str = INK, size: float = SIZE, rx: float = 4,
            mono: bool = False, weight: str | None = None, dash: str | None = None,
            color: str = INK) -> tuple[float, float, float, float]:
        """A rectangle with centred lines of text; returns (x, y, w, h)."""
        self.rect(x, y, w, h, fill=fill, stroke=stroke, rx=rx, dash=dash)
        rows = [rows] if isinstance(rows, str) else list(rows)
        if rows and max(text_width(r, size, mono) for r in rows) > w + 1:
            self.overflows.append(f"\"{max(rows, key=len)}\" is wider than its {w:g} px box")
        if len(rows) * size * 1.3 > h + 2:
            self.overflows.append(f"{len(rows)} line(s) of {size:g} px are taller than their "
                                  f"{h:g} px box")
        self.lines(x + w / 2, y + h / 2, rows, size=size, mono=mono, weight=weight, fill=color)
        return x, y, w, h

    def brace(self, x1: float, x2: float, y: float, label: str, below: bool = True,
              color: str = MUTED, size: float = SIZE_SMALL) -> None:
        """A square bracket under (or over) the span x1..x2 with a label."""
        d = 5 if below else -5
        self.path(f"M{x1:g},{y:g} L{x1:g},{y + d:g} L{x2:g},{y + d:g} L{x2:g},{y:g}",
                  stroke=color, sw=1)
        self.text((x1 + x2) / 2, y + d + (9 if below else -9), label, size=size,
                  anchor="middle", fill=color)

    def vbrace(self, x: float, y1: float, y2: float, label: Sequence[str] | str,
               right: bool = True, color: str = MUTED, size: float = SIZE_SMALL) -> None:
        """A square bracket beside (right of, or left of) the span y1..y2 with a label."""
        d = 5 if right else -5
        self.path(f"M{x:g},{y1:g} L{x + d:g},{y1:g} L{x + d:g},{y2:g} L{x:g},{y2:g}",
                  stroke=color, sw=1)
        rows = [label] if isinstance(label, str) else list(label)
        self.lines(x + d + (6 if right else -6), (y1 + y2) / 2, rows, size=size,
                   anchor="start" if right else "end", fill=color)

    def legend(self, x: float, y: float, items: Iterable[tuple[Hue | str, str]],
               size: float = SIZE_SMALL, gap: float = 18) -> float:
        """Swatches with labels in one row from (x, y); returns the x where it ends."""
        for swatch, label in items:
            fill, stroke = (swatch.fill, swatch.ink) if isinstance(swatch, Hue) else (swatch, RULE)
            self.rect(x, y - 6, 12, 12, fill=fill, stroke=stroke, sw=1, rx=2)
            self.text(x + 17, y, label, size=size)
            x += 17 + text_width(label, size) + gap
        return x

    def grid(self, x: float, y: float, rows: int, cols: int, cell_w: float, cell_h: float,
             cell: Callable[[int, int], tuple[str | Sequence[str], Hue | str | None]],
             size: float = SIZE_SMALL, mono: bool = True, stroke: str = "#ffffff",
             sw: float = 1.5, row_labels: Sequence[str] | None = None,
             col_labels: Sequence[str] | None = None, label_size: float = SIZE_SMALL,
             text_color: str = INK) -> "GridGeometry":
        """A CuTe-style layout picture: rows x cols cells from (x, y); cell(r, c) gives the
        cell's text (one line or several) and its colour (a Hue: its fill; a string: a fill
        colour; None: empty). Row labels go left of the grid, column labels above it."""
        for r in range(rows):
            for c in range(cols):
                label, colour = cell(r, c)
                fill = colour.fill if isinstance(colour, Hue) else (colour or PAPER)
                cx, cy = x + c * cell_w, y + r * cell_h
                self.rect(cx, cy, cell_w, cell_h, fill=fill, stroke=stroke, sw=sw)
                if label:
                    rows_ = [label] if isinstance(label, str) else list(label)
                    widest = max(text_width(t, size, mono) for t in rows_)
                    if widest > cell_w + 1:  # make_pictures.py fails the picture
                        self.overflows.append(f"\"{max(rows_, key=len)}\" is {widest:.0f} px "
                                              f"wide in a {cell_w:g} px cell")
                    self.lines(cx + cell_w / 2, cy + cell_h / 2, rows_, size=size, mono=mono,
                               fill=text_color, gap=1.15)
        self.rect(x, y, cols * cell_w, rows * cell_h, stroke=RULE, sw=1)
        if row_labels:
            for r, label in enumerate(row_labels):
                self.text(x - 6, y + (r + 0.5) * cell_h, label, size=label_size, anchor="end",
                          fill=MUTED)
        if col_labels:
            for c, label in enumerate(col_labels):
                self.text(x + (c + 0.5) * cell_w, y - 9, label, size=label_size,
                          anchor="middle", fill=MUTED)
        return GridGeometry(x, y, rows, cols, cell_w, cell_h)

    # -- output --
    def svg(self) -> str:
        defs = "".join(self._markers.values())
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width:g}" '
                f'height="{self.height:g}" viewBox="0 0 {self.width:g} {self.height:g}" '
                f'role="img" font-family="{FONT}" font-size="{SIZE}" fill="{INK}">')
        parts = [head, f"<title>{escape(self.title)}</title>"]
        if self.desc:
            parts.append(f"<desc>{escape(self.desc)}</desc>")
        if defs:
            parts.append(f"<defs>{defs}</defs>")
        parts += self._body
        parts.append("</svg>")
        return "\n".join(parts) + "\n"


@dataclass(frozen=True)
class GridGeometry:
    """Where the cells of a Figure.grid lie, for arrows and braces drawn on top of it."""
    x: float
    y: float
    rows: int
    cols: int
    cell_w: float
    cell_h: float

    def left(self, c: int) -> float:
        return self.x + c * self.cell_w

    def right(self, c: int) -> float:
        return self.x + (c + 1) * self.cell_w

    def top(self, r: int) -> float:
        return self.y + r * self.cell_h

    def bottom(self, r: int) -> float:
        return self.y + (r + 1) * self.cell_h

    def cx(self, c: int) -> float:
        return self.x + (c + 0.5) * self.cell_w

    def cy(self, r: int) -> float:
        return self.y + (r + 0.5) * self.cell_h

    @property
    def width(self) -> float:
        return self.cols * self.cell_w

    @property
    def height(self) -> float:
        return self.rows * self.cell_h
