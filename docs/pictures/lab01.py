"""Lab 01's pictures (labs/01-paged-gather/README.md)."""
from svgfig import (FREE, INK, MUTED, POISON, RULE, SIZE, SIZE_LARGE, SIZE_SMALL, SIZE_TITLE,
                    Figure, hue, text_width)

BLOCK_SIZE = 4
SEQ_LEN = 10
BLOCK_TABLE = [5, 2, 9]
NUM_BLOCKS = 12
EXAMPLE_TOKEN = 6


def slots() -> Figure:
    """Logical tokens -> block table -> the flat pool, with token 6 worked through."""
    f = Figure(820, 342, "From a token's position to its cache row",
               "The ten tokens of one sequence, its block table [5, 2, 9] and the pool of "
               "twelve blocks of four rows; token 6 lands in row 10.")
    # The sequence: one cell per token, coloured by its logical block.
    tx, tw = 190, 44
    f.text(10, 57, "logical tokens", size=SIZE_TITLE, weight="bold")
    toks = f.grid(tx, 40, 1, SEQ_LEN, tw, 34,
                  lambda r, c: (str(c), hue(c // BLOCK_SIZE)), size=SIZE_LARGE,
                  col_labels=None)
    f.text(tx + SEQ_LEN * tw + 10, 57, "t", size=SIZE_SMALL, fill=MUTED, italic=True)

    # The block table: entry j under the middle of logical block j.
    f.text(10, 134, "block_table", size=SIZE_TITLE, weight="bold", mono=True)
    centres = []
    for j, block in enumerate(BLOCK_TABLE):
        first, last = j * BLOCK_SIZE, min(SEQ_LEN, (j + 1) * BLOCK_SIZE) - 1
        cx = (toks.left(first) + toks.right(last)) / 2
        centres.append(cx)
        f.box(cx - 45, 120, 90, 28, f"[{j}] = {block}", fill=hue(j).fill, stroke=hue(j).ink,
              rx=0, mono=True, size=SIZE_LARGE)
        f.arrow(cx, toks.bottom(0), cx, 119, color=hue(j).ink)

    # The pool: NUM_BLOCKS blocks of BLOCK_SIZE rows, drawn left to right, every row the same
    # width (one scale for the whole pool); a block of this sequence is named "block N", the
    # others, which hold nothing of it, by their number alone.
    px, wide, narrow, ph, py = 26, 16, 16, 32, 206
    f.text(10, 186, "the pool", size=SIZE_TITLE, weight="bold")
    holder = {}
    for t in range(SEQ_LEN):
        holder[BLOCK_TABLE[t // BLOCK_SIZE] * BLOCK_SIZE + t % BLOCK_SIZE] = t
    last_block = BLOCK_TABLE[-1]
    lefts, x = [], px  # the left edge of each row of the pool
    for c in range(NUM_BLOCKS * BLOCK_SIZE + 1):
        lefts.append(x)
        x += wide if c // BLOCK_SIZE in BLOCK_TABLE else narrow
    for c in range(NUM_BLOCKS * BLOCK_SIZE):
        w = lefts[c + 1] - lefts[c]
        if c in holder:
            label, colour = str(holder[c]), hue(holder[c] // BLOCK_SIZE)
        elif c // BLOCK_SIZE == last_block:
            label, colour = "×", POISON  # the unused tail of the last block
        else:
            label, colour = "", FREE
        f.rect(lefts[c], py, w, ph, fill=colour.fill if hasattr(colour, "fill") else colour,
               stroke="#ffffff", sw=1.5)
        if label:
            f.text(lefts[c] + w / 2, py + ph / 2, label, size=SIZE_LARGE, anchor="middle",
                   mono=True)  # the row's token, as large as in the sequence above
    end_x = lefts[-1]
    f.rect(px, py, end_x - px, ph, stroke=RULE, sw=1)
    for b in range(NUM_BLOCKS):
        x0, x1 = lefts[b * BLOCK_SIZE], lefts[(b + 1) * BLOCK_SIZE]
        f.line(x0, py - 4, x0, py + ph + 4, stroke=INK, sw=1)
        f.text((x0 + x1) / 2, py + ph + 18, f"block {b}" if b in BLOCK_TABLE else str(b),
               size=SIZE, anchor="middle", fill=INK if b in BLOCK_TABLE else MUTED)
    f.line(end_x, py - 4, end_x, py + ph + 4, stroke=INK, sw=1)
    for j, block in enumerate(BLOCK_TABLE):
        target = (lefts[block * BLOCK_SIZE] + lefts[(block + 1) * BLOCK_SIZE]) / 2
        f.arrow(centres[j], 148, target, 205, color=hue(j).ink)

    # Token 6, worked through: outlined in the sequence and in the pool.
    t = EXAMPLE_TOKEN
    j, o = t // BLOCK_SIZE, t % BLOCK_SIZE
    slot = BLOCK_TABLE[j] * BLOCK_SIZE + o
    f.rect(toks.left(t), toks.top(0), tw, 34, stroke=INK, sw=2.5)
    f.rect(lefts[slot], py, lefts[slot + 1] - lefts[slot], ph, stroke=INK, sw=2.5)
    # two lines: the logical block and its table entry, then the offset and the slot
    head = f"token {t}: "
    f.text(10, py + ph + 52, f"{head}logical block ⌊{t} / {BLOCK_SIZE}⌋ = {j}, "
           f"block_table[{j}] = {BLOCK_TABLE[j]},", size=SIZE_SMALL, mono=True)
    f.text(10 + text_width(head, SIZE_SMALL, mono=True), py + ph + 72,
           f"offset {t} mod {BLOCK_SIZE} = {o} → slot {BLOCK_TABLE[j]} · {BLOCK_SIZE} + {o} = "
           f"{slot}", size=SIZE_SMALL, mono=True)
    # Which rows a block is, and what the unused rows (×) hold: the caption under the figure.
    f.height = py + ph + 90
    return f


FIGURES = {"lab01_slots": slots}
