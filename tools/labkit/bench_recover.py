"""Reads the numbers back out of a token-sweep plot that `tools/lab bench --book` drew with
gnuplot (the plots of labs 01-04 committed up to commit f0e0175, before the book drew them from
docs/figures/bench/*.json), and writes them as the book's bench data (bench.book_data's format).

    for n in 1 2 3 4; do
      git show f0e0175:docs/figures/bench/bench_lab0$n.svg > /tmp/bench_lab0$n.svg
    done
    PYTHONPATH=tools python3 -m labkit.bench_recover docs/figures/bench /tmp/bench_lab0*.svg

The runs behind those plots were not kept, only the plots. Each plot draws, per series and token
count, the median of the repetitions as a point and their range (min, max) as an error bar; the
yardsticks (BM_Baseline*) are lines through their medians alone. gnuplot writes every coordinate
to 0.01 px, about 0.003 GB/s on these plots' scales, and the plot's data file held 4 decimals: a
value is read back as the 4-decimal number nearest to the middle of its pixel, and check() draws
the recovered data again with the gnuplot code that drew the originals (plot_gnuplot, below) and
compares the two files byte for byte (it needs gnuplot 5.4, which drew them).

Each of the four plots came back byte for byte, and every figure of the chapters' tables
(Measured, labs 01-04: 205 medians and range ends) agrees with the recovered numbers to its
rounding."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from labkit import bench
from labkit.labs import Lab

PLOT = re.compile(r'<g id="gnuplot_plot_\d+" ><title>([^<]+)</title>'
                  r'(.*?)(?=<g id="gnuplot_plot_|\Z)', re.S)
YTIC = re.compile(r"d='M([\d.]+),([\d.]+) L[\d.]+,[\d.]+ M[\d.]+,[\d.]+ L[\d.]+,[\d.]+  '/>"
                  r'\t<g transform="translate\([\d.]+,[\d.]+\)" [^>]*text-anchor="end">\s*'
                  r'<text><tspan font-family="sans" >\s*([\d.]+)</tspan>')
XTIC = re.compile(r"d='M([\d.]+),[\d.]+ L[\d.]+,[\d.]+ M[\d.]+,[\d.]+ L[\d.]+,[\d.]+  '/>"
                  r'\t<g transform="translate\([\d.]+,[\d.]+\)" [^>]*text-anchor="middle">\s*'
                  r'<text><tspan font-family="sans" >([\d,]+)</tspan>')
TITLE = re.compile(r'text-anchor="middle">\s*<text>([^<]+)</text>')
MOVE = re.compile(r"([ML])([\d.]+),([\d.]+)")


def read_plot(svg: str) -> dict:
    """{"title", "where", "series": {name: {tokens: (median, low, high) or (median,)}}} of a
    gnuplot token-sweep plot, in GB/s."""
    yt = [(float(y), float(v)) for _, y, v in YTIC.findall(svg)]
    (y0, v0), (y1, v1) = yt[0], yt[-1]
    per = (y0 - y1) / (v1 - v0)                        # px per GB/s
    xs = {float(x): int(t.replace(",", "")) for x, t in XTIC.findall(svg)}

    def value(py: float) -> float:
        return round(v0 + (y0 - py) / per, 4)

    series = {}
    for name, body in PLOT.findall(svg):
        d = re.search(r"<path stroke='[^']*' (?:stroke-dasharray='[^']*' )? d='([^']*)'",
                      body).group(1)
        pts = [(c, float(x), float(y)) for c, x, y in MOVE.findall(d)]
        pts = [p for p in pts if p[2] <= y0 + 0.01]    # leave out the legend's sample, below
        line = []                                       # the polyline through the medians
        for i, (c, x, y) in enumerate(pts):
            if i and c == "M":
                break
            line.append((x, y))
        bars = pts[len(line):]
        points = {}
        for x, y in line:
            points[xs[x]] = (value(y),)
        # Each error bar: M x,low L x,high, then its two ticks (M, L each): 6 moves.
        for k in range(0, len(bars), 6):
            (_, x, lo), (_, _, hi) = bars[k], bars[k + 1]
            points[xs[x]] = points[xs[x]] + (value(lo), value(hi))
        series[name] = points
    titles = TITLE.findall(svg)
    return {"title": titles[-2], "where": titles[-1], "series": series}


# What the four recovered runs were, from docs/figures/bench/machine.txt and Appendix C
# (docs/measurements.md, "The CPU benchmarks of labs 01 to 04").
RUN = {"machine": "AMD EPYC, 2 cores", "gpu": None, "build": "solutions, -march=native",
       "date": "2026-11-27", "min_time": 0.2, "repetitions": 5}
META = {
    "01": {**RUN, "load_average": [1.24, 0.88, 1.42],
           "command": "tools/lab bench --repetitions 5 --book"},
    "04": {**RUN, "load_average": [0.80, 2.45, None],
           "command": "tools/lab bench 04 --repetitions 5 --book"},
}
META["02"] = META["03"] = META["01"]
COMMIT = "f0e0175"  # the last commit with the gnuplot plots in docs/figures/bench/


def to_data(plot: dict, lab: str) -> dict:
    """The book's data file (bench.book_data's format) for a recovered plot."""
    series = {}
    for name, points in plot["series"].items():
        full = f"BM_{name}"
        rows = []
        for tokens, v in sorted(points.items()):
            rows.append({"tokens": tokens, "median": v[0],
                         "min": v[1] if len(v) > 1 else None,
                         "max": v[2] if len(v) > 1 else None, "raw": None})
        series[full] = {"yardstick": bench.is_yardstick(full), "points": rows}
    title = plot["title"].split(" — ", 1)[1]
    meta = META[lab]
    return {"lab": lab, "title": title, **meta, "where": plot["where"],
            "note": " ".join([
                f"Recovered from the plot the run drew (docs/figures/bench/bench_lab{lab}.svg",
                f"at commit {COMMIT}) by tools/labkit/bench_recover.py: the run's own results",
                "were not kept, so no repetition's value is known (raw: null). Each median, min",
                "and max is read back to about 0.003 GB/s; drawn again by the code that drew it,",
                "these numbers give the same plot byte for byte. The yardsticks' ranges were not",
                "drawn (min, max: null); the chapter's table gives some of them, rounded.",
                *(["The load average over 15 minutes was not recorded."] if lab == "04" else []),
                "The command is as Appendix C gives it."]),
            "unit": "GB/s of K and V read", "series": series}


def check(data: dict, original: bytes) -> list[str]:
    """Draws `data` with the gnuplot code that drew the original and compares the files:
    [] when they are the same byte for byte, else the first lines that differ."""
    with tempfile.TemporaryDirectory() as tmp:
        svg = Path(tmp) / "x.svg"
        lab = Lab(data["lab"], "", data["title"])
        plot_gnuplot(lab, runs_of(data), svg, data["where"])
        drawn = svg.read_bytes()
    if drawn == original:
        return []
    a, b = drawn.decode().splitlines(), original.decode().splitlines()
    return [f"  drawn: {x}\n  was:   {y}" for x, y in zip(a, b) if x != y][:5] or ["lengths differ"]


# ---- the gnuplot code that drew the recovered plots -------------------------------------------
# tools/labkit/bench.py's plot() as it was at commit f0e0175, kept verbatim (only its helpers
# now named through `bench.`) so that check() can redraw the recovered data the way the originals
# were drawn.

# gnuplot dash types of the yardsticks that share a plot: dashes, dash-dot, dots.
YARDSTICK_DASHES = {"BM_BaselineRead": "2", "BM_BaselineCopy": "(12,4,2,4)",
                    "BM_BaselineReadTwoThreads": "(3,3)"}


def plot_gnuplot(lab: Lab, runs: list[dict], svg: Path, where: str) -> bool:
    """One SVG: GB/s against tokens (log scale), a line per series, the baselines dashed, the
    legend below the plot so that the curves get the figure's whole width, padded (`height`) so
    that its first row keeps clear of the x axis's title. Only sweeps over
    context length are drawn: lab 03's cascade batches are two unrelated shapes whose GB/s count
    different rows, so the summary compares their times instead."""
    t = bench.by_series(runs)
    t = {s: pts for s, pts in t.items() if len(pts) > 1 and all(bench.gbps(r) for r in pts.values())
         and not s.startswith("BM_Cascade")}
    if not t or shutil.which("gnuplot") is None:
        return False
    data = svg.with_suffix(".dat")
    blocks, plots = [], []
    for i, (s, pts) in enumerate(sorted(t.items(), key=lambda kv: (bench.is_yardstick(kv[0]), kv[0]))):
        # tokens, median GB/s, then the range of the repetitions (the median twice after one run).
        rows = []
        for n, r in sorted(pts.items()):
            low, high = bench.gbps_range(r) or (bench.gbps(r), bench.gbps(r))
            rows.append(f"{int(n)} {bench.gbps(r):.4f} {low:.4f} {high:.4f}")
        blocks.append(f"# {s}\n" + "\n".join(rows))
        ranged = any(bench.gbps_range(r) for r in pts.values())
        grey = "#444444" if s in ("BM_BaselineRead", "BM_GpuReadRoofline") else "#999999"
        # Each yardstick its own dash, so two greys never look alike.
        dash = YARDSTICK_DASHES.get(s, "2")
        if bench.is_yardstick(s):
            style, columns = f"lines dashtype {dash} lw 2 lc rgb '{grey}'", "1:2"
        elif ranged:  # the median joined by lines, each point's range as an error bar
            style, columns = "yerrorlines lw 2 pt 7", "1:2:3:4"
        else:
            style, columns = "linespoints lw 2 pt 7", "1:2"
        plots.append(f"'{data}' index {i} using {columns} with {style} title '{s[3:]}'")
    data.write_text("\n\n\n".join(blocks) + "\n")
    # The token counts as the book writes them, with thousands separators (16,384).
    tokens = sorted({int(n) for pts in t.values() for n in pts})
    xtics = ", ".join(f'"{n:,}" {n}' for n in tokens)
    script = f"""
set terminal svg size 820,520 dynamic font 'sans,13' background '#ffffff'
set output '{svg}'
set title "Lab {lab.number} — {lab.title}\\n{where}" noenhanced
set xlabel 'tokens (context length)'
set ylabel 'GB/s of K and V read'
set logscale x 2
set xtics ({xtics})
set xrange [{tokens[0] / 1.08}:{tokens[-1] * 1.08}]
set grid
set key below horizontal maxcols 3 width 2 height 1.5 noenhanced
set yrange [0:*]
plot {', '.join(plots)}
"""
    done = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if done.returncode != 0:
        print(f"  gnuplot failed: {done.stderr.strip()[:300]}")
        return False
    return True




def runs_of(data: dict) -> list[dict]:
    """The runs (in medians()' form: the median, with `spread` holding the range) that a data
    file describes: what plot_gnuplot draws from."""
    runs = []
    for name, s in data["series"].items():
        for p in s["points"]:
            run = {"name": f"{name}/{p['tokens']}", "run_name": f"{name}/{p['tokens']}",
                   "tokens": p["tokens"], "bytes_per_second": p["median"] * 1e9}
            if p.get("min") is not None:
                run["spread"] = {"bytes_per_second": (p["min"] * 1e9, p["max"] * 1e9)}
                run["repetitions"] = data.get("repetitions")
            runs.append(run)
    return runs


def main(argv: list[str]) -> int:
    """`OUT_DIR SVG...`: recovers each plot into OUT_DIR/bench_labNN.json and checks it."""
    out, svgs = Path(argv[0]), [Path(a) for a in argv[1:]]
    status = 0
    for svg in svgs:
        lab = re.search(r"lab(\d\d)", svg.name).group(1)
        original = svg.read_bytes()
        data = to_data(read_plot(original.decode()), lab)
        diff = check(data, original)
        print(f"{svg}: " + ("redrawn byte for byte" if not diff else "DIFFERS\n" + "\n".join(diff)))
        status |= bool(diff)
        bench.write_data(out / f"bench_lab{lab}.json", data)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
