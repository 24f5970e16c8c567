"""The front matter's pictures (docs/index.md)."""
from svgfig import (FREE, MUTED, REQUEST_A, REQUEST_B, RULE, SHARED, SIZE_SMALL, SIZE_TITLE,
                    Figure)

BLOCK_SIZE = 4
# Request -> (seq_len, block table, hue). Both start with the same four prompt tokens, so both
# tables name block 7.
REQUESTS = {"A": (10, [7, 1, 4], REQUEST_A), "B": (6, [7, 3], REQUEST_B)}
NUM_BLOCKS = 8


def paged_kv() -> Figure:
    f = Figure(820, 330, "Two requests in one pool of blocks",
               "Each request's logical blocks map through its block table to physical blocks "
               "of one shared pool; block 7 holds the common prompt of both.")
    row_h = 26
    top = 52
    # Column headings.
    f.text(10, 18, "logical blocks (per request)", size=SIZE_TITLE, weight="bold")
    f.text(300, 18, "block tables", size=SIZE_TITLE, weight="bold")
    f.text(520, 18, f"the pool: physical blocks", size=SIZE_TITLE, weight="bold")

    # The pool: one row per physical block, one cell per slot, coloured by whose token it holds.
    owner: dict[tuple[int, int], tuple[str, object]] = {}
    for name, (seq_len, table, hue) in REQUESTS.items():
        for t in range(seq_len):
            block, slot = table[t // BLOCK_SIZE], t % BLOCK_SIZE
            if (block, slot) in owner:  # the shared prompt
                owner[(block, slot)] = (f"A{t} B{t}", SHARED)
            else:
                owner[(block, slot)] = (f"{name}{t}", hue)
    used_blocks = {b for (b, _s) in owner}

    def cell(r, c):
        if (r, c) in owner:
            return owner[(r, c)]
        if r in used_blocks:
            return "unused", FREE
        return "", FREE
    pool = f.grid(520, top, NUM_BLOCKS, BLOCK_SIZE, 58, row_h, cell, size=SIZE_SMALL,
                  col_labels=[f"offset {s}" for s in range(BLOCK_SIZE)])
    for b in range(NUM_BLOCKS):
        f.text(pool.right(BLOCK_SIZE - 1) + 8, pool.cy(b), f"block {b}", size=SIZE_SMALL,
               fill=MUTED)

    # Per request: its logical blocks and its block table, side by side.
    y = top
    for name, (seq_len, table, hue) in REQUESTS.items():
        f.box(10, y, 220, row_h, f"request {name}, seq_len {seq_len}", fill=hue.fill,
              stroke=hue.ink, rx=0, weight="bold", size=SIZE_SMALL)
        f.box(300, y, 110, row_h, f"block_table {name}", fill=hue.fill, stroke=hue.ink, rx=0,
              weight="bold", size=SIZE_SMALL)
        for j, block in enumerate(table):
            ry = y + (j + 1) * row_h
            first, last = j * BLOCK_SIZE, min(seq_len, (j + 1) * BLOCK_SIZE) - 1
            f.box(10, ry, 220, row_h, f"logical block {j}: tokens {first}–{last}",
                  stroke=RULE, rx=0, size=SIZE_SMALL)
            f.box(300, ry, 110, row_h, f"[{j}] = {block}", stroke=RULE, rx=0, size=SIZE_SMALL,
                  mono=True)
            f.arrow(230, ry + row_h / 2, 300, ry + row_h / 2, color=hue.ink)
            f.arrow(410, ry + row_h / 2, 520, pool.cy(block), color=hue.ink, bend=1)
        y += (len(table) + 1) * row_h + 22
    # The shared block says so in the picture: a legend under it, and the caption says why.
    legend_y = max(top + NUM_BLOCKS * row_h, y - 22) + 22
    shared = [b for b in REQUESTS["A"][1] if b in REQUESTS["B"][1]]
    f.legend(10, legend_y, [(REQUEST_A, "a token of A"), (REQUEST_B, "a token of B"),
                            (SHARED, f"block {shared[0]}: shared by A and B"),
                            (FREE, "free or unused")])
    f.height = legend_y + 14   # no empty band under the drawing
    return f


FIGURES = {"book_paged_kv": paged_kv}
