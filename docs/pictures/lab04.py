"""Lab 04's pictures (labs/04-varlen-batch/README.md)."""
from svgfig import (FREE, INK, MASKED, MUTED, PAPER, REQUEST_A, REQUEST_B, RULE, SIZE,
                    SIZE_SMALL, SIZE_TITLE, VISIBLE, Figure, hue)

BLOCK_SIZE = 4
# The mixed batch of the chapter's table: A decodes (6 cached + 1 new), B prefills a chunk
# (5 cached + 6 new). Request -> (blocks, num_cached, num_new, hue).
BATCH = {"A": ([4, 1], 6, 1, REQUEST_A), "B": ([0, 6, 3], 5, 6, REQUEST_B)}


def slot_of(blocks: list[int], position: int) -> int:
    return blocks[position // BLOCK_SIZE] * BLOCK_SIZE + position % BLOCK_SIZE


# ---- the causal masks ---------------------------------------------------------------------------

def masks() -> Figure:
    cases = [  # (title, cached, new)
        ("prefill: c_{b} = 0, r_{b} = 6", 0, 6),
        ("decode: c_{b} = 8, r_{b} = 1", 8, 1),
        ("chunk: c_{b} = 5, r_{b} = 4", 5, 4),
    ]
    f = Figure(820, 250, "Causal masks anchored bottom-right",
               "Score matrices of r_b new query rows by L_b = c_b + r_b keys: query row u sees "
               "key t when t <= L_b - r_b + u.")
    cw = 26
    x = 36
    for title, c, r in cases:
        L = c + r
        f.text(x - 26, 16, title, size=SIZE, weight="bold")

        def cell(u, t, r=r, L=L):
            return ("", VISIBLE) if t <= L - r + u else ("", MASKED)
        g = f.grid(x, 62, r, L, cw, cw, cell, row_labels=[str(u) for u in range(r)],
                   col_labels=[str(t) for t in range(L)], stroke="#ffffff")
        f.text(x + g.width / 2, 35, "query rows u × keys t", size=SIZE_SMALL, anchor="middle",
               fill=MUTED)
        if c:
            f.brace(g.left(0), g.right(c - 1), g.bottom(r - 1) + 4, f"history: {c} keys")
            if r > 1:
                f.brace(g.left(c), g.right(L - 1), g.bottom(r - 1) + 4, "the chunk")
        x += g.width + 60
    f.legend(10, 240, [(VISIBLE, "attended"), (MASKED, "masked (−∞ before the softmax)")])
    # Which keys query row u sees, and why the other anchors fail: the text under the figure.
    f.height = 256
    return f


# ---- the packed queries and what each request reads ---------------------------------------------

def packed_q() -> Figure:
    f = Figure(820, 290, "The packed batch: rows of q split by cu_seqlens_q",
               "Seven new tokens packed into one matrix; cu_seqlens_q = [0, 1, 7] says which "
               "rows are whose; seq_lens_kv = [7, 11] says how many keys each reads.")
    qx, qy, rh, qw = 200, 56, 26, 140  # room left of q for "cu_seqlens_q[0] = 0"
    f.text(qx + qw / 2, 22, "q  [total_new = 7, H · d]", size=SIZE, anchor="middle",
           weight="bold", mono=True)
    row = 0
    cu = [0]
    kx, kw = 440, 26
    f.text(kx, 22, "keys each request reads (seq_lens_kv)", size=SIZE, weight="bold")
    for s, (name, (blocks, cached, new, h)) in enumerate(BATCH.items()):
        top = qy + row * rh
        for i in range(new):
            f.box(qx, qy + (row + i) * rh, qw, rh, f"{name}: position {cached + i}",
                  fill=h.fill, stroke="#ffffff", rx=0, size=SIZE_SMALL, mono=True)
        row += new
        cu.append(row)
        bottom = qy + row * rh
        # The keys this request reads: its cached ones, then its new ones.
        L = cached + new
        ky = (top + bottom) / 2 - 13
        for j in range(L):
            fill = h.fill if j >= cached else "#ffffff"
            f.rect(kx + j * kw, ky, kw, 26, fill=fill, stroke=h.ink, sw=1)
            f.text(kx + j * kw + kw / 2, ky + 13, str(j), size=SIZE_SMALL, anchor="middle",
                   mono=True)
        f.text(kx, ky + 40, f"seq_lens_kv[{s}] = {L}: {cached} cached + {new} new",
               size=SIZE_SMALL, fill=h.ink)
        f.arrow(qx + qw + 8, (top + bottom) / 2, kx - 8, ky + 13, color=h.ink)
    f.rect(qx, qy, qw, row * rh, stroke=INK, sw=1)
    for s, at in enumerate(cu):
        y = qy + at * rh
        f.line(qx - 16, y, qx, y, stroke=INK, sw=1.5)
        f.text(qx - 20, y, f"cu_seqlens_q[{s}] = {at}", size=SIZE_SMALL, anchor="end",
               mono=True)
    # Which rows request b owns: the caption under the figure.
    f.height = 262
    return f


# ---- one pool, two views ------------------------------------------------------------------------

NUM_BLOCKS, H_KV, D = 4, 2, 3
EXAMPLE_SLOT = 9


def pool_views() -> Figure:
    f = Figure(820, 432, "The flat view and the block view of one pool",
               "The same 96 numbers seen as [num_slots, H_kv * d] and as "
               "[num_blocks, block_size, H_kv, d]; slot 9 is row 1 of block 2 in both.")
    width = H_KV * D
    label = SIZE_TITLE  # the labels of both views, a step over SIZE: the rows are read by them
    cw, ch = 34, 22
    fx, fy = 72, 70
    f.text(10, 14, "flat view: [num_slots = 16, H_kv · d = 6]", size=SIZE, weight="bold",
           mono=True)
    eb, eo = EXAMPLE_SLOT // BLOCK_SIZE, EXAMPLE_SLOT % BLOCK_SIZE

    def flat(r, c):
        return "", hue(r // BLOCK_SIZE)
    col_labels = [f"{h},{d}" for h in range(H_KV) for d in range(D)]  # (h_kv, δ), as above
    g = f.grid(fx, fy, NUM_BLOCKS * BLOCK_SIZE, width, cw, ch, flat,
               row_labels=[f"slot {r}" for r in range(NUM_BLOCKS * BLOCK_SIZE)],
               col_labels=col_labels, label_size=label)
    f.text(fx + g.width / 2, 36, "column (h_{kv}, δ) = kv head h_{kv}, dim δ", size=label,
           anchor="middle", fill=MUTED)
    f.line(g.left(D), g.top(0), g.left(D), g.bottom(g.rows - 1), stroke=INK, sw=1.5)
    f.rect(fx, g.top(EXAMPLE_SLOT), g.width, ch, stroke=INK, sw=2.5)
    for b in range(NUM_BLOCKS):
        f.vbrace(g.right(width - 1) + 4, g.top(b * BLOCK_SIZE) + 1,
                 g.bottom(b * BLOCK_SIZE + BLOCK_SIZE - 1) - 1, f"block {b}", size=label)

    # The block view: four tiles, [block_size, H_kv, D] each, two to a row; each row of tiles
    # level with the first of its blocks in the flat view, so slot 9 and row 1 of block 2 line up.
    tw = 24  # a cell of the block view: no column labels to hold, so narrower than the flat view's
    tile_w = width * tw + 14
    gap = 44
    bx = 798 - 2 * tile_w - gap  # the tiles' titles are wider than a tile: room right of it
    f.text(386, 14, "block view: [4 blocks, 4 rows, H_kv = 2, d = 3]",
           size=SIZE, weight="bold", mono=True)
    for b in range(NUM_BLOCKS):
        tx = bx + (b % 2) * (tile_w + gap)
        ty = g.top((b // 2) * 2 * BLOCK_SIZE)
        f.text(tx + tile_w / 2, ty - 12, f"[{b}]  physical block {b}", size=label,
               anchor="middle", fill=hue(b).ink, weight="bold")
        for o in range(BLOCK_SIZE):
            for h in range(H_KV):
                for d in range(D):
                    x = tx + h * (D * tw + 14) + d * tw
                    y = ty + o * ch
                    f.rect(x, y, tw, ch, fill=hue(b).fill, stroke="#ffffff", sw=1.5)
            f.text(tx - 6, ty + (o + 0.5) * ch, f"[{o}]", size=label, anchor="end", fill=MUTED)
        for h in range(H_KV):
            f.text(tx + h * (D * tw + 14) + D * tw / 2, ty + BLOCK_SIZE * ch + 12, f"head {h}",
                   size=label, anchor="middle", fill=MUTED)
        if b == eb:
            f.rect(tx, ty + eo * ch, tile_w, ch, stroke=INK, sw=2.5)
            ex, ey = tx, ty + (eo + 0.5) * ch
    assert ey == g.cy(EXAMPLE_SLOT)  # the two rows are level: the arrow between them is straight
    f.arrow(g.right(width - 1) + 80, g.cy(EXAMPLE_SLOT), ex - 34, ey, color=INK)
    # The offset of slot 9's elements, and what a slot number does to the block view: the text.
    f.height = g.bottom(g.rows - 1) + 8
    return f


# ---- the step's write map and one request's read map ---------------------------------------------

def write_read() -> Figure:
    f = Figure(820, 456, "slot_mapping writes, block_table reads",
               "The step's seven new rows are scattered into the pool through slot_mapping: "
               "A's row to slot 6, B's rows 1 to 3 to slots 25 to 27 in block 6, B's rows 4 to 6 "
               "to slots 12 to 14 in block 3. Request B then reads its eleven keys through row 1 "
               "of block_table, blocks 0, 6 and 3.")
    num_blocks = 7
    holder: dict[int, tuple[str, object, bool]] = {}
    new_rows = []
    for name, (blocks, cached, new, h) in BATCH.items():
        for p in range(cached + new):
            holder[slot_of(blocks, p)] = (f"{name}{p}", h, p >= cached)
            if p >= cached:
                new_rows.append((name, p, slot_of(blocks, p), h))

    # The pool, one row per block, the rows drawn apart: an arrow runs along the gap above the
    # block it writes into and ends at a bracket over the cells it fills.
    px, py, cw, rh, gap = 406, 62, 48, 28, 26
    pitch = rh + gap

    def top(b):
        return py + b * pitch

    def cy(b):
        return top(b) + rh / 2
    pool_right = px + BLOCK_SIZE * cw
    f.text(px + BLOCK_SIZE * cw / 2, 22, "the pool (block_size 4)", size=SIZE, anchor="middle",
           weight="bold")
    for o in range(BLOCK_SIZE):
        f.text(px + (o + 0.5) * cw, py - 9, f"row {o}", size=SIZE_SMALL, anchor="middle",
               fill=MUTED)
    for b in range(num_blocks):
        def cell(_, o, b=b):
            slot = b * BLOCK_SIZE + o
            if slot in holder:
                return holder[slot][0], holder[slot][1]
            return "", FREE
        f.grid(px, top(b), 1, BLOCK_SIZE, cw, rh, cell, size=SIZE_SMALL)
        f.text(px - 8, cy(b), f"block {b}", size=SIZE_SMALL, anchor="end", fill=MUTED)
    for slot, (_, _, new) in holder.items():
        if new:
            b, o = divmod(slot, BLOCK_SIZE)
            f.rect(px + o * cw, top(b), cw, rh, stroke=INK, sw=2.2)

    # The step's new rows and their slots (the write map).
    f.text(10, 22, "new K/V rows → slot_mapping", size=SIZE, weight="bold")
    lx, lw, sx, sw_, pitch_q = 10, 140, 156, 92, 36
    for i, (name, p, slot, h) in enumerate(new_rows):
        y = py + i * pitch_q
        f.box(lx, y, lw, 26, f"row {i}: {name} pos {p}", fill=h.fill, stroke=h.ink, rx=0,
              size=SIZE_SMALL, mono=True)
        b, o = divmod(slot, BLOCK_SIZE)
        # The slot spelled out as block · 4 + row, so the cell it names can be read off the
        # pool without following the arrow.
        f.box(sx, y, sw_, 26, f"{slot} = {b}·4+{o}", stroke=h.ink, rx=0, size=SIZE_SMALL,
              mono=True)
    # One arrow per run of consecutive slots: from the run's rows (a bracket beside their slot
    # boxes when there are several) to a bracket over the cells the run fills.
    runs: list[list[int]] = []
    for i, (_, _, slot, _) in enumerate(new_rows):
        if runs and new_rows[runs[-1][-1]][2] + 1 == slot:
            runs[-1].append(i)
        else:
            runs.append([i])
    bx = sx + sw_
    # The arrows run square through the gap between the rows and the pool, each in one of two
    # lanes: an arrow that goes down turns in the left lane, one that goes up in the right lane.
    # B's rows 1-3 go down to block 6 past the rows 4-6 that go up to block 3, so the two must
    # cross; they cross once, at a right angle, in the middle of the gap, the later arrow drawn
    # over a break in the earlier one.
    lanes = {True: bx + 44, False: bx + 78}
    drawn_hs: list[tuple[float, float, float]] = []
    drawn_vs: list[tuple[float, float, float]] = []
    for run in runs:
        h = new_rows[run[0]][3]
        y1, y2 = py + run[0] * pitch_q + 13, py + run[-1] * pitch_q + 13
        if len(run) > 1:
            f.path(f"M{bx + 2:g},{y1 - 9:g} L{bx + 7:g},{y1 - 9:g} L{bx + 7:g},{y2 + 9:g} "
                   f"L{bx + 2:g},{y2 + 9:g}", stroke=h.ink, sw=1.2)
            x0 = bx + 7
        else:
            x0 = bx
        y0 = (y1 + y2) / 2
        b, o1 = divmod(new_rows[run[0]][2], BLOCK_SIZE)
        o2 = new_rows[run[-1]][2] % BLOCK_SIZE
        # The bracket over the run's cells, in the gap above the block.
        xl, xr, t = px + o1 * cw + 3, px + (o2 + 1) * cw - 3, top(b)
        f.path(f"M{xl:g},{t - 2:g} L{xl:g},{t - 7:g} L{xr:g},{t - 7:g} L{xr:g},{t - 2:g}",
               stroke=h.ink, sw=1.2)
        # The arrow: out of the rows to its lane, along the lane to the gap above the block
        # (clear of the block labels, which sit level with the blocks), along that gap and
        # down onto the bracket's middle; r rounds the corners.
        xm, ya, r = (xl + xr) / 2, t - 19, 6
        turn = lanes[ya > y0]
        sy = 1 if ya > y0 else -1
        # Where this arrow crosses one drawn before, a stroke of paper along this arrow breaks
        # the earlier one, so that the crossing reads as one line passing over the other.
        hs = [(min(x0, turn), max(x0, turn), y0), (turn, xm, ya)]
        vs = [(turn, min(y0, ya), max(y0, ya)), (xm, ya, t - 8)]
        for hx0, hx1, hy in hs:
            for vx, vy0, vy1 in drawn_vs:
                if hx0 < vx < hx1 and vy0 < hy < vy1:
                    f.line(vx - 5, hy, vx + 5, hy, stroke=PAPER, sw=8)
        for vx, vy0, vy1 in vs:
            for hx0, hx1, hy in drawn_hs:
                if hx0 < vx < hx1 and vy0 < hy < vy1:
                    f.line(vx, hy - 5, vx, hy + 5, stroke=PAPER, sw=8)
        drawn_hs += hs
        drawn_vs += vs
        f.path(f"M{x0:g},{y0:g} L{turn - r:g},{y0:g} Q{turn:g},{y0:g} {turn:g},{y0 + sy * r:g} "
               f"L{turn:g},{ya - sy * r:g} Q{turn:g},{ya:g} {turn + r:g},{ya:g} "
               f"L{xm - r:g},{ya:g} Q{xm:g},{ya:g} {xm:g},{ya + r:g} L{xm:g},{t - 8:g}",
               stroke=h.ink, arrow=True)
        # The run's slots on the arrow's last leg, so that each arrow names where it lands.
        s1, s2 = new_rows[run[0]][2], new_rows[run[-1]][2]
        label = f"slots {s1}–{s2}" if s2 != s1 else f"slot {s1}"
        f.text(xr + 8, ya, label, size=SIZE_SMALL, fill=h.ink)
    f.text(10, py + len(new_rows) * pitch_q + 8, "(written by set_kv, before attention)",
           size=SIZE_SMALL, fill=MUTED)

    # Request B's read: each entry of its table row level with the block it names, so the
    # arrows run straight and apart; the entries' indices give the order of the keys.
    blocks, cached, new, h = BATCH["B"]
    rx = pool_right + 50
    f.text(rx, 22, "B reads: table row 1", size=SIZE, weight="bold")
    f.text(rx, 42, "= [" + ", ".join(str(b) for b in blocks) + "]", size=SIZE_SMALL, mono=True)
    for j, b in enumerate(blocks):
        f.box(rx, cy(b) - 13, 70, 26, f"[{j}] = {b}", fill=h.fill, stroke=h.ink, rx=0,
              size=SIZE_SMALL, mono=True)
        # From the table's entry to the block it names: the read map goes table -> pool.
        f.arrow(rx - 2, cy(b), pool_right + 4, cy(b), color=h.ink, dash="5 3")
        first, last = j * BLOCK_SIZE, min(cached + new, (j + 1) * BLOCK_SIZE) - 1
        f.text(rx + 78, cy(b), f"keys {first}–{last}", size=SIZE_SMALL, fill=h.ink)
    last_block = blocks[(cached + new - 1) // BLOCK_SIZE]
    f.lines(rx, cy(last_block) + 48, ["seq_lens_kv[1] = 11:", f"block {last_block}'s row 3",
                                      "is not read"], size=SIZE_SMALL, anchor="start",
            fill=MUTED)
    ly = top(num_blocks - 1) + rh + 26
    f.legend(10, ly, [(REQUEST_A, "request A"), (REQUEST_B, "request B"), (FREE, "free")])
    f.rect(300, ly - 6, 12, 12, stroke=INK, sw=2.2)
    f.text(317, ly, "written this step", size=SIZE_SMALL)
    return f


FIGURES = {"lab04_masks": masks, "lab04_packed_q": packed_q, "lab04_pool_views": pool_views,
           "lab04_write_read": write_read}
