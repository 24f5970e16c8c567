"""Lab 06's pictures (labs/06-cuda-split-kv/README.md): the split-KV grid, which scratch entries
the attention kernel writes, and the reduce kernel: max, rescale, ordered sum. The example batch is the one
of the test EmptyTrailingPartitionsAreNeverWrittenOrMerged: 1100, 40 and 600 tokens, partitions
of 512. Last, the H100 run of lab06_bench (docs/figures/gpu/)."""
import h100
from svgfig import (BARRIER_INK, FREE, INK, MUTED, NOTE_SIZE, PAPER, RULE, SIZE, SIZE_SMALL,
                    SIZE_TITLE, STATE, WARPS, Figure, hue, mix, text_width)

PARTITION_SIZE = 512
SEQ_LENS = [1100, 40, 600]
NUM_THREADS = 128


def num_partitions(seq_len: int) -> int:
    return (seq_len + PARTITION_SIZE - 1) // PARTITION_SIZE


MAX_NUM_PARTITIONS = max(num_partitions(n) for n in SEQ_LENS)
DIRECT = hue(2)  # a one-partition sequence: its block writes out itself


def kind(s: int, p: int) -> str:
    """What the block (or scratch entry) of sequence s, partition p is."""
    own = num_partitions(SEQ_LENS[s])
    if p >= own:
        return "empty"
    return "direct" if own == 1 else "partial"


def grid() -> Figure:
    f = Figure(820, 300, "The split-KV grid",
               "Grid (num_heads, num_seqs, max_num_partitions) for sequences of 1100, 40 and 600 "
               "tokens with partitions of 512: sequence 0 has three partial blocks, sequence 1 "
               "one block that writes out directly and two that return at once, sequence 2 two "
               "partial blocks and one that returns at once.")
    f.text(10, 14, "grid = (num_heads, num_seqs, max_num_partitions): one thread block per cell",
           size=SIZE_TITLE, weight="bold")
    x0, y0, w, h = 104, 64, 144, 50
    for layer in (2, 1):  # the other heads, behind the front layer
        f.rect(x0 + 8 * layer, y0 - 8 * layer, w * MAX_NUM_PARTITIONS, h * len(SEQ_LENS),
               fill="#ffffff", stroke=RULE, sw=1, dash="4 3")
    for p in range(MAX_NUM_PARTITIONS):
        f.text(x0 + w * p + w / 2, y0 - 26, f"partition {p}", size=SIZE_SMALL, anchor="middle",
               fill=MUTED)
    for s, n in enumerate(SEQ_LENS):
        f.text(x0 - 10, y0 + h * s + h / 2 - 8, f"sequence {s}", size=SIZE, anchor="end")
        f.text(x0 - 10, y0 + h * s + h / 2 + 9, f"{n} tokens", size=SIZE_SMALL, anchor="end",
               fill=MUTED)
        for p in range(MAX_NUM_PARTITIONS):
            k = kind(s, p)
            colour = {"partial": STATE, "direct": DIRECT, "empty": FREE}[k]
            first, last = p * PARTITION_SIZE, min((p + 1) * PARTITION_SIZE, n)
            rows = [f"tokens {first}–{last - 1}"] if k != "empty" else ["returns at once"]
            f.box(x0 + w * p, y0 + h * s, w, h, rows, fill=colour.fill, stroke=colour.ink,
                  size=SIZE_SMALL, rx=0, dash="4 3" if k == "empty" else None,
                  color=INK if k != "empty" else MUTED)
    right = x0 + w * MAX_NUM_PARTITIONS + 32
    f.lines(right, y0 + 1.5 * h, ["blockIdx.x: the query head", "(one layer per head, dashed)",
                             "blockIdx.y: the sequence (rows)",
                             "blockIdx.z: the partition"],
            size=SIZE_SMALL, anchor="start", fill=MUTED, gap=1.6)
    y_legend = y0 + h * len(SEQ_LENS) + 28
    f.legend(x0, y_legend, [(STATE, "writes its partial (m, denom, acc) for the reduce")])
    f.legend(x0, y_legend + 22, [(DIRECT, "the only partition: writes out itself"),
                                 (FREE, "past the end: no read, no write")])
    # max_num_partitions and the P tokens a block reads at most: in the caption.
    f.height = y_legend + 36
    return f


def scratch() -> Figure:
    f = Figure(820, 330, "The scratch tensors of one head",
               "max_logits and exp_sums hold one float per (sequence, partition), tmp_out a row "
               "of head_size floats; only the partitions of sequences with two or more are "
               "written; the others keep whatever was there.")
    f.text(10, 14, "the scratch of one head h: which entries the attention kernel writes",
           size=SIZE_TITLE, weight="bold")
    cw, ch, y0 = 50, 30, 72
    for k, (name, symbol) in enumerate((("max_logits", "m"), ("exp_sums", "denom"))):
        x = 40 + k * (cw * MAX_NUM_PARTITIONS + 44)
        f.text(x + cw * MAX_NUM_PARTITIONS / 2, y0 - 34, name, size=SIZE, anchor="middle",
               weight="bold", mono=True)
        f.text(x + cw * MAX_NUM_PARTITIONS / 2, y0 - 18, symbol, size=SIZE_SMALL,
               anchor="middle", italic=True)

        def cell(s, p):
            if kind(s, p) == "partial":
                return f"b{s} p{p}", STATE
            return "", "#ffffff"
        f.grid(x, y0, len(SEQ_LENS), MAX_NUM_PARTITIONS, cw, ch, cell, stroke=RULE, sw=1,
               row_labels=[f"b{s}" for s in range(len(SEQ_LENS))] if k == 0 else None)
    f.lines(40, y0 + ch * len(SEQ_LENS) + 26, ["each [num_seqs, num_heads,",
                                                " max_num_partitions] float32"],
            size=SIZE_SMALL, anchor="start", fill=MUTED, mono=True)
    tx, row_w, row_h = 480, 330, 15  # the row labels stand clear of the exp_sums grid
    f.text(tx + row_w / 2, y0 - 34, "tmp_out", size=SIZE, anchor="middle", weight="bold",
           mono=True)
    f.text(tx + row_w / 2, y0 - 18, "acc = Σₜ exp(sₜ − mₚ) · vₜ, undivided", size=SIZE_SMALL,
           anchor="middle", italic=True)
    y = y0
    for s in range(len(SEQ_LENS)):
        for p in range(MAX_NUM_PARTITIONS):
            written = kind(s, p) == "partial"
            f.rect(tx, y, row_w, row_h, fill=STATE.fill if written else "#ffffff",
                   stroke=STATE.ink if written else RULE, sw=1, dash=None if written else "4 3")
            f.text(tx - 6, y + row_h / 2, f"b{s} p{p}", size=SIZE_SMALL, anchor="end", fill=MUTED,
                   mono=True)
            y += row_h + 2
        y += 6
    f.text(tx, y + 4, "δ = 0, 1, …, head_size − 1 →", size=SIZE_SMALL, fill=MUTED)
    f.text(812, y + 22, "[num_seqs, num_heads, max_num_partitions, head_size] float32",
           size=SIZE_SMALL, fill=MUTED, mono=True, anchor="end")
    # Where entry (b, h, p) sits is the chapter's formula under the figure; which entries stay
    # unwritten, the text under it.
    f.height = y + 36
    return f


SUB = "₀₁₂₃₄₅₆₇₈₉"  # subscript digits: the index of a partition's state


def reduce() -> Figure:
    n = 5
    f = Figure(820, 372, "The reduce kernel: max, rescale, ordered sum",
               "Five partials of one (sequence, head): their maxima fold into M; each partition "
               "gets its rescale factor βₚ, e to the power mₚ − M; each partition's denominator and "
               "accumulator, rescaled by its βₚ, are summed, and the sum is divided once.")
    f.text(10, 14, "paged_attention_v2_reduce_kernel: one thread block per (head, sequence)",
           size=SIZE_TITLE, weight="bold")
    bw, gap, by = 140, 14, 300
    xs = [34 + p * (bw + gap) for p in range(n)]
    for p, x in enumerate(xs):
        f.box(x, by, bw, 48, [f"partition {p}", f"m{SUB[p]}, denom{SUB[p]}, acc{SUB[p]}"], fill=hue(p).fill,
              stroke=hue(p).ink, size=SIZE_SMALL)
    centre = 410
    my, wy, sy = 222, 150, 74
    f.box(centre - 130, my, 260, 44, ["M = maxₚ mₚ", "block_max: a butterfly tree"],
          fill=STATE.fill, stroke=STATE.ink, size=SIZE_SMALL)
    for p, x in enumerate(xs):
        f.arrow(x + bw / 2, by - 1, centre + (x + bw / 2 - centre) * 0.35, my + 45,
                color=hue(p).ink)
    f.box(centre - 260, wy, 520, 44,
          [f"βₚ = exp(mₚ − M), a tile of {NUM_THREADS} partitions at a time",
           "weights[] in shared memory; barriers around each tile"],
          fill=STATE.fill, stroke=STATE.ink, size=SIZE_SMALL)
    f.arrow(centre, my - 1, centre, wy + 45, color=STATE.ink)
    f.box(22, sy, 360, 44, ["denom = Σₚ βₚ · denomₚ",
                            "a share per thread, then block_sum (a tree)"],
          fill=STATE.fill, stroke=STATE.ink, size=SIZE_SMALL)
    f.box(438, sy, 360, 44, ["acc[δ] = Σₚ βₚ · accₚ[δ]",
                             "δ's thread adds the partitions in order"],
          fill=STATE.fill, stroke=STATE.ink, size=SIZE_SMALL)
    f.arrow(centre - 80, wy - 1, 202, sy + 45, color=STATE.ink)
    f.arrow(centre + 80, wy - 1, 618, sy + 45, color=STATE.ink)
    f.box(centre - 140, 24, 280, 28, "out[b, h, δ] = acc[δ] / denom", fill="#ffffff",
          stroke=INK, size=SIZE_SMALL, mono=True)
    f.arrow(202, sy - 1, centre - 60, 53, color=INK)
    f.arrow(618, sy - 1, centre + 60, 53, color=INK)
    # Every partition's denominator and accumulator go straight to the two sums (only the maxima
    # go through M): a bus under the partitions, up both margins, into the sums' outer sides.
    bus_y, rail_left, rail_right = by + 66, 10, 810
    for p, x in enumerate(xs):
        f.line(x + bw / 2, by + 49, x + bw / 2, bus_y, stroke=hue(p).ink)
    f.line(rail_left, bus_y, rail_right, bus_y, stroke=INK)
    f.path(f"M{rail_left},{bus_y} L{rail_left},{sy + 22} L21,{sy + 22}", stroke=INK, arrow=True)
    f.path(f"M{rail_right},{bus_y} L{rail_right},{sy + 22} L799,{sy + 22}", stroke=INK,
           arrow=True)
    f.text(rail_left + 6, sy + 62, "denomₚ", size=SIZE_SMALL)
    f.text(rail_right - 6, sy + 62, "accₚ", size=SIZE_SMALL, anchor="end")
    f.text(centre, bus_y + 16, "mₚ goes to the max; denomₚ and accₚ go to the sums, "
           "scaled there by βₚ", size=SIZE_SMALL, anchor="middle")
    # Why the result is the same on every run: in the caption.
    f.height = bus_y + 30
    return f


# ---- the H100 run -----------------------------------------------------------------------------------

# (seqs, tokens, heads, kv_heads, target % of the read or None where the target is "v2 >= v1",
# or there is none because v1 cannot run the batch)
BATCHES = [(1, 2048, 32, 32, None), (1, 16384, 32, 32, 75), (4, 8192, 32, 32, 75),
           (16, 4096, 32, 32, 80), (64, 1024, 32, 32, None), (1, 65536, 32, 32, None),
           (64, 4096, 32, 4, None)]


def measured() -> Figure:
    v1 = h100.bench_series("06", "BM_GpuPagedAttentionV1")
    v2 = h100.bench_series("06", "BM_GpuPagedAttentionV2")
    read = h100.bench_series("06", "BM_GpuReadRoofline")
    refused = h100.refused_pct("06", "BM_GpuPagedAttentionV2")
    row_h = 44
    f = Figure(820, 104 + row_h * len(BATCHES), "v1 and v2 on an H100",
               "For the seven benchmark batches, one run of lab06_bench on one H100: lab 05's v1 "
               "and this lab's v2 in GB/s of the K and V bytes they must read, the read yardstick "
               "over the same buffers in the same run, and v2's target where it is a fraction "
               "of the yardstick.")
    x0 = h100.BARS_X
    scale = h100.gbps_scale(f, x0, f.width - x0 - h100.LABEL_ROOM - 20, 40 + row_h * len(BATCHES))
    for i, (seqs, tokens, heads, kv, target) in enumerate(BATCHES):
        shape = (seqs, tokens, heads, kv)
        y = 42 + row_h * i
        f.text(10, y + 9, f"{seqs} × {tokens:,} tokens, {heads}/{kv} heads", size=SIZE_SMALL)
        f.text(10, y + 27, f"target ≥ {target}% of the yardstick" if target
               else "target: v2 ≥ v1" if shape in v1 else "no target: v1 cannot run",
               size=SIZE_SMALL, fill=MUTED)
        def bar(style, figure, missing, bold=False):
            if figure is None:
                return (style, None, "", missing, bold)
            return (style, figure[0], f"{figure[0]:,.0f}  ({figure[1]:.0f}%)", "", bold)
        v2_bar = bar(WARPS[3], v2.get(shape), "", bold=True)
        if shape in refused:  # drawn where the refused figure would lie, hollow
            v2_bar = (WARPS[3], read[shape][0] * refused[shape] / 100,
                      "refused", "", True, True)
        h100.batch_bars(f, x0, scale, y, read[shape][0], target, [
            bar(WARPS[0], v1.get(shape), "v1: logits exceed shared memory"), v2_bar])
    y = 62 + row_h * len(BATCHES)
    end = f.legend(10, y, [(WARPS[0], "v1 (lab 05)"), (WARPS[3], "v2 (this lab)"),
                           (STATE, "target")])
    # the refused figure's hollow, dashed bar, explained on the legend's second line
    f.rect(10, y + 16, 12, 12, fill=PAPER, stroke=WARPS[3].ink, sw=1, dash="4 3")
    f.text(28, y + 22, "refused: above 100% of the yardstick, so not a figure (see the table)",
           size=SIZE_SMALL)
    f.line(end, y - 7, end, y + 7, stroke=INK, sw=2)
    f.text(end + 6, y, "read yardstick, same run (% in brackets: of it)", size=SIZE_SMALL)
    return f


# ---- the attention kernel, step by step (\ref lab_06_design) ----------------------------------------
# One partition of the example: the last of a 1,180-token sequence, float16, block size 16, head
# size 128, four warps. Warp w takes the partition's blocks w, w + 4, ...; with the register double
# buffer it issues the loads of block i + NUM_WARPS's keys before the dot products of block i.

LOOP_SEQ_LEN = 1180
LOOP_BLOCK_SIZE = 16
NUM_WARPS = NUM_THREADS // 32
LOOP_PARTITION = num_partitions(LOOP_SEQ_LEN) - 1
LOOP_TOKENS = LOOP_SEQ_LEN - LOOP_PARTITION * PARTITION_SIZE
LOOP_BLOCKS = (LOOP_TOKENS + LOOP_BLOCK_SIZE - 1) // LOOP_BLOCK_SIZE
LOOP_FIRST_BLOCK = LOOP_PARTITION * PARTITION_SIZE // LOOP_BLOCK_SIZE


def key_loop() -> Figure:
    size = NOTE_SIZE  # every label at 14 px: the figure is read at the column's width
    row_h, bar_h, phase_h = 34, 24, 30
    blocks = [list(range(w, LOOP_BLOCKS, NUM_WARPS)) for w in range(NUM_WARPS)]
    loop_rows = max(len(b) for b in blocks) + 1  # the first load, then one row per block
    f = Figure(820, 900, "The key loop of v2's attention kernel, step by step",
               f"Steps top to bottom, one column per warp: the last partition of a "
               f"{LOOP_SEQ_LEN:,}-token sequence "
               f"({LOOP_BLOCKS} cache blocks). The block table's slice is staged once; then "
               "each warp issues the loads of its next block's keys before the dot products of "
               "its current block; four barriers, the last one alone before the cross-warp sum.")
    f.text(10, 16, f"v2, partition {LOOP_PARTITION} of a {LOOP_SEQ_LEN:,}-token sequence: "
           f"{LOOP_TOKENS} tokens, {LOOP_BLOCKS} cache blocks of {LOOP_BLOCK_SIZE}",
           size=SIZE_TITLE, weight="bold")
    y = 34
    barrier = 0

    def phase(*rows):  # one line, or two where one would run to the box's edge
        nonlocal y
        h = phase_h + (len(rows) - 1) * 18
        f.rect(10, y + 3, 800, h - 6, fill=STATE.fill, stroke=STATE.ink, sw=1)
        f.lines(18, y + h / 2, rows, size=size, anchor="start", gap=18 / size)
        y += h

    def sync(why):
        nonlocal y, barrier
        barrier += 1
        f.barrier_line(10, 810, y + bar_h / 2, f"__syncthreads() {barrier}: {why}", size)
        y += bar_h

    last = LOOP_FIRST_BLOCK + LOOP_BLOCKS - 1
    phase(f"Step 2: q → q_vecs, and block_tables[b, {LOOP_FIRST_BLOCK} … {last}] → "
          f"block_ids[0 … {LOOP_BLOCKS - 1}]:", "the table's slice, one coalesced read")
    sync("q_vecs and block_ids visible to every warp")

    # Step 3, per warp: a column of two tracks, the loads in flight and the dot products.
    col_w, load_w, gap = 200, 104, 4
    qk_w = col_w - 8 - load_w - gap
    f.text(18, y + 13, "Step 3: each warp takes blocks i = warp_idx, warp_idx + 4, … of block_ids; "
           "keys double-buffered", size=size)
    y += 30
    for w in range(NUM_WARPS):
        x = 10 + w * col_w
        f.text(x + (col_w - 8) / 2, y + 9, f"warp {w}: blocks " + ", ".join(map(str, blocks[w])),
               size=size, anchor="middle", weight="bold", fill=WARPS[w].ink)
        f.text(x + load_w / 2, y + 28, "loads in flight", size=size, anchor="middle", fill=MUTED)
        f.text(x + load_w + gap + qk_w / 2, y + 28, "q·k", size=size, anchor="middle",
               fill=MUTED)
    y += 40
    for k in range(loop_rows):
        for w in range(NUM_WARPS):
            x = 10 + w * col_w
            h = WARPS[w]
            if k < len(blocks[w]):  # the load of the warp's k-th block, issued in this row
                f.box(x, y + 4, load_w, row_h - 8, f"K {blocks[w][k]} → " +
                      ("keys" if k == 0 else "next"), fill=mix(h.fill, "#ffffff", 0.55),
                      stroke=h.ink, size=size, mono=True, dash="4 3", rx=2)
            if 1 <= k <= len(blocks[w]):  # the dot products of the block loaded a row before
                f.box(x + load_w + gap, y + 4, qk_w, row_h - 8, f"q·k {blocks[w][k - 1]}",
                      fill=h.fill, stroke=h.ink, size=size, mono=True, rx=2)
                f.arrow(x + load_w / 2 + 20, y - 4, x + load_w + gap + 12, y + 4, color=h.ink,
                        sw=1)
        y += row_h
    sync("every warp's logits and running max visible (block_max)")
    phase("Step 4: m = the block's max; w_{t} = exp(s_{t} − m) into the logits; their sum (block_sum)")
    sync("every weight visible to the value loop (block_sum)")
    phase("Step 5: each warp's values at block_ids[i], no table load; Step 6: its rows → warp_rows")
    sync("every warp's rows visible: the one barrier of the cross-warp sum")
    phase("Step 7: each thread adds element thread_idx (and thread_idx + 128)",
          "of the four rows → tmp_out")
    # How many bytes are in flight, and why no table read waits in front of a load: the caption
    # says it once (16 tokens × 128 × 2 B = 4 KiB per warp, 16 KiB per thread block).
    f.height = y + 6
    return f


FIGURES = {"lab06_grid": grid, "lab06_scratch": scratch, "lab06_reduce": reduce,
           "lab06_key_loop": key_loop, "lab06_measured": measured}
