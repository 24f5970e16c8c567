"""`tools/lab bench [NN ...]`: run the labs' Google Benchmark programs, print what they show, and
plot them. Python 3 standard library, plus gnuplot for the plots.

Each lab's bench_lab.cpp is built as labNN_bench from the implementation LAB_IMPL picks (the
solutions in an instructor's tree, the starters in a student's: a student times their own code),
in build/bench-<impl>, a build compiled for this machine's CPU (-march=native).
Every benchmark reports the bytes of K and V it must read (bytes/s) and a `tokens` counter; the
same program times BM_BaselineRead, a plain streaming read of the same bytes, so each figure is
also a fraction of this machine's own read bandwidth. On a GPU, a CUDA lab times each kernel
against a read-only kernel over the same bytes in the same run (pa/bench.hpp
time_against_roofline: the counter `roofline_pct`, and the series BM_Gpu*ReadRoofline). Results land in build/bench/labNN.json,
plots in build/bench/labNN.svg; --book also copies the plots and a description of the machine
into docs/figures/bench/ for the chapters."""
from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
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


def shape_of(name: str) -> str:
    """A run's name after its series, without Google Benchmark's /manual_time tail:
    "/seqs:16/tokens:4096/heads:32/kv_heads:32"."""
    return re.sub(r"/(manual|real)_time$", "", name[len(series_of(name)):])


def load(path: Path) -> tuple[list[dict], dict]:
    """The iteration runs of a Google Benchmark JSON file, and its context."""
    report = json.loads(path.read_text())
    runs = [b for b in report.get("benchmarks", []) if b.get("run_type", "iteration") == "iteration"]
    return runs, report.get("context", {})


def seconds(run: dict) -> float:
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[run.get("time_unit", "ns")]
    return run["real_time"] * scale


def gbps(run: dict) -> float | None:
    b = run.get("bytes_per_second")
    return b / 1e9 if b else None


def by_series(runs: list[dict]) -> dict[str, dict[float, dict]]:
    """series -> tokens -> run, for runs that did not error and have a `tokens` counter. When a
    series has several runs at one token count (other shapes), the name keeps them apart."""
    table: dict[str, dict[float, dict]] = defaultdict(dict)
    for r in runs:
        if r.get("error_occurred") or "tokens" not in r:
            continue
        table[series_of(r["name"])][r["tokens"]] = r
    return table


# ---- what each lab's figures mean ------------------------------------------------------------

def targets(lab: str, runs: list[dict]) -> list[tuple[str, str, bool | None]]:
    """(what, figure, met?) lines for the summary; met is None where there is no target."""
    t = by_series(runs)
    out: list[tuple[str, str, bool | None]] = []
    base = t.get("BM_BaselineRead", {})

    def ratio_at(series: str, tokens: float) -> float | None:
        r, b = t.get(series, {}).get(tokens), base.get(tokens)
        return gbps(r) / gbps(b) if r and b and gbps(r) and gbps(b) else None

    if t.get("BM_GatherShuffled") and t.get("BM_ReadContiguous"):
        top = max(set(t["BM_GatherShuffled"]) & set(t["BM_ReadContiguous"]))
        tax = seconds(t["BM_GatherShuffled"][top]) / seconds(t["BM_ReadContiguous"][top])
        out.append((f"gather tax at {int(top)} tokens (shuffled table / contiguous time)",
                    f"{tax:.2f}x", None))
    if t.get("BM_PagedOnlineAttention"):
        top = max(t["BM_PagedOnlineAttention"])
        r = ratio_at("BM_PagedOnlineAttention", top)
        if r is not None:
            out.append((f"paged online streaming at {int(top)} tokens / baseline read",
                        f"{100 * r:.0f}%", r >= 0.5))
        r = ratio_at("BM_DenseAttention", top)
        if r is not None:
            out.append((f"dense (score row) at {int(top)} tokens / baseline read", f"{100 * r:.0f}%",
                        None))
    if t.get("BM_PartitionedOneThread") and t.get("BM_PartitionedTwoThreads"):
        one, two = t["BM_PartitionedOneThread"], t["BM_PartitionedTwoThreads"]
        common = sorted(set(one) & set(two))
        speedup = {n: seconds(one[n]) / seconds(two[n]) for n in common}
        top = common[-1]
        out.append((f"2 threads vs 1 at {int(top)} tokens", f"{speedup[top]:.2f}x",
                    speedup[top] >= 1.6))
        r1, r2 = t.get("BM_BaselineRead", {}).get(top), t.get("BM_BaselineReadTwoThreads", {}).get(top)
        if r1 and r2:
            out.append((f"reference: 2-thread / 1-thread plain read at {int(top)} tokens",
                        f"{seconds(r1) / seconds(r2):.2f}x", None))
        crossover = next((n for i, n in enumerate(common)
                          if all(speedup[m] > 1.0 for m in common[i:])), None)
        out.append(("crossover: 2 threads faster from", f"{int(crossover)} tokens"
                    if crossover else "never in this range", None))
    shared = [r for r in runs if series_of(r["name"]) == "BM_CascadeShared"
              and not r.get("error_occurred")]
    dense = {r.get("tokens"): r for r in runs if series_of(r["name"]) == "BM_CascadeDense"
             and not r.get("error_occurred")}
    for r in shared:
        d = dense.get(r.get("tokens"))
        if d and r.get("key_rows"):
            rows = d["key_rows"] / r["key_rows"]
            out.append((f"cascade, {int(r['tokens'])}-token contexts: key rows dense / shared",
                        f"{rows:.1f}x ({int(d['key_rows'])} / {int(r['key_rows'])}), "
                        f"time {seconds(d) / seconds(r):.2f}x", rows >= 6))
    # Every run timed against the same-run read roofline (pa/bench.hpp time_against_roofline),
    # whatever its lab: its bandwidth and its fraction of the roofline (above 100 % the
    # benchmark itself fails).
    for r in runs:
        if r.get("error_occurred") or "roofline_pct" not in r:
            continue
        rate = f"{gbps(r):.0f} GB/s, " if gbps(r) else ""
        out.append((f"{series_of(r['name'])[3:]}{shape_of(r['name'])}",
                    f"{rate}{r['roofline_pct']:.0f}% of the same-run read roofline", None))
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

def print_summary(lab: Lab, runs: list[dict]) -> list[tuple[str, str, bool | None]]:
    print(f"\nLab {lab.number} — {lab.title}")
    errors = [r for r in runs if r.get("error_occurred")]
    for r in errors:
        print(f"  {r['name']}: skipped: {r.get('error_message', '')}")
    t = by_series(runs)
    base = t.get("BM_BaselineRead", {})
    names = sorted(t, key=lambda s: (is_yardstick(s), s))
    if names:
        print(f"  {'tokens':>8}  " + "  ".join(f"{n[3:]:>24}" for n in names))
        for n_tok in sorted({k for s in t.values() for k in s}):
            cells = []
            for s in names:
                r = t[s].get(n_tok)
                if not r:
                    cells.append(f"{'':>24}")
                    continue
                g = gbps(r)
                b = base.get(n_tok)
                ratio = f" ({100 * g / gbps(b):3.0f}%)" if g and b and gbps(b) else ""
                cells.append(f"{(f'{g:.2f} GB/s' if g else f'{seconds(r) * 1e6:.1f} µs') + ratio:>24}")
            print(f"  {int(n_tok):>8}  " + "  ".join(cells))
        print("  (GB/s of K and V read; in brackets: the fraction of BM_BaselineRead at that size)")
    lines = targets(lab.number, runs)
    for what, figure, met in lines:
        flag = "" if met is None else ("  [target met]" if met else "  [target NOT met]")
        print(f"  {what}: {figure}{flag}")
    return lines


def plot(lab: Lab, runs: list[dict], svg: Path, where: str) -> bool:
    """One SVG: GB/s against tokens (log scale), a line per series, the baselines dashed."""
    t = by_series(runs)
    t = {s: pts for s, pts in t.items() if len(pts) > 1 and all(gbps(r) for r in pts.values())}
    if not t or shutil.which("gnuplot") is None:
        return False
    data = svg.with_suffix(".dat")
    blocks, plots = [], []
    for i, (s, pts) in enumerate(sorted(t.items(), key=lambda kv: (is_yardstick(kv[0]), kv[0]))):
        blocks.append(f"# {s}\n" + "\n".join(f"{int(n)} {gbps(r):.4f}" for n, r in sorted(pts.items())))
        grey = "#444444" if s in ("BM_BaselineRead", "BM_GpuReadRoofline") else "#999999"
        style = (f"lines dashtype 2 lw 2 lc rgb '{grey}'" if is_yardstick(s)
                 else "linespoints lw 2 pt 7")
        plots.append(f"'{data}' index {i} using 1:2 with {style} title '{s[3:]}'")
    data.write_text("\n\n\n".join(blocks) + "\n")
    script = f"""
set terminal svg size 820,460 dynamic font 'sans,12' background '#ffffff'
set output '{svg}'
set title "Lab {lab.number} — {lab.title}\\n{where}" noenhanced
set xlabel 'tokens (context length)'
set ylabel 'GB/s of K and V read'
set logscale x 2
set format x '%.0f'
set grid
set key outside right top noenhanced
set yrange [0:*]
plot {', '.join(plots)}
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
    where = f"{machine()} · {impl}s{', -march=native' if flags else ''} · {time.strftime('%Y-%m-%d')}"
    print(f"tools/lab bench: {where}")
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
                            f"--benchmark_min_time={args.min_time}"])
        if done.returncode != 0 or not result.exists():
            print(f"Lab {lab.number}: the benchmark program failed ({done.returncode})")
            status = 1
            continue
        runs, _ = load(result)
        lines = print_summary(lab, runs)
        summary += [(lab, *line) for line in lines]
        svg = OUT / f"{lab.target}.svg"
        if plot(lab, runs, svg, where):
            print(f"  plot: {shown(svg)}")
            if args.book:
                BOOK.mkdir(parents=True, exist_ok=True)
                shutil.copy(svg, BOOK / f"bench_{svg.name}")
    if args.book:
        BOOK.mkdir(parents=True, exist_ok=True)
        (BOOK / "machine.txt").write_text(where + "\n")
    print(f"\n== summary ({where})")
    for lab, what, figure, met in summary:
        flag = "" if met is None else ("target met" if met else "target NOT met")
        print(f"  lab {lab.number}  {what:<70} {figure:<28} {flag}")
    print(f"tools/lab bench: {time.monotonic() - start:.0f} s; results in {shown(OUT)}/")
    return status
