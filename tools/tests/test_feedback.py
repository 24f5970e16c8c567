"""Unit tests of what the grader tells a student: failure text read whole from GoogleTest's output
(the emulator's multi-line report included), sanitizer reports as statuses at the student's line,
the choice of the test `watch` shows first, the table wrapped and never cut, the lock that lets
one tools/lab at a time build a folder, the release's check for what it does not contain, and
the benchmark summary's roofline lines. No build needed.
Run: python3 -m unittest discover -s tools/tests"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from labkit import bench, grading, release, reports, testrun  # noqa: E402
from labkit import build as cmake  # noqa: E402
from labkit.labs import Lab  # noqa: E402
from labkit.paths import ROOT  # noqa: E402

LAB = Lab("05", "05-cuda-paged-v1", "CUDA paged attention (v1)")

# What the emulator reports for a shuffle that only some lanes reach (common/simt/src/report.cpp),
# as GoogleTest prints an exception: the last clause is the one a fixed-width cut used to lose.
STUCK = ("simt: block (0, 0, 0) is stuck: warp 0: lanes 1-31 wait in __shfl_xor_sync "
         "(starter.cpp:230) for lane 0, which waits in __syncthreads (starter.cpp:225). Every "
         "lane named in a mask must reach the same warp collective.\nWhere each thread is:\n"
         "  thread 0: at __syncthreads (starter.cpp:225)\n"
         "  threads 1-31: in __shfl_xor_sync (starter.cpp:230)\n"
         "  threads 32-127: exited")
GTEST_STUCK = (
    "[ RUN      ] PagedAttentionV1.OneTokenReturnsItsValueExactly/Emulator\n"
    "unknown file: Failure\n"
    f'C++ exception with description "{STUCK}" thrown in the test body.\n'
    "Google Test trace:\n"
    "/w/labs/05-cuda-paged-v1/test_lab.cpp:109: float32 head_size 64 block_size 16 heads 4/2\n"
    "[  FAILED  ] PagedAttentionV1.OneTokenReturnsItsValueExactly/Emulator (3 ms)\n")

TOLERANCE = ("worst element sequence 2, head 1, dimension 62: reference 0.014939848468423438, "
             "kernel 1.8876953125, |diff| 1.8727554640315767, tolerance 0.00011494 "
             "(atol 0.0001, rtol 0.001)")
GTEST_TWO = (
    "/w/labs/05-cuda-paged-v1/test_lab.cpp:103: Failure\n"
    "Value of: AllClose(expected, got, atol, rtol, labels)\n"
    f"  Actual: false ({TOLERANCE})\n"
    "Expected: true\n"
    "Google Test trace:\n"
    "/w/labs/05-cuda-paged-v1/test_lab.cpp:109: float16 head_size 96 block_size 32 heads 4/2\n"
    "/w/labs/05-cuda-paged-v1/test_lab.cpp:103: Failure\n"
    "Expected equality of these values:\n  meta.positions.size()\n    Which is: 44\n  14\n"
    "[  FAILED  ] S.T (1 ms)\n")

ASAN = textwrap.dedent("""\
    =================================================================
    ==4242==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6310000 at pc 0x55 bp 0x7f sp 0x7f
    READ of size 8 at 0x6310000107f8 thread T0
        #0 0x55d in Eigen::internal::evaluator<X>::coeff(long) const /usr/include/eigen3/Eigen/src/Core/CoreEvaluators.h:262:12
        #1 0x55e in pa::varlen_batch::attn_paged(Eigen::Matrix<double, -1, -1, 1, -1, -1> const&, int, int) /w/labs/04-varlen-batch/starter.cpp:97:23
        #2 0x55f in AttnPaged_MixedDecodeAndPrefillChunkInOneCall_Test::TestBody() /w/labs/04-varlen-batch/test_lab.cpp:300:5

    0x6310000107f8 is located 2056 bytes to the left of 40960-byte region [0x631000010800,0x63100001a800)
    allocated by thread T0 here:
        #0 0x7f in malloc (/lib/x86_64-linux-gnu/libasan.so.8+0xd9)
        #1 0x55a in make_pool /w/labs/04-varlen-batch/test_lab.cpp:40:3
    SUMMARY: AddressSanitizer: heap-buffer-overflow starter.cpp:97:23 in attn_paged
    """)
UBSAN = ("/w/labs/02-online-softmax/starter.cpp:51:14: runtime error: signed integer overflow: "
         "2147483647 + 1 cannot be represented in type 'int'\n"
         "    #0 0x55 in pa::online::merge(int) /w/labs/02-online-softmax/starter.cpp:51:14\n"
         "    #1 0x56 in main /w/labs/02-online-softmax/test_lab.cpp:9:3\n")


class FailureText(unittest.TestCase):
    def test_a_hint_prints_its_formulas_as_plain_symbols(self):
        # The chapters' tables set formulas with KaTeX; the terminal gets them as plain text.
        hint = ("weigh partition p by its denom times \\f$e^{m_p - M}\\f$, the ratio "
                "\\f$e^{\\,s_t - s_{t'}}\\f$, out \\f$\\sum_p \\mathrm{acc}_p / \\sum_p "
                "\\mathrm{denom}_p\\f$, \\f$\\mathtt{block\\_table}[\\lfloor t/B \\rfloor]\\f$ "
                "→ \\ref lab_07_merge")
        self.assertEqual(
            grading.plain(hint, {"lab_07_merge": "The fused merge"}),
            "weigh partition p by its denom times e^(m_p - M), the ratio e^(s_t - s_t'), out "
            "Σ_p acc_p / Σ_p denom_p, block_table[⌊ t/B ⌋] → § The fused merge")

    def test_the_emulators_report_is_read_whole(self):
        found = testrun.failures(GTEST_STUCK)
        self.assertEqual(len(found), 1)
        self.assertEqual(found[0].message, STUCK)
        self.assertEqual(found[0].trace, ["float32 head_size 64 block_size 16 heads 4/2"])
        headline = testrun.first_mismatch(GTEST_STUCK)
        self.assertTrue(headline.startswith("simt: block (0, 0, 0) is stuck: warp 0: lanes 1-31"))
        self.assertIn("for lane 0, which waits in __syncthreads (starter.cpp:225)", headline)
        self.assertTrue(headline.endswith("— in float32 head_size 64 block_size 16 heads 4/2"))
        self.assertEqual(found[0].more_lines, 4)   # "Where each thread is:" and three lines
        self.assertEqual(testrun.classify("***Failed", GTEST_STUCK)[0], "failed")

    def test_every_failure_its_tolerance_and_its_configuration(self):
        found = testrun.failures(GTEST_TWO)
        self.assertEqual([f.structured for f in found], [True, False])
        self.assertEqual(found[0].headline,
                         TOLERANCE + " — in float16 head_size 96 block_size 32 heads 4/2")
        self.assertEqual(found[1].headline, "Expected equality of these values: "
                         "meta.positions.size() Which is: 44 14")

    def test_the_tests_own_words_follow_the_checks(self):
        out = ("x.cpp:9: Failure\nValue of: BitIdentical(a, b)\n  Actual: false (actual holds nan "
               "at [0, 0] (first non-finite element))\nExpected: true\nsequence 0 head 3\n"
               "[  FAILED  ] S.T (0 ms)\n")
        self.assertEqual(testrun.first_mismatch(out), "actual holds nan at [0, 0] (first "
                         "non-finite element) — sequence 0 head 3")
        self.assertEqual(grading.failure_kind("failed", testrun.first_mismatch(out)), "NaN")

    def test_sanitizer_reports_are_statuses_at_the_students_line(self):
        self.assertEqual(testrun.sanitizer_report(ASAN),
                         ("read outside a buffer", "labs/04-varlen-batch/starter.cpp:97 in "
                          "attn_paged: 2056 bytes before a 40960-byte buffer"))
        self.assertEqual(testrun.classify("***Exception: SegFault", "x\n" + ASAN)[0],
                         "read outside a buffer")
        self.assertEqual(testrun.sanitizer_report(ASAN.replace("READ of", "WRITE of"))[0],
                         "wrote outside a buffer")
        shared = (ASAN.replace("make_pool /w/labs/04-varlen-batch/test_lab.cpp:40:3",
                               "simt::detail::DynamicShared::DynamicShared(unsigned long) "
                               "/w/common/simt/src/launch.cpp:72:9"))
        self.assertEqual(testrun.sanitizer_report(shared)[1],
                         "labs/04-varlen-batch/starter.cpp:97 in attn_paged: 2056 bytes before "
                         "the dynamic shared memory of attn_paged (40960 bytes: what "
                         "SIMT_DYNAMIC_SHARED hands out)")
        self.assertEqual(testrun.sanitizer_report(UBSAN),
                         ("undefined behaviour", "labs/02-online-softmax/starter.cpp:51 in merge: "
                          "signed integer overflow: 2147483647 + 1 cannot be represented in "
                          "type 'int'"))
        leak = ("==1==ERROR: LeakSanitizer: detected memory leaks\n\nDirect leak of 8 byte(s) "
                "in 1 object(s) allocated from:\n    #0 0x7f in operator new(unsigned long) "
                "/usr/lib/libasan.so\n    #1 0x55 in f() /w/labs/01-x/starter.cpp:12:3\n")
        self.assertEqual(testrun.sanitizer_report(leak),
                         ("leaked memory", "allocated at labs/01-x/starter.cpp:12 in f"))
        self.assertIsNone(testrun.sanitizer_report(GTEST_TWO))

    def test_a_read_of_an_unmapped_page_is_named_at_the_students_line(self):
        # Block -1 of a pool that is a mapping of its own: no red zone, a SEGV (as on CI's machine).
        segv = ("==7==ERROR: AddressSanitizer: SEGV on unknown address 0x628ffffffa10 (pc 0x55 "
                "bp 0x7f sp 0x7f T0)\n==7==The signal is caused by a READ memory access.\n"
                "    #0 0x55 in Eigen::internal::unary_evaluator<X>::coeff(long, long) const "
                "/usr/include/eigen3/Eigen/src/Core/IndexedView.h:192\n"
                "    #1 0x55 in pa::varlen_batch::attn_paged(Eigen::Matrix<double> const&, int) "
                "/w/labs/04-varlen-batch/starter.cpp:98\n"
                "    #2 0x55 in run_attn /w/labs/04-varlen-batch/test_lab.cpp:182\n\n"
                "AddressSanitizer can not provide additional info.\n")
        self.assertEqual(testrun.sanitizer_report(segv),
                         ("read an invalid address", "labs/04-varlen-batch/starter.cpp:98 in "
                          "attn_paged: an address on no mapped page, outside every buffer (SEGV)"))
        null = segv.replace("READ memory access.", "READ memory access.\n==7==Hint: address "
                            "points to the zero page.")
        self.assertEqual(testrun.sanitizer_report(null)[1],
                         "labs/04-varlen-batch/starter.cpp:98 in attn_paged: a null pointer (SEGV)")


def result(key: str, status: str, detail: str = "") -> testrun.TestResult:
    return testrun.TestResult(f"lab05.{key}/Emulator", status, detail=detail)


class FirstToFix(unittest.TestCase):
    """The rule on results shaped like the catalogue's mutants of lab 05 (the real check runs
    over every mutant in tools/lab mutants and check)."""

    def setUp(self):
        self.table = grading.read_table(LAB)
        keys = list(self.table)
        self.layout = next(k for k in keys if "ReshapeThenAttend" in k)
        self.schedules = next(k for k in keys if "SchedulesAgree" in k)
        self.nan_hint = next(k for k in keys if self.table[k].points
                             and "NaN" in self.table[k].hint)

    def pick(self, results):
        chosen = grading.first_to_fix(results, self.table)
        return chosen.key if chosen else None

    def test_an_emulator_error_comes_first(self):
        stuck = testrun.classify("***Failed", GTEST_STUCK)
        results = [result(self.layout, "failed", "kernel holds nan at sequence 0"),
                   result(self.schedules, *stuck)]
        self.assertEqual(self.pick(results), self.schedules)
        self.assertEqual(grading.failure_kind(*stuck), "emulator error")

    def test_schedules_that_disagree_are_a_race(self):
        race = "first difference at sequence 0, head 0, dimension 0: forward schedule 1 vs " \
               "reverse schedule 2"
        results = [result(self.layout, "failed", TOLERANCE), result(self.schedules, "failed", race)]
        self.assertEqual(self.pick(results), self.schedules)
        # ...but the same words in an answer the schedules agree on are a wrong value.
        agreed = "worst element ...: reference 1, kernel (the same bits under all three " \
                 "schedules: not a race) 2"
        self.assertEqual(grading.failure_kind("failed", agreed), "wrong value")

    def test_nan_output_shows_the_nan_hint(self):
        results = [result(k, "failed", "kernel holds -nan at sequence 0, head 0") for k in
                   (self.layout, self.schedules, self.nan_hint)]
        self.assertEqual(self.pick(results), self.nan_hint)

    def test_otherwise_the_chapters_order_and_a_sanitizer_above_all(self):
        keys = [k for k in self.table if self.table[k].points]
        results = [result(k, "failed", TOLERANCE) for k in reversed(keys)]
        self.assertEqual(self.pick(results), keys[0])
        results.append(result(keys[-1], "read outside a buffer", "labs/x/starter.cpp:3 in f"))
        self.assertEqual(self.pick(results), keys[-1])
        self.assertEqual(self.pick([result(keys[0], "not implemented", "f"),
                                    result(keys[1], "crashed", "SIGSEGV")]), keys[1])
        self.assertIsNone(self.pick([result(keys[0], "passed")]))


class CheckerFindings(unittest.TestCase):
    """The emulator's memory checker names a race or an access outside a buffer with the lines
    involved: that failure is shown first, with the hint of the step that owns the line, and the
    grade says it forbids full marks."""

    RACE = ("simt: race in gqa_decode_kernel, block (0, 0, 0): thread 5 (warp 0, lane 5) reads "
            "byte 64 of dynamic shared memory of gqa_decode_kernel (8192 bytes) at "
            "starter.cpp:7, which thread 40 (warp 1, lane 8) wrote at starter.cpp:4, with no "
            "barrier between them: a __syncthreads() between the two accesses orders them")

    def test_a_finding_comes_before_a_sanitizer_report_and_nan(self):
        table = grading.read_table(LAB)
        keys = [k for k in table if table[k].points]
        gtest = (f'unknown file: Failure\nC++ exception with description "{self.RACE}" thrown '
                 f'in the test body.\n[  FAILED  ] S.T (1 ms)\n')
        status, detail = testrun.classify("***Failed", gtest)
        self.assertEqual(grading.failure_kind(status, detail), "race or out of bounds")
        results = [result(keys[0], "read outside a buffer", "labs/x/starter.cpp:3 in f"),
                   result(keys[1], "failed", "kernel holds nan at sequence 0"),
                   result(keys[-1], status, detail)]
        self.assertEqual(grading.first_to_fix(results, table).key, keys[-1])
        self.assertFalse(grading.checker_finding("simt: block (0, 0, 0) is stuck"))

    def test_the_hint_is_the_step_that_owns_the_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            room = LAB.folder(root)
            room.mkdir(parents=True)
            (room / "README.md").write_text("# Lab {#lab_05}\n## What to implement "
                                            "{#lab_05_implement}\n")
            (room / "starter.cpp").write_text(
                "// TODO 1. The geometry\nint a;\n// TODO 2. The scores, then a barrier\n"
                "int b;\nint c;\n// TODO 3. The softmax\nint d;\n")
            hint = grading.checker_hint(LAB, self.RACE, root)
            # The race's two accesses are lines 7 (the read) and 4 (the write): the barrier that
            # orders them is missing after the earlier one, in the step that writes.
            self.assertIn("starter.cpp:4 lies in TODO 2 (The scores, then a barrier)", hint)
            self.assertIn("(§ What to implement)", hint)
            self.assertIn("which barrier orders the two accesses", hint)
            # An overrun is one access: the question is about its indices, not a barrier.
            overrun = grading.checker_hint(
                LAB, "simt: out of bounds in k, block (1, 0, 0): thread 3 (warp 0, lane 3) reads 4 "
                "bytes at starter.cpp:5, 8 bytes past the end of key_cache (64 bytes)", root)
            self.assertIn("starter.cpp:5 lies in TODO 2", overrun)
            self.assertIn("which of the indices in this access runs past the buffer", overrun)
            self.assertNotIn("which barrier", overrun)
            self.assertEqual(grading.checker_hint(LAB, "simt: race in k at other.cpp:3", root), "")

    def test_a_function_of_one_step_has_an_unnumbered_todo(self):
        # Lab 07's KvTile::copy is one step, "// TODO. Goal: ...": a race in it must not be
        # blamed on the last numbered TODO above it, which belongs to another kernel.
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            room = LAB.folder(root)
            room.mkdir(parents=True)
            (room / "README.md").write_text("# Lab {#lab_05}\n## What to implement "
                                            "{#lab_05_implement}\n")
            (room / "starter.cpp").write_text(
                "// TODO 4. The other kernel's last step\nint a;\n// TODO. Goal: the tile copy\n"
                "int b;\nint c;\nint d;\nint e;\n")
            hint = grading.checker_hint(LAB, self.RACE, root)
            self.assertIn("starter.cpp:4 lies in TODO (Goal: the tile copy)", hint)


class Table(unittest.TestCase):
    def test_long_failures_are_wrapped_whole_and_verbose_shows_every_line(self):
        g = grading.LabGrade(LAB, True, table=grading.read_table(LAB))
        fails = testrun.failures(GTEST_STUCK)
        key = next(iter(g.table))
        g.tests.append(grading.Graded(LAB, key, key + "/Emulator", "failed", fails[0].headline, 0,
                                      2, "a hint " * 30, 0.1, fails))
        for verbose in (False, True):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), mock.patch.dict(os.environ, {"COLUMNS": "80"}):
                reports.print_table([g], ROOT / "build" / "starter", verbose=verbose)
            text = out.getvalue()
            self.assertTrue(all(len(l) <= 80 for l in text.splitlines() if "/Emulator" not in l),
                            text)   # (only a test's name, one word, may not fit)
            flat = " ".join(text.split())
            self.assertIn("for lane 0, which waits in __syncthreads (starter.cpp:225). Every lane "
                          "named in a mask must reach the same warp collective.", flat)
            self.assertIn("Start with:", text)
            self.assertEqual("threads 32-127: exited" in text, verbose)
            if not verbose:
                self.assertIn("4 more lines: tools/lab grade 05 --verbose", flat)


class Lock(unittest.TestCase):
    def test_a_second_command_waits_and_says_for_whom(self):
        build = Path(tempfile.mkdtemp(prefix="pa-lock-")) / "starter"
        self.addCleanup(shutil.rmtree, build.parent, True)
        holder = subprocess.Popen(
            [sys.executable, "-c", "import sys, time; sys.path.insert(0, sys.argv[1]);"
             "from labkit import build; from pathlib import Path\n"
             "with build.lock(Path(sys.argv[2]), 'grade 04'):\n"
             "    print('held', flush=True); time.sleep(1.5)",
             str(ROOT / "tools"), str(build)], stdout=subprocess.PIPE, text=True)
        self.assertEqual(holder.stdout.readline().strip(), "held")
        said = []
        start = time.monotonic()
        with cmake.lock(build, "watch 04", said.append):
            waited = time.monotonic() - start
        holder.wait()
        holder.stdout.close()
        self.assertGreater(waited, 0.5)
        self.assertEqual(len(said), 1)
        self.assertRegex(said[0], r"waiting for tools/lab grade 04 \(pid \d+\) to finish with ")


class ReleaseMentions(unittest.TestCase):
    def test_what_the_release_lacks_is_named_with_its_line(self):
        out = Path(tempfile.mkdtemp(prefix="pa-mentions-"))
        self.addCleanup(shutil.rmtree, out)
        files = {
            "labs/01-x/README.md": "ok\n`solutions/01-x/solution.cpp`\n",
            "labs/01-x/bench_lab.cpp": "// cmake --preset solution && build\n",
            "docs/setup.md": "cmake --workflow --preset asan\ntools/lab grade --asan 04\n",
            "tools/labkit/labs.py": "root / 'solutions/'  # code, not prose\n",
            "CMakeLists.txt": "if(EXISTS solutions/)\n",
        }
        for rel, text in files.items():
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            (out / rel).write_text(text)
        found = release.unshipped_mentions(out)
        self.assertEqual([f.split(": mentions")[0] for f in found],
                         ["docs/setup.md:1", "labs/01-x/README.md:2", "labs/01-x/bench_lab.cpp:1"])
        self.assertIn("tools/lab grade --asan", found[0])


class BenchSummary(unittest.TestCase):
    @staticmethod
    def gpu_run(series, batch, pct, microseconds, error=False):
        seqs, tokens, heads, kv_heads = batch
        name = f"{series}/seqs:{seqs}/tokens:{tokens}/heads:{heads}/kv_heads:{kv_heads}/manual_time"
        if error:
            return {"name": name, "error_occurred": True, "error_message": "context too long"}
        run = {"name": name, "tokens": tokens, "seqs": seqs, "real_time": microseconds,
               "time_unit": "us", "bytes_per_second": 1e12 / microseconds}
        if pct is not None:
            run["roofline_pct"] = pct
        return run

    def test_batches_with_one_token_count_are_kept_apart(self):
        # 16 × 4096 (multi-head) and 64 × 4096 (grouped-query) share tokens=4096: keyed by
        # tokens, one would hide the other in the table, the targets and the plot.
        runs = [self.gpu_run("BM_GpuPagedAttentionV2", (16, 4096, 32, 32), 81.0, 10),
                self.gpu_run("BM_GpuPagedAttentionV2", (64, 4096, 32, 4), 40.0, 30),
                self.gpu_run("BM_GpuReadRoofline", (16, 4096, 32, 32), None, 8)]
        self.assertEqual(set(bench.by_batch(runs)), {(16, 4096, 32, 32), (64, 4096, 32, 4)})
        self.assertEqual(bench.by_series(runs), {})
        self.assertEqual(bench.batch_label((64, 4096, 32, 4)), "64 × 4096, 32/4")
        # A series that sweeps something else at one token count is no token sweep either.
        per_seq = [{"name": f"BM_EmulatorLaunchPerSequence/seqs:{n}/tokens:16", "tokens": 16,
                    "real_time": 1, "time_unit": "us", "bytes_per_second": 1e9} for n in (1, 4)]
        sweep = [{"name": f"BM_BaselineRead/{n}", "tokens": n, "real_time": 1, "time_unit": "us",
                  "bytes_per_second": 1e9} for n in (64, 128)]
        self.assertEqual(list(bench.by_series(per_seq + sweep)), ["BM_BaselineRead"])

    def test_h100_targets_are_judged_only_on_an_h100(self):
        runs = [self.gpu_run("BM_GpuPagedAttentionV2", (16, 4096, 32, 32), 79.0, 10),
                self.gpu_run("BM_GpuPagedAttentionV2", (1, 16384, 32, 32), 76.0, 10),
                self.gpu_run("BM_GpuPagedAttentionV1", (16, 4096, 32, 32), 60.0, 9),
                self.gpu_run("BM_GpuPagedAttentionV1", (1, 65536, 32, 32), None, 0, error=True),
                self.gpu_run("BM_GpuPagedAttentionV2", (1, 65536, 32, 32), 77.0, 40)]
        judged = {w: met for w, _, met in bench.targets("06", runs, "NVIDIA H100 80GB HBM3")}
        self.assertIs(judged["GpuPagedAttentionV2 at 16 × 4096, 32/32: target on an H100 ≥ 80%"],
                      False)
        self.assertIs(judged["GpuPagedAttentionV2 at 1 × 16384, 32/32: target on an H100 ≥ 75%"],
                      True)
        # v2 slower than v1 where v1 runs fails on any GPU; where v1 skipped there is no ratio.
        self.assertIs(judged["v2 time / v1 time at 16 × 4096, 32/32"], False)
        self.assertFalse(any("65536" in w and "v1" in w for w in judged))
        elsewhere = {w: met for w, _, met in bench.targets("06", runs, "NVIDIA A100-SXM4-80GB")}
        self.assertIsNone(elsewhere["GpuPagedAttentionV2 at 16 × 4096, 32/32: target on an H100 ≥ 80%"])
        self.assertTrue(bench.is_yardstick("BM_GpuReadRoofline"))
        self.assertTrue(bench.is_yardstick("BM_BaselineRead"))
        self.assertFalse(bench.is_yardstick("BM_GpuPagedAttentionV1"))

    def test_the_two_thread_read_is_a_reference(self):
        def run(series, n, t):
            return {"name": f"{series}/{n}", "tokens": n, "real_time": t, "time_unit": "ms",
                    "bytes_per_second": 1e9}
        runs = [run("BM_PartitionedOneThread", 4096, 2.0), run("BM_PartitionedTwoThreads", 4096, 1.0),
                run("BM_BaselineRead", 4096, 1.0), run("BM_BaselineReadTwoThreads", 4096, 0.6)]
        what = [w for w, _, _ in bench.targets("03", runs)]
        self.assertIn("reference: 2-thread / 1-thread plain read at 4096 tokens", what)
        self.assertFalse(any("ceiling" in w for w in what))

    def test_no_cpu_target_the_reference_cannot_meet(self):
        # Lab 02's streaming share is printed, not judged: the reference reaches about a third of
        # the read on the book's VM. Lab 03's 6x cascade saving is judged at the longest prefix
        # only; a 512-token prefix gives 4.5x by construction and is printed without a target.
        def run(series, n, **extra):
            return {"name": f"{series}/{n}", "tokens": n, "real_time": 1.0, "time_unit": "ms",
                    "bytes_per_second": extra.pop("rate", 1e9), **extra}
        lab02 = [run("BM_PagedOnlineAttention", 65536, rate=0.35e9), run("BM_BaselineRead", 65536)]
        judged = {w: met for w, _, met in bench.targets("02", lab02)}
        self.assertIsNone(judged["paged online streaming at 65536 tokens / baseline read"])
        lab03 = [run("BM_CascadeShared", 512, key_rows=1000),
                 run("BM_CascadeDense", 512, key_rows=4500),
                 run("BM_CascadeShared", 2048, key_rows=1000),
                 run("BM_CascadeDense", 2048, key_rows=5000)]
        judged = {w: met for w, _, met in bench.targets("03", lab03)}
        self.assertIsNone(judged["cascade, 512-token contexts: key rows dense / shared"])
        self.assertIs(judged["cascade, 2048-token contexts: key rows dense / shared"], False)

    def test_repetitions_become_their_median_and_range(self):
        # Five repetitions of one benchmark (as --benchmark_repetitions writes them to the JSON)
        # and one benchmark run once: the summary uses the median, not the mean a slow outlier
        # would drag, and keeps the range.
        def rep(name, ms, i):
            return {"name": name, "run_name": name, "run_type": "iteration", "repetitions": 5,
                    "repetition_index": i, "iterations": 10 + i, "tokens": 4096,
                    "real_time": ms, "time_unit": "ms", "bytes_per_second": 8e9 / ms}
        runs = [rep("BM_GatherShuffled/4096", ms, i) for i, ms in enumerate([2.0, 2.2, 9.0, 2.1, 1.9])]
        runs.append({"name": "BM_ReadContiguous/4096", "tokens": 4096, "real_time": 1.0,
                     "time_unit": "ms", "bytes_per_second": 8e9})
        merged = {r["name"]: r for r in bench.medians(runs)}
        gather = merged["BM_GatherShuffled/4096"]
        self.assertEqual(gather["real_time"], 2.1)
        self.assertEqual(gather["repetitions"], 5)
        self.assertEqual(bench.spread(gather, "real_time"), (1.9, 9.0))
        self.assertAlmostEqual(bench.gbps(gather), 8 / 2.1)
        self.assertEqual(gather["tokens"], 4096)
        self.assertNotIn("iterations", gather["spread"])
        self.assertEqual(merged["BM_ReadContiguous/4096"], runs[-1])  # run once: untouched
        tax = dict((w, f) for w, f, _ in bench.targets("01", list(merged.values())))
        # The median ratio, then its range from the two ranges (1.9 to 9.0 over a single 1.0).
        # Taken from the rates, as the table shows them (8/1.9 .. 8/9 GB/s against 8 GB/s).
        self.assertEqual(tax["gather tax at 4096 tokens (shuffled table / contiguous time)"],
                         "2.10x (1.90–9.00)")
        cpu_bound = dict(runs[-1], real_time=5.0)  # wall time of a descheduled run: ignored
        tax = dict((w, f) for w, f, _ in bench.targets("01", [gather, cpu_bound]))
        self.assertTrue(tax["gather tax at 4096 tokens (shuffled table / contiguous time)"]
                        .startswith("2.10x"))

    def test_a_repetition_that_errored_keeps_its_message(self):
        runs = [{"name": "BM_X/1", "run_name": "BM_X/1", "real_time": 1.0, "time_unit": "ms"},
                {"name": "BM_X/1", "run_name": "BM_X/1", "error_occurred": True,
                 "error_message": "not implemented yet"}]
        self.assertEqual(bench.medians(runs), [runs[1]])


if __name__ == "__main__":
    unittest.main()
