#!/usr/bin/env python3
"""Lab 06's pictures for the book: the split-KV grid, the scratch tensors, and the reduce as a
merge tree. Plain SVG from the Python standard library; each picture is at most 760 px wide.

    python3 docs/figures/lab06_pictures.py      # rewrites docs/diagrams/lab06_*.svg

The example batch is the one of the test EmptyTrailingPartitionsAreNeverWrittenOrMerged:
three sequences of 1100, 40 and 600 tokens, partitions of 512 tokens."""
from __future__ import annotations

from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "diagrams"

PARTITION = 512
SEQ_LENS = [1100, 40, 600]
MAX_PARTS = max((n + PARTITION - 1) // PARTITION for n in SEQ_LENS)

# Colours: a partial written to the scratch, out written directly, nothing (empty partition).
PARTIAL = "#cfe2f3"
DIRECT = "#d9ead3"
EMPTY = "#eeeeee"
STROKE = "#444444"
FONT = "font-family='sans-serif'"


class Svg:
    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.parts: list[str] = []

    def rect(self, x, y, w, h, fill, stroke=STROKE, dash=False, rx=0) -> None:
        d = " stroke-dasharray='4 3'" if dash else ""
        self.parts.append(f"<rect x='{x}' y='{y}' width='{w}' height='{h}' rx='{rx}' "
                          f"fill='{fill}' stroke='{stroke}' stroke-width='1'{d}/>")

    def text(self, x, y, s, size=12, anchor="middle", weight="normal", fill="#000000",
             italic=False) -> None:
        s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        style = " font-style='italic'" if italic else ""
        self.parts.append(f"<text x='{x}' y='{y}' {FONT} font-size='{size}' "
                          f"text-anchor='{anchor}' font-weight='{weight}' fill='{fill}'"
                          f"{style}>{s}</text>")

    def line(self, x1, y1, x2, y2, arrow=False, stroke=STROKE, dash=False) -> None:
        m = " marker-end='url(#arrow)'" if arrow else ""
        d = " stroke-dasharray='4 3'" if dash else ""
        self.parts.append(f"<line x1='{x1}' y1='{y1}' x2='{x2}' y2='{y2}' stroke='{stroke}' "
                          f"stroke-width='1.2'{m}{d}/>")

    def write(self, name: str) -> None:
        assert self.width <= 760, f"{name}: {self.width} px is wider than the book's 760"
        head = (f"<svg xmlns='http://www.w3.org/2000/svg' width='{self.width}' "
                f"height='{self.height}' viewBox='0 0 {self.width} {self.height}'>\n"
                "<defs><marker id='arrow' viewBox='0 0 10 10' refX='9' refY='5' "
                "markerWidth='7' markerHeight='7' orient='auto-start-reverse'>"
                f"<path d='M 0 0 L 10 5 L 0 10 z' fill='{STROKE}'/></marker></defs>\n"
                f"<rect x='0' y='0' width='{self.width}' height='{self.height}' fill='#ffffff'/>\n")
        (OUT / name).write_text(head + "\n".join(self.parts) + "\n</svg>\n", encoding="utf-8")


def cell_kind(seq: int, part: int) -> str:
    own = (SEQ_LENS[seq] + PARTITION - 1) // PARTITION
    if part >= own:
        return "empty"
    return "direct" if own == 1 else "partial"


def legend(svg: Svg, x: int, y: int, entries: list[tuple[str, str, bool]]) -> None:
    for i, (fill, label, dash) in enumerate(entries):
        svg.rect(x, y + 22 * i, 18, 14, fill, dash=dash)
        svg.text(x + 26, y + 22 * i + 12, label, size=12, anchor="start")


def grid_picture() -> None:
    """The grid (num_heads, num_seqs, max_num_partitions): one thread block per cell."""
    svg = Svg(740, 320)
    svg.text(370, 20, "grid = (num_heads, num_seqs, max_num_partitions): one thread block per cell",
             size=13, weight="bold")
    x0, y0, w, h = 130, 76, 130, 44
    # Other heads: shadows behind the front layer (blockIdx.x).
    for layer in (2, 1):
        svg.rect(x0 + 8 * layer, y0 - 8 * layer, w * MAX_PARTS, h * len(SEQ_LENS), "#ffffff",
                 dash=True)
    right = x0 + w * MAX_PARTS + 30
    svg.text(right, y0 + 10, "blockIdx.x = head h:", size=11, anchor="start", italic=True)
    svg.text(right, y0 + 26, "one such layer per query head", size=11, anchor="start",
             italic=True)
    svg.text(right, y0 + 56, "blockIdx.y = sequence s (rows)", size=11, anchor="start",
             italic=True)
    svg.text(right, y0 + 86, "blockIdx.z = partition p (columns)", size=11, anchor="start",
             italic=True)
    for p in range(MAX_PARTS):
        svg.text(x0 + w * p + w / 2, y0 - 24, f"partition {p}", size=11)
    for s, n in enumerate(SEQ_LENS):
        svg.text(x0 - 10, y0 + h * s + h / 2 - 2, f"sequence {s}", size=12, anchor="end")
        svg.text(x0 - 10, y0 + h * s + h / 2 + 12, f"{n} tokens", size=11, anchor="end",
                 fill="#555555")
        for p in range(MAX_PARTS):
            kind = cell_kind(s, p)
            fill = {"partial": PARTIAL, "direct": DIRECT, "empty": EMPTY}[kind]
            svg.rect(x0 + w * p, y0 + h * s, w, h, fill, dash=kind == "empty")
            first, last = p * PARTITION, min((p + 1) * PARTITION, n)
            label = (f"tokens {first}–{last - 1}" if kind != "empty" else "returns at once")
            svg.text(x0 + w * p + w / 2, y0 + h * s + h / 2 + 4, label, size=11,
                     fill="#000000" if kind != "empty" else "#777777")
    legend(svg, x0, y0 + h * len(SEQ_LENS) + 22,
           [(PARTIAL, "writes its partial (m, denom, acc) to the scratch; the reduce merges it", False),
            (DIRECT, "the sequence's only partition: finishes the softmax and writes out", False),
            (EMPTY, "past the sequence's end: returns before any read or write", True)])
    svg.text(x0, y0 + h * len(SEQ_LENS) + 100,
             f"max_num_partitions = ceil(max_seq_len / {PARTITION}) = {MAX_PARTS}; every block "
             "reads at most 512 tokens of one kv head", size=11, anchor="start", fill="#555555")
    svg.write("lab06_grid.svg")


def scratch_picture() -> None:
    """exp_sums, max_logits and tmp_out for the same batch, one head shown."""
    svg = Svg(740, 330)
    svg.text(370, 20, "the scratch of one head h: which entries the attention kernel writes",
             size=13, weight="bold")
    # max_logits and exp_sums: [num_seqs, num_heads, max_num_partitions], float32.
    x0, y0, w, h = 40, 74, 46, 30
    for k, name in enumerate(("max_logits", "exp_sums")):
        xs = x0 + k * (w * MAX_PARTS + 40)
        svg.text(xs + w * MAX_PARTS / 2, y0 - 30, name, size=12, weight="bold")
        svg.text(xs + w * MAX_PARTS / 2, y0 - 14, "m" if k == 0 else "denom", size=11,
                 italic=True)
        for s in range(len(SEQ_LENS)):
            for p in range(MAX_PARTS):
                kind = cell_kind(s, p)
                fill = PARTIAL if kind == "partial" else "#ffffff"
                svg.rect(xs + w * p, y0 + h * s, w, h, fill, dash=kind != "partial")
                if kind == "partial":
                    svg.text(xs + w * p + w / 2, y0 + h * s + h / 2 + 4, f"s{s} p{p}", size=10)
    svg.text(x0, y0 + h * len(SEQ_LENS) + 22,
             "[num_seqs, num_heads, max_num_partitions] float32", size=11, anchor="start",
             fill="#555555")
    for s in range(len(SEQ_LENS)):
        svg.text(x0 - 6, y0 + h * s + h / 2 + 4, f"s{s}", size=10, anchor="end")
    # tmp_out: [num_seqs, num_heads, max_num_partitions, head_size], float32.
    tx, ty, row_w, row_h = 400, 74, 300, 10
    svg.text(tx + row_w / 2, ty - 30, "tmp_out", size=12, weight="bold")
    svg.text(tx + row_w / 2, ty - 14, "acc = sum of e^(l - m) v, undivided", size=11, italic=True)
    y = ty
    for s in range(len(SEQ_LENS)):
        for p in range(MAX_PARTS):
            kind = cell_kind(s, p)
            fill = PARTIAL if kind == "partial" else "#ffffff"
            svg.rect(tx, y, row_w, row_h, fill, dash=kind != "partial")
            svg.text(tx - 6, y + 9, f"s{s} p{p}", size=9, anchor="end")
            y += row_h + 2
        y += 6
    svg.text(tx, y + 10, "d = 0, 1, ..., head_size - 1  →", size=10, anchor="start",
             fill="#555555")
    svg.text(tx, y + 28, "[num_seqs, num_heads, max_num_partitions, head_size]", size=11,
             anchor="start", fill="#555555")
    svg.text(tx, y + 42, "float32", size=11, anchor="start", fill="#555555")
    svg.text(40, 262, "flat index of (s, h, p): (s * num_heads + h) * max_num_partitions + p;  "
             "tmp_out multiplies it by head_size and adds d", size=11, anchor="start")
    svg.text(40, 284, "The partition extent is max_num_partitions for every sequence; a "
             "one-partition sequence (s1) and the", size=11, anchor="start")
    svg.text(40, 300, "partitions past a sequence's own count (s1 p1, s1 p2, s2 p2) are never "
             "written and never read:", size=11, anchor="start")
    svg.text(40, 316, "whatever a previous step left there (torch.empty in vLLM) stays.", size=11,
             anchor="start")
    svg.write("lab06_scratch.svg")


def reduce_picture() -> None:
    """The reduce kernel for one (sequence, head): a merge tree over the partials."""
    svg = Svg(740, 360)
    svg.text(370, 20, "paged_attention_v2_reduce_kernel: one thread block per (head, sequence)",
             size=13, weight="bold")
    n = 5
    bx, by, bw, bh, gap = 40, 290, 116, 44, 20
    centers = []
    for p in range(n):
        x = bx + p * (bw + gap)
        svg.rect(x, by, bw, bh, PARTIAL, rx=4)
        svg.text(x + bw / 2, by + 18, f"partition {p}", size=11, weight="bold")
        svg.text(x + bw / 2, by + 34, f"m{p}, denom{p}, acc{p}", size=11)
        centers.append(x + bw / 2)
    # Level 1: M, a max tree (block_max).
    my = 200
    svg.rect(250, my, 240, 36, "#fff2cc", rx=4)
    svg.text(370, my + 15, "M = max over p of m_p", size=12)
    svg.text(370, my + 30, "block_max: a butterfly tree", size=10, fill="#555555")
    for c in centers:
        svg.line(c, by, 370 + (c - 370) * 0.3, my + 36, arrow=True)
    # Level 2: weights per partition.
    wy = 130
    svg.rect(170, wy, 400, 36, "#fff2cc", rx=4)
    svg.text(370, wy + 15, "w_p = e^(m_p - M)  (a tile of 128 partitions at a time)", size=12)
    svg.text(370, wy + 30, "weights[] in shared memory; barrier before anyone reads them",
             size=10, fill="#555555")
    svg.line(370, my, 370, wy + 36, arrow=True)
    # Level 3: the two sums.
    sy = 60
    svg.rect(60, sy, 280, 40, DIRECT, rx=4)
    svg.text(200, sy + 16, "denom = sum over p of w_p denom_p", size=12)
    svg.text(200, sy + 32, "per thread, then block_sum (a tree)", size=10, fill="#555555")
    svg.rect(400, sy, 300, 40, DIRECT, rx=4)
    svg.text(550, sy + 16, "acc[d] = sum over p of w_p acc_p[d]", size=12)
    svg.text(550, sy + 32, "thread d adds the partitions in order", size=10, fill="#555555")
    svg.line(300, wy, 220, sy + 40, arrow=True)
    svg.line(440, wy, 540, sy + 40, arrow=True)
    svg.text(370, 46, "out[s, h, d] = acc[d] / denom", size=12, weight="bold")
    svg.line(200, sy, 330, 50, arrow=True, dash=True)
    svg.line(550, sy, 420, 50, arrow=True, dash=True)
    svg.text(370, by + bh + 22, "the same partition order and the same trees every run: the "
             "result does not depend on which block finished first", size=11, fill="#555555")
    svg.write("lab06_reduce.svg")


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    grid_picture()
    scratch_picture()
    reduce_picture()
