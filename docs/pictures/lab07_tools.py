"""Interlude II's pictures (docs/interlude_07.md, page lab_07_tools): the two-stage cp.async ring
of ring_column_sum_kernel (common/simt/tests/portable_pipeline.hpp) as one thread runs it, and
the last-block counter of last_block_sum_kernel (common/simt/tests/portable_kernels.hpp)."""
from svgfig import (BARRIER_INK, INK, MUTED, PAPER, RULE, SIZE, SIZE_SMALL, SIZE_TITLE, STATE, Figure, hue,
                    mix, text_width)



# ---- the two-stage ring ----------------------------------------------------------------------------

RING_TILES = 3   # the example's `tiles`: enough for a stage to be refilled and an empty group
RING_WAIT = 1    # the kernel's right wait_count, which the caption quotes


def ring_rows(tiles: int, wait_count: int) -> list[dict]:
    """What one thread of ring_column_sum_kernel does, in order: one dict per statement, with the
    groups it has committed so far. Follows the kernel line by line: tile i goes to stage i % 2,
    start_tile commits one group per call (empty past the end), __pipeline_wait_prior(n) lands
    every group but the n newest."""
    rows: list[dict] = []
    committed: list[int] = []   # the tile of each committed group, oldest first
    landed = 0                  # groups known to have landed (a prefix of `committed`)

    def start_tile(tile: int, band: str) -> None:
        committed.append(tile)
        rows.append(dict(band=band, kind="start", tile=tile, empty=tile >= tiles,
                         code=f"start_tile({tile})"))

    rows.append(dict(band="prologue", kind="zero", code="stage[s][4t + i] = 0"))
    rows.append(dict(band="prologue", kind="barrier", code="__syncthreads()", note=""))
    start_tile(0, "prologue")
    for tile in range(tiles):
        band = f"tile = {tile}"
        start_tile(tile + 1, band)
        before = landed
        landed = max(landed, len(committed) - wait_count)
        rows.append(dict(band=band, kind="wait", code=f"__pipeline_wait_prior({wait_count})",
                         groups=list(committed), before=before, landed=landed, tile=tile))
        rows.append(dict(band=band, kind="barrier", code="__syncthreads()", tile=tile,
                         note=f"tile {tile}: visible to every thread"))
        # The sum reads stage tile % 2; it holds tile `tile` only if its group has landed.
        assert committed.index(tile) < landed, "the sum would read a tile still in flight"
        rows.append(dict(band=band, kind="sum", code=f"sum += stage[{tile % 2}][r * 64 + t]",
                         tile=tile))
        rows.append(dict(band=band, kind="barrier", code="__syncthreads()", tile=tile,
                         note=f"stage[{tile % 2}] free for start_tile({tile + 2})"
                         if tile + 2 <= tiles else f"stage[{tile % 2}] free"))
    return rows


def ring() -> Figure:
    rows = ring_rows(RING_TILES, RING_WAIT)
    waits = [r for r in rows if r["kind"] == "wait"]
    # The caption: each wait_prior(1) lands tile i's group and leaves only tile i + 1's in flight.
    for r in waits:
        assert r["groups"][r["landed"] - 1] == r["tile"]
        assert r["groups"][r["landed"]:] == [r["tile"] + 1]
    assert rows[-1]["kind"] == "barrier" and any(r.get("empty") for r in rows)

    rh, top = 24, 62
    # the code column holds "sum += stage[0][r * 64 + t]" (227 px at 14 px), the notes on the
    # right "tile 0: visible to every thread"; the lanes take what is left between them
    code_x, lane_x, lane_w, gap = 96, 334, 96, 10
    groups_x = lane_x + 2 * lane_w + gap + 14
    f = Figure(820, top + rh * len(rows) + 70,
               "The two-stage ring of ring_column_sum_kernel, as one thread runs it",
               f"tiles = {RING_TILES}. Time runs down. Tile i's copy goes to stage i mod 2 at "
               "start_tile(i) and is in flight until the barrier after the wait that lands it; "
               "it is summed between the two barriers, and the second barrier frees its stage "
               "for tile i + 2. Right: the thread's committed groups at each "
               f"__pipeline_wait_prior({RING_WAIT}): every group but the newest has landed.")
    f.text(10, 14, f"ring_column_sum_kernel, one thread t, tiles = {RING_TILES}, "
           f"wait_count = {RING_WAIT}", size=SIZE_TITLE, weight="bold")
    f.text(810, 14, "time ↓", size=SIZE, anchor="end", fill=MUTED)
    hy = 42
    f.text(code_x, hy, "statement", size=SIZE, fill=MUTED)
    for s in range(2):
        f.text(lane_x + s * (lane_w + gap) + lane_w / 2, hy, f"stage[{s}]", size=SIZE,
               anchor="middle", mono=True, weight="bold")
    f.text(groups_x, hy, "thread t's groups, by tile", size=SIZE, fill=MUTED)

    def y_of(i: int) -> float:      # the middle of row i
        return top + (i + 0.5) * rh

    # Bands: one per iteration, shaded alternately, labelled on the left.
    bands: list[tuple[str, int, int]] = []
    for i, r in enumerate(rows):
        if not bands or bands[-1][0] != r["band"]:
            bands.append((r["band"], i, i))
        bands[-1] = (bands[-1][0], bands[-1][1], i)
    for j, (name, a, b) in enumerate(bands):
        y0, y1 = top + a * rh, top + (b + 1) * rh
        if j % 2:
            f.rect(6, y0, 808, y1 - y0, fill="#f5f7fa", stroke=None)
        f.line(6, y0, 814, y0, stroke=RULE, sw=0.8)
        f.text(12, y0 + rh / 2, name, size=SIZE, weight="bold", mono=name != "prologue")
    f.line(6, top + len(rows) * rh, 814, top + len(rows) * rh, stroke=RULE, sw=0.8)

    # The stages' lanes: each tile from its copy to the barrier that frees its stage.
    lane_top, lane_bottom = top, top + len(rows) * rh
    for s in range(2):
        x = lane_x + s * (lane_w + gap)
        f.rect(x, lane_top, lane_w, lane_bottom - lane_top, fill="none", stroke=RULE, sw=0.8,
               dash="2 3")
    for k in range(RING_TILES):
        x = lane_x + (k % 2) * (lane_w + gap) + 6
        w = lane_w - 12
        issue = next(i for i, r in enumerate(rows) if r["kind"] == "start" and r["tile"] == k)
        first, second = [i for i, r in enumerate(rows)
                         if r["kind"] == "barrier" and r.get("tile") == k]
        y0, y1, y2 = y_of(issue) - rh / 2 + 3, y_of(first), y_of(second)
        h = hue(k)
        f.rect(x, y0, w, y1 - y0, fill=mix(h.fill, PAPER, 0.55), stroke=h.ink, sw=1.2, rx=2,
               dash="4 3")
        # The label on the boundary of two rows without a barrier, nearest the span's middle,
        # so that no barrier's line runs through it.
        clear = [top + b * rh for b in range(issue + 1, first)
                 if rows[b - 1]["kind"] != "barrier" and rows[b]["kind"] != "barrier"]
        at = min(clear, key=lambda c: abs(c - (y0 + y1) / 2), default=(y0 + y1) / 2)
        f.lines(x + w / 2, at, [f"tile {k}", "in flight"], size=SIZE_SMALL, fill=h.ink)
        f.rect(x, y1, w, y2 - y1, fill=h.fill, stroke=h.ink, sw=1.6, rx=2)
        f.lines(x + w / 2, (y1 + y2) / 2, [f"tile {k}", "summed"], size=SIZE_SMALL,
                weight="bold")

    # Each statement, and what it does to the thread's groups.
    chip_w = 34
    for i, r in enumerate(rows):
        y = y_of(i)
        f.text(code_x, y, r["code"], size=SIZE_SMALL, mono=True,
               fill=BARRIER_INK if r["kind"] == "barrier" else INK)
        if r["kind"] == "barrier":
            f.line(lane_x - 8, y, lane_x + 2 * lane_w + gap + 8, y, stroke=BARRIER_INK, sw=1.8,
                   dash="4 2")
            if r["note"]:
                f.text(groups_x, y, r["note"], size=SIZE_SMALL, fill=MUTED)
        elif r["kind"] == "start":
            note = (f"an empty group: {r['tile']} ≥ tiles" if r["empty"]
                    else f"copy → stage[{r['tile'] % 2}]; commit")
            f.text(groups_x, y, note, size=SIZE_SMALL, fill=MUTED)
        elif r["kind"] == "wait":
            for g, tile in enumerate(r["groups"]):
                x = groups_x + g * (chip_w + 4)
                h = hue(tile)
                label = "∅" if tile >= RING_TILES else f"{tile}"
                if g < r["before"]:            # landed at an earlier wait
                    f.box(x, y - 10, chip_w, 20, label, fill=hue(7).fill, stroke=hue(7).ink,
                          size=SIZE_SMALL, rx=2)
                elif g < r["landed"]:          # this wait lands it
                    f.box(x, y - 10, chip_w, 20, label, fill=h.fill, stroke=h.ink,
                          size=SIZE_SMALL, rx=2, weight="bold")
                    f.rect(x, y - 10, chip_w, 20, stroke=h.ink, sw=2.4, rx=2)
                else:                          # the newest: may stay in flight
                    fill = PAPER if tile >= RING_TILES else mix(h.fill, PAPER, 0.55)
                    ink = hue(7).ink if tile >= RING_TILES else h.ink
                    f.box(x, y - 10, chip_w, 20, label, fill=fill, stroke=ink,
                          size=SIZE_SMALL, rx=2, dash="4 3")
            end = groups_x + len(r["groups"]) * (chip_w + 4) + 4
            f.text(end, y, f"lands {r['tile']}", size=SIZE_SMALL, fill=MUTED)

    # The legend draws styles only, in neutral ink: in the picture each box and chip has its
    # tile's colour (tile 0 blue, 1 orange, 2 green), so a coloured swatch would say otherwise.
    y = lane_bottom + 24
    f.rect(10, y - 7, 14, 14, fill=PAPER, stroke=INK, sw=1.2, rx=2, dash="3 2")
    label = "dashed: copy in flight, may land any time until the wait"
    f.text(30, y, label, size=SIZE_SMALL)
    end = 30 + text_width(label, SIZE_SMALL) + 18
    f.rect(end, y - 7, 14, 14, fill=PAPER, stroke=INK, sw=1.6, rx=2)
    f.text(end + 20, y, "solid: landed, read by every thread", size=SIZE_SMALL)
    y += 24
    f.line(10, y, 26, y, stroke=BARRIER_INK, sw=1.8, dash="4 2")
    f.text(32, y, "__syncthreads()", size=SIZE_SMALL, mono=True)
    end = 32 + text_width("__syncthreads()", SIZE_SMALL, mono=True) + 18
    end = f.legend(end, y, [(hue(7), "grey: landed earlier")])
    f.rect(end, y - 7, 14, 14, fill=PAPER, stroke=INK, sw=2.4, rx=2)
    label = "thick: landed by this wait"
    f.text(end + 20, y, label, size=SIZE_SMALL)
    end += 20 + text_width(label, SIZE_SMALL) + 18
    f.rect(end, y - 7, 14, 14, fill=PAPER, stroke=INK, sw=1.2, rx=2, dash="3 2")
    f.text(end + 20, y, "the newest (∅: empty)", size=SIZE_SMALL)
    y += 24
    f.text(10, y, "colour: the tile (0 blue, 1 orange, 2 green)", size=SIZE_SMALL, fill=MUTED)
    f.height = y + 14
    return f


# ---- the last block merges ----------------------------------------------------------------------

BLOCKS = 4
# Where each block's warp finishes its own sum, in x on the time axis: blocks run on different
# SMs and finish in any order; here 1, 3, 0, then 2.
SUM_END = {0: 262, 1: 172, 2: 318, 3: 216}


def last_block() -> Figure:
    order = sorted(range(BLOCKS), key=SUM_END.get)        # the order the atomicAdds happen
    returned = {b: order.index(b) for b in order}         # atomicAdd returns the count before
    last = order[-1]
    # The caption names block 2 and the value 3 = gridDim.x − 1.
    assert BLOCKS == 4 and returned[last] == BLOCKS - 1 and last == 2
    f = Figure(820, 300, "last_block_sum_kernel: the block that counts itself last merges",
               f"{BLOCKS} one-warp blocks on a time axis. Each sums its 32 inputs, lane 0 writes "
               "the block's partial, fences and adds 1 to arrivals; atomicAdd returns the count "
               f"before its own. Block {last} gets {BLOCKS - 1} = gridDim.x − 1: it resets the "
               "counter to 0, fences, and after the barrier its lanes add up the partials; the "
               "other blocks return.")
    f.text(10, 14, f"last_block_sum_kernel, gridDim.x = {BLOCKS} one-warp blocks",
           size=SIZE_TITLE, weight="bold")
    f.text(810, 14, "time →", size=SIZE, anchor="end", fill=MUTED)
    x0, top, lane_h, bh = 80, 34, 38, 24
    track_y = top + BLOCKS * lane_h + 14
    part_w = 104

    def mid(b: int) -> float:
        return top + b * lane_h + lane_h / 2

    dot_x = {b: SUM_END[b] + 4 + part_w + 20 + 14 for b in order}
    exch_x = dot_x[last] + 16 + 48               # the middle of the atomicExch box
    for b in order:                              # guides from each atomicAdd to the counter
        f.line(dot_x[b], mid(b) + 10, dot_x[b], track_y, stroke=RULE, sw=1, dash="3 3")
    f.line(exch_x, mid(last) + bh / 2, exch_x, track_y, stroke=RULE, sw=1, dash="3 3")
    for b in range(BLOCKS):
        y, e = mid(b), SUM_END[b]
        f.text(10, y, f"block {b}", size=SIZE, fill=hue(b).ink, weight="bold")
        f.box(x0, y - bh / 2, e - x0, bh, "shuffle sum", fill=hue(b).fill, stroke=hue(b).ink,
              size=SIZE_SMALL, rx=2)
        f.box(e + 4, y - bh / 2, part_w, bh, f"partials[{b}]", fill=STATE.fill, stroke=STATE.ink,
              size=SIZE_SMALL, mono=True, rx=2)
        fx = e + 4 + part_w + 10
        f.line(fx, y - bh / 2, fx, y + bh / 2, stroke=INK, sw=3.5)
        d = dot_x[b]
        f.add(f'<circle cx="{d:g}" cy="{y:g}" r="10" fill="{PAPER}" stroke="{INK}" '
              f'stroke-width="1.4"/>')
        f.text(d, y, f"{returned[b]}", size=SIZE_SMALL, anchor="middle", weight="bold", mono=True)
        if b != last:
            bx = d + 22
            f.line(bx, y - bh / 2 - 3, bx, y + bh / 2 + 3, stroke=BARRIER_INK, sw=1.8,
                   dash="4 2")
            f.rect(bx + 5, y - 8, text_width("return", SIZE_SMALL, mono=True) + 6, 16, fill=PAPER,
                   stroke=None)  # over the guides of later blocks
            f.text(bx + 8, y, "return", size=SIZE_SMALL, fill=MUTED, mono=True)
        else:
            f.box(d + 16, y - bh / 2, 96, bh, "atomicExch", fill=PAPER, stroke=INK,
                  size=SIZE_SMALL, mono=True, rx=2)
            fx = d + 16 + 96 + 8
            f.line(fx, y - bh / 2, fx, y + bh / 2, stroke=INK, sw=3.5)
            bx = fx + 10
            f.line(bx, y - bh / 2 - 3, bx, y + bh / 2 + 3, stroke=BARRIER_INK, sw=1.8,
                   dash="4 2")
            merge = f"Σ partials[0..{BLOCKS - 1}] → out"
            mw = text_width(merge, SIZE_SMALL, mono=True) + 12
            f.box(bx + 8, y - bh / 2, mw, bh, merge, fill=mix(STATE.fill, PAPER, 0.4),
                  stroke=STATE.ink, size=SIZE_SMALL, mono=True, rx=2)
    # The counter, between the atomics.
    f.text(10, track_y + 12, "arrivals", size=SIZE_SMALL, mono=True)
    cuts = [x0] + [dot_x[b] for b in order] + [exch_x, 810]
    values = list(range(BLOCKS + 1)) + [0]
    for (a, b), v in zip(zip(cuts, cuts[1:]), values):
        every = v == BLOCKS
        f.box(a, track_y, b - a, 24, f"{v}", fill=hue(7).fill, stroke=INK if every else
              hue(7).ink, size=SIZE_SMALL, mono=True, rx=0, weight="bold" if every else None)
    ly = track_y + 40
    f.text(dot_x[last] + 4, ly, f"{BLOCKS - 1} = gridDim.x − 1: block {last} is the last",
           size=SIZE_SMALL, anchor="end")
    f.text(exch_x + 6, ly, "reset to 0 for the next launch", size=SIZE_SMALL)
    f.line(dot_x[last], track_y + 24, dot_x[last], ly - 8, stroke=INK, sw=1)
    f.line(exch_x, track_y + 24, exch_x, ly - 8, stroke=INK, sw=1)
    y = ly + 28
    end = f.legend(10, y, [(STATE, "the block's partial, written by lane 0")])
    f.line(end + 6, y - 9, end + 6, y + 9, stroke=INK, sw=3.5)
    label = "__threadfence() (lane 0)"
    f.text(end + 14, y, label, size=SIZE_SMALL)
    end += 14 + text_width(label, SIZE_SMALL) + 18
    f.line(end + 6, y - 9, end + 6, y + 9, stroke=BARRIER_INK, sw=1.8, dash="4 2")
    f.text(end + 14, y, "__syncthreads()", size=SIZE_SMALL, mono=True)
    y += 24
    f.add(f'<circle cx="16" cy="{y:g}" r="8" fill="{PAPER}" stroke="{INK}" stroke-width="1.4"/>')
    f.text(16, y, "k", size=SIZE_SMALL, anchor="middle", mono=True)
    f.text(30, y, "lane 0's atomicAdd(arrivals, 1): returns k, the count before its own",
           size=SIZE_SMALL)
    f.height = y + 14
    return f


FIGURES = {"lab07_tools_ring": ring, "lab07_tools_last_block": last_block}
