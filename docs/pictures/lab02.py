"""Lab 02's pictures (labs/02-online-softmax/README.md)."""
import math

from svgfig import (FREE, INK, MUTED, POISON, RULE, SIZE, SIZE_SMALL, SIZE_TITLE, STATE,
                    Figure, hue, text_width)

# The 13-token sequence of the tests: block size 4, table [3, 1, 7, 0].
BLOCK_SIZE = 4
SEQ_LEN = 13
BLOCK_TABLE = [3, 1, 7, 0]
NUM_BLOCKS = 8


def stream() -> Figure:
    f = Figure(820, 326, "One pass over the blocks, carrying (m, denom, acc)",
               "The pool holds the 13 tokens in blocks 3, 1, 7 and 0; each logical block is "
               "read once, in logical order, and folded into the running state.")
    f.text(10, 14, "the pool (block_size 4): cells show the token each row holds",
           size=SIZE_TITLE, weight="bold")
    holder = {BLOCK_TABLE[t // BLOCK_SIZE] * BLOCK_SIZE + t % BLOCK_SIZE: t
              for t in range(SEQ_LEN)}

    def cell(r, c):
        if c in holder:
            return str(holder[c]), hue(holder[c] // BLOCK_SIZE)
        if c // BLOCK_SIZE == BLOCK_TABLE[-1]:
            return "×", POISON
        return "", FREE
    pool = f.grid(26, 34, 1, NUM_BLOCKS * BLOCK_SIZE, 24, 26, cell, size=SIZE_SMALL)
    for b in range(NUM_BLOCKS + 1):
        x = pool.left(b * BLOCK_SIZE) if b < NUM_BLOCKS else pool.right(NUM_BLOCKS * 4 - 1)
        f.line(x, 30, x, 64, stroke=INK, sw=1)
        if b < NUM_BLOCKS:
            f.text(x + 48, 72, f"block {b}", size=SIZE_SMALL, anchor="middle", fill=MUTED)

    # The state chain, each update numbered above its state.
    y, h = 150, 58
    f.box(10, y, 96, h, ["m = −∞", "denom = 0", "acc = 0"], fill=STATE.fill, stroke=STATE.ink,
          size=SIZE_SMALL, mono=True)
    # The last box is wide enough that its mono text keeps a margin inside the border; the
    # chain's gaps are narrowed to make room for it within the 820 px column.
    out_w = 112
    out_x = 814 - out_w
    prev_right = 106
    for j, block in enumerate(BLOCK_TABLE):
        x = 126 + j * 144
        first, last = j * BLOCK_SIZE, min(SEQ_LEN, (j + 1) * BLOCK_SIZE) - 1
        f.box(x, y, 128, h, ["(m, denom, acc)", f"of tokens 0–{last}"], fill=STATE.fill,
              stroke=STATE.ink, size=SIZE_SMALL)
        f.arrow(prev_right, y + h / 2, x, y + h / 2, color=STATE.ink)
        prev_right = x + 128
        # The read: the physical block is named under the pool by the logical block it holds
        # and the update that reads it, in that block's colour; the update is numbered above its
        # state and names the physical block under it (arrows from the pool to the updates would
        # cross: the table is not in order).
        src = (pool.left(block * BLOCK_SIZE) + pool.right(block * BLOCK_SIZE + 3)) / 2
        valid = last - first + 1
        f.text(src, 90, f"logical {j}", size=SIZE_SMALL, anchor="middle", fill=hue(j).ink,
               weight="bold")
        f.text(src, 106, f"→ update {j + 1}", size=SIZE_SMALL, anchor="middle", fill=hue(j).ink)
        f.text(x + 64, y - 8, f"update {j + 1}", size=SIZE_SMALL, anchor="middle",
               fill=hue(j).ink, weight="bold")
        f.text(x + 64, y + h + 14, f"+ logical block {j}", size=SIZE_SMALL, anchor="middle",
               fill=hue(j).ink, weight="bold")
        f.lines(x + 64, y + h + 38, [f"physical block {block}",
                                     f"{valid} valid row{'s' if valid > 1 else ''}"],
                size=SIZE_SMALL, fill=hue(j).ink, gap=1.15)
    f.box(out_x, y + 6, out_w, h - 12, "acc / denom", fill="#ffffff", stroke=INK,
          size=SIZE_SMALL, mono=True)
    f.arrow(prev_right, y + h / 2, out_x, y + h / 2, color=STATE.ink)
    # What each arrow does and why the × rows are never read: the caption under the figure.
    f.height = y + h + 56
    return f


# ---- a worked example of corr: two blocks of two keys, one value dimension --------------------

BLOCKS = [([1.0, 2.0], [10.0, 20.0]), ([4.0, 0.0], [30.0, 40.0])]  # (scores, values) per block


def _run(with_corr: bool = True):
    """The recurrence over BLOCKS; returns per step (m, denom, acc, weights of the keys so far
    relative to m, corr)."""
    m, denom, acc, weights = -math.inf, 0.0, 0.0, []
    steps = []
    for scores, values in BLOCKS:
        m_new = max(m, max(scores))
        corr = 0.0 if m == -math.inf else math.exp(m - m_new)
        if not with_corr:
            corr = 1.0 if m != -math.inf else 0.0
        p = [math.exp(s - m_new) for s in scores]
        acc = corr * acc + sum(pi * v for pi, v in zip(p, values))
        denom = corr * denom + sum(p)
        weights = [w * corr for w in weights] + p
        m = m_new
        steps.append((m, denom, acc, list(weights), corr))
    return steps


def corr_example() -> Figure:
    steps = _run()
    wrong = _run(with_corr=False)[-1]
    values = [v for _, vs in BLOCKS for v in vs]
    scores = [s for ss, _ in BLOCKS for s in ss]
    top = max(scores)
    dense = sum(math.exp(s - top) * v for s, v in zip(scores, values)) / \
        sum(math.exp(s - top) for s in scores)
    m1, d1, a1, w1, _ = steps[0]
    m2, d2, a2, w2, corr = steps[1]
    out = a2 / d2

    f = Figure(820, 314, "corr at work: two blocks of two keys",
               "Bars are each key's weight relative to the running maximum; when block 1 "
               "raises the maximum from 2 to 4, corr = e^(2-4) shrinks the history.")
    base, scale, bar_w = 200, 120, 34
    panels = [
        (10, f"after block 0: s = ({BLOCKS[0][0][0]:g}, {BLOCKS[0][0][1]:g})", w1, None,
         [f"m = {m1:g}", f"denom = {d1:.3f}", f"acc = {a1:.2f}"]),
        (290, f"after block 1: s = ({BLOCKS[1][0][0]:g}, {BLOCKS[1][0][1]:g})", w2, w1,
         [f"m = {m2:g}", f"denom = {corr:.3f}·{d1:.3f} + {sum(w2[2:]):.3f} = {d2:.3f}",
          f"acc = {corr:.3f}·{a1:.2f} + {a2 - corr * a1:.2f} = {a2:.2f}"]),
        (600, "the end: divide once", [w / d2 for w in w2], None,
         [f"out = acc / denom = {out:.2f}", f"dense softmax: {dense:.2f}"]),
    ]
    for x, title, weights, ghosts, state in panels:
        f.text(x, 16, title, size=SIZE, weight="bold")
        f.line(x, base, x + 4 * (bar_w + 14), base, stroke=RULE)
        f.line(x, base - scale, x + 4 * (bar_w + 14), base - scale, stroke=RULE, dash="2 3")
        f.text(x + 4 * (bar_w + 14) + 4, base - scale, "1", size=SIZE_SMALL, fill=MUTED)
        for k in range(4):
            bx = x + 6 + k * (bar_w + 14)
            block = k // 2
            if k < len(weights):
                h = weights[k] * scale
                f.rect(bx, base - h, bar_w, h, fill=hue(block).fill, stroke=hue(block).ink, sw=1)
            if ghosts and k < len(ghosts):
                g = ghosts[k] * scale
                f.rect(bx, base - g, bar_w, g, stroke=hue(block).ink, sw=1, dash="3 2")
            if k < len(weights):
                # The number on a white ground, so a dashed "before corr" outline behind it
                # breaks around it instead of striking it through.
                label = f"{weights[k]:.3f}"
                w = text_width(label, SIZE_SMALL, mono=True) + 4
                f.rect(bx + bar_w / 2 - w / 2, base - h - 18, w, 18, fill="#ffffff", stroke=None)
                f.text(bx + bar_w / 2, base - h - 9, label, size=SIZE_SMALL, anchor="middle",
                       mono=True)
            f.text(bx + bar_w / 2, base + 12, f"k{k}", size=SIZE_SMALL, anchor="middle")
            f.text(bx + bar_w / 2, base + 26, f"v={values[k]:g}", size=SIZE_SMALL, anchor="middle",
                   fill=MUTED)
        f.lines(x, base + 70, state, size=SIZE_SMALL, anchor="start", mono=True, gap=1.45)
    # The rescale, between the first two panels.
    f.arrow(218, 90, 282, 90, color=STATE.ink, sw=1.6)  # clear of the panel's "1" at 205
    # One line above the arrow, in the gap between the panels' titles and their "1" rules.
    f.text(250, 62, f"corr = e^{{2−4}} = {corr:.3f}", size=SIZE, anchor="middle",
           fill=STATE.ink, weight="bold")
    # The caption under the figure says what the dashed bars are and quotes the run without
    # corr: denom, acc and out below (2.386, 54.41, 22.80 instead of 28.20).
    assert (f"{wrong[1]:.3f}", f"{wrong[2]:.2f}", f"{wrong[2] / wrong[1]:.2f}", f"{out:.2f}") == \
        ("2.386", "54.41", "22.80", "28.20"), "the caption's numbers changed: update it"
    return f


FIGURES = {"lab02_stream": stream, "lab02_corr_example": corr_example}
