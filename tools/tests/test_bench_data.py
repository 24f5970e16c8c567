"""Unit tests of the benchmark plots' data: tools/lab bench's data file (labkit.bench book_data,
write_data) and the plot the book draws from it (docs/pictures/book_bench.py), the committed
data files of labs 01-04 included. The drawn medians are read back from the SVG through its own
tick labels, so a plot that does not draw its file's numbers fails here.
Run: python3 -m unittest discover -s tools/tests."""
from __future__ import annotations

import json
import math
import re
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from labkit import bench  # noqa: E402
from labkit.labs import Lab  # noqa: E402
from labkit.paths import ROOT  # noqa: E402

sys.path.insert(0, str(ROOT / "docs" / "pictures"))
import book_bench  # noqa: E402

LAB = Lab("01", "01-paged-gather", "Paged gather")


def gb_run(series: str, tokens: int, gbps: float, rep: int) -> dict:
    """One iteration run of a Google Benchmark JSON file, as load() returns it."""
    name = f"{series}/{tokens}"
    return {"name": name, "run_name": name, "run_type": "iteration", "repetitions": 3,
            "repetition_index": rep, "iterations": 10, "real_time": 1e9 / gbps,
            "cpu_time": 1e9 / gbps, "time_unit": "ns", "bytes_per_second": gbps * 1e9,
            "tokens": float(tokens)}


def sample_runs() -> list[dict]:
    """Three repetitions of a lab series and a yardstick at two sizes, interleaved as
    --benchmark_enable_random_interleaving runs them; a cascade series the plot leaves out."""
    runs = []
    table = {("BM_GatherShuffled", 1024): [30.0, 10.0, 20.0],
             ("BM_GatherShuffled", 4096): [5.5, 6.5, 6.0],
             ("BM_BaselineRead", 1024): [90.0, 100.0, 95.0],
             ("BM_BaselineRead", 4096): [40.0, 44.0, 42.0],
             ("BM_CascadeShared", 1024): [1.0, 2.0, 3.0],
             ("BM_CascadeShared", 4096): [1.0, 2.0, 3.0]}
    for rep in range(3):
        for (series, tokens), values in table.items():
            runs.append(gb_run(series, tokens, values[rep], rep))
    return runs


def drawn_medians(svg: str) -> list[tuple[float, float]]:
    """(x, GB/s) of every marker in the plot area of a drawn plot, the GB/s read back through
    the y axis's tick labels (a log scale: two labelled ticks fix it)."""
    ticks = [(float(y), float(v.replace(",", ""))) for y, v in re.findall(
        r'<text x="[\d.]+" y="([\d.]+)" font-size="\d+" text-anchor="end"[^>]*>([\d.,]+)</text>',
        svg)]
    (y0, v0), (y1, v1) = ticks[0], ticks[-1]
    per_decade = (y0 - y1) / (math.log10(v1) - math.log10(v0))

    def value(y: float) -> float:
        return 10 ** (math.log10(v0) + (y0 - y) / per_decade)

    top, bottom = book_bench.TOP, book_bench.TOP + book_bench.PLOT_H
    points = [(float(x), float(y)) for x, y in
              re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', svg)]
    points += [(float(x) + float(w) / 2, float(y) + float(w) / 2) for x, y, w in
               re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="[\d.]+" '
                          r'fill="#', svg)]
    points += [(float(x), (float(a) + float(b)) / 2) for x, a, b in
               re.findall(r'd="M([\d.]+),([\d.]+) L[\d.]+,[\d.]+ L[\d.]+,([\d.]+) L[\d.]+,[\d.]+ Z"',
                          svg)]
    return sorted((x, value(y)) for x, y in points if top <= y <= bottom)


def data_medians(data: dict) -> list[float]:
    return sorted(p["median"] for s in data["series"].values() if not s["yardstick"]
                  for p in s["points"])


class BookDataTest(unittest.TestCase):
    def setUp(self):
        self.meta = {"machine": "a CPU, 2 cores", "gpu": None, "build": "solutions",
                     "date": "2026-01-01", "min_time": 0.2, "repetitions": 3,
                     "load_average": [0.5, 0.4, 0.3], "command": "tools/lab bench 01 --book",
                     "where": "a CPU, 2 cores · solutions · median of 3 runs"}
        self.data = bench.book_data(LAB, sample_runs(), self.meta)

    def test_each_point_keeps_every_repetition_and_their_median_min_and_max(self):
        points = {(s, p["tokens"]): p for s, v in self.data["series"].items() for p in v["points"]}
        p = points[("BM_GatherShuffled", 1024)]
        self.assertEqual(p["raw"], [30.0, 10.0, 20.0])      # in the order they ran
        self.assertEqual((p["median"], p["min"], p["max"]), (20.0, 10.0, 30.0))
        self.assertEqual(points[("BM_BaselineRead", 4096)]["median"], 42.0)

    def test_the_file_says_what_ran_and_leaves_out_what_the_plot_does_not_draw(self):
        for key, value in self.meta.items():
            self.assertEqual(self.data[key], value)
        self.assertEqual((self.data["lab"], self.data["title"]), ("01", "Paged gather"))
        self.assertEqual(list(self.data["series"]), ["BM_GatherShuffled", "BM_BaselineRead"])
        self.assertFalse(self.data["series"]["BM_GatherShuffled"]["yardstick"])
        self.assertTrue(self.data["series"]["BM_BaselineRead"]["yardstick"])

    def test_written_file_reads_back_the_same_with_a_point_to_a_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "bench_lab01.json"
            bench.write_data(path, self.data)
            text = path.read_text(encoding="utf-8")
        self.assertEqual(json.loads(text), self.data)
        self.assertIn('{"tokens": 1024, "median": 20.0, "min": 10.0, "max": 30.0, '
                      '"raw": [30.0, 10.0, 20.0]}', text)

    def test_plot_draws_the_files_medians(self):
        svg = book_bench.figure(self.data).svg()
        drawn = [v for _, v in drawn_medians(svg)]
        self.assertEqual(len(drawn), 2)
        for got, want in zip(sorted(drawn), data_medians(self.data)):
            self.assertAlmostEqual(got, want, delta=want * 0.005)

    def test_file_keeps_the_caches_past_l1_and_the_kv_bytes_per_token(self):
        context = {"caches": [{"type": "Data", "level": 1, "size": 32768, "num_sharing": 1},
                              {"type": "Instruction", "level": 1, "size": 32768, "num_sharing": 1},
                              {"type": "Unified", "level": 2, "size": 1 << 20, "num_sharing": 1},
                              {"type": "Unified", "level": 3, "size": 32 << 20, "num_sharing": 2}]}
        runs = sample_runs()
        for r in runs:  # 2 KiB a token (timer noise of a few bytes), the cascade 16 KiB
            per_token = 16384 if r["name"].startswith("BM_Cascade") else 2048 + r["repetition_index"]
            r["real_time"] = per_token * r["tokens"] / r["bytes_per_second"] * 1e9
        data = bench.book_data(LAB, runs, self.meta, context)
        self.assertEqual(data["caches"], [{"level": 2, "size": 1 << 20, "num_sharing": 1},
                                          {"level": 3, "size": 32 << 20, "num_sharing": 2}])
        self.assertEqual(data["kv_bytes_per_token"], 2048)

    def test_plot_rules_where_kv_fills_a_cache_within_the_plotted_sizes_only(self):
        data = dict(self.data, kv_bytes_per_token=2048,
                    caches=[{"level": 2, "size": 1 << 20, "num_sharing": 1},     # 512 tokens
                            {"level": 3, "size": 4 << 20, "num_sharing": 2}])    # 2,048 tokens
        svg = book_bench.figure(data).svg()
        self.assertIn("K and V fill the reported L3 (4 MiB, shared by 2 cores)", svg)
        self.assertNotIn("fill the L2", svg)
        marks = book_bench.cache_marks(data, [1024, 4096])
        self.assertEqual([m["tokens"] for m in marks], [2048])
        x = book_bench.Axes([1024, 4096], 1, 100).x(2048)
        self.assertIn(f'x1="{x:g}" y1="{book_bench.TOP:g}" x2="{x:g}"', svg)
        self.assertEqual(book_bench.cache_marks(self.data, [1024, 4096]), [])  # no caches known

    def test_plot_of_other_medians_fails_the_check(self):
        moved = json.loads(json.dumps(self.data))
        moved["series"]["BM_GatherShuffled"]["points"][0]["median"] = 25.0
        drawn = sorted(v for _, v in drawn_medians(book_bench.figure(moved).svg()))
        self.assertNotAlmostEqual(drawn[1], data_medians(self.data)[1], delta=0.5)


class CommittedPlotsTest(unittest.TestCase):
    """The book's data files, docs/figures/bench/bench_lab*.json, and their plots."""

    def files(self) -> list[Path]:
        files = sorted((ROOT / "docs" / "figures" / "bench").glob("bench_lab*.json"))
        self.assertTrue(files)
        return files

    def test_every_plot_draws_its_files_medians(self):
        for path in self.files():
            data = json.loads(path.read_text(encoding="utf-8"))
            with self.subTest(path.name):
                self.assertIn(path.stem, book_bench.FIGURES)
                drawn = [v for _, v in drawn_medians(book_bench.figure(data).svg())]
                want = data_medians(data)
                self.assertEqual(len(drawn), len(want))
                for got, w in zip(sorted(drawn), want):
                    self.assertAlmostEqual(got, w, delta=w * 0.005)

    def test_every_point_is_inside_its_range_and_says_what_is_known(self):
        for path in self.files():
            data = json.loads(path.read_text(encoding="utf-8"))
            for key in ("machine", "date", "command", "repetitions", "where", "series"):
                self.assertIn(key, data, path.name)
            for name, s in data["series"].items():
                for p in s["points"]:
                    if p["raw"] is None:  # a run whose repetitions were not kept says so
                        self.assertIn("not kept", data.get("note", ""), path.name)
                    else:
                        self.assertEqual(len(p["raw"]), data["repetitions"])
                    if p["min"] is not None:
                        self.assertLessEqual(p["min"], p["median"], (path.name, name, p))
                        self.assertLessEqual(p["median"], p["max"], (path.name, name, p))
                    elif not s["yardstick"]:
                        self.fail(f"{path.name}: {name} at {p['tokens']} has no range")


if __name__ == "__main__":
    unittest.main()
