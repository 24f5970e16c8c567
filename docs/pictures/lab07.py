"""Lab 07's pictures (labs/07-cuda-gqa-decode/README.md): why v1 reads a grouped kv head G
times, vLLM V1's flash layout against V0's, the tile picture (which warp holds which rows and
columns of Q, K, S, W, V and O), the tile loop's barriers and loads in flight, one thread's queue
of cp.async groups and the waits that land a tile, the fused merge's last-block election, and the
H100 figures the kernel is measured against (docs/figures/gpu/)."""
import h100
from svgfig import (BARRIER_INK, FREE, INK, MUTED, PAPER, POISON, RULE, SIZE, SIZE_SMALL, SIZE_TITLE, STATE,
                    WARPS, Figure, hue, mix, text_width)

# The example most pictures draw: 32 query heads over 4 kv heads (a group of 8), head_size 128,
# float16, tiles of 64 tokens, four warps (labs/07-cuda-gqa-decode/gqa_decode.hpp).
NUM_HEADS, NUM_KV_HEADS, HEAD_SIZE = 32, 4, 128
GROUP = NUM_HEADS // NUM_KV_HEADS
NUM_WARPS, WMMA, TILE_ROWS = 4, 16, 16
ROW_THREADS = NUM_WARPS * 32 // TILE_ROWS


# ---- why v1 reads each kv byte G times -----------------------------------------------------------

def gqa_reads() -> Figure:
    f = Figure(820, 300, "Who reads a kv head's cache",
               "Left: lab 05's v1 starts one thread block per query head, so the eight query "
               "heads of a group each read their kv head's whole context. Right: this lab's "
               "kernel starts one thread block per kv head and partition, which reads each byte "
               "once for all eight.")
    for panel, (x0, title) in enumerate([(10, "v1 (lab 05): one thread block per query head"),
                                         (420, "this lab: one thread block per kv head")]):
        f.text(x0, 14, title, size=SIZE, weight="bold")
        # The kv head's context: a bar of cache blocks.
        cy = 236
        f.rect(x0 + 20, cy, 360, 26, fill=hue(6).fill, stroke=hue(6).ink, sw=1)
        for b in range(1, 12):
            f.line(x0 + 20 + 30 * b, cy, x0 + 20 + 30 * b, cy + 26, stroke="#ffffff", sw=1.5)
        f.text(x0 + 200, cy + 13, "kv head 1: K and V of every token", size=SIZE_SMALL,
               anchor="middle")
        # A bracket over the whole bar: what an arrow into it reads is all of it.
        ink = WARPS[0].ink if panel == 0 else WARPS[2].ink
        f.path(f"M{x0 + 20:g},{cy - 3:g} L{x0 + 20:g},{cy - 9:g} L{x0 + 380:g},{cy - 9:g} "
               f"L{x0 + 380:g},{cy - 3:g}", stroke=ink, sw=1)
        if panel == 0:
            for g in range(GROUP):
                bx = x0 + 20 + 45 * g
                f.box(bx, 42, 40, 38, [f"h {GROUP + g}"], fill=WARPS[0].fill,
                      stroke=WARPS[0].ink, size=SIZE_SMALL, mono=True)
            # Eight separate reads of the same bytes: one arrow per thread block, side by side,
            # each from the bracket over all eight to the whole context.
            f.brace(x0 + 20, x0 + 20 + 45 * (GROUP - 1) + 40, 84,
                    "each block reads the kv head's whole context", color=WARPS[0].ink)
            mid_x = x0 + 200
            for g in range(GROUP):
                ax = mid_x + 10 * (g - (GROUP - 1) / 2)
                f.arrow(ax, 108, ax, cy - 10, color=WARPS[0].ink, sw=1.2)
            f.text(mid_x + 10 * GROUP / 2 + 10, (108 + cy) / 2, f"× {GROUP}", size=SIZE_TITLE,
                   fill=WARPS[0].ink, weight="bold")
            f.text(x0 + 200, 30, "8 thread blocks, query heads 8-15", size=SIZE_SMALL,
                   anchor="middle", fill=MUTED)
            f.text(x0 + 200, 286, "each byte loaded 8 times: 8 × the bytes counted",
                   size=SIZE_SMALL, anchor="middle", fill=POISON.ink, weight="bold")
        else:
            f.box(x0 + 85, 40, 230, 60, ["1 block per partition",
                                          "a tile of 8 rows: heads 8-15"],
                  fill=WARPS[2].fill, stroke=WARPS[2].ink, size=SIZE_SMALL)
            f.arrow(x0 + 200, 102, x0 + 200, cy - 10, color=WARPS[2].ink, sw=1.2)
            f.text(x0 + 212, (108 + cy) / 2, "× 1", size=SIZE_TITLE, fill=WARPS[2].ink,
                   weight="bold")
            f.text(x0 + 200, 286, "each byte loaded once, used by all 8 rows",
                   size=SIZE_SMALL, anchor="middle", fill=WARPS[2].ink, weight="bold")
    f.line(410, 24, 410, 292, stroke=RULE, sw=1, dash="3 3")
    return f


# ---- the two layouts ------------------------------------------------------------------------------

def layouts() -> Figure:
    # A toy block: 4 tokens, 2 kv heads, head_size 16, float16 (x = 8: one cell = 16 bytes).
    tokens, heads, dims, x = 4, 2, 16, 8
    chunks = dims // x
    cell_w, cell_h = 50, 34  # "δ8-15" in mono at 14 px is 42 px
    f = Figure(820, 336, "One cache block in vLLM's two layouts",
               "A toy block of 4 tokens, 2 kv heads, head_size 16, float16; each cell is 16 "
               "bytes (8 elements), labelled with its token and dimensions and coloured by its kv "
               "head. Top: V0's key cache puts each kv head's slice first, as one "
               "contiguous run. Bottom: V1's flash layout puts each token first, its kv heads "
               "side by side, so one kv head's rows are strided.")

    def cell_label(t, h, c):
        return [f"t{t}", f"δ{c * x}-{c * x + x - 1}"]

    def colour(h, t):
        return hue(h).fill  # by kv head only: the labels say the token

    x0 = 10
    # V0: key_cache[block] = [heads, chunks, tokens, x]
    f.text(10, 14, "V0 (labs 05, 06): key_cache[block] is [num_kv_heads, head_size / x, "
           "block_size, x]", size=SIZE, weight="bold", mono=False)
    order_v0 = [(h, c, t) for h in range(heads) for c in range(chunks) for t in range(tokens)]
    f.grid(x0, 34, 1, len(order_v0), cell_w, cell_h,
           lambda r, i: (cell_label(order_v0[i][2], order_v0[i][0], order_v0[i][1]),
                         colour(order_v0[i][0], order_v0[i][2])), size=SIZE_SMALL)
    half = tokens * chunks * cell_w
    f.brace(x0, x0 + half, 34 + cell_h + 2, "kv head 0: one contiguous run")
    f.lines(x0 + half + 12, 34 + cell_h + 23, ["(V0's value cache is transposed:",
                                                "[heads, head_size, block_size])"],
            size=SIZE_SMALL, anchor="start", fill=MUTED)
    # Flash: cache[block] = [tokens, heads, dims]
    y1 = 160  # under the title's two lines
    f.text(10, y1 - 38, "V1 flash (this lab): key_cache[block], value_cache[block] =", size=SIZE,
           weight="bold")
    f.text(10, y1 - 20, "[block_size, num_kv_heads, head_size]", size=SIZE, weight="bold")
    order_fl = [(t, h, c) for t in range(tokens) for h in range(heads) for c in range(chunks)]
    g = f.grid(x0, y1, 1, len(order_fl), cell_w, cell_h,
               lambda r, i: (cell_label(order_fl[i][0], order_fl[i][1], order_fl[i][2]),
                             colour(order_fl[i][1], order_fl[i][0])), size=SIZE_SMALL)
    for t in range(tokens):
        a = g.left(t * heads * chunks)
        f.brace(a + 2, a + heads * chunks * cell_w - 2, y1 + cell_h + 2,
                f"token {t}: {heads} heads")
    # What kv head 0's thread block reads.
    y2 = y1 + cell_h + 48
    f.text(10, y2, "the rows kv head 0's thread block loads from this block:", size=SIZE_SMALL,
           weight="bold")
    f.legend(500, y2, [(hue(h), f"kv head {h}") for h in range(heads)])
    for t in range(tokens):
        a = g.left(t * heads * chunks)
        f.rect(a, y2 + 14, chunks * cell_w, 22, fill=hue(0).fill, stroke=hue(0).ink, sw=1)
        f.text(a + chunks * cell_w / 2, y2 + 25, f"row t{t}: {dims * 2} B", size=SIZE_SMALL,
               anchor="middle")
        if t + 1 < tokens:
            f.arrow(a + chunks * cell_w + 4, y2 + 25, g.left((t + 1) * heads * chunks) - 4,
                    y2 + 25, color=MUTED, sw=1)
    # What a row costs to load, the token stride and how vLLM allocates K and V: the caption.
    f.height = y2 + 44
    return f


# ---- the tile picture -----------------------------------------------------------------------------

def _tile(f, x, y, rows, cols, cw, ch, name, shape, owner, label, row_labels=None):
    """A matrix drawn as 16x16 wmma tiles: owner(r, c) -> warp (or None), label(r, c) -> text."""
    f.text(x, y - 28, name, size=SIZE, weight="bold", mono=True)
    f.text(x, y - 11, shape, size=SIZE_SMALL, fill=MUTED, mono=True)

    def cell(r, c):
        w = owner(r, c)
        return label(r, c), (WARPS[w] if w is not None else FREE.fill)
    return f.grid(x, y, rows, cols, cw, ch, cell, size=SIZE_SMALL, row_labels=row_labels)


def tiles() -> Figure:
    f = Figure(820, 700, "The tiles of one thread block",
               "32 query heads over 4 kv heads (a group of 8), head_size 128, tiles of 64 "
               "tokens. Each cell is one 16 x 16 wmma tile (a half-height cell: 8 of its rows), "
               "coloured by the warp that computes or reads it; rows 8 to 15 are padding. Top: "
               "S = Q times K transposed, the numbers 0 to 7 in Q and K transposed being the "
               "mma steps, 16 dimensions each. "
               "Middle: the softmax, a row per 8 threads. Bottom: acc += W times V, W being the "
               "weight tile (tiles.p).")
    qk_steps = HEAD_SIZE // WMMA
    o_tiles = HEAD_SIZE // WMMA // NUM_WARPS
    # Q and V's cells hold "a0" or nothing: narrow; K, S and W's hold "t48+": 40 px and more.
    # The matrices start right of the row labels ("rows 0-7: heads", 122 px at 14 px).
    cw, ch, hh, left = 24, 30, 20, 138
    groups = ["rows 0-7: heads", "rows 8-15: 0"]
    f.legend(10, 12, [(WARPS[w], f"warp {w}") for w in range(NUM_WARPS)] +
             [(FREE, "read by every warp"), (POISON, "padding rows 8-15")])
    # Q · Kᵀ = S: Q's column slice a meets Kᵀ's row slice a in mma step a (dimensions 16a …
    # 16a + 15); Kᵀ's column slice w is warp w's. Steps are numbered, not named k: k is a key.
    y = 74
    qg = _tile(f, left, y, 2, qk_steps, cw, hh, "Q (q tile)", f"[16, {HEAD_SIZE}] 16-bit",
               lambda r, c: None, lambda r, c: f"a{c}" if r == 0 else "", row_labels=groups)
    f.rect(qg.x, qg.y + hh, qg.width, hh, fill=POISON.fill, stroke=RULE, sw=1)
    f.lines(10, qg.y + qg.height + 24, ["a0-a7: mma step a of every warp,",
                                        "over dimensions 16a … 16a + 15"],
            size=SIZE_SMALL, anchor="start", fill=MUTED)
    f.text(qg.x + qg.width + 14, y + hh, "·", size=22, anchor="middle")
    kx = qg.x + qg.width + 30
    kg = _tile(f, kx, y, qk_steps, NUM_WARPS, 40, 20, "K^{T} (key tile, col_major)",
               f"[{HEAD_SIZE}, 64 tokens] 16-bit", lambda r, c: c, lambda r, c: f"a{r}")
    for w in range(NUM_WARPS):
        f.text(kg.cx(w), kg.y + kg.height + 10, f"t{16 * w}+", size=SIZE_SMALL,
               anchor="middle", fill=MUTED, mono=True)
    sx = kx + 240  # clear of K^{T}'s title, which is wider than its tile
    f.text((kg.x + kg.width + sx) / 2, y + hh, "=", size=18, anchor="middle")
    sg = _tile(f, sx, y, 2, NUM_WARPS, 44, hh, "S (scores)", "[16, 64] float",
               lambda r, c: c, lambda r, c: f"t{16 * c}+" if r == 0 else "")
    # Rows 8-15 of S are Q's zero rows times Kᵀ: padding, shaded as Q's are.
    f.rect(sg.x, sg.y + hh, sg.width, hh, fill=POISON.fill, stroke=RULE, sw=1)
    # What each warp computes, step by step, is said once: in the caption under the figure.
    # The softmax: rows to threads, all 16 rows.
    y2 = kg.y + kg.height + 62
    f.text(10, y2 - 22, "softmax: row r of S and W belongs to threads 8r … 8r + 7 (lanes of "
           "one warp), 8 columns each", size=SIZE, weight="bold")
    rg = f.grid(96, y2, 1, TILE_ROWS, 44, 28,
                lambda r, c: (f"r{c}", WARPS[c // 4] if c < GROUP else POISON.fill),
                size=SIZE_SMALL, row_labels=["S, W rows"])
    for w in range(NUM_WARPS):
        f.brace(rg.left(4 * w) + 2, rg.right(4 * w + 3) - 2, rg.y + rg.height + 3,
                f"warp {w}: threads {32 * w}–{32 * w + 31}")
    # W · V = acc
    y3 = rg.y + rg.height + 74
    # The padding rows of W are not 0: a zero query scores 0 on every key, so its weights are
    # e^0 = 1 on the real tokens; they are computed and never written out.
    pg = _tile(f, left, y3, 2, NUM_WARPS, 42, hh, "W (tiles.p)", "[16, 64] 16-bit",
               lambda r, c: None, lambda r, c: f"t{16 * c}+" if r == 0 else "",
               row_labels=["rows 0-7: heads", "rows 8-15: pad"])
    f.rect(pg.x, pg.y + hh, pg.width, hh, fill=POISON.fill, stroke=RULE, sw=1)
    f.text(pg.x + pg.width + 14, y3 + hh, "·", size=22, anchor="middle")
    vx = pg.x + pg.width + 62
    vg = _tile(f, vx, y3, NUM_WARPS, qk_steps, cw, ch, "V (value tile)",
               f"[64 tokens, {HEAD_SIZE}] 16-bit", lambda r, c: c // o_tiles, lambda r, c: "")
    for w in range(NUM_WARPS):
        f.text(vg.x - 6, vg.cy(w), f"t{16 * w}+", size=SIZE_SMALL, anchor="end", fill=MUTED,
               mono=True)
    f.text(vg.x + vg.width + 14, y3 + hh, "=", size=18, anchor="middle")
    ox = vg.x + vg.width + 30
    og = _tile(f, ox, y3, 2, qk_steps, 27, hh, "acc (tiles.o)", f"[16, {HEAD_SIZE}] float",
               lambda r, c: c // o_tiles, lambda r, c: "")
    f.rect(og.x, og.y + hh, og.width, hh, fill=POISON.fill, stroke=RULE, sw=1)
    for w in range(NUM_WARPS):
        f.text((og.left(o_tiles * w) + og.right(o_tiles * w + o_tiles - 1)) / 2,
               og.y + og.height + 12, f"warp {w}", size=SIZE_SMALL, anchor="middle",
               fill=MUTED)
    # The shared memory these tiles take is the chapter's table after the figure.
    f.height = vg.y + vg.height + 14
    return f


# ---- the tile loop as a timeline ------------------------------------------------------------------

LOOP = [  # (what the threads do, copies in flight (cp.async groups), what the three stages hold)
    ("3a  start the copies of the tile two ahead\ninto the free stage; wait for this tile's keys",
     "this V, next 2 tiles", ("this K", "next tile", "filling")),
    ("3b  S = Q·K^{T} on tensor cores,\neach warp 16 columns; store S",
     "this V, next 2 tiles", ("K in use", "next tile", "filling")),
    ("3c  softmax per row: m, denom, row_alpha, W (16-bit)",
     "this V, next 2 tiles", ("this K", "next tile", "filling")),
    ("3d  wait for this tile's values",
     "next 2 tiles", ("this K, V", "next tile", "filling")),
    ("3e  acc = diag(row_alpha) acc + W·V,\neach warp its columns",
     "next 2 tiles", ("V in use", "next tile", "filling")),
]
BARRIERS = {0: "(K) every thread's copies of this tile's keys landed and visible",
            1: "(A) S complete: the softmax reads every warp's columns",
            3: "(B) W, row_alpha and this tile's values visible to every warp",
            4: "(C) every warp done with this tile's stage: the next 3a refills it"}


def loop() -> Figure:
    row_h, line_h, bar_h = 34, 18, 22  # a row of one line; each further line adds line_h
    top = 50
    # the columns: the steps' text, then the copies in flight, then the three stages
    flight_x, flight_w, stage_x, stage_w, stage_pitch = 418, 156, 580, 74, 78

    def height_of(what: str) -> float:
        return row_h + (what.count("\n")) * line_h
    height = top + sum(height_of(w) for w, _, _ in LOOP) + len(BARRIERS) * bar_h + 10
    f = Figure(820, height, "One tile of the loop",
               "Top to bottom: the steps of one tile, the four barriers and what each protects, "
               "the asynchronous copies still in flight, and what the ring's three stages hold.")
    f.text(10, 16, "what the 128 threads do (this tile)", size=SIZE_TITLE, weight="bold")
    f.text(flight_x, 16, "copies in flight", size=SIZE_TITLE, weight="bold")
    f.text(stage_x, 16, "the ring's three stages", size=SIZE_TITLE, weight="bold")
    y = top
    for i, (what, flight, holds) in enumerate(LOOP):
        # A long step on two lines, centred together; the second under the first's words,
        # past its step number ("3a ").
        lines = what.split("\n")
        rh = height_of(what)
        first = y + rh / 2 - (len(lines) - 1) * line_h / 2
        for k, text in enumerate(lines):
            indent = text_width(lines[0][:lines[0].index(" ") + 1], SIZE_SMALL) if k else 0
            f.text(14 + indent, first + k * line_h, text, size=SIZE_SMALL)
        f.rect(flight_x, y + 4, flight_w, rh - 8, fill=STATE.fill, stroke=STATE.ink, sw=1)
        f.text(flight_x + flight_w / 2, y + rh / 2, flight, size=SIZE_SMALL, anchor="middle")
        for j, h in enumerate(holds):
            kind = STATE if j else WARPS[2] if "V" in h else WARPS[0]
            f.rect(stage_x + stage_pitch * j, y + 4, stage_w, rh - 8, fill=kind.fill,
                   stroke=kind.ink, sw=1)
            f.text(stage_x + stage_pitch * j + stage_w / 2, y + rh / 2, h, size=SIZE_SMALL,
                   anchor="middle")
        y += rh
        if i in BARRIERS:
            f.barrier_line(10, 810, y + bar_h / 2, f"__syncthreads() {BARRIERS[i]}")
            y += bar_h
    # The legend: every colour of the picture in words, the barrier line drawn as above.
    y += 18
    x = f.legend(10, y, [(WARPS[0], "this tile's keys"), (WARPS[2], "its values"),
                         (STATE, "copies in flight, and the stages they fill")])
    f.line(x, y, x + 30, y, stroke=BARRIER_INK, sw=1.6, dash="7 4")
    f.text(x + 36, y, "a barrier", size=SIZE_SMALL)
    f.height = max(f.height, y + 14)
    return f


# ---- one thread's queue of cp.async groups ---------------------------------------------------------

N_ST = 3                 # stages of the ring at head sizes 64 and 128 (SharedLayout::stages())
KEYS, VALUES = WARPS[0], WARPS[2]  # blue keys, green values, as in lab07_loop


def _tile_name(d: int) -> str:
    """Tile `tile` + d written by the loop's name, as the chapter writes it: tile, tile+1, tile−1."""
    return "tile" if d == 0 else f"tile+{d}" if d > 0 else f"tile−{-d}"


def commit_groups() -> Figure:
    # Tile t is groups 2t (keys) and 2t + 1 (values) of every thread. The prologue commits tiles
    # 0 … N_st − 2; step 3a of iteration i commits tile i + N_st − 1. So at the top of iteration
    # `tile` the newest tile committed is tile + N_st − 1; the waits count the groups behind its.
    ahead = N_ST - 1                          # tiles committed after this tile
    tiles = list(range(-1, ahead + 1))       # tile−1 (landed), this tile, the tiles ahead
    groups = [(d, kind) for d in tiles for kind in "KV"]   # commit order, oldest first
    newest = 2 * (ahead + 1)                  # groups of tiles tile … tile + N_st − 1
    wait_k = 2 * N_ST - 1                     # the chapter's n for the keys ...
    wait_v = 2 * N_ST - 2                     # ... and for the values
    behind_k = len(groups) - 1 - groups.index((0, "K"))
    behind_v = len(groups) - 1 - groups.index((0, "V"))
    assert (behind_k, behind_v) == (wait_k, wait_v) == (5, 4)   # the caption quotes 5 and 4
    assert newest == wait_k + 1

    f = Figure(820, 400, "One thread's cp.async groups at the top of an iteration",
               f"The copy groups of one thread in commit order, with {N_ST} stages. At step 3a, "
               f"after tile tile+{ahead} is committed, {wait_k} groups are newer than this tile's keys, "
               f"so __pipeline_wait_prior({wait_k}) lands them; at step 3d, {wait_v} groups are "
               f"newer than its values, so __pipeline_wait_prior({wait_v}) lands those.")
    f.text(10, 14, f"one thread's copy groups in commit order, N_{{st}} = {N_ST} stages",
           size=SIZE_TITLE, weight="bold")
    x0, dots_w, cw, ch = 10, 30, 95, 30
    gx = x0 + dots_w

    def gx_of(i: int) -> float:
        return gx + i * cw

    # The tiles over their two groups, and when each was committed.
    y = 50
    for d in tiles:
        a = gx_of(groups.index((d, "K")))
        when = "now, in 3a of tile" if d == ahead else f"3a of {_tile_name(d - ahead)}"
        if d < ahead:
            when += " or prologue"
        f.text(a + cw, y - 8, _tile_name(d), size=SIZE, anchor="middle",
               weight="bold")
        f.text(a + cw, y + 8, when, size=SIZE_SMALL, anchor="middle", fill=MUTED)
    f.arrow(gx, y + 22, gx_of(len(groups)) - 4, y + 22, color=MUTED, sw=1)
    f.text(x0, y + 22, "…", size=SIZE, fill=MUTED)

    def row(y: float, step: str, target: tuple[int, str], n: int) -> float:
        """The queue as step `step` sees it: `target` must land; the n newest may be in flight."""
        f.text(x0, y, step, size=SIZE, weight="bold")
        y += 24  # the brace's label a line below the step's, clear of it
        first_free = len(groups) - n  # groups at or after this index may still be in flight
        tgt = groups.index(target)
        f.brace(gx_of(first_free) + 2, gx_of(len(groups)) - 2, y + 10,
                f"the {n} newest groups: may still be in flight", below=False)
        y += 16
        f.rect(x0, y, dots_w - 4, ch, fill=hue(7).fill, stroke=None)
        f.text(x0 + (dots_w - 4) / 2, y + ch / 2, "…", size=SIZE_SMALL, anchor="middle")
        for i, (d, kind) in enumerate(groups):
            h = KEYS if kind == "K" else VALUES
            label = f"{kind} {_tile_name(d)}"
            x = gx_of(i) + 2
            if i < tgt:        # landed at an earlier wait
                f.box(x, y, cw - 4, ch, label, fill=hue(7).fill, stroke=hue(7).ink,
                      size=SIZE_SMALL, rx=2)
            elif i == tgt:     # the group this wait lands
                f.rect(x, y, cw - 4, ch, fill=h.fill, stroke=h.ink, sw=2.4, rx=2)
                f.text(x + (cw - 4) / 2, y + ch / 2, label, size=SIZE_SMALL, anchor="middle",
                       weight="bold")
            else:              # newer: the wait lets it stay in flight
                f.box(x, y, cw - 4, ch, label, fill=mix(h.fill, PAPER, 0.55), stroke=h.ink,
                      size=SIZE_SMALL, rx=2, dash="4 3")
            if i > tgt:        # count the groups behind the target
                f.text(gx_of(i) + cw / 2, y + ch + 11, f"{i - tgt}", size=SIZE_SMALL,
                       anchor="middle", fill=h.ink, weight="bold")
        assert len(groups) - 1 - tgt == n
        f.text(gx_of(tgt) + cw / 2, y + ch + 11, "lands", size=SIZE_SMALL, anchor="middle",
               weight="bold")
        return y + ch + 30

    y = row(y + 50, f"3a: __pipeline_wait_prior(2N_{{st}} − 1 = {wait_k}) lands this tile's keys",
            (0, "K"), wait_k)
    f.text(gx, y, f"newer than K tile: V tile, then 2(N_{{st}} − 1) = {2 * ahead} groups of tiles "
           f"tile+1 … tile+{ahead}: 1 + {2 * ahead} = {wait_k}", size=SIZE_SMALL, fill=MUTED)
    y = row(y + 30, f"3d: __pipeline_wait_prior(2N_{{st}} − 2 = {wait_v}) lands this tile's values",
            (0, "V"), wait_v)
    f.text(gx, y, f"newer than V tile: the 2(N_{{st}} − 1) = {2 * ahead} groups of tiles tile+1 … "
           f"tile+{ahead}", size=SIZE_SMALL, fill=MUTED)
    y += 28
    f.legend(x0, y, [(KEYS, "a tile's keys: one group"), (VALUES, "its values: one group"),
                     (hue(7), "landed at an earlier wait")])
    y += 22
    f.rect(x0, y - 6, 12, 12, fill=mix(KEYS.fill, PAPER, 0.55), stroke=KEYS.ink, sw=1, rx=2,
           dash="3 2")
    label = "dashed: may still be in flight"
    end = x0 + 17 + text_width(label, SIZE_SMALL) + 18
    f.text(x0 + 17, y, label, size=SIZE_SMALL)
    f.rect(end, y - 7, 14, 14, fill=KEYS.fill, stroke=KEYS.ink, sw=2.4, rx=2)
    f.text(end + 19, y, "thick: the group the wait lands", size=SIZE_SMALL)
    f.height = y + 14
    return f


# ---- the fused merge: which block is last --------------------------------------------------------

NUM_PARTS = 4
# Where each partition's block ends its tile loop, in x on the time axis: the blocks of one
# (sequence, kv head) finish in any order; here 2, 0, 3, then 1.
LOOP_END = {0: 342, 1: 502, 2: 262, 3: 422}


def merge_election() -> Figure:
    order = sorted(range(NUM_PARTS), key=LOOP_END.get)   # arrival order
    returned = {p: order.index(p) for p in order}         # what each atomicAdd returns
    last = order[-1]
    # The caption names partition 1's block and the value 3 = num_partitions − 1.
    assert NUM_PARTS == 4 and returned[last] == NUM_PARTS - 1 and last == 1
    f = Figure(820, 420, "The fused merge: which block merges",
               f"The {NUM_PARTS} thread blocks of one (sequence, kv head) on a time axis. Each "
               "writes its partition's partial result, passes a barrier, and its thread 0 fences "
               "and adds 1 to the arrivals counter. The atomicAdd that returns "
               f"{NUM_PARTS - 1} = num_partitions − 1 elects partition {last}'s block; it resets "
               "the counter, fences again, tells its threads, and every thread merges the "
               "partitions' rows; the other blocks pass the same barrier and exit.")
    f.text(10, 14, f"the thread blocks of one (sequence, kv head), num_partitions = {NUM_PARTS}",
           size=SIZE_TITLE, weight="bold")
    f.text(810, 14, "time →", size=SIZE, anchor="end", fill=MUTED)
    x0, top, lane_h, bh = 122, 34, 38, 24  # x0: right of "[b, kv_head]" (102 px in mono)
    track_y = top + NUM_PARTS * lane_h + 14

    def mid(p: int) -> float:
        return top + p * lane_h + lane_h / 2

    dot_x = {p: LOOP_END[p] + 96 for p in order}
    exch_x = dot_x[last] + 16 + 48           # the middle of the atomicExch box
    # Guides from each atomicAdd down to the counter, drawn first: the lanes cover them.
    for p in order:
        f.line(dot_x[p], mid(p) + 10, dot_x[p], track_y, stroke=RULE, sw=1, dash="3 3")
    f.line(exch_x, mid(last) + bh / 2, exch_x, track_y, stroke=RULE, sw=1, dash="3 3")
    for p in range(NUM_PARTS):
        y, e = mid(p), LOOP_END[p]
        f.text(10, y, f"partition {p}", size=SIZE, fill=hue(p).ink, weight="bold")
        f.box(x0, y - bh / 2, e - x0, bh, "tile loop", fill=hue(p).fill, stroke=hue(p).ink,
              size=SIZE_SMALL, rx=2)
        f.box(e + 4, y - bh / 2, 62, bh, "partial", fill=STATE.fill, stroke=STATE.ink,
              size=SIZE_SMALL, rx=2)
        f.line(e + 72, y - bh / 2 - 4, e + 72, y + bh / 2 + 4, stroke=BARRIER_INK, sw=1.8,
               dash="4 2")
        f.line(e + 80, y - bh / 2, e + 80, y + bh / 2, stroke=INK, sw=3.5)
        d = dot_x[p]
        f.add(f'<circle cx="{d:g}" cy="{y:g}" r="10" fill="{PAPER}" stroke="{INK}" '
              f'stroke-width="1.4"/>')
        f.text(d, y, f"{returned[p]}", size=SIZE_SMALL, anchor="middle", weight="bold",
               mono=True)
        if p != last:  # its threads learn is_last is false at the barrier, then return
            f.line(d + 18, y - bh / 2 - 4, d + 18, y + bh / 2 + 4, stroke=BARRIER_INK, sw=1.8,
                   dash="4 2")
            f.text(d + 26, y, "exits", size=SIZE_SMALL, fill=MUTED)
        else:
            f.box(d + 16, y - bh / 2, 96, bh, "atomicExch", fill=PAPER, stroke=INK,
                  size=SIZE_SMALL, mono=True, rx=2)
            f.line(d + 120, y - bh / 2, d + 120, y + bh / 2, stroke=INK, sw=3.5)
            f.box(d + 128, y - bh / 2, 68, bh, "is_last", fill=PAPER, stroke=INK,
                  size=SIZE_SMALL, mono=True, rx=2)
            is_last_x = d + 128 + 34  # the middle of the is_last box
    # The counter: its value between the atomics, computed from the arrivals.
    f.lines(10, track_y + 12, ["arrivals", "[b, kv_head]"], size=SIZE_SMALL, anchor="start",
            mono=True, gap=1.15)
    cuts = [x0] + [dot_x[p] for p in order] + [exch_x, 730]
    values = list(range(NUM_PARTS + 1)) + [0]
    for (a, b), v in zip(zip(cuts, cuts[1:]), values):
        every = v == NUM_PARTS  # every block counted: the last one's moment
        f.box(a, track_y, b - a, 24, f"{v}", fill=hue(7).fill, stroke=INK if every else
              hue(7).ink, size=SIZE_SMALL, mono=True, rx=0, weight="bold" if every else None)
    ly = track_y + 38
    f.text(dot_x[last], ly, f"{NUM_PARTS - 1} = num_partitions − 1: partition {last}'s block "
           "is the last", size=SIZE_SMALL, anchor="end")
    f.text(exch_x + 6, ly, "reset: 0", size=SIZE_SMALL)
    f.line(dot_x[last], track_y + 24, dot_x[last], ly - 8, stroke=INK, sw=1)
    f.line(exch_x, track_y + 24, exch_x, ly - 8, stroke=INK, sw=1)
    # The merge, by every thread of the last block.
    my = ly + 22
    f.arrow(is_last_x + 40, mid(last) + 2, is_last_x + 40, my - 2, color=INK, sw=1.2)
    f.line(is_last_x + 34, mid(last), is_last_x + 40, mid(last), stroke=INK, sw=1.2)
    band_h = 104
    f.rect(10, my, 800, band_h, fill=mix(STATE.fill, PAPER, 0.5), stroke=STATE.ink, sw=1, rx=4)
    f.text(20, my + 16, f"__syncthreads(); then every thread of partition {last}'s block merges "
           f"the {NUM_PARTS} partitions' rows", size=SIZE, weight="bold")
    f.text(20, my + 40, "M = max_{p} m_{p}", size=SIZE)
    f.text(160, my + 40, "λ_{p} = denom_{p} e^{mₚ − M}", size=SIZE)
    cy = my + 76
    chip_w, gap = 110, 22
    for p in range(NUM_PARTS):
        cx = 20 + p * (chip_w + gap)
        f.box(cx, cy - 13, chip_w, 26, f"λ_{{{p}}} · tmp_out_{{{p}}}", fill=hue(p).fill,
              stroke=hue(p).ink, size=SIZE_SMALL, rx=2)
        if p + 1 < NUM_PARTS:
            f.text(cx + chip_w + gap / 2, cy, "+", size=SIZE, anchor="middle")
    ox = 20 + NUM_PARTS * (chip_w + gap)
    f.arrow(ox - gap + 4, cy, ox + 12, cy, color=INK)
    f.box(ox + 16, cy - 14, 800 - ox - 16 - 4, 28,
          "out = Σ_{p} λ_{p} tmp_out_{p} / Σ_{p} λ_{p}", fill=PAPER, stroke=STATE.ink,
          size=SIZE_SMALL, rx=2)
    y = my + band_h + 22
    end = f.legend(10, y, [(STATE, "partial: tmp_out rows, max_logits, exp_sums")])
    f.line(end + 6, y - 9, end + 6, y + 9, stroke=BARRIER_INK, sw=1.8, dash="4 2")
    f.text(end + 16, y, "__syncthreads()", size=SIZE_SMALL, mono=True)
    end += 16 + text_width("__syncthreads()", SIZE_SMALL, mono=True) + 18
    f.line(end + 6, y - 9, end + 6, y + 9, stroke=INK, sw=3.5)
    f.text(end + 16, y, "__threadfence() (thread 0)", size=SIZE_SMALL)
    y += 24
    f.add(f'<circle cx="16" cy="{y:g}" r="8" fill="{PAPER}" stroke="{INK}" stroke-width="1.4"/>')
    f.text(16, y, "k", size=SIZE_SMALL, anchor="middle", mono=True)
    f.text(30, y, "thread 0's atomicAdd on arrivals[b, kv_head]: returns k, the count before "
           "its own", size=SIZE_SMALL)
    f.height = y + 14
    return f


# ---- the H100 figures this kernel is measured against ---------------------------------------------

SHAPES = [(64, 4096, 32, 4, 85), (128, 2048, 32, 8, 85), (16, 4096, 32, 32, 75),
          (1, 16384, 32, 8, 80), (1, 65536, 32, 8, 80)]


def targets() -> Figure:
    v1 = h100.bench_series("07", "BM_GpuPagedAttentionV1")
    v2 = h100.bench_series("07", "BM_GpuPagedAttentionV2")
    mine = h100.bench_series("07", "BM_GpuGqaDecode")
    read = h100.bench_series("07", "BM_GpuReadRoofline")
    torch = h100.torch_sdpa(h100.TORCH_SDPA_RUN2)
    row_h = 76
    f = Figure(820, 104 + row_h * len(SHAPES), "Where the kernel landed on an H100",
               "For the five benchmark batches, one run on one H100: the kernels of labs 05 and 06, "
               "this lab's kernel and FlashAttention through PyTorch, the read yardstick of the same "
               "bytes, and this lab's target as a fraction of the yardstick.")
    x0 = h100.BARS_X
    # the labels' column holds "2,109  (72%)" at most: no wider than lab 06's figures
    label_room = 106
    scale = h100.gbps_scale(f, x0, f.width - x0 - label_room - 20, 40 + row_h * len(SHAPES))
    for i, (seqs, tokens, heads, kv, target) in enumerate(SHAPES):
        shape = (seqs, tokens, heads, kv)
        y = 42 + row_h * i
        f.text(10, y + 9, f"{seqs} × {tokens:,} tokens, {heads}/{kv} heads", size=SIZE_SMALL)
        f.text(10, y + 27, f"target ≥ {target}% of the yardstick", size=SIZE_SMALL, fill=MUTED)
        # The read: the benchmark's own yardstick, one for every batch. Where the run stopped
        # before the yardstick's own entry, its rate in this kernel's loop, which the kernel's
        # roofline_pct implies (the chapter's table of percentages, its caption).
        mine_gbps, mine_pct = mine[shape]
        inferred = shape not in read
        full = mine_gbps / (mine_pct / 100) if inferred else read[shape][0]
        if inferred:
            inferred_from = f"{mine_gbps:,.0f} / {mine_pct / 100:.3f}"
        flash = torch[shape]["sdpa_flash_GBps"]
        h100.batch_bars(f, x0, scale, y, full, target, [
            (WARPS[0], v1[shape][0] if shape in v1 else None,
             f"{v1[shape][0]:,.0f}" if shape in v1 else "",
             "v1: logits exceed shared memory", False),
            (WARPS[3], v2[shape][0] if shape in v2 else None,
             f"{v2[shape][0]:,.0f}" if shape in v2 else "",
             "v2: not reached (time limit)", False),
            (WARPS[1], mine_gbps, f"{mine_gbps:,.0f}  ({mine_pct:.0f}%)", "", True),
            (WARPS[2], flash, f"{flash:,.0f}", "", False)], inferred=inferred)
    y = 62 + row_h * len(SHAPES)
    f.legend(10, y, [(WARPS[0], "v1 (lab 05)"), (WARPS[3], "v2 (lab 06)"),
                     (WARPS[1], "this lab (% of the read yardstick)")])
    y += 22
    f.legend(10, y, [(WARPS[2], "FlashAttention (PyTorch's harness)")])
    y += 22
    end = f.legend(10, y, [(STATE, "target")])
    h100.read_tick(f, end, y - 7, y + 7)
    label = "read yardstick (same run, same bytes)"
    f.text(end + 6, y, label, size=SIZE_SMALL)
    end += 6 + text_width(label, SIZE_SMALL) + 18
    h100.read_tick(f, end, y - 7, y + 7, inferred=True)
    f.text(end + 7, y, f"inferred, never measured: {inferred_from}", size=SIZE_SMALL)
    f.height = y + 16
    return f


FIGURES = {"lab07_gqa_reads": gqa_reads, "lab07_layouts": layouts, "lab07_tiles": tiles,
           "lab07_loop": loop, "lab07_commit_groups": commit_groups,
           "lab07_merge_election": merge_election, "lab07_targets": targets}
