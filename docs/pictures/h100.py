"""The H100 figures the book cites (docs/figures/gpu/, as measured on the project's GPU machine),
read once for the pictures of labs 05 to 07, and the GB/s scale they draw them on. Every figure is
keyed by its decode batch (seqs, tokens, heads, kv_heads)."""
import json
import re
from pathlib import Path

from svgfig import INK, MUTED, PAPER, RULE, SIZE, SIZE_SMALL, STATE, Figure, text_width

GPU_DATA = Path(__file__).resolve().parent.parent / "figures" / "gpu"
TORCH_SDPA = GPU_DATA / "h100-torch-sdpa-2026-11-22.jsonl"    # PyTorch SDPA, same batches
# One run of labs 05-07's benchmarks and of PyTorch on the same H100, at commit 58f6460.
LAB_BENCH = {lab: GPU_DATA / f"h100-lab{lab}_bench-2026-11-26.json" for lab in ("05", "06", "07")}
TORCH_SDPA_RUN2 = GPU_DATA / "h100-torch-sdpa-2026-11-26.jsonl"  # the same day, lab 07's batches
GBPS_MAX = 3200  # the scale's right end: above the H100's read of about 2.94 TB/s


def bench_series(lab: str, series: str) -> dict:
    """(GB/s, roofline_pct or None) of one series of labNN_bench's 2026-11-26 run, per batch;
    batches the series failed on (an error entry) are left out."""
    out = {}
    for b in json.loads(LAB_BENCH[lab].read_text())["benchmarks"]:
        if b["name"].split("/")[0] == series and not b.get("error_occurred"):
            out[(int(b["seqs"]), int(b["tokens"]), int(b["heads"]), int(b["kv_heads"]))] = \
                (b["bytes_per_second"] / 1e9, b.get("roofline_pct"))
    return out


def refused_pct(lab: str, series: str) -> dict:
    """The % of the same-run read yardstick of each batch whose figure the benchmark refused as
    impossible (above 100%), read from its error message, per batch."""
    out = {}
    for b in json.loads(LAB_BENCH[lab].read_text())["benchmarks"]:
        m = re.match(r"impossible: ([0-9.]+) %", b.get("error_message", ""))
        name, *args = b["name"].split("/")
        if name == series and m:  # an error entry names its batch only in its name
            shape = dict(a.split(":") for a in args if ":" in a)
            out[(int(shape["seqs"]), int(shape["tokens"]), int(shape["heads"]),
                 int(shape["kv_heads"]))] = float(m.group(1))
    return out


def torch_sdpa(path: Path = TORCH_SDPA) -> dict:
    """PyTorch's rows per batch: `sdpa_flash_GBps` (FlashAttention over a contiguous cache) and
    `read_sum_GBps` (a plain read of the same bytes)."""
    rows = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        seqs_tokens, heads = row["shape"].split()
        seqs, tokens = map(int, seqs_tokens.split("x"))
        h, kv = map(int, heads.split("/"))
        rows[(seqs, tokens, h, kv)] = row
    return rows


def gbps_scale(f: Figure, x0: float, width: float, bottom: float) -> float:
    """Draws the GB/s scale's title, ticks and dashed rules from y = 34 down to `bottom`, the
    scale starting at x0 and `width` px long; returns px per GB/s."""
    scale = width / GBPS_MAX
    f.text(10, 14, "GB/s of K and V (H100 80GB HBM3, L2 flushed before each call)", size=SIZE,
           weight="bold")
    for gb in range(0, GBPS_MAX + 1, 500):
        x = x0 + gb * scale
        f.line(x, 34, x, bottom, stroke=RULE, sw=0.6, dash="2 3")
        f.text(x, 28, str(gb), size=SIZE_SMALL, anchor="middle", fill=MUTED)
    return scale


def read_tick(f: Figure, x: float, y1: float, y2: float, inferred: bool = False) -> None:
    """The read yardstick's tick from y1 to y2: a solid black bar where the run measured it, a
    hollow dashed one where it is inferred."""
    if inferred:
        f.rect(x - 2, y1, 4, y2 - y1, fill=PAPER, stroke=INK, sw=1, dash="3 2")
    else:
        f.line(x, y1, x, y2, stroke=INK, sw=2)


def batch_bars(f: Figure, x0: float, scale: float, y: float, read_gbps: float,
               target_pct: float | None, bars: list, inferred: bool = False) -> None:
    """One batch's bars from x0, BAR_PITCH px apart from y: `bars` holds (hue, GB/s or None, label, text
    where the figure is missing, bold?, refused?); a refused figure (one the benchmark refused as
    impossible) is drawn as a hollow, dashed bar. Behind them the target band (target_pct of the
    read) and the read's tick. Every figure's label stands in one column right of the scale's end,
    on its bar's line and in its hue, so that labels never meet a band, a tick or another bar and
    read down the figure like a table's column. The text of a missing figure goes where the bar
    would start, or past the tick where it would reach the band. The caller leaves room right of the
    scale (LABEL_ROOM). An `inferred` read (one the run never measured, worked out from another
    figure) is a dashed, hollow tick with the word "inferred" beside it, so that it is not taken for
    a measurement."""
    height = BAR_PITCH * len(bars) + 1
    read_x = x0 + read_gbps * scale
    band_x = read_x
    if target_pct:
        band_x = x0 + read_gbps * target_pct / 100 * scale
        f.rect(band_x, y, read_x - band_x, height, fill=STATE.fill, stroke=None)
    if inferred:
        read_tick(f, read_x, y - 2, y + height + 2, inferred=True)
        f.text(read_x + 6, y + 8, "inferred", size=SIZE_SMALL, fill=MUTED, italic=True)
        if any(gbps is None and x0 + 4 + text_width(missing, SIZE_SMALL) > read_x - 3
               for _, gbps, _, missing, _, *_ in bars[:1]):
            f.overflows.append("\"inferred\" beside the read tick meets a bar's text")
    else:
        read_tick(f, read_x, y - 2, y + height + 2)

    def width(text: str, bold: bool) -> float:
        return text_width(text, SIZE_SMALL) * (1.06 if bold else 1.0)

    def reaches(x: float, text: str, bold: bool) -> bool:
        """Text at x would run into the band or across the tick."""
        return x < read_x + 4 and x + width(text, bold) > band_x - 3

    for j, (style, gbps, label, missing, bold, *refused) in enumerate(bars):
        by = y + 1 + BAR_PITCH * j
        if gbps is None:
            x = read_x + 6 if reaches(x0 + 4, missing, False) else x0 + 4
            f.text(x, by + BAR_H / 2, missing, size=SIZE_SMALL, fill=MUTED)
            continue
        if refused and refused[0]:
            f.rect(x0, by, gbps * scale, BAR_H, fill=PAPER, stroke=style.ink, sw=1, dash="4 3")
        else:
            f.rect(x0, by, gbps * scale, BAR_H, fill=style.fill, stroke=style.ink, sw=1)
        f.text(x0 + GBPS_MAX * scale + 8, by + BAR_H / 2, label, size=SIZE_SMALL, fill=style.ink,
               weight="bold" if bold else "normal")


# The px right of the scale's end (GBPS_MAX) that the column of labels needs: lab 06's widest,
# "2,836  (97%)" in bold at 14 px, with room to spare.
LABEL_ROOM = 122
# A batch's bars: each BAR_H tall, BAR_PITCH apart, so that their 14 px labels do not touch.
BAR_H, BAR_PITCH = 15, 17
# Where the bars start: right of a batch's label, "1 × 65,536 tokens, 32/32 heads" at 14 px.
BARS_X = 250
