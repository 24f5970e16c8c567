"""The CPU benchmark plots of labs 01-04 (`bench_labNN`), drawn from their data files,
docs/figures/bench/bench_labNN.json, which `tools/lab bench --book` writes (tools/labkit/bench.py
book_data: per series and token count the median, min and max GB/s of the repetitions, and every
repetition's value when it was kept). `tools/lab bench` draws its own plot, build/bench/labNN.svg,
with the same `figure`.

GB/s against tokens, both on log scales: the token counts double from point to point, and the
rates span more than a decade (lab 01's `paged_attention` at 4 GB/s beside a read at 98), so a
ratio, the chapters' measure (a series against the read yardstick), is the same distance anywhere
on the plot. Each series of the lab's code is a line through its medians, each point's range (min to max
of the repetitions) a bar; the bars of different series are set a few pixels apart so that they
do not hide one another. The yardsticks (BM_Baseline*) are grey lines through their medians, each
with its own dash. A solid grey rule marks the context length at which K and V fill one of the
machine's caches (the data file's `caches` and `kv_bytes_per_token`). The legend is below the
plot, clear of the curves."""
from __future__ import annotations

import json
import math
from pathlib import Path

from svgfig import INK, MUTED, RULE, SIZE, SIZE_SMALL, SIZE_TITLE, Figure, hue, text_width

DATA = Path(__file__).resolve().parent.parent / "figures" / "bench"

WIDTH = 820
LEFT, RIGHT = 64, 806             # the plot area's x extent
TOP, PLOT_H = 74, 300             # its top (room above for the cache rules' labels) and height
# The yardsticks: colour and dash, one dash each, so that no two greys look alike.
YARDSTICKS = {"BM_BaselineRead": (INK, "8,4"), "BM_BaselineCopy": (MUTED, "12,4,2,4"),
              "BM_BaselineReadTwoThreads": (MUTED, "2,3")}
MARKERS = ("circle", "square", "diamond", "triangle")
# The x axis of a lab whose sweep is not one sequence's context: lab 04 times a batch of 8.
X_LABELS = {"04": "tokens (the batch's total context)"}
MARGIN = 0.04                     # of the y axis's span, beyond its first and last ticks
DODGE = 6                         # px between the bars of neighbouring series at one size


def ticks(low: float, high: float) -> list[float]:
    """1, 2, 5 times the powers of ten, from the largest at or below `low` to the smallest at or
    above `high`."""
    candidates = [round(m * 10.0 ** k, 9) for k in range(math.floor(math.log10(low)) - 1,
                                                          math.ceil(math.log10(high)) + 1)
                  for m in (1, 2, 5)]
    lo = max(c for c in candidates if c <= low)
    hi = min(c for c in candidates if c >= high)
    return [c for c in candidates if lo <= c <= hi]


def label(v: float) -> str:
    return f"{v:g}" if v < 1 else f"{v:,.0f}"


class Axes:
    """Where a (tokens, GB/s) pair lies in the picture: both axes logarithmic."""

    def __init__(self, tokens: list[int], low: float, high: float) -> None:
        self.tokens = tokens
        self.yticks = ticks(low, high)
        self.l0, self.l1 = math.log2(tokens[0]), math.log2(tokens[-1])
        self.pad = (RIGHT - LEFT) / (2 * len(tokens))  # half a step of empty axis at each end

    def x(self, tokens: float) -> float:
        span = max(self.l1 - self.l0, 1e-9)
        inner = RIGHT - LEFT - 2 * self.pad
        return LEFT + self.pad + (math.log2(tokens) - self.l0) / span * inner

    def y(self, gbps: float) -> float:
        a, b = math.log10(self.yticks[0]), math.log10(self.yticks[-1])
        a, b = a - MARGIN * (b - a), b + MARGIN * (b - a)  # no point on the frame
        return TOP + PLOT_H - (math.log10(gbps) - a) / (b - a) * PLOT_H


def marker(f: Figure, shape: str, x: float, y: float, color: str) -> None:
    r = 4.2
    if shape == "circle":
        f.add(f'<circle cx="{x:.2f}" cy="{y:.2f}" r="{r:g}" fill="{color}"/>')
    elif shape == "square":
        side = 1.6 * r
        f.rect(round(x - side / 2, 2), round(y - side / 2, 2), side, side, fill=color, stroke=None)
    elif shape == "diamond":
        f.path(f"M{x:.2f},{y - r * 1.25:.2f} L{x + r:.2f},{y:.2f} L{x:.2f},{y + r * 1.25:.2f} "
               f"L{x - r:.2f},{y:.2f} Z", stroke="none", fill=color)
    else:
        f.path(f"M{x:.2f},{y - r * 1.2:.2f} L{x + r * 1.1:.2f},{y + r * 0.8:.2f} "
               f"L{x - r * 1.1:.2f},{y + r * 0.8:.2f} Z", stroke="none", fill=color)


def mib(size: int) -> str:
    return f"{size / 2**20:g} MiB" if size >= 2**20 else f"{size / 2**10:g} KiB"


def cache_marks(data: dict, tokens: list[int]) -> list[dict]:
    """The caches whose size, in K and V bytes, falls within the plotted context lengths: for
    each, the context length at which K and V fill it and the rule's label."""
    per_token = data.get("kv_bytes_per_token")
    if not per_token:
        return []
    marks = []
    for c in data.get("caches", []):
        at = c["size"] / per_token
        if tokens[0] <= at <= tokens[-1]:
            shared = f", shared by {c['num_sharing']} cores" if c.get("num_sharing", 1) > 1 else ""
            marks.append({"tokens": at,
                          "label": f"K and V fill the reported L{c['level']} ({mib(c['size'])}{shared})"})
    return marks


def figure(data: dict) -> Figure:
    """The plot of one data file (tools/labkit/bench.py book_data's format)."""
    series = data["series"]
    tokens = sorted({p["tokens"] for s in series.values() for p in s["points"]})
    values = [v for s in series.values() for p in s["points"]
              for v in (p["median"], p.get("min"), p.get("max")) if v is not None]
    ax = Axes(tokens, min(values), max(values))
    code = [n for n, s in series.items() if not s["yardstick"]]
    sticks = [n for n, s in series.items() if s["yardstick"]]

    legend_rows = math.ceil(len(series) / 3)
    bottom = TOP + PLOT_H
    height = bottom + 64 + 24 * legend_rows
    lab = data["lab"]
    f = Figure(WIDTH, height, f"Lab {lab}'s benchmark",
               f"GB/s of K and V read against context length in tokens, both on log scales, for "
               f"the series {', '.join(n[3:] for n in series)}; {data['where']}.")
    f.text(WIDTH / 2, 14, f"Lab {lab} — {data['title']}", size=SIZE_TITLE, anchor="middle",
           weight="bold")
    f.text(WIDTH / 2, 35, data["where"], size=SIZE_SMALL, anchor="middle", fill=MUTED)

    # The grid, the axes and their labels.
    for v in ax.yticks:
        y = ax.y(v)
        f.line(LEFT, y, RIGHT, y, stroke=RULE, sw=0.6, dash="2,3")
        f.text(LEFT - 6, y, label(v), size=SIZE_SMALL, anchor="end")
    for n in tokens:
        x = ax.x(n)
        f.line(x, TOP, x, bottom, stroke=RULE, sw=0.6, dash="2,3")
        f.line(x, bottom, x, bottom + 5, stroke=INK, sw=1)
        f.text(x, bottom + 16, f"{n:,}", size=SIZE_SMALL, anchor="middle")
    # Where K and V outgrow a cache: a solid grey rule at the context length whose K and V bytes
    # equal the cache's size, labelled above the frame. A cache filled outside the plotted sizes
    # gets no rule (the 1 MiB L2 of the EPYC is full at 512 tokens, left of the first point).
    for cache in cache_marks(data, tokens):
        x = ax.x(cache["tokens"])
        f.line(x, TOP, x, bottom, stroke=MUTED, sw=1.2)  # solid: every dash is a yardstick's
        # centred on the rule, but kept inside the picture (a rule near the edge moves it in)
        half = text_width(cache["label"], SIZE_SMALL) / 2
        f.text(min(max(x, half + 4), WIDTH - half - 4), TOP - 11, cache["label"], size=SIZE_SMALL,
               anchor="middle", fill=MUTED)
    f.rect(LEFT, TOP, RIGHT - LEFT, PLOT_H, stroke=INK, sw=1)
    f.text(18, TOP + PLOT_H / 2, data.get("unit", "GB/s of K and V read"), size=SIZE,
           anchor="middle", rotate=-90)
    f.text((LEFT + RIGHT) / 2, bottom + 38, X_LABELS.get(lab, "tokens (context length)"), size=SIZE,
           anchor="middle")

    def polyline(points: list[dict], dx: float = 0) -> str:
        return " ".join(f"{'M' if i == 0 else 'L'}{ax.x(p['tokens']) + dx:.2f},"
                        f"{ax.y(p['median']):.2f}" for i, p in enumerate(points))

    # The yardsticks first, under the lab's series.
    styles: dict[str, tuple[str, str | None, str | None]] = {}
    for name in sticks:
        color, dash = YARDSTICKS.get(name, (MUTED, "8,4"))
        styles[name] = (color, dash, None)
        f.path(polyline(series[name]["points"]), stroke=color, sw=2, dash=dash)
    for i, name in enumerate(code):
        color, shape = hue(i).ink, MARKERS[i % len(MARKERS)]
        styles[name] = (color, None, shape)
        dx = (i - (len(code) - 1) / 2) * DODGE
        points = series[name]["points"]
        f.path(polyline(points, dx), stroke=color, sw=2)
        for p in points:
            x = ax.x(p["tokens"]) + dx
            if p.get("min") is not None and p.get("max") is not None:
                lo, hi = ax.y(p["min"]), ax.y(p["max"])
                f.path(f"M{x:.2f},{lo:.2f} L{x:.2f},{hi:.2f} M{x - 4:.2f},{lo:.2f} "
                       f"L{x + 4:.2f},{lo:.2f} M{x - 4:.2f},{hi:.2f} L{x + 4:.2f},{hi:.2f}",
                       stroke=color, sw=1.3)
            marker(f, shape, x, ax.y(p["median"]), color)

    # The legend: three entries a row, below the x axis's title.
    col_w = (RIGHT - LEFT) / 3
    for k, name in enumerate(code + sticks):
        color, dash, shape = styles[name]
        x, y = LEFT + (k % 3) * col_w, bottom + 66 + 24 * (k // 3)
        f.line(x, y, x + 34, y, stroke=color, sw=2, dash=dash)
        if shape:
            marker(f, shape, x + 17, y, color)
        f.text(x + 42, y, name[3:], size=SIZE_SMALL, mono=True)
        assert text_width(name[3:], SIZE_SMALL, True) + 42 < col_w, name
    return f


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


# A stem per data file: bench_lab01.json -> bench_lab01.svg, as the chapters show it.
FIGURES = {p.stem: (lambda p=p: figure(_load(p))) for p in sorted(DATA.glob("bench_lab*.json"))}
