"""`tools/lab bench [NN ...]`: run the labs' Google Benchmark programs, print what they show, and
plot them. Python 3 standard library, plus gnuplot for the GPU batches' plots.

Each lab's bench_lab.cpp is built as labNN_bench from the implementation LAB_IMPL picks (the
solutions in an instructor's tree, the starters in a student's: a student times their own code),
in build/bench-<impl>, a build compiled for this machine's CPU (-march=native).
Every benchmark reports the bytes of K and V it must read (bytes/s) and a `tokens` counter; the
same program times BM_BaselineRead, a plain streaming read of the same bytes, so each figure is
also a fraction of this machine's own read bandwidth. On a GPU, a CUDA lab times each kernel
against a read-only kernel over the same bytes in the same run (pa/bench.hpp
time_against_roofline: the counter `roofline_pct`, and the series BM_Gpu*ReadRoofline), over
decode batches named by their shape (seqs × tokens, heads/kv heads); those are tabled and drawn
per batch, with the H100 targets of labs 06 and 07 beside them. Results land in
build/bench/labNN.json (Google Benchmark's own file, every repetition); the token sweeps' numbers
in build/bench/bench_labNN.json (book_data: per series and size the median, min and max GB/s and
every repetition's value, with the machine, the date and the command), and their plot, drawn from
that file by the book's own code (docs/pictures/book_bench.py), in build/bench/labNN.svg; the GPU
batches' plot (gnuplot) in labNN_batches.svg. --book also copies bench_labNN.json into
docs/figures/bench/, from which the book draws the chapters' plots when it is built.

On a machine shared with other work one run of a benchmark is one sample of a noisy quantity:
--repetitions N runs each benchmark N times (Google Benchmark's --benchmark_repetitions, with
the repetitions of all benchmarks randomly interleaved, so that a burst of load on the machine
spreads over several series instead of hitting every repetition of one). The summary, the
targets and the plots then use each benchmark's median, and the summary prints the range
(min–max) of the N beside it; the plots draw the range as error bars. The default, one run, is
what CI runs: it proves that every benchmark builds and runs, and measures nothing."""
from __future__ import annotations

import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from labkit import build as cmake
from labkit.labs import Lab, has_solutions, labs, pick
from labkit.paths import ROOT, build_dir, shown

OUT = build_dir("bench")
BOOK = ROOT / "docs" / "figures" / "bench"


def machine() -> str:
    """The CPU model and core count, e.g. "AMD EPYC 7B13, 2 cores"."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    model = re.sub(r"\s+", " ", model)
    return f"{model}, {os.cpu_count()} cores"


def native_flags() -> str:
    """-march=native when the compiler takes it (GCC 12 then warns falsely inside its AVX-512
    headers under Eigen, hence the second flag), else nothing."""
    probe = subprocess.run(["c++", "-march=native", "-x", "c++", "-E", "-", "-o", os.devnull],
                           input="", capture_output=True, text=True)
    return "-march=native -Wno-maybe-uninitialized" if probe.returncode == 0 else ""


def series_of(name: str) -> str:
    return name.split("/")[0]


def is_yardstick(series: str) -> bool:
    """A series that measures the machine, not a lab's code: the CPU baselines (BM_Baseline*)
    and the GPU read rooflines (BM_Gpu*ReadRoofline); the plots draw them dashed."""
    return series.startswith("BM_Baseline") or (series.startswith("BM_Gpu")
                                                and series.endswith("Roofline"))


def load(path: Path) -> tuple[list[dict], dict]:
    """The iteration runs of a Google Benchmark JSON file, and its context."""
    report = json.loads(path.read_text())
    runs = [b for b in report.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
    return runs, report.get("context", {})


# Fields of a Google Benchmark run that number or count the runs rather than measure anything.
BOOKKEEPING = {"family_index", "per_family_instance_index", "repetitions", "repetition_index",
               "threads", "iterations"}


def medians(runs: list[dict]) -> list[dict]:
    """One run per benchmark. A benchmark repeated (--benchmark_repetitions: several iteration
    runs of one name) becomes one run whose times, rates and counters are the median of its
    repetitions', with `repetitions` (how many) and `spread` (field -> (min, max)) added; a
    benchmark run once is left as it is, and so is a repetition that errored (it says why)."""
    groups: dict[str, list[dict]] = {}
    for r in runs:
        groups.setdefault(r.get("run_name", r["name"]), []).append(r)
    out = []
    for name, group in groups.items():
        failed = [r for r in group if r.get("error_occurred")]
        if len(group) == 1 or failed:
            out.append(failed[0] if failed else group[0])
            continue
        merged = dict(group[0])
        merged["name"] = name
        merged["repetitions"] = len(group)
        merged["spread"] = {}
        for key, value in group[0].items():
            if key in BOOKKEEPING or isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            values = [r[key] for r in group if isinstance(r.get(key), (int, float))]
            merged[key] = statistics.median(values)
            merged["spread"][key] = (min(values), max(values))
        out.append(merged)
    return out


def spread(run: dict, key: str) -> tuple[float, float] | None:
    """(min, max) of `key` over a benchmark's repetitions, or None for a single run."""
    return run.get("spread", {}).get(key)


def seconds_range(run: dict) -> tuple[float, float] | None:
    """(fastest, slowest) wall time of a benchmark's repetitions, in seconds."""
    r = spread(run, "real_time")
    return (seconds({**run, "real_time": r[0]}), seconds({**run, "real_time": r[1]})) if r else None


def gbps_range(run: dict) -> tuple[float, float] | None:
    r = spread(run, "bytes_per_second")
    return (r[0] / 1e9, r[1] / 1e9) if r else None


def time_ratio(num: dict, den: dict) -> str:
    """num's time over den's, as "1.32x": the ratio of the medians; after repetitions, in
    brackets the range it can take given both ranges (num's fastest over den's slowest, to
    num's slowest over den's fastest): wide on a noisy machine, and honestly so."""
    text = f"{seconds(num) / seconds(den):.2f}x"
    a, b = seconds_range(num), seconds_range(den)
    if a or b:
        a, b = a or (seconds(num),) * 2, b or (seconds(den),) * 2
        text += f" ({a[0] / b[1]:.2f}–{a[1] / b[0]:.2f})"
    return text


def rate_ratio(num: dict, den: dict) -> str:
    """num's GB/s over den's (over the same bytes: den's time over num's), as "1.32x", with
    the range both ranges allow after repetitions, as time_ratio gives it."""
    text = f"{gbps(num) / gbps(den):.2f}x"
    a, b = gbps_range(num), gbps_range(den)
    if a or b:
        a, b = a or (gbps(num),) * 2, b or (gbps(den),) * 2
        text += f" ({a[0] / b[1]:.2f}–{a[1] / b[0]:.2f})"
    return text


def seconds(run: dict) -> float:
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[run.get("time_unit", "ns")]
    return run["real_time"] * scale


def gbps(run: dict) -> float | None:
    b = run.get("bytes_per_second")
    return b / 1e9 if b else None


BATCH = re.compile(r"/seqs:(\d+)/tokens:(\d+)/heads:(\d+)/kv_heads:(\d+)")


def batch_of(run: dict) -> tuple[int, int, int, int] | None:
    """(seqs, tokens, heads, kv_heads) of a run over a decode batch (the GPU series of labs
    05-07, named ".../seqs:S/tokens:T/heads:H/kv_heads:K"); None for a run of a token sweep."""
    m = BATCH.search(run["name"])
    return tuple(int(g) for g in m.groups()) if m else None


def batch_label(batch: tuple[int, int, int, int]) -> str:
    """"16 × 4096, 32/32": sequences × tokens each, query heads / kv heads."""
    seqs, tokens, heads, kv_heads = batch
    return f"{seqs} × {tokens}, {heads}/{kv_heads}"


def by_series(runs: list[dict]) -> dict[str, dict[float, dict]]:
    """series -> tokens -> run, for the runs of a token sweep (that did not error and have a
    `tokens` counter). Runs over decode batches are left to by_batch: two batches may share a
    token count (16 × 4096 and 64 × 4096), so tokens cannot key them. A series whose runs repeat
    a token count sweeps something else (lab 05's launch cost per sequence sweeps `seqs` at 16
    tokens) and is left out too: its own summary lines describe it."""
    table: dict[str, dict[float, dict]] = defaultdict(dict)
    repeated: set[str] = set()
    for r in runs:
        if r.get("error_occurred") or "tokens" not in r or batch_of(r):
            continue
        series = series_of(r["name"])
        if r["tokens"] in table[series]:
            repeated.add(series)
        table[series][r["tokens"]] = r
    return {s: pts for s, pts in table.items() if s not in repeated}


def by_batch(runs: list[dict]) -> dict[tuple[int, int, int, int], dict[str, dict]]:
    """batch -> series -> run, for the runs over decode batches, in the order they ran (errors
    included: a series that skipped a batch says why in the table)."""
    table: dict[tuple[int, int, int, int], dict[str, dict]] = {}
    for r in runs:
        b = batch_of(r)
        if b:
            table.setdefault(b, {})[series_of(r["name"])] = r
    return table


# The GPU targets of labs 06 and 07 on an H100, as their chapters give them (\ref lab_06_design,
# \ref lab_07_design): series -> (seqs, tokens, heads, kv_heads) -> least % of the same-run read
# roofline. They are judged only where the GPU is an H100; elsewhere they are shown, not judged.
H100_TARGETS: dict[str, dict[str, dict[tuple[int, int, int, int], float]]] = {
    "06": {"BM_GpuPagedAttentionV2": {(1, 16384, 32, 32): 75, (4, 8192, 32, 32): 75,
                                      (16, 4096, 32, 32): 80}},
    "07": {"BM_GpuGqaDecode": {(64, 4096, 32, 4): 85, (128, 2048, 32, 8): 85,
                               (1, 16384, 32, 8): 80, (1, 65536, 32, 8): 80,
                               (16, 4096, 32, 32): 75}},
}


def gpu_name() -> str | None:
    """The first GPU's name as nvidia-smi gives it ("NVIDIA H100 80GB HBM3"), or None."""
    if shutil.which("nvidia-smi") is None:
        return None
    done = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                          capture_output=True, text=True)
    names = done.stdout.strip().splitlines() if done.returncode == 0 else []
    return names[0].strip() if names else None


# ---- what each lab's figures mean ------------------------------------------------------------

def targets(lab: str, runs: list[dict], gpu: str | None = None) -> list[tuple[str, str, bool | None]]:
    """(what, figure, met?) lines for the summary; met is None where there is no target, or
    where the target is an H100's and `gpu` (the GPU that ran, if known) is not one."""
    t = by_series(runs)
    out: list[tuple[str, str, bool | None]] = []
    base = t.get("BM_BaselineRead", {})

    def ratio_at(series: str, tokens: float) -> float | None:
        r, b = t.get(series, {}).get(tokens), base.get(tokens)
        return gbps(r) / gbps(b) if r and b and gbps(r) and gbps(b) else None

    if t.get("BM_GatherShuffled") and t.get("BM_ReadContiguous"):
        top = max(set(t["BM_GatherShuffled"]) & set(t["BM_ReadContiguous"]))
        # From the rates, like the table: Google Benchmark derives them from CPU time unless a
        # series asks for wall time, and on a loaded machine the two differ several times over.
        out.append((f"gather tax at {int(top)} tokens (shuffled table / contiguous time)",
                    rate_ratio(t["BM_ReadContiguous"][top], t["BM_GatherShuffled"][top]), None))
    if t.get("BM_PagedOnlineAttention"):
        top = max(t["BM_PagedOnlineAttention"])
        r = ratio_at("BM_PagedOnlineAttention", top)
        if r is not None:  # no target: compare with the reference's share on the same machine
            out.append((f"paged online streaming at {int(top)} tokens / baseline read",
                        f"{100 * r:.0f}%", None))
        r = ratio_at("BM_DenseAttention", top)
        if r is not None:
            out.append((f"dense (score row) at {int(top)} tokens / baseline read", f"{100 * r:.0f}%",
                        None))
    if t.get("BM_PartitionedOneThread") and t.get("BM_PartitionedTwoThreads"):
        one, two = t["BM_PartitionedOneThread"], t["BM_PartitionedTwoThreads"]
        common = sorted(set(one) & set(two))
        speedup = {n: seconds(one[n]) / seconds(two[n]) for n in common}
        top = common[-1]
        out.append((f"2 threads vs 1 at {int(top)} tokens", time_ratio(one[top], two[top]),
                    speedup[top] >= 1.6))
        r1, r2 = t.get("BM_BaselineRead", {}).get(top), t.get("BM_BaselineReadTwoThreads", {}).get(top)
        if r1 and r2:
            out.append((f"reference: 2-thread / 1-thread plain read at {int(top)} tokens",
                        time_ratio(r1, r2), None))
        crossover = next((n for i, n in enumerate(common)
                          if all(speedup[m] > 1.0 for m in common[i:])), None)
        out.append(("crossover: 2 threads faster from", f"{int(crossover)} tokens"
                    if crossover else "never in this range", None))
    shared = [r for r in runs if series_of(r["name"]) == "BM_CascadeShared"
              and not r.get("error_occurred")]
    dense = {r.get("tokens"): r for r in runs if series_of(r["name"]) == "BM_CascadeDense"
             and not r.get("error_occurred")}
    # The 6x saving in rows is held at the longest prefix only: a short prefix cannot reach it
    # by construction (lab 03's chapter works out 4.5 at 512 tokens).
    longest = max((r.get("tokens", 0) for r in shared), default=0)
    for r in shared:
        d = dense.get(r.get("tokens"))
        if d and r.get("key_rows"):
            rows = d["key_rows"] / r["key_rows"]
            out.append((f"cascade, {int(r['tokens'])}-token contexts: key rows dense / shared",
                        f"{rows:.1f}x ({int(d['key_rows'])} / {int(r['key_rows'])}), "
                        f"time {time_ratio(d, r)}",
                        rows >= 6 if r.get("tokens", 0) == longest else None))
    # The runs over decode batches (timed against the same-run read roofline, pa/bench.hpp
    # time_against_roofline; above 100 % the benchmark itself fails) are in print_batches' table;
    # here, only what is held against a target.
    on_h100 = gpu is not None and "H100" in gpu
    batches = by_batch(runs)
    for series, wanted in H100_TARGETS.get(lab, {}).items():
        for batch, least in wanted.items():
            r = batches.get(batch, {}).get(series)
            if not r or r.get("error_occurred") or "roofline_pct" not in r:
                continue
            out.append((f"{series[3:]} at {batch_label(batch)}: target on an H100 ≥ {least:.0f}%",
                        f"{r['roofline_pct']:.0f}%", r["roofline_pct"] >= least if on_h100 else None))
    # Lab 06's last target holds on any GPU: splitting never makes a batch slower than v1.
    if lab == "06":
        for batch, row in batches.items():
            v1, v2 = row.get("BM_GpuPagedAttentionV1"), row.get("BM_GpuPagedAttentionV2")
            if v1 and v2 and not v1.get("error_occurred") and not v2.get("error_occurred"):
                out.append((f"v2 time / v1 time at {batch_label(batch)}",
                            f"{seconds(v2) / seconds(v1):.2f}x", seconds(v2) <= seconds(v1)))
    for r in runs:
        if r.get("error_occurred"):
            continue
        if series_of(r["name"]) in ("BM_EmulatorBarrierRound", "BM_BaselineNoBarrierRound") \
                and "round" in r:
            out.append((f"{r['name'][3:]}: one 128-thread round", f"{r['round'] * 1e6:.2f} µs",
                        None))
        if series_of(r["name"]) == "BM_EmulatorLaunchPerSequence" and "per_seq" in r:
            out.append((f"{r['name'][3:]}: per sequence", f"{r['per_seq'] * 1e6:.0f} µs", None))
    return out


# ---- reporting -------------------------------------------------------------------------------

def print_batches(runs: list[dict]) -> None:
    """The runs over decode batches as a table: a row per batch, a column per series, each cell
    "GB/s (% of the same-run read roofline)", or why the series skipped that batch."""
    batches = by_batch(runs)
    if not batches:
        return
    names = sorted({s for row in batches.values() for s in row}, key=lambda s: (is_yardstick(s), s))
    width = max(24, *(len(n) - 3 for n in names))
    print(f"  {'batch (seqs × tokens, heads/kv)':<32}" + "".join(f"  {n[3:]:>{width}}" for n in names))
    for batch, row in batches.items():
        cells = []
        for n in names:
            r = row.get(n)
            if r is None:
                cell = ""
            elif r.get("error_occurred"):
                cell = "skipped"
            else:
                g = gbps(r)
                cell = f"{g:.0f} GB/s" if g else f"{seconds(r) * 1e6:.1f} µs"
                if "roofline_pct" in r:
                    cell += f" ({r['roofline_pct']:3.0f}%)"
            cells.append(f"  {cell:>{width}}")
        print(f"  {batch_label(batch):<32}" + "".join(cells))
    print("  (GB/s of K and V read; in brackets: the same-run read roofline's time over the "
          "series' own)")


def print_summary(lab: Lab, runs: list[dict], gpu: str | None = None) -> list[tuple[str, str, bool | None]]:
    print(f"\nLab {lab.number} — {lab.title}")
    errors = [r for r in runs if r.get("error_occurred")]
    for r in errors:
        print(f"  {r['name']}: skipped: {r.get('error_message', '')}")
    t = by_series(runs)
    base = t.get("BM_BaselineRead", {})
    names = sorted(t, key=lambda s: (is_yardstick(s), s))
    repeated = max((r.get("repetitions", 1) for pts in t.values() for r in pts.values()), default=1)
    width = 36 if repeated > 1 else 24
    if names:
        print(f"  {'tokens':>8}  " + "  ".join(f"{n[3:]:>{width}}" for n in names))
        for n_tok in sorted({k for s in t.values() for k in s}):
            cells = []
            for s in names:
                r = t[s].get(n_tok)
                if not r:
                    cells.append(f"{'':>{width}}")
                    continue
                g, g_range = gbps(r), gbps_range(r)
                b = base.get(n_tok)
                ratio = f" ({100 * g / gbps(b):3.0f}%)" if g and b and gbps(b) else ""
                if g:
                    cell = f"{g:.2f} GB/s" + (f" [{g_range[0]:.2f}–{g_range[1]:.2f}]"
                                              if g_range else "")
                else:
                    cell = f"{seconds(r) * 1e6:.1f} µs"
                cells.append(f"{cell + ratio:>{width}}")
            print(f"  {int(n_tok):>8}  " + "  ".join(cells))
        print("  (GB/s of K and V read" + (f": the median of {repeated} runs, in square "
                                           f"brackets their range (min–max)" if repeated > 1
                                           else "") +
              "; in brackets: the fraction of BM_BaselineRead at that size)")
    print_batches(runs)
    lines = targets(lab.number, runs, gpu)
    for what, figure, met in lines:
        flag = "" if met is None else ("  [target met]" if met else "  [target NOT met]")
        print(f"  {what}: {figure}{flag}")
    missed = [what for what, _, met in lines if met is False]
    # The CPU labs' one speed target (lab 03's two threads) is what the design aims for on two
    # free cores; a busy or smaller machine can miss it with correct code (the chapters'
    # measurements pages give the reference's figures). The cascade's row count at its longest
    # prefix is no speed: any correct code meets it.
    if lab.number not in H100_TARGETS and missed and not any(w.startswith("cascade") for w in missed):
        print("  (A CPU target is the design's aim on two free cores. A busy or smaller machine can\n"
              "   miss it with correct code: compare with the reference's figures on the chapter's\n"
              "   measurements page. Whether your code is right is for the tests to say.)")
    return lines


# ---- the token sweeps' data and plots ----------------------------------------------------------

def swept(runs: list[dict]) -> dict[str, dict[float, dict]]:
    """The series of a token sweep that the plots draw: by_series' series with more than one
    size and a rate at every size. Lab 03's cascade batches are left out: they are two unrelated
    shapes whose GB/s count different rows, so the summary compares their times instead."""
    return {s: pts for s, pts in by_series(runs).items()
            if len(pts) > 1 and all(gbps(r) for r in pts.values())
            and not s.startswith("BM_Cascade")}


def kv_bytes_per_token(raw: list[dict]) -> int | None:
    """The K and V bytes a series reads per token of context: each run's bytes (its rate times
    its time) over its `tokens`, the value most runs give. A series that reads another amount
    per token (lab 03's cascade counts the shared prefix once) is outvoted."""
    counts: dict[int, int] = defaultdict(int)
    for r in raw:
        if r.get("error_occurred") or not r.get("bytes_per_second") or not r.get("tokens"):
            continue
        total = r["bytes_per_second"] * seconds(r)
        counts[round(total / r["tokens"] / 8) * 8] += 1  # whole doubles: timer noise rounds off
    return max(counts, key=counts.get) if counts else None


def data_caches(context: dict) -> list[dict]:
    """The machine's data caches past L1, as Google Benchmark's context reports them: level,
    size in bytes, and how many cores share one."""
    return [{"level": c["level"], "size": c["size"], "num_sharing": c.get("num_sharing", 1)}
            for c in context.get("caches", [])
            if c.get("level", 0) >= 2 and c.get("type") in ("Unified", "Data")]


def book_data(lab: Lab, raw: list[dict], meta: dict, context: dict | None = None) -> dict:
    """The data file of a lab's token-sweep plot (docs/figures/bench/bench_labNN.json after
    --book): `meta` (machine, date, command, repetitions, ...), the machine's caches and the K and
    V bytes per token (so the plot can mark where K and V outgrow a cache), then per series and
    token count the median, min and max GB/s of the repetitions, as medians() reduces them for
    the console (what the plot draws), and `raw`, every repetition's GB/s in the order they ran.
    `raw` are the iteration runs of load(), `context` its context."""
    reps: dict[str, list[float]] = defaultdict(list)
    for r in raw:
        if not r.get("error_occurred") and r.get("bytes_per_second"):
            reps[r.get("run_name", r["name"])].append(r["bytes_per_second"] / 1e9)
    series = {}
    for s, pts in sorted(swept(medians(raw)).items(), key=lambda kv: (is_yardstick(kv[0]), kv[0])):
        points = []
        for n, r in sorted(pts.items()):
            median = gbps(r)
            low, high = gbps_range(r) or (median, median)
            points.append({"tokens": int(n), "median": round(median, 4), "min": round(low, 4),
                           "max": round(high, 4),
                           "raw": [round(v, 4) for v in reps[r.get("run_name", r["name"])]]})
        series[s] = {"yardstick": is_yardstick(s), "points": points}
    return {"lab": lab.number, "title": lab.title, **meta, "unit": "GB/s of K and V read",
            "caches": data_caches(context or {}), "kv_bytes_per_token": kv_bytes_per_token(raw),
            "series": series}


def write_data(path: Path, data: dict) -> None:
    """`data` as JSON, a point to a line, so that a diff of two runs reads point by point."""
    text = json.dumps(data, indent=1, ensure_ascii=False)
    # A list of numbers on one line, then one line per point: {"tokens": 1024, ..., "raw": [...]},
    # and one per cache: {"level": 3, "size": ..., "num_sharing": 2}.
    text = re.sub(r"\[\n\s+((?:[-\d.,\s]|null)*?)\n\s*\]",
                  lambda m: "[" + re.sub(r"\s*\n\s*", " ", m.group(1)) + "]", text)
    text = re.sub(r"\{\n\s+(\"(?:tokens|level)\"[^{}]*?)\n\s*\}",
                  lambda m: "{" + re.sub(r"\s*\n\s*", " ", m.group(1)) + "}", text)
    path.write_text(text + "\n", encoding="utf-8")


def draw(data: dict, svg: Path) -> bool:
    """The token-sweep plot of a data file, drawn by the book's own code
    (docs/pictures/book_bench.py, which also draws the book's copies when the book is built)."""
    pictures = ROOT / "docs" / "pictures"
    if not (pictures / "book_bench.py").exists():
        return False
    if str(pictures) not in sys.path:
        sys.path.insert(0, str(pictures))
    import book_bench
    svg.write_text(book_bench.figure(data).svg(), encoding="utf-8")
    return True


def plot_batches(lab: Lab, runs: list[dict], svg: Path, where: str) -> bool:
    """One SVG of bars: for each decode batch, each kernel's % of the same-run read roofline (the
    roofline itself is the 100 % line), a group of bars per batch; the H100 targets as marks."""
    batches = by_batch(runs)
    kernels = sorted({s for row in batches.values() for s, r in row.items()
                      if "roofline_pct" in r and not is_yardstick(s)})
    if not kernels or shutil.which("gnuplot") is None:
        return False
    data = svg.with_suffix(".dat")
    goals = H100_TARGETS.get(lab.number, {})
    rows = []
    for batch, row in batches.items():
        cells = [f"{row[k]['roofline_pct']:.2f}" if k in row and not row[k].get("error_occurred")
                 and "roofline_pct" in row[k] else "-" for k in kernels]
        goal = next((g[batch] for g in goals.values() if batch in g), None)
        rows.append(f'"{batch_label(batch)}" ' + " ".join(cells) + f" {goal if goal else '-'}")
    data.write_text("# batch  " + "  ".join(k[3:] for k in kernels) + "  H100-target\n"
                    + "\n".join(rows) + "\n")
    bars = [f"'{data}' using {i + 2}:xtic(1) title '{k[3:]}'" if i == 0
            else f"'' using {i + 2} title '{k[3:]}'" for i, k in enumerate(kernels)]
    n, width = len(kernels), 1.0 / (len(kernels) + 1)
    # The target of a batch, drawn as a short black bar across its group of bars.
    marks = [f"'{data}' using ($0):{n + 2}:({(n * width) / 2}) with xerrorbars lc rgb '#000000' "
             f"pt 0 lw 3 title 'target on an H100'"] if goals else []
    script = f"""
set terminal svg size 820,500 dynamic font 'sans,12' background '#ffffff'
set termoption noenhanced
set output '{svg}'
set title "Lab {lab.number} — {lab.title}\\n{where}"
set ylabel '% of the same-run read roofline'
set yrange [0:105]
set ytics 10
set grid ytics
set datafile missing '-'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics rotate by 20 right scale 0
set key below horizontal
plot {', '.join(bars + marks)}
"""
    done = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if done.returncode != 0:
        print(f"  gnuplot failed: {done.stderr.strip()[:300]}")
        return False
    return True


def main(args) -> int:
    impl = args.impl or ("solution" if has_solutions() else "starter")
    with_bench = [lab for lab in labs() if (lab.folder() / "bench_lab.cpp").exists()]
    picked = pick(args.labs) if args.labs else with_bench
    if getattr(args, "ptxas", False):
        from labkit import ptxas
        return ptxas.main(picked, impl)
    start = time.monotonic()
    # A build of its own, compiled for this machine's CPU: a benchmark measures what this
    # machine can do (with the portable flags Eigen stays on SSE2, and a float64 dot product
    # runs at half the speed of a plain read). Every file of it gets the same flags, so no two
    # files disagree on Eigen's vector width or alignment.
    build = build_dir(f"bench-{impl}")
    flags = native_flags()
    # The GPU benchmarks run only where there is a GPU; elsewhere nvcc's long build buys nothing.
    options = {} if os.environ.get("PA_CUDA") else {"PA_CUDA": "ON" if cmake.gpu_present() else "OFF"}
    with cmake.lock(build, "bench"):
        return run(args, impl, picked, with_bench, build, flags, options, start)


def run(args, impl: str, picked: list[Lab], with_bench: list[Lab], build: Path, flags: str,
        options: dict[str, str], start: float) -> int:
    cmake.configure(build, {**options, "LAB_IMPL": impl, "PA_BENCHMARKS": "ON", "CMAKE_CXX_FLAGS": flags,
                              "CMAKE_CUDA_FLAGS": f"-Xcompiler={flags.replace(' ', ',')}"
                              if flags else ""})
    OUT.mkdir(parents=True, exist_ok=True)
    gpu = gpu_name()
    # The plots name the machine and the build, not the day: a figure in the book stays the
    # same figure until it is measured again. The date goes to the console and the data files.
    built = ({"solution": "reference solution", "starter": "your starter"}.get(impl, impl)
             + (", -march=native" if flags else ""))
    where = f"{machine()}{f' + {gpu}' if gpu else ''} · {built}"
    repetitions = getattr(args, "repetitions", 1) or 1
    # The console shows each benchmark's aggregates (mean, median, stddev, cv); the JSON keeps
    # every repetition, which medians() reduces.
    repeat = [f"--benchmark_repetitions={repetitions}", "--benchmark_enable_random_interleaving=true",
              "--benchmark_display_aggregates_only=true"] if repetitions > 1 else []
    if repetitions > 1:
        where += f" · median of {repetitions} runs"
    dated = f"{where} · {time.strftime('%Y-%m-%d')}"
    # How busy the machine was when the timing began: on a shared machine the figures are only
    # as good as that, so it is printed and kept with them.
    loads = [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else []
    load_avg = ", ".join(f"{x:.2f}" for x in loads) or "?"
    # What the data files keep of the run, beside its numbers: enough to read and to repeat it.
    meta = {"machine": machine(), "gpu": gpu, "build": built, "date": time.strftime("%Y-%m-%d"),
            "min_time": args.min_time, "repetitions": repetitions, "load_average": loads,
            "command": shlex.join(["tools/lab", *sys.argv[1:]]), "where": where}
    print(f"tools/lab bench: {dated} · load average {load_avg} (1, 5, 15 min)")
    status = 0
    summary = []
    for lab in picked:
        if lab not in with_bench:
            print(f"Lab {lab.number} has no bench_lab.cpp")
            continue
        ok, output = cmake.build_target(build, f"{lab.target}_bench")
        if not ok:
            print(f"Lab {lab.number}: the benchmark does not build: "
                  f"{cmake.first_compiler_error(output)}")
            status = 1
            continue
        result = OUT / f"{lab.target}.json"
        done = cmake.run([build / f"{lab.target}_bench", "--benchmark_format=console",
                            f"--benchmark_out={result}", "--benchmark_out_format=json",
                            f"--benchmark_min_time={args.min_time}", *repeat])
        if done.returncode != 0 or not result.exists():
            print(f"Lab {lab.number}: the benchmark program failed ({done.returncode})")
            status = 1
            continue
        raw, context = load(result)
        runs = medians(raw)
        lines = print_summary(lab, runs, gpu)
        summary += [(lab, *line) for line in lines]
        # The token sweeps: their numbers, every repetition's included, into a data file, and
        # the plot drawn from that file, as the book draws its copy (docs/pictures/book_bench.py).
        data = book_data(lab, raw, meta, context)
        if data["series"]:
            data_file = OUT / f"bench_{lab.target}.json"
            write_data(data_file, data)
            print(f"  data: {shown(data_file)}")
            if draw(data, OUT / f"{lab.target}.svg"):
                print(f"  plot: {shown(OUT / f'{lab.target}.svg')}")
            if args.book:
                BOOK.mkdir(parents=True, exist_ok=True)
                shutil.copy(data_file, BOOK / data_file.name)
        # The GPU batches: a gnuplot plot (not in the book).
        svg = OUT / f"{lab.target}_batches.svg"
        if plot_batches(lab, runs, svg, where):
            print(f"  plot: {shown(svg)}")
    print(f"\n== summary ({dated})")
    for lab, what, figure, met in summary:
        flag = "" if met is None else ("target met" if met else "target NOT met")
        print(f"  lab {lab.number}  {what:<70} {figure:<28} {flag}")
    print(f"tools/lab bench: {time.monotonic() - start:.0f} s; results in {shown(OUT)}/")
    return status

