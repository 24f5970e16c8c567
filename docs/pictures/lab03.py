"""Lab 03's pictures (labs/03-flash-decoding/README.md)."""
from svgfig import (INK, MUTED, RULE, SHARED, SIZE, SIZE_SMALL, SIZE_TITLE, STATE, Figure,
                    hue, PALETTE, text_width)


def array_split(n: int, p: int) -> list[int]:
    """numpy.array_split's sizes: the first n % p parts get one more."""
    return [n // p + (1 if i < n % p else 0) for i in range(p)]


NUM_KEYS, NUM_PARTITIONS, NUM_THREADS = 37, 10, 3


def threads() -> Figure:
    sizes = array_split(NUM_KEYS, NUM_PARTITIONS)
    runs = array_split(NUM_PARTITIONS, NUM_THREADS)  # ranges per thread: 4, 3, 3
    owner = [t for t, r in enumerate(runs) for _ in range(r)]
    f = Figure(820, 372, "Partitions dealt to threads, folded in range order",
               "37 keys in 10 ranges; thread 0 computes ranges 0-3, thread 1 ranges 4-6, and "
               "the calling thread itself ranges 7-9; each writes its own entries; "
               "after the joins the entries are merged left to right.")
    kx, kw = 40, 20
    f.text(10, 14, f"{NUM_KEYS} keys in {NUM_PARTITIONS} ranges (array_split: "
           f"{', '.join(map(str, sizes))})", size=SIZE_TITLE, weight="bold")
    key_owner = [i for i, s in enumerate(sizes) for _ in range(s)]
    keys = f.grid(kx, 32, 1, NUM_KEYS, kw, 24,
                  lambda r, c: ("", hue(owner[key_owner[c]])), size=SIZE_SMALL)
    starts = [sum(sizes[:i]) for i in range(NUM_PARTITIONS)]
    slot_w, slot_pitch = 60, 68  # leaves room right of entry 9 for the join's label
    slot_y = 120
    for i in range(NUM_PARTITIONS):
        x0, x1 = keys.left(starts[i]), keys.right(starts[i] + sizes[i] - 1)
        f.line(x0, 28, x0, 60, stroke=INK, sw=1.2)
        f.text((x0 + x1) / 2, 44, f"p{i}", size=SIZE_SMALL, anchor="middle", weight="bold")
        sx = kx + i * slot_pitch
        f.arrow((x0 + x1) / 2, 58, sx + slot_w / 2, slot_y - 1, color=hue(owner[i]).ink)
    f.line(keys.right(NUM_KEYS - 1), 28, keys.right(NUM_KEYS - 1), 60, stroke=INK, sw=1.2)
    # The threads, as brackets under their runs of entries: below the arrows, so no line crosses
    # a label; the entries' connectors to the fold start under the labels.
    bracket_y = slot_y + 36 + 10
    first = 0
    for t, r in enumerate(runs):
        x0 = kx + first * slot_pitch
        x1 = kx + (first + r - 1) * slot_pitch + slot_w
        # partitioned_attention runs the last run on the calling thread, which starts none.
        name = "calling thread" if t == len(runs) - 1 else f"thread {t}"
        f.path(f"M{x0},{bracket_y - 6} L{x0},{bracket_y} L{x1},{bracket_y} L{x1},{bracket_y - 6}",
               stroke=hue(t).ink, sw=1.5)
        f.text((x0 + x1) / 2, bracket_y + 13, f"{name}: ranges {first}–{first + r - 1}",
               size=SIZE_SMALL, anchor="middle", fill=hue(t).ink, weight="bold")
        first += r
    # The entries: one Partial per range, written only by the thread that owns the range.
    f.text(10, slot_y - 14, "", size=SIZE_SMALL)
    for i in range(NUM_PARTITIONS):
        sx = kx + i * slot_pitch
        f.box(sx, slot_y, slot_w, 36, [f"entry {i}", "Partial"], fill=hue(owner[i]).fill,
              stroke=hue(owner[i]).ink, size=SIZE_SMALL, rx=2)
    # Every thread joined, then one left fold in range order. The join's label sits right of
    # the last connector, where no line runs.
    join_y = bracket_y + 46
    line_end = kx + (NUM_PARTITIONS - 1) * slot_pitch + slot_w + 2
    f.line(kx - 10, join_y, line_end, join_y, stroke=RULE, sw=1.5, dash="6 4")
    f.lines(line_end + 5, join_y, ["every thread", "joined"], size=SIZE_SMALL, anchor="start",
            fill=MUTED)
    fold_y = join_y + 46
    prev = None
    for i in range(NUM_PARTITIONS):
        cx = kx + i * slot_pitch + slot_w / 2
        f.line(cx, bracket_y + 24, cx, join_y, stroke=RULE, sw=1)
        if i == 0:
            f.arrow(cx, join_y, cx + slot_pitch - 13, fold_y, color=STATE.ink)
            continue
        f.rect(cx - 12, fold_y - 12, 24, 24, fill=STATE.fill, stroke=STATE.ink, rx=12)
        f.text(cx, fold_y, "⊕", size=14, anchor="middle")
        f.arrow(cx, join_y, cx, fold_y - 13, color=STATE.ink)
        if prev is not None:
            f.arrow(prev + 12, fold_y, cx - 13, fold_y, color=STATE.ink)
        prev = cx
    f.arrow(prev, fold_y + 12, prev, fold_y + 44, color=STATE.ink)
    f.box(prev - 120, fold_y + 45, 150, 28, "acc / denom, once", fill="#ffffff", stroke=INK,
          size=SIZE_SMALL)
    # What the fold's order buys and why no lock is needed: the caption under the figure.
    f.height = fold_y + 80
    return f


def cascade() -> Figure:
    requests, prefix_w, suffix_w = 4, 212, 26
    f = Figure(820, 310, "Cascade attention: one pass over the shared prefix",
               "Four requests share a prefix; dense attention reads it once per request, the "
               "cascade once for all, then merges each request's prefix and suffix states.")
    px = 380  # the cascade's panel
    f.text(10, 14, "dense: each request, its whole context", size=SIZE_TITLE, weight="bold")
    f.text(px, 14, "cascade: prefix once, suffixes apart", size=SIZE_TITLE, weight="bold")
    y0, row, bh = 44, 40, 24
    for r in range(requests):
        y = y0 + r * row
        f.text(10, y + bh / 2, f"q{r}", size=SIZE, mono=True)
        f.box(38, y, prefix_w, bh, "shared prefix, n_pre rows", fill=SHARED.fill,
              stroke=SHARED.ink, rx=0, size=SIZE_SMALL)
        f.box(38 + prefix_w, y, suffix_w, bh, "", fill=hue(r if r < 3 else 6).fill,
              stroke=hue(r if r < 3 else 6).ink, rx=0)
        f.arrow(38 + prefix_w + suffix_w + 4, y + bh / 2, 300, y + bh / 2, color=MUTED)
        f.text(306, y + bh / 2, f"o{r}", size=SIZE, mono=True)
    f.text(10, y0 + requests * row + 10, "R · (n_pre + n_suf) key rows read", size=SIZE_SMALL,
           fill=MUTED)

    # The cascade: the prefix once, for every query; one suffix per request; a merge each.
    py = y0
    f.box(px, py, prefix_w, bh, "shared prefix, n_pre rows", fill=SHARED.fill,
          stroke=SHARED.ink, rx=0, size=SIZE_SMALL)
    f.text(px, py + 40, "one pass for q0 … q3 together", size=SIZE_SMALL, fill=SHARED.ink)
    f.text(px, py + 58, "(a matrix product)", size=SIZE_SMALL, fill=SHARED.ink)
    # What the pass and each suffix give are states, not keys: per request two states
    # σ = (m, denom, acc), named as the chapter names them, yellow and rounded like every state
    # in the book and framed in the colour of the keys they were computed from (purple: the
    # shared prefix, in the one pass; the request's colour: its own suffix, whose keys are the
    # small square box, as in the dense panel). The bus runs down clear of the text; the
    # outputs o0..o3 end inside the right edge.
    mx, ry, rrow, bx, bw, bus, hh = 768, 122, 56, 644, 100, 604, 24
    kx, kw = bus + 8, suffix_w - 4  # a request's suffix keys, left of its suffix state

    def state(y: float, label: str, frame: str) -> None:
        # The label sits 2.5 px above the box's middle, so that the lowered σ index keeps as
        # much room from the bottom edge as the capitals keep from the top.
        assert text_width(label, SIZE_SMALL) < bw - 8, label
        f.rect(bx, y, bw, hh, fill=STATE.fill, stroke=frame, rx=4)
        f.text(bx + bw / 2, y + hh / 2 - 2.5, label, size=SIZE_SMALL, anchor="middle")
    f.line(px + prefix_w, py + bh / 2, bus, py + bh / 2, stroke=SHARED.ink)
    f.line(bus, py + bh / 2, bus, ry + (requests - 1) * rrow - hh / 2 - 1, stroke=SHARED.ink)
    for r in range(requests):
        yc = ry + r * rrow
        h = hue(r if r < 3 else 6)
        f.arrow(bus, yc - hh / 2 - 1, bx - 1, yc - hh / 2 - 1, color=SHARED.ink)
        state(yc - hh - 1, f"σ_{{pre}} for q{r}", SHARED.ink)
        f.rect(kx, yc + 3, kw, hh - 4, fill=h.fill, stroke=h.ink)
        f.arrow(kx + kw, yc + 1 + hh / 2, bx - 1, yc + 1 + hh / 2, color=h.ink)
        state(yc + 1, f"σ_{{suf}} for q{r}", h.ink)
        f.rect(mx - 12, yc - 12, 24, 24, fill=STATE.fill, stroke=STATE.ink, rx=12)
        f.text(mx, yc, "⊕", size=14, anchor="middle")
        f.arrow(bx + bw, yc - hh / 2, mx - 12, yc - 3, color=SHARED.ink)
        f.arrow(bx + bw, yc + hh / 2, mx - 12, yc + 3, color=h.ink)
        f.arrow(mx + 13, yc, mx + 26, yc, color=STATE.ink)
        f.text(mx + 29, yc, f"o{r}", size=SIZE, mono=True)
    # On two lines, so that it ends clear of the bus.
    f.text(px, y0 + requests * row + 10, "n_pre + R · n_suf", size=SIZE_SMALL, fill=MUTED)
    f.text(px, y0 + requests * row + 28, "key rows read", size=SIZE_SMALL, fill=MUTED)
    f.legend(px, ry + (requests - 1) * rrow + hh / 2 + 1, [(STATE, "σ = (m, denom, acc)")])
    # The benchmark's numbers (R = 8, n_pre = 512, n_suf = 64): the caption under the figure.
    f.height = ry + (requests - 1) * rrow + hh + 12
    return f


SUB = "₀₁₂₃₄₅₆₇₈₉"  # subscript digits: the index of a partition's state


def merge_tree() -> Figure:
    sizes = array_split(10, 4)  # 3, 3, 2, 2
    f = Figure(820, 208, "Ten keys in four partitions, merged as a tree",
               "Each partition is summarised by attend_partial; pairs of summaries merge, the "
               "root is divided once.")
    leaf_w, gap, y_leaf = 150, 50, 20
    xs = [40 + i * (leaf_w + gap) for i in range(4)]
    start = 0
    for i, n in enumerate(sizes):
        f.box(xs[i], y_leaf, leaf_w, 58,
              [f"keys {start}–{start + n - 1}", "attend_partial", f"(m{SUB[i]}, denom{SUB[i]}, acc{SUB[i]})"],
              fill=hue(i).fill, stroke=hue(i).ink, size=SIZE_SMALL)
        start += n
    centre = [x + leaf_w / 2 for x in xs]
    mids = [(centre[0] + centre[1]) / 2, (centre[2] + centre[3]) / 2]
    y_mid, y_root = 127, 178
    for k, m in enumerate(mids):
        f.rect(m - 15, y_mid - 15, 30, 30, fill=STATE.fill, stroke=STATE.ink, rx=15)
        f.text(m, y_mid, "⊕", size=16, anchor="middle")
        for leaf in (2 * k, 2 * k + 1):
            f.arrow(centre[leaf], y_leaf + 59, m + (-8 if leaf % 2 == 0 else 8), y_mid - 16,
                    color=hue(leaf).ink)
    root = (mids[0] + mids[1]) / 2
    f.rect(root - 15, y_root - 15, 30, 30, fill=STATE.fill, stroke=STATE.ink, rx=15)
    f.text(root, y_root, "⊕", size=16, anchor="middle")
    for m in mids:
        f.arrow(m, y_mid + 16, root + (-10 if m < root else 10), y_root - 16, color=STATE.ink)
    f.arrow(root + 16, y_root, root + 90, y_root, color=STATE.ink)
    f.box(root + 92, y_root - 16, 150, 32, "out = acc / denom", fill="#ffffff", stroke=INK,
          size=SIZE_SMALL)
    return f


FIGURES = {"lab03_threads": threads, "lab03_cascade": cascade, "lab03_merge_tree": merge_tree}
