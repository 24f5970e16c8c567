"""Lab 05's pictures (labs/05-cuda-paged-v1/README.md): the thread block as a map from threads
to data, the kernel as a timeline of its barriers and shared memory, the XOR butterflies, and
the H100 measurements (docs/figures/gpu/)."""
import h100
from svgfig import (BARRIER_INK, FREE, INK, MASKED, MUTED, NOTE_SIZE, PAPER, RULE, SIZE, SIZE_LARGE, SIZE_SMALL,
                    SIZE_TITLE, STATE, WARPS, Figure, Hue, hue, mix, text_width)

# The case every picture draws: float16, block_size 16, head_size 128.
WARP_SIZE, NUM_THREADS = 32, 128
NUM_WARPS = NUM_THREADS // WARP_SIZE
BLOCK_SIZE, HEAD_SIZE, ELEM_BYTES = 16, 128, 2
G = max(WARP_SIZE // BLOCK_SIZE, 1)                  # THREAD_GROUP_SIZE
VEC_SIZE = max(16 // (G * ELEM_BYTES), 1)           # elements per thread per step
X = 16 // ELEM_BYTES                                # the key cache's innermost extent
NUM_CHUNKS = HEAD_SIZE // X


def rank_fill(h: Hue, rank: int) -> str:
    """Rank 0 of a thread group in the hue's fill, rank 1 a shade darker."""
    return h.fill if rank == 0 else mix(h.fill, h.ink, 0.35)


# ---- the thread block as a map from threads to data ---------------------------------------------

def thread_map() -> Figure:
    f = Figure(820, 220, "Who reads what in the q·k phase",
               "float16, block_size 16, head_size 128: 128 threads in 4 warps; warp warp_idx takes "
               "logical blocks warp_idx, warp_idx+4, ...; thread group g (2 threads) takes token g of each; "
               "rank 0 reads the first 8 bytes, rank 1 the last 8 of every 16-byte chunk of that token's key.")
    # 1. The threads.
    f.text(10, 14, f"1. The thread block: {NUM_THREADS} threads = {NUM_WARPS} warps × 32 lanes;",
           size=SIZE, weight="bold")
    f.text(10, 33, f"thread group g = lanes 2g, 2g + 1 (TG = {G})", size=SIZE, weight="bold")
    cw, ch = 20, 18
    gx, gy = 62, 64

    def thread_cell(w, lane):  # a column is one lane; every fourth is numbered above the grid
        return "", rank_fill(WARPS[w], lane % G)
    g = f.grid(gx, gy, NUM_WARPS, WARP_SIZE, cw, ch, thread_cell, size=SIZE_SMALL,
               row_labels=[f"warp {w}" for w in range(NUM_WARPS)])
    for lane in [*range(0, WARP_SIZE, 4), WARP_SIZE - 1]:
        f.text(g.cx(lane), gy - 8, str(lane), size=SIZE, anchor="middle", fill=INK)
    for k in range(WARP_SIZE // G + 1):
        x = g.left(k * G) if k < WARP_SIZE // G else g.right(WARP_SIZE - 1)
        f.line(x, gy, x, g.bottom(NUM_WARPS - 1), stroke=INK, sw=0.8)
    for k in range(WARP_SIZE // G):
        f.text((g.left(k * G) + g.right(k * G + G - 1)) / 2, g.bottom(NUM_WARPS - 1) + 11,
               f"g{k}", size=SIZE, anchor="middle", fill=INK)
    # Level with warps 0, 1 and 3.
    f.text(gx + g.width + 8, g.cy(0), "light: rank 0", size=SIZE_SMALL, fill=MUTED)
    f.text(gx + g.width + 8, g.cy(1), "dark: rank 1", size=SIZE_SMALL, fill=MUTED)
    f.text(gx + g.width + 8, g.cy(3), "column: lane", size=SIZE_SMALL, fill=MUTED)

    # 2. Warps to logical blocks: twelve cells across the picture's width.
    y2 = g.bottom(NUM_WARPS - 1) + 42
    f.text(10, y2, "2. Warp warp_idx takes the logical blocks warp_idx, warp_idx + 4, …",
           size=SIZE, weight="bold")
    f.text(10, y2 + 19, "(here 12 blocks, 180 tokens)", size=SIZE, weight="bold")
    bw = 66
    blocks = f.grid(14, y2 + 36, 1, 12, bw, 28,
                    lambda r, j: ([f"block {j}"], WARPS[j % NUM_WARPS]), size=SIZE_SMALL,
                    mono=False)
    for j in range(12):
        f.text(blocks.cx(j), blocks.bottom(0) + 13, f"warp {j % NUM_WARPS}", size=SIZE_SMALL,
               anchor="middle", fill=WARPS[j % NUM_WARPS].ink)
    f.text(14, blocks.bottom(0) + 38, "block 11 holds tokens 176 to 179 only: 4 of its 16 rows",
           size=SIZE_SMALL, fill=MUTED)

    f.height = blocks.bottom(0) + 50
    return f


def key_lanes() -> Figure:
    """Panel 3 of the thread map as a picture of its own, narrow enough to show at its natural
    size in every column: which lane loads which half of which key chunk, in one block of warp 0."""
    tokens = [*range(8), None, BLOCK_SIZE - 1]   # None: tokens 8 to 14, left out
    shown = [0, 1, None, NUM_CHUNKS - 1]           # None: the chunks left out
    hw, ch = 24, 26                                # one rank's half of a token's chunk
    kx, ky = 170, 54                               # room left of the grid for "chunk 15: …"
    width = kx + (G * (len(tokens) - 1) + 1) * hw + 14
    f = Figure(width, 250, "Which lane loads which half of each key chunk",
               "One block of warp 0, float16, block_size 16: thread group g reads token g; "
               "rank 0 loads bytes 0 to 7 of each 16-byte chunk, rank 1 bytes 8 to 15.")
    f.text(10, 14, "One block of warp 0: group g reads token g, rank 0 and 1 a half each",
           size=SIZE_TITLE, weight="bold")
    cols = []                                      # (token, rank) per column, None: the gap
    for t in tokens:
        cols.extend([None] if t is None else [(t, r) for r in range(G)])

    def cell(r, c):
        i, tc = shown[r], cols[c]
        if i is None or tc is None:
            return "⋮" if tc is not None else ("…" if r == 0 else ""), "#ffffff"
        token, rank = tc
        # The lane that reads it, numbered in the first row only: every row has the same lanes.
        return (str(token * G + rank) if r == 0 else ""), rank_fill(hue(token), rank)
    grid = f.grid(kx, ky, len(shown), len(cols), hw, ch, cell, size=SIZE, col_labels=None)
    for c, tc in enumerate(cols):
        if tc is not None and tc[1] == 0:
            f.text((grid.left(c) + grid.right(c + G - 1)) / 2, ky - 10, str(tc[0]), size=SIZE,
                   anchor="middle", fill=hue(tc[0]).ink, weight="bold")
            f.line(grid.left(c), ky, grid.left(c), grid.bottom(len(shown) - 1), stroke=INK,
                   sw=0.8)
    f.text(kx - 6, ky - 10, "token", size=SIZE, anchor="end", fill=MUTED)
    for r, i in enumerate(shown):
        label = "⋮" if i is None else f"chunk {i}: δ {i * X}–{i * X + X - 1}"
        f.text(kx - 6, grid.cy(r), label, size=SIZE, anchor="end", fill=MUTED)
    y = grid.bottom(len(shown) - 1) + 16
    f.text(10, y, "in a cell: the lane that loads it", size=SIZE, fill=INK)
    f.height = y + 12
    return f


# ---- the two cache layouts ------------------------------------------------------------------------

def key_cache() -> Figure:
    f = Figure(820, 206, "One (block, kv head) slice of the key cache",
               "float16, block_size 16, head_size 128: rows are chunks of 8 dimensions, each "
               "one 16-byte cell per token; the two threads of a token's group read its halves.")
    tokens = [0, 1, None, BLOCK_SIZE - 1]    # None: the tokens left out
    chunks = [0, 1, None, NUM_CHUNKS - 1]
    hw, ch, x0, y0 = 88, 26, 130, 76
    f.text(10, 14, "key_cache[block, kv_head]:  [head_size / x = 16, block_size = 16, x = 8]",
           size=SIZE, weight="bold", mono=True)
    col = x0
    for t in tokens:
        if t is None:
            # level with the token names: a group's label is wider than its token's columns
            f.text(col + 15, y0 - 30, "…", size=SIZE, anchor="middle")
            for r in range(len(chunks)):
                f.text(col + 15, y0 + (r + 0.5) * ch, "…", size=SIZE, anchor="middle")
            col += 30
            continue
        f.text(col + hw, y0 - 30, f"token {t}", size=SIZE_SMALL, anchor="middle",
               weight="bold")
        # The thread group that reads this token.
        f.text(col + hw, y0 - 13, f"group {t}: threads {G * t}, {G * t + 1}", size=SIZE_SMALL,
               anchor="middle", fill=hue(t).ink)
        for r, i in enumerate(chunks):
            for rank in range(G):
                x = col + rank * hw
                y = y0 + r * ch
                if i is None:
                    f.rect(x, y, hw, ch, fill="#ffffff", stroke=RULE, sw=0.8)
                    f.text(x + hw / 2, y + ch / 2, "⋮", size=SIZE_SMALL, anchor="middle")
                    continue
                first = i * X + rank * VEC_SIZE
                f.rect(x, y, hw, ch, fill=rank_fill(hue(t), rank), stroke="#ffffff", sw=1.5)
                f.text(x + hw / 2, y + ch / 2, f"δ {first}–{first + VEC_SIZE - 1}", size=SIZE_SMALL,
                       anchor="middle", mono=True)
        f.rect(col, y0, G * hw, len(chunks) * ch, stroke=INK, sw=1)
        for rank in range(G):
            f.text(col + (rank + 0.5) * hw, y0 + len(chunks) * ch + 12, f"rank {rank}", size=SIZE_SMALL,
                   anchor="middle", fill=MUTED)
        col += G * hw + 12
    for r, i in enumerate(chunks):
        label = "⋮" if i is None else f"{i}: δ {i * X}–{i * X + X - 1}"
        f.text(x0 - 8, y0 + (r + 0.5) * ch, label, size=SIZE_SMALL, anchor="end", fill=MUTED)
    f.vbrace(col - 6, y0 + 1, y0 + ch - 1, ["one row:", "16 × 16 B,", "contiguous"])
    # Why the chunk index comes before the token is said once, in the caption under the figure.
    return f


def value_cache() -> Figure:
    f = Figure(820, 238, "One (block, kv head) slice of the value cache",
               "float16, block_size 16, head_size 128: rows are dimensions, columns tokens; "
               "each lane reads 8 tokens of one dimension in one 16-byte load.")
    f.text(10, 14, "value_cache[block, kv_head]:  [head_size = 128, block_size = 16]", size=SIZE,
           weight="bold", mono=True)
    rows = [(0, 0), (1, 0), None, (15, 0), (16, 1), None, (127, 7)]  # (d, pass)
    v_vec = 16 // ELEM_BYTES
    lanes_per_row = BLOCK_SIZE // v_vec
    x0, y0, cw, ch = 170, 56, 200, 24
    for c in range(lanes_per_row):
        f.text(x0 + (c + 0.5) * cw, y0 - 12, f"tokens {c * v_vec}–{c * v_vec + v_vec - 1}",
               size=SIZE_SMALL, anchor="middle", weight="bold")
    for r, row in enumerate(rows):
        y = y0 + r * ch
        if row is None:
            f.text(x0 - 8, y + ch / 2, "⋮", size=SIZE_SMALL, anchor="end", fill=MUTED)
            for c in range(lanes_per_row):
                f.rect(x0 + c * cw, y, cw, ch, fill="#ffffff", stroke=RULE, sw=0.8)
                f.text(x0 + (c + 0.5) * cw, y + ch / 2, "⋮", size=SIZE_SMALL, anchor="middle")
            continue
        d, pass_ = row
        f.text(x0 - 8, y + ch / 2, f"δ {d}", size=SIZE_SMALL, anchor="end", fill=MUTED)
        for c in range(lanes_per_row):
            lane = (d % (WARP_SIZE // lanes_per_row)) * lanes_per_row + c
            f.rect(x0 + c * cw, y, cw, ch, fill=rank_fill(hue(lane // 2), lane % 2),
                   stroke="#ffffff", sw=1.5)
            f.text(x0 + (c + 0.5) * cw, y + ch / 2, f"lane {lane}, pass {pass_}", size=SIZE_SMALL,
                   anchor="middle", mono=True)
    f.rect(x0, y0, lanes_per_row * cw, len(rows) * ch, stroke=INK, sw=1)
    f.vbrace(x0 + lanes_per_row * cw + 4, y0 + 1, y0 + 4 * ch - 1,
             ["pass 0: 32 lanes,", "16 rows"])
    f.lines(600, y0 + 5 * ch + 20, ["8 passes cover", "the 128 rows"], size=SIZE_SMALL,
            anchor="start", fill=MUTED)
    # What a lane does with its row is said once, in the caption under the figure.
    return f


# ---- the kernel as a timeline -------------------------------------------------------------------

# (what the threads do, {shared-memory region: what it holds}) per phase; BARRIERS says, for
# the gap after each phase, whether a barrier is there and why. Regions: q (q_vecs), l (the
# dynamic shared memory: logits, later out_smem), m (red_smem[0..3]), s (red_smem[4..7]).
PHASES = [  # each line at most 47 characters: it ends left of the shared-memory columns
    (["Step 1: the first thread groups copy q's vecs",
      "(16/TG bytes each) into q_vecs"], {"q": "q (written)"}),
    (["Step 2: q·k over each warp's blocks; butterfly;",
      "rank 0 writes logits[t], keeps a running max"], {"q": "q (read)", "l": "sₜ (written)"}),
    (["Step 3: max in each warp (butterfly, masks",
      "16 … TG); lane 0 writes red_smem[warp_idx]"], {"q": "q", "l": "sₜ", "m": "4 maxima"}),
    (["cross-warp max → qk_max; Step 4:",
      "logits[t] = exp(sₜ − qk_max);",
      "sums → red_smem[4 + warp_idx]"],
     {"q": "q", "l": "exp(sₜ − m)", "m": "(read)", "s": "4 sums"}),
    (["cross-warp sum → exp_sum; logits[t] /= exp_sum"],
     {"q": "q", "l": "wₜ / exp_sum (written)", "s": "(read)"}),
    (["Step 5: accs += (wₜ / exp_sum) vₜ over the",
      "warp's blocks; Step 6: fold the lanes that",
      "share a V row"], {"q": "q", "l": "wₜ / exp_sum (read)"}),
    (["Step 6, tree round 1: warps 2, 3 write",
      "their rows"], {"q": "q", "l": "out_smem: warps 2, 3"}),
    (["warps 0 and 1 add them"], {"q": "q", "l": "(read)"}),
    (["Step 6, tree round 2: warp 1 writes its rows"], {"q": "q", "l": "out_smem: warp 1"}),
    (["warp 0 adds them"], {"q": "q", "l": "(read)"}),
    (["Step 7: warp 0 writes out[b, h, :]"], {"q": "q"}),
]
BARRIERS = [  # after each phase but the last; None: no barrier there
    "every thread reads all of q_vecs",
    None,
    "red_smem[0..3] and every warp's logits visible",
    "red_smem[4..7] visible (inside block_sum)",
    "the V loop reads probabilities other warps wrote",
    "Step 6: all warps done with the logits; bytes → out_smem",
    "warps 2, 3's rows written",
    "warps 0, 1 done reading them",
    "warp 1's rows written",
    "protects nothing: no shared write follows",
]
REGIONS = [("q", "q_vecs", 90, STATE), ("l", "logits → out_smem", 178, WARPS[0]),
           ("m", "red_smem\n[0..3]", 76, WARPS[2]), ("s", "red_smem\n[4..7]", 76, WARPS[3])]
REGIONS_X = 372  # where the shared-memory columns start: right of the longest phase line


def timeline() -> Figure:
    line_h, pad, bar_h = 18, 8, 24  # a text line; space above and below a phase; a barrier's band
    top = 58

    def row_height(rows):  # each phase as tall as its text, with room between it and a barrier
        return len(rows) * line_h + 2 * pad

    height = top + sum(row_height(r) for r, _ in PHASES) + sum(1 for b in BARRIERS if b) * bar_h + 8
    f = Figure(820, height, "The kernel as a timeline",
               "Top to bottom: each phase of paged_attention_v1, the nine __syncthreads() "
               "between them and why each is there, and what shared memory holds meanwhile.")
    f.text(10, 16, "what the 128 threads do", size=SIZE_TITLE, weight="bold")
    f.text(REGIONS_X, 16, "what shared memory holds", size=SIZE_TITLE, weight="bold")
    x = REGIONS_X
    xs = {}
    for key, name, w, h in REGIONS:
        xs[key] = (x, w, h)
        f.lines(x + w / 2, 40 if "\n" in name else 42, name.split("\n"), size=SIZE_SMALL,
                anchor="middle", mono=True, fill=h.ink, gap=1.15)
        x += w + 6
    y = top
    barrier = 0
    for i, (rows, holds) in enumerate(PHASES):
        row_h = row_height(rows)
        f.lines(14, y + row_h / 2, rows, size=SIZE_SMALL, anchor="start", gap=line_h / SIZE_SMALL)
        for key, (rx, w, h) in xs.items():
            if key in holds:
                fill = h.fill if "read" not in holds[key] or holds[key].startswith("q") else \
                    mix(h.fill, "#ffffff", 0.5)
                f.rect(rx, y + 5, w, row_h - 10, fill=fill, stroke=h.ink, sw=1)
                f.text(rx + w / 2, y + row_h / 2, holds[key], size=SIZE_SMALL, anchor="middle")
            else:
                f.rect(rx, y + 5, w, row_h - 10, fill="#ffffff", stroke=RULE, sw=0.8,
                       dash="3 3")
        y += row_h
        if i < len(BARRIERS) and BARRIERS[i]:
            f.barrier_line(10, 810, y + bar_h / 2, f"__syncthreads() {barrier + 1}: {BARRIERS[i]}")
            barrier += 1
            y += bar_h
    # How big the logits are, why max and sum need no barrier between them, and why barrier 9: the text.
    return f


# ---- the XOR butterflies --------------------------------------------------------------------------
# Two figures, one configuration each, the labels at NOTE_SIZE and the group's lane values at
# SIZE_LARGE, so that Σ_{ℓ}'s index reads at SIZE_SMALL: the group's butterfly (block size 8,
# float32, TG = 4) and the warp's (block size 16, TG = 2), which the chapter shows one after the
# other.

def group_butterfly() -> Figure:
    f = Figure(420, 210, "XOR butterfly inside a thread group",
               "Block size 8, float32, so TG = 4: the four threads of a group add their partial "
               "dot products Σ₀ … Σ₃ in two shuffles, masks 2 then 1, and each ends with q·k.")
    f.text(10, 14, "Inside a thread group: TG = 4", size=SIZE_TITLE, weight="bold")
    lanes = 4
    xs = [50 + 84 * l for l in range(lanes)]
    ys = [60, 124, 188]
    bw, bh = 72, 32  # a lane's box: its value at SIZE_LARGE, the lane index lowered at SIZE_SMALL

    def s(l: int) -> str:  # lane ℓ's partial dot product Σ_ℓ, over its own vecs
        return f"Σ_{{{l}}}"
    values = [[s(l) for l in range(lanes)],
              [f"{s(l)}+{s(l ^ 2)}" if l < 2 else f"{s(l ^ 2)}+{s(l)}" for l in range(lanes)],
              ["q·k" for _ in range(lanes)]]
    for step, mask in enumerate([2, 1]):
        for l in range(lanes):
            f.line(xs[l ^ mask], ys[step] + bh / 2, xs[l], ys[step + 1] - bh / 2,
                   stroke=hue(step).ink, sw=1.2, arrow=True)
            f.line(xs[l], ys[step] + bh / 2, xs[l], ys[step + 1] - bh / 2, stroke=RULE, sw=1)
        f.text(xs[-1] + bw / 2 + 12, (ys[step] + ys[step + 1]) / 2, f"mask {mask}",
               size=SIZE_TITLE, fill=hue(step).ink, weight="bold")
    for row, y in enumerate(ys):
        for l in range(lanes):
            f.box(xs[l] - bw / 2, y - bh / 2, bw, bh, values[row][l],
                  fill=STATE.fill if row == 2 else "#ffffff", stroke=INK, size=SIZE_LARGE,
                  mono=True)
    for l in range(lanes):
        f.text(xs[l], 32, f"lane {l}", size=SIZE, anchor="middle", fill=MUTED)
    # What one shuffle does and why no barrier is needed: the caption under the figure. The
    # picture is as narrow as its lattice, so it shows at its own size in every column.
    return f


def warp_butterfly() -> Figure:
    tg = max(WARP_SIZE // BLOCK_SIZE, 1)
    f = Figure(820, 244, "XOR butterfly across a warp",
               f"Block size {BLOCK_SIZE}, so TG = {tg}: the 32 lanes of a warp reduce in five "
               "shuffles, masks 16 down to 1; the arrows are the five values lane 0 receives. The max "
               "stops after mask TG, the sum after mask 1.")
    f.text(10, 14, f"Across a warp: block size {BLOCK_SIZE}, so TG = {tg}; masks 16, 8, 4, 2, 1",
           size=SIZE_TITLE, weight="bold")
    step = 19
    lx = [126 + step * l for l in range(WARP_SIZE)]
    masks = [16, 8, 4, 2, 1]
    rows = [56 + 35 * k for k in range(len(masks) + 1)]
    max_row = masks.index(tg) + 1         # the row where the max is complete
    # At step k every lane takes the value of the lane that differs in bit `mask`. Only the five
    # exchanges that land on lane 0 are drawn, thick and black: between them they carry all 32
    # lanes. Each is labelled beside its tail, right of the arrow and between the rows, with the
    # lane it comes from and how many lanes' values it carries (lane `mask` has by then combined
    # the lanes j with j mod 2·mask = mask: 32 / (2·mask)).
    for k, mask in enumerate(masks):
        f.line(lx[mask], rows[k] + 5, lx[0], rows[k + 1] - 5, stroke=INK, sw=2, arrow=True)
        f.line(lx[0], rows[k] + 5, lx[0], rows[k + 1] - 5, stroke=INK, sw=2)
        carried = WARP_SIZE // (2 * mask)
        label = (f"from lane {mask}, carrying {carried} lanes" if carried > 1
                 else f"from lane {mask}, its own value")
        f.text(lx[mask] + 12, rows[k] + 14, label, size=NOTE_SIZE, weight="bold")
        # Each row is named by the exchange that produced it, level with its dots.
        f.text(10, rows[k + 1] + 4, f"after mask {mask}", size=NOTE_SIZE,
               fill=hue(k).ink, weight="bold")
    for k, y in enumerate(rows):
        for l in range(WARP_SIZE):
            holds = k == len(masks) or (k == max_row and l % tg == 0)
            f.rect(lx[l] - 5, y - 5, 10, 10, fill=STATE.ink if holds else "#ffffff", stroke=INK,
                   sw=0.8, rx=5)
    f.text(10, rows[0] + 4, "start", size=NOTE_SIZE, fill=MUTED, weight="bold")
    for l in (0, 8, 16, 24, 31):
        f.text(lx[l], rows[0] - 16, f"lane {l}" if l == 0 else str(l), size=NOTE_SIZE,
               anchor="middle", fill=MUTED)
    f.vbrace(lx[-1] + 12, rows[max_row] - 6, rows[max_row] + 6, ["max done"], size=NOTE_SIZE)
    f.vbrace(lx[-1] + 12, rows[-1] - 6, rows[-1] + 6, ["sum done"], size=NOTE_SIZE)
    # What the arrows, colours and filled dots mean is said once, in the caption.
    return f


# The interlude's compact butterfly (docs/interlude_05.md): eight lanes, every exchange drawn, with
# the numbers each lane holds after each step. The chapter's two butterflies above draw the real
# configurations; this one is small enough to follow every arrow.
SHUFFLE_VALUES = [3, 1, 4, 1, 5, 9, 2, 6]   # lane ℓ's own value
SHUFFLE_SUM = 31                             # what the interlude's caption quotes


def _halving(n: int) -> list[int]:
    """n/2, n/4, ..., 1: the butterfly's masks, the tree's strides (4, 2, 1 for eight)."""
    return [n // 2 >> k for k in range(n.bit_length() - 1)]


def _value_rows(f: Figure, xs: list[float], ys: list[float], rows: list[list[int]],
                header: str, answer, retired=lambda k, i: False) -> None:
    """The eight values of the butterfly and the tree, a row of boxes per step at ys, a column per
    lane or thread at xs, headed `header` + its index; answer(k, i) boxes are filled as the
    result, retired(k, i) ones greyed as no longer read."""
    half = 13
    for k, (y, values) in enumerate(zip(ys, rows)):
        for i, value in enumerate(values):
            done = retired(k, i)
            f.box(xs[i] - 22, y - half, 44, 2 * half, str(value),
                  fill=STATE.fill if answer(k, i) else (FREE.fill if done else "#ffffff"),
                  stroke=FREE.ink if done else INK, size=NOTE_SIZE, mono=True,
                  color=MUTED if done else INK)
    for i, x in enumerate(xs):
        f.text(x, 40, f"{header}{i}", size=NOTE_SIZE, anchor="middle", fill=MUTED)


def shuffle_sum() -> Figure:
    lanes = len(SHUFFLE_VALUES)
    masks = _halving(lanes)   # 4, 2, 1
    rows = [list(SHUFFLE_VALUES)]
    for mask in masks:
        rows.append([rows[-1][l] + rows[-1][l ^ mask] for l in range(lanes)])
    assert rows[-1] == [SHUFFLE_SUM] * lanes, rows[-1]
    f = Figure(680, 0, "A butterfly of XOR shuffles over eight lanes",
               "Eight lanes hold 3, 1, 4, 1, 5, 9, 2, 6. In three steps, masks 4, 2 and 1, each "
               "lane adds the value of lane ℓ XOR mask; afterwards every lane holds 31.")
    f.text(10, 14, "Eight lanes sum their values: v += __shfl_xor_sync(FULL_MASK, v, mask)",
           size=SIZE_TITLE, weight="bold", mono=False)
    xs = [54 + 64 * l for l in range(lanes)]
    ys = [64 + 62 * k for k in range(len(rows))]
    half = 13
    for k, mask in enumerate(masks):
        ink = hue(k).ink
        for l in range(lanes):
            f.line(xs[l], ys[k] + half, xs[l], ys[k + 1] - half, stroke=RULE, sw=1)
            f.line(xs[l ^ mask], ys[k] + half, xs[l], ys[k + 1] - half, stroke=ink, sw=1.2,
                   arrow=True)
        mid = (ys[k] + ys[k + 1]) / 2
        f.text(xs[-1] + 44, mid - 2, f"mask {mask}", size=NOTE_SIZE, fill=ink, weight="bold")
        f.text(xs[-1] + 44, mid + 14, f"ℓ reads ℓ ^ {mask}", size=NOTE_SIZE, fill=ink,
               mono=True)
    _value_rows(f, xs, ys, rows, "lane ", lambda k, l: k == len(rows) - 1)
    f.height = ys[-1] + half + 4
    return f


def tree_sum() -> Figure:
    """The interlude's tree reduction over eight threads: each round halves the stride, thread
    t < stride adds partial[t + stride] into partial[t], and a barrier ends the round (and the
    load before the first)."""
    n = len(SHUFFLE_VALUES)
    strides = _halving(n)   # 4, 2, 1
    rows = [list(SHUFFLE_VALUES)]
    for stride in strides:
        rows.append([rows[-1][t] + rows[-1][t + stride] if t < stride else rows[-1][t]
                     for t in range(n)])
    assert rows[-1][0] == SHUFFLE_SUM, rows[-1]
    f = Figure(760, 0, "A tree reduction in shared memory over eight threads",
               "partial[] holds 3, 1, 4, 1, 5, 9, 2, 6. In three rounds, strides 4, 2 and 1, "
               "each thread t below the stride adds partial[t + stride] into partial[t], and a "
               "barrier ends each round; afterwards partial[0] holds 31. Greyed cells are no "
               "longer read.")
    f.text(10, 14, "if (t < stride) partial[t] += partial[t + stride];  __syncthreads();",
           size=SIZE_TITLE, weight="bold", mono=True)
    xs = [54 + 64 * t for t in range(n)]
    ys = [64 + 88 * k for k in range(len(rows))]
    half = 13
    for k, y in enumerate(ys):   # the barrier after the load and after every round
        f.barrier_line(xs[0] - 30, xs[-1] + 30, y + half + 10, "__syncthreads()")
    for k, stride in enumerate(strides):
        ink = hue(k).ink
        top, bottom = ys[k] + half + 20, ys[k + 1] - half
        for t in range(stride):
            f.line(xs[t], top, xs[t], bottom, stroke=RULE, sw=1)
            f.line(xs[t + stride], top, xs[t], bottom, stroke=ink, sw=1.2, arrow=True)
        mid = (top + bottom) / 2
        f.text(xs[-1] + 44, mid - 8, f"stride {stride}", size=NOTE_SIZE, fill=ink,
               weight="bold")
        f.text(xs[-1] + 44, mid + 8, f"threads 0 to {stride - 1} add" if stride > 1 else
               "thread 0 adds", size=NOTE_SIZE, fill=ink)
    # After round k only the first strides[k - 1] cells are read again.
    _value_rows(f, xs, ys, rows, "t = ", lambda k, t: k == len(rows) - 1 and t == 0,
                lambda k, t: k > 0 and t >= strides[k - 1])
    f.height = ys[-1] + half + 20
    return f


# ---- the interlude's first kernel: one thread per element ----------------------------------------
INDEX_N, INDEX_THREADS = 13, 8   # the interlude's example (its test in test_checker.cpp too)


def index_map() -> Figure:
    n, threads = INDEX_N, INDEX_THREADS
    blocks = (n + threads - 1) // threads
    cols = blocks * threads
    assert (blocks, cols - n) == (2, 3)   # the caption's two blocks and three threads past n
    f = Figure(820, 0, "Thirteen elements over blocks of eight threads",
               f"n = {n}, blockDim.x = {threads}: a grid of {blocks} blocks, {cols} threads. "
               f"Thread t of block b takes i = {threads}b + t; the last {cols - n} threads have "
               f"i of {n} or more, and the guard returns them.")
    f.text(10, 14, "i = blockIdx.x * blockDim.x + threadIdx.x, for n = 13 and blockDim.x = 8",
           size=SIZE_TITLE, weight="bold", mono=True)
    cw, ch, gx, gy = 44, 26, 104, 62

    def cell(r, c):
        b, t = divmod(c, threads)
        if r == 0:
            return str(t), hue(b)
        return str(c), hue(b) if c < n else MASKED
    g = f.grid(gx, gy, 2, cols, cw, ch, cell, size=SIZE, row_labels=["threadIdx.x", "i"],
               label_size=SIZE)
    for b in range(blocks):
        x1, x2 = g.left(b * threads), g.right(b * threads + threads - 1)
        f.brace(x1 + 2, x2 - 2, gy - 6, f"block {b}: blockIdx.x = {b}", below=False,
                color=hue(b).ink, size=SIZE)
    f.line(g.left(threads), gy, g.left(threads), g.bottom(1), stroke=INK, sw=1.5)
    f.brace(g.left(n) + 2, g.right(cols - 1) - 2, g.bottom(1) + 4, "i ≥ n: returns",
            color=MASKED.ink, size=SIZE)
    ay = g.bottom(1) + 44
    for c in range(n):
        f.line(g.cx(c), g.bottom(1) + 1, g.cx(c), ay - 1, stroke=RULE, sw=1)
    arr = f.grid(gx, ay, 1, n, cw, ch, lambda r, c: (str(c), FREE), size=SIZE,
                 row_labels=["x[i], y[i]"], label_size=SIZE)
    y = arr.bottom(0) + 26
    f.legend(gx, y, [(hue(0), "block 0"), (hue(1), "block 1"),
                     (MASKED, f"a thread past n = {n}: no element")], size=SIZE)
    f.height = y + 10
    return f


# ---- shared-memory banks (Interlude I) -------------------------------------------------------------

BANKS, BANK_BYTES = 32, 4       # an SM's shared memory: 32 banks of 4-byte words
TILE_ROW_BYTES = 128 * 2        # a float16 row of 128 elements, as lab 07's tiles hold
CHUNK_BYTES = 16                # what one lane reads from its row: 8 float16
BANK_ROWS = 8                   # eight lanes, eight consecutive rows, the same column


def chunk_banks(pitch: int, row: int) -> list[int]:
    """The banks of the 16-byte chunk at column 0 of `row`, rows `pitch` bytes apart."""
    first = row * pitch // BANK_BYTES
    return [(first + w) % BANKS for w in range(CHUNK_BYTES // BANK_BYTES)]


def banks() -> Figure:
    padded = TILE_ROW_BYTES + 16
    plain_sets = {b for r in range(BANK_ROWS) for b in chunk_banks(TILE_ROW_BYTES, r)}
    padded_sets = [b for r in range(BANK_ROWS) for b in chunk_banks(padded, r)]
    assert plain_sets == {0, 1, 2, 3}                      # the caption's eight-way conflict
    assert sorted(padded_sets) == list(range(BANKS))       # ... and the padded rows' one pass
    f = Figure(820, 0, "Eight rows' chunks over the 32 banks, without and with padding",
               "Eight lanes each read 16 bytes at column 0 of eight consecutive rows of a "
               "float16 tile. With rows 256 bytes apart all eight chunks fall in banks 0 to 3; "
               "with rows 272 bytes apart, row r's chunk is in banks 4r to 4r + 3.")
    cw, ch, gx = 22, 22, 92
    y = 14
    panels = [(TILE_ROW_BYTES, "rows 256 bytes apart: every chunk in banks 0–3, eight turns"),
              (padded, "rows padded to 272 bytes: row r in banks 4r to 4r + 3, one turn")]
    for k, (pitch, title) in enumerate(panels):
        f.text(10, y, title, size=SIZE_TITLE, weight="bold")

        def cell(r, c, pitch=pitch):
            return (str(r), hue(r)) if c in chunk_banks(pitch, r) else ("", None)
        g = f.grid(gx, y + 34, BANK_ROWS, BANKS, cw, ch, cell, size=SIZE_SMALL,
                   stroke="#d9dee3", sw=1, row_labels=[f"row {r}" for r in range(BANK_ROWS)],
                   col_labels=[str(b) for b in range(BANKS)])
        y = g.bottom(BANK_ROWS - 1) + 34
    f.text(gx, y - 12, "bank (columns); the number in a cell is the row whose chunk uses it",
           size=SIZE_SMALL, fill=MUTED)
    f.height = y
    return f


# ---- the H100 measurements ------------------------------------------------------------------------

# The table's 2026-11-26 column: each batch's v1 from the program that timed it that day (lab
# 05's own three, lab 06's four, lab 07's one), beside that program's read yardstick.
GPU_BATCHES = (((64, 1024, 32, 32), "05"), ((16, 4096, 32, 32), "05"), ((128, 2048, 32, 8), "07"),
               ((4, 8192, 32, 32), "06"), ((64, 4096, 32, 4), "05"), ((1, 16384, 32, 32), "06"),
               ((1, 2048, 32, 32), "06"))


def gpu() -> Figure:
    v1 = {lab: h100.bench_series(lab, "BM_GpuPagedAttentionV1") for lab in ("05", "06", "07")}
    read = {lab: h100.bench_series(lab, "BM_GpuReadRoofline") for lab in ("05", "06", "07")}
    flash = h100.torch_sdpa()  # 2026-11-22: the batches PyTorch timed
    rows = [(shape, lab, [(WARPS[0], *v1[lab][shape])] +
             ([(WARPS[2], flash[shape]["sdpa_flash_GBps"], None)] if shape in flash else []))
            for shape, lab in GPU_BATCHES]
    # a batch's row: its two label lines and the gap under them (44, as lab 06's figure), or its
    # bars if they are taller
    row_h = [max(44, h100.BAR_PITCH * len(bars) + 14) for _, _, bars in rows]
    height = sum(row_h)
    f = Figure(820, 104 + height, "paged_attention_v1 on an H100",
               "GB/s of K and V each call must read, for seven decode batches (float16, head "
               "size 128, block size 16): v1 on 2026-11-26 with its percentage of the same run's "
               "read yardstick, and FlashAttention through PyTorch on 2026-11-22 where it was "
               "timed.")
    x0 = h100.BARS_X
    scale = h100.gbps_scale(f, x0, f.width - x0 - h100.LABEL_ROOM - 20, 40 + height)
    y = 42
    for (shape, lab, bars), h in zip(rows, row_h):
        seqs, tokens, heads, kv = shape
        f.text(10, y + 9, f"{seqs} × {tokens:,} tokens, {heads}/{kv} heads", size=SIZE_SMALL)
        f.text(10, y + 27, f"grid: {heads * seqs:,} thread blocks", size=SIZE_SMALL, fill=MUTED)
        h100.batch_bars(f, x0, scale, y, read[lab][shape][0], None, [
            (hue_, gbps, f"{gbps:,.0f}  ({pct:.0f}%)" if pct is not None else f"{gbps:,.0f}", "",
             hue_ is WARPS[0]) for hue_, gbps, pct in bars])
        y += h
    y += 20
    end = f.legend(10, y, [(WARPS[0], "v1 (lab 05), 2026-11-26"),
                           (WARPS[2], "FlashAttention via PyTorch, 2026-11-22")])
    f.line(end, y - 7, end, y + 7, stroke=INK, sw=2)
    f.text(end + 6, y, "read yardstick", size=SIZE_SMALL)
    f.text(10, y + 22, "% in brackets: of the read yardstick timed by the same program that day",
           size=SIZE_SMALL, fill=MUTED)
    f.height = y + 40
    return f


# ---- the GPU in one page --------------------------------------------------------------------------
# The H100 figures the chapter quotes (\ref lab_05_gpu): the book's, not measured here.
H100_SMS, H100_REGS_PER_SM, H100_SMEM_KIB, H100_THREADS_PER_SM = 132, 65_536, 228, 2_048
H100_L2_MB, H100_HBM_GB, H100_HBM_PEAK_TBPS, H100_YARDSTICK_GBPS = 50, 80, 3.35, 2_940
H100_DRAM_LATENCY_US, H100_CLOCK_GHZ = 0.4, 1.8  # lab 06's Little's law, lab 07's clock


def hierarchy() -> Figure:
    f = Figure(820, 380, "The GPU as lab 05 uses it",
               f"Left: the grid, one thread block per (query head, sequence). Middle: one of the "
               f"H100's {H100_SMS} SMs running one block, four warps of 32 lanes, with its "
               f"registers and shared memory. Below: the L2 cache all SMs share, then HBM.")
    # 1. The grid.
    f.text(10, 14, "1. The grid", size=SIZE_TITLE, weight="bold")
    f.text(10, 34, "(num_heads, num_seqs)", size=SIZE_SMALL, mono=True)
    gx, gy, cw, ch = 62, 74, 32, 28
    heads, seqs = 4, 4
    neutral = mix(RULE, PAPER, 0.6)
    g = f.grid(gx, gy, seqs, heads, cw, ch, lambda r, c: ("", neutral), mono=False,
               row_labels=[f"seq {b}" for b in range(seqs)],
               col_labels=[f"h{h}" for h in range(heads)])
    f.rect(g.left(1), g.top(2), cw, ch, fill=PAPER, stroke=INK, sw=2.4)
    f.lines(10, g.bottom(seqs - 1) + 40, ["a square: one block,", "run on any free SM,",
                                          "in any order"], size=SIZE_SMALL, fill=MUTED,
            anchor="start")

    # 2. One SM.
    sx, sy, sw_, sh = 214, 4, 430, 262
    f.rect(sx, sy, sw_, sh, fill=PAPER, stroke=INK, sw=1.6, rx=6)
    f.text(sx + 10, sy + 16, f"2. One SM of {H100_SMS}, running block (h1, seq 2)",
           size=SIZE_TITLE, weight="bold")
    lx, ly, lw, lh = sx + 64, sy + 46, 9, 18
    f.arrow(g.right(1) + 2, g.cy(2), sx - 1, ly + 2 * lh, color=INK, bend=1)
    lanes = f.grid(lx, ly, NUM_WARPS, WARP_SIZE, lw, lh, lambda w, l: ("", WARPS[w]),
                   stroke=PAPER, sw=0.8, row_labels=[f"warp {w}" for w in range(NUM_WARPS)])
    f.text(lx, ly - 10, "lane 0", size=SIZE_SMALL, fill=MUTED)
    f.text(lanes.right(WARP_SIZE - 1), ly - 10, "31", size=SIZE_SMALL, fill=MUTED, anchor="end")
    f.vbrace(lanes.right(WARP_SIZE - 1) + 4, ly, lanes.bottom(NUM_WARPS - 1),
             [f"{NUM_THREADS}", "threads"], size=SIZE_SMALL)
    y = lanes.bottom(NUM_WARPS - 1) + 14
    bw = (sw_ - 30) / 2
    f.box(sx + 10, y, bw, 78, ["registers:", "a thread's own",
                               f"{H100_REGS_PER_SM // 1024}K × 32 bit per SM", "no extra cost"],
          size=SIZE_SMALL)
    f.box(sx + 20 + bw, y, bw, 78, ["shared memory:", "the block's",
                                    f"{H100_SMEM_KIB} KiB per SM", "tens of cycles"],
          size=SIZE_SMALL)
    f.lines(sx + 10, y + 78 + 28, ["beside it, other resident blocks:",
                                   f"at most {H100_THREADS_PER_SM:,} threads per SM"],
            size=SIZE_SMALL, fill=MUTED, anchor="start")

    # The other SMs.
    ox = sx + sw_ + 12
    ow = 810 - ox - 16
    for k in range(3):
        f.rect(ox + 8 * k, sy + 8 * k, ow, sh - 16, fill=PAPER, stroke=RULE, sw=1, rx=6,
               dash="4 3")
    f.lines(ox + 16 + ow / 2, sy + sh / 2 + 8,
            [f"the other {H100_SMS - 1}", "SMs, each with", "its own registers", "and shared",
             "memory"], size=SIZE_SMALL, fill=MUTED)

    # 3. L2 and HBM.
    l2y = sy + sh + 24
    for x in (sx + sw_ / 2, ox + 16 + ow / 2):
        f.line(x, sy + sh, x, l2y, stroke=INK, sw=1.4)
    f.box(10, l2y, 800, 30, f"L2 cache: {H100_L2_MB} MB, shared by all {H100_SMS} SMs; "
          "a few hundred cycles", size=SIZE_SMALL)
    hy = l2y + 30 + 18
    f.line(410, l2y + 30, 410, hy, stroke=INK, sw=1.4)
    f.box(10, hy, 800, 30, f"HBM3: {H100_HBM_GB} GB; {H100_HBM_PEAK_TBPS} TB/s peak, "
          f"about {H100_YARDSTICK_GBPS:,} GB/s read by the yardstick; about "
          f"{H100_DRAM_LATENCY_US} µs, some {round(H100_DRAM_LATENCY_US * H100_CLOCK_GHZ * 1000, -2):.0f} cycles",
          size=SIZE_SMALL)
    f.height = hy + 30 + 4
    return f


# The interlude's coalescing paragraph: one warp, 32 lanes, 8 bytes each, in 32-byte sectors.
LOAD_BYTES, SECTOR_BYTES, SCATTER_STRIDE = 8, 32, 40
ZOOM_LANES = 8                                      # the scattered load's lanes drawn enlarged


def sectors_moved(stride: int) -> list[int]:
    """The 32-byte sectors a warp's load touches when lane i reads LOAD_BYTES at stride · i."""
    return sorted({b // SECTOR_BYTES for i in range(WARP_SIZE)
                   for b in (stride * i, stride * i + LOAD_BYTES - 1)})


def coalescing() -> Figure:
    used = WARP_SIZE * LOAD_BYTES
    together, scattered = sectors_moved(LOAD_BYTES), sectors_moved(SCATTER_STRIDE)
    moved_t, moved_s = SECTOR_BYTES * len(together), SECTOR_BYTES * len(scattered)
    # The interlude's text and caption quote these.
    assert (len(together), moved_t, used) == (8, 256, 256)
    assert (len(scattered), moved_s, moved_s // used) == (32, 1_024, 4)
    f = Figure(820, 380, "One warp's load, coalesced and scattered",
               f"Top: lane i of a warp reads the {LOAD_BYTES} bytes at {LOAD_BYTES}·i; the "
               f"{WARP_SIZE} loads fill {len(together)} sectors of {SECTOR_BYTES} bytes, "
               f"{moved_t} bytes moved and all used. Middle: lane i reads the {LOAD_BYTES} bytes "
               f"at {SCATTER_STRIDE}·i; every lane's bytes lie in a sector of their own, "
               f"{len(scattered)} sectors, {moved_s:,} bytes moved for {used} used. Last: the "
               f"scattered load's lanes 0 to {ZOOM_LANES - 1} enlarged, each lane's "
               f"{LOAD_BYTES} bytes one quarter of a {SECTOR_BYTES}-byte sector, the sectors no "
               f"lane reads not moved.")
    lane_w, lane_h, sec_w, sec_h = 25, 22, 20, 26
    px = sec_w / SECTOR_BYTES                          # one byte, in px
    used_fill = mix(WARPS[0].fill, WARPS[0].ink, 0.7)
    moved_fill = FREE.fill

    def panel(y: float, title: str, stride: int, sectors: list[int], x0: float) -> float:
        f.text(10, y, title, size=SIZE_TITLE, weight="bold")
        lanes = f.grid(10, y + 16, 1, WARP_SIZE, lane_w, lane_h,
                       lambda r, c: (str(c), WARPS[0]), size=SIZE_SMALL)
        sy = lanes.bottom(0) + 58
        first, last = sectors[0], sectors[-1]
        for s in range(first, last + 1):               # the sectors, moved or not
            sx = x0 + (s - first) * sec_w
            if s in sectors:
                f.rect(sx, sy, sec_w, sec_h, fill=moved_fill, stroke=INK, sw=1)
            else:
                f.rect(sx, sy, sec_w, sec_h, stroke=MUTED, sw=1, dash="3 2")
        for i in range(WARP_SIZE):                     # each lane's bytes, and where they come from
            bx = x0 + (stride * i - first * SECTOR_BYTES) * px
            f.rect(bx, sy, LOAD_BYTES * px, sec_h, fill=used_fill, stroke=None)
            f.line(lanes.cx(i), lanes.bottom(0), bx + LOAD_BYTES * px / 2, sy,
                   stroke=WARPS[0].ink, sw=0.8)
        for s in sectors:                              # sector edges over the bytes
            f.rect(x0 + (s - first) * sec_w, sy, sec_w, sec_h, stroke=INK, sw=1)
        x1 = x0 + (last - first + 1) * sec_w
        f.brace(x0, x1, sy + sec_h + 8,
                f"{len(sectors)} sectors × {SECTOR_BYTES} bytes = {SECTOR_BYTES * len(sectors):,} "
                f"bytes moved, {used} used", size=SIZE)
        return sy + sec_h + 8 + 5 + 9, sy

    span_t = len(together) * sec_w
    y, _ = panel(14, f"1. Lane i reads the {LOAD_BYTES} bytes at {LOAD_BYTES}·i: neighbouring "
                 f"lanes, neighbouring bytes", LOAD_BYTES, together, 410 - span_t / 2)
    y, sy = panel(y + 34, f"2. The same load scattered: lane i reads the {LOAD_BYTES} bytes at "
                  f"{SCATTER_STRIDE}·i", SCATTER_STRIDE, scattered, 10)

    # Panel 2's first lanes enlarged: at 20 px a sector, a lane's quarter of it is 5 px and the
    # point (three quarters of every sector moved for nothing) is hard to see at the page's
    # scale. The inset draws lanes 0-7, the sectors 0-9 they span, at 78 px a sector.
    zl = ZOOM_LANES
    z_last = (SCATTER_STRIDE * zl - 1) // SECTOR_BYTES  # the last sector before lane zl's
    z_secs = list(range(z_last + 1))
    z_moved = sorted({b // SECTOR_BYTES for i in range(zl)
                      for b in (SCATTER_STRIDE * i, SCATTER_STRIDE * i + LOAD_BYTES - 1)})
    assert z_moved == [s_ for s_ in scattered if s_ <= z_last]   # the same sectors as panel 2's
    z_skipped = [s_ for s_ in z_secs if s_ not in z_moved]
    # The caption says each lane's bytes sit in a sector of their own, a quarter of it used,
    # and the inset's title says lanes 0-7: the inset shows both.
    assert len(z_moved) == zl and SECTOR_BYTES == 4 * LOAD_BYTES and zl == 8
    # The enlarged lanes' sectors framed in panel 2 (solid: dashed means "not moved"); the
    # frame's right side is the edge of sector z_last + 1, which starts where it ends.
    f.rect(5, sy - 3, len(z_secs) * sec_w + 5, sec_h + 6, stroke=MUTED, sw=1.5, rx=3)
    zw, zh = 78, 40                                    # an enlarged sector
    zpx = zw / SECTOR_BYTES
    zx0 = 410 - len(z_secs) * zw / 2
    f.text(10, y + 34, f"3. Panel 2's lanes 0–{zl - 1} of {WARP_SIZE} enlarged (framed): "
           f"{SECTOR_BYTES}-byte sectors in {LOAD_BYTES}-byte quarters", size=SIZE_TITLE,
           weight="bold")
    ly = y + 56                                        # the lanes, each over its bytes
    zy = ly + 22 + 22                                  # the sectors
    for s_ in z_secs:
        sx = zx0 + s_ * zw
        if s_ in z_moved:
            f.rect(sx, zy, zw, zh, fill=moved_fill, stroke=None)
            for q in range(1, SECTOR_BYTES // LOAD_BYTES):
                f.line(sx + q * LOAD_BYTES * zpx, zy, sx + q * LOAD_BYTES * zpx, zy + zh,
                       stroke=RULE, sw=1)
        else:
            f.rect(sx, zy, zw, zh, stroke=MUTED, sw=1, dash="3 2")
            f.lines(sx + zw / 2, zy + zh / 2, ["not", "moved"], size=SIZE_SMALL, fill=MUTED,
                    gap=1.15)
    for i in range(zl):
        bx = zx0 + SCATTER_STRIDE * i * zpx
        f.rect(bx, zy, LOAD_BYTES * zpx, zh, fill=used_fill, stroke=None)
        cx = bx + LOAD_BYTES * zpx / 2
        f.box(cx - 18, ly, 36, 22, str(i), fill=WARPS[0].fill, stroke=PAPER, rx=0,
              size=SIZE_SMALL, mono=True)
        f.line(cx, ly + 22, cx, zy, stroke=WARPS[0].ink, sw=0.8)
    for s_ in z_moved:
        f.rect(zx0 + s_ * zw, zy, zw, zh, stroke=INK, sw=1)
    for s_ in range(len(z_secs) + 1):                  # byte addresses at the sector edges
        f.text(zx0 + s_ * zw, zy + zh + 11, f"{s_ * SECTOR_BYTES}", size=SIZE_SMALL,
               anchor="middle", fill=MUTED)
    used_z = zl * LOAD_BYTES
    f.brace(zx0, zx0 + len(z_secs) * zw, zy + zh + 22,
            f"{len(z_moved)} sectors × {SECTOR_BYTES} bytes = {SECTOR_BYTES * len(z_moved)} "
            f"bytes moved, {used_z} used; {len(z_skipped)} not moved", size=SIZE)
    y = zy + zh + 22 + 5 + 9
    y += 26
    end = f.legend(10, y, [(WARPS[0], "lane of warp 0"), (used_fill, "a lane's 8 bytes: moved, used"),
                           (moved_fill, "moved, not used")])
    f.rect(end, y - 6, 12, 12, stroke=MUTED, sw=1, dash="3 2")
    f.text(end + 17, y, "not moved", size=SIZE_SMALL)
    f.height = y + 10
    return f



# The interlude's occupancy paragraph: lab 05's kernel at its 72 registers per thread (lab 06's
# "Why v1 starves the GPU" quotes the same count).
V1_REGS_PER_THREAD, H100_BLOCKS_PER_SM = 72, 32


def occupancy() -> Figure:
    slots = H100_THREADS_PER_SM // WARP_SIZE
    per_block = NUM_THREADS * V1_REGS_PER_THREAD
    by_regs = H100_REGS_PER_SM // per_block
    by_threads = H100_THREADS_PER_SM // NUM_THREADS
    blocks = min(by_regs, by_threads, H100_BLOCKS_PER_SM)
    warps = blocks * NUM_WARPS
    left = H100_REGS_PER_SM - blocks * per_block
    # The interlude's text and caption quote these (lab 06 too).
    assert (slots, per_block, blocks, warps, blocks * per_block, left) == (64, 9_216, 7, 28,
                                                                          64_512, 1_024)
    f = Figure(820, 300, "One SM running lab 05's kernel",
               f"At {V1_REGS_PER_THREAD} registers per thread a block of {NUM_THREADS} threads "
               f"takes {per_block:,} of the SM's {H100_REGS_PER_SM:,} registers, so {blocks} "
               f"blocks fit, {warps} of the {slots} warp slots; {left:,} registers are left, "
               f"too few for another block.")
    f.text(10, 14, f"1. One SM's {slots} warp slots: {blocks} blocks of {NUM_WARPS} warps, "
           f"{warps} slots filled", size=SIZE_TITLE, weight="bold")
    cols, cw, ch = 16, 47, 38  # a slot says its block over its warp: "b0" / "w0"

    def slot(r, c):
        k = r * cols + c
        b, w = divmod(k, NUM_WARPS)
        return ([f"b{b}", f"w{w}"], hue(b)) if b < blocks else ("", FREE)
    g = f.grid(55, 34, slots // cols, cols, cw, ch, slot, size=SIZE_SMALL,
               row_labels=[f"{r * cols}–{r * cols + cols - 1}" for r in range(slots // cols)])
    f.legend(55, g.bottom(slots // cols - 1) + 16,
             [(hue(0), "b0 over w1: warp 1 of resident block 0"),
              (FREE, "an empty slot: no registers left for a block")])

    y = g.bottom(slots // cols - 1) + 50
    f.text(10, y, f"2. The SM's {H100_REGS_PER_SM:,} registers: {NUM_THREADS} threads × "
           f"{V1_REGS_PER_THREAD} registers = {per_block:,} per block", size=SIZE_TITLE, weight="bold")
    bx, bw, bh = 10, 800, 40
    scale = bw / H100_REGS_PER_SM
    by = y + 18
    for b in range(blocks):
        f.box(bx + b * per_block * scale, by, per_block * scale, bh,
              [f"block {b}", f"{per_block:,}"], fill=hue(b).fill, stroke=hue(b).ink,
              size=SIZE_SMALL, rx=0)
    f.rect(bx + blocks * per_block * scale, by, left * scale, bh, fill=FREE.fill, stroke=INK, sw=1)
    f.brace(bx, bx + blocks * per_block * scale, by + bh + 3,
            f"{blocks} blocks: {blocks * per_block:,} registers", size=SIZE)
    lx = bx + (blocks * per_block + left / 2) * scale
    f.arrow(lx, by + bh + 34, lx, by + bh + 2)
    f.text(lx - 8, by + bh + 34, f"{left:,} left: an {blocks + 1}th block needs {per_block:,}",
           size=SIZE, anchor="end")
    y = by + bh + 62
    y = f.paragraph(10, y, f"The other limits allow more: {H100_THREADS_PER_SM:,} threads per "
                    f"SM make {by_threads} blocks of {NUM_THREADS}, and an SM holds at most "
                    f"{H100_BLOCKS_PER_SM} blocks; the registers bind first.", fill=MUTED)
    f.height = y - 4
    return f


FIGURES = {"lab05_key_cache": key_cache, "lab05_value_cache": value_cache,
           "lab05_thread_map": thread_map, "lab05_key_lanes": key_lanes, "lab05_timeline": timeline,
           "lab05_group_butterfly": group_butterfly,
           "lab05_warp_butterfly": warp_butterfly, "lab05_shuffle_sum": shuffle_sum,
           "lab05_tree_sum": tree_sum,
           "lab05_gpu": gpu,
           "lab05_hierarchy": hierarchy, "lab05_coalescing": coalescing,
           "lab05_occupancy": occupancy, "lab05_index_map": index_map,
           "lab05_banks": banks}
