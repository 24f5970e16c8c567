/// \file
/// What every lab's benchmark program (labs/NN-name/bench_lab.cpp) shares: the two counters
/// tools/lab bench plots, the answer check that comes before any timing, and the memory
/// baselines that turn a figure into a fraction of this machine's own limit. Header-only; only
/// the benchmark programs include it (they link Google Benchmark).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "pa/testing.hpp"
#include "pa/types.hpp"

namespace pa::bench {

/// Sets the two numbers tools/lab bench plots: `tokens` (x) and the bytes of K and V one
/// iteration must read (y, as bytes per second).
inline void report(benchmark::State& state, std::int64_t tokens, std::int64_t kv_bytes) {
  state.counters["tokens"] = static_cast<double>(tokens);
  state.SetBytesProcessed(state.iterations() * kv_bytes);
}

/// Runs `check` (the lab's code and a comparison returning an AssertionResult) and returns true
/// when it passes; a wrong answer or an exception (the starter's "not implemented yet") skips
/// the benchmark with its message, since timing a wrong answer measures nothing.
template <class Check>
bool answer_is_right(benchmark::State& state, Check check) {
  try {
    const ::testing::AssertionResult ok = check();
    if (ok) return true;
    state.SkipWithError(("wrong answer: " + std::string(ok.message())).c_str());
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
  return false;
}

/// [kv_bytes / 8] one buffer of doubles as large as the K and V a series reads.
inline Vec kv_sized_buffer(std::int64_t kv_bytes) {
  return Vec::LinSpaced(kv_bytes / static_cast<std::int64_t>(sizeof(double)), -1.0, 1.0);
}

/// BM_BaselineRead: one streaming sum over `kv_bytes` bytes, the most a read-bound pass can do.
inline void baseline_read(benchmark::State& state, std::int64_t tokens, std::int64_t kv_bytes) {
  const Vec buffer = kv_sized_buffer(kv_bytes);  // [kv_bytes / 8]
  for (auto _ : state) {
    double total = buffer.sum();
    benchmark::DoNotOptimize(total);
  }
  report(state, tokens, kv_bytes);
}

/// BM_BaselineReadTwoThreads: the same sum split in halves over two std::threads, what two
/// cores pull from memory together (the ceiling of any two-thread split of a read-bound pass).
inline void baseline_read_two_threads(benchmark::State& state, std::int64_t tokens,
                                      std::int64_t kv_bytes) {
  const Vec buffer = kv_sized_buffer(kv_bytes);  // [kv_bytes / 8]
  const Eigen::Index half = buffer.size() / 2;
  for (auto _ : state) {
    double first = 0.0;
    std::thread helper([&] { first = buffer.head(half).sum(); });
    const double second = buffer.tail(buffer.size() - half).sum();
    helper.join();
    benchmark::DoNotOptimize(first + second);
  }
  report(state, tokens, kv_bytes);
}

/// BM_BaselineCopy: memcpy of `kv_bytes` bytes, counted as bytes read like every series.
inline void baseline_copy(benchmark::State& state, std::int64_t tokens, std::int64_t kv_bytes) {
  const Vec source = kv_sized_buffer(kv_bytes);  // [kv_bytes / 8]
  Vec destination(source.size());                // [kv_bytes / 8]
  const auto copy = [&] {
    std::memcpy(destination.data(), source.data(), sizeof(double) * source.size());
  };
  copy();  // once untimed, so the destination's pages exist before the clock starts
  for (auto _ : state) {
    copy();
    benchmark::DoNotOptimize(destination.data());
    benchmark::ClobberMemory();
  }
  report(state, tokens, kv_bytes);
}

/// [gpu_series]
/// Times one GPU series against the read roofline in the same run: each iteration times the
/// kernel (`timed_kernel()`, seconds, the manual time Google Benchmark reports) and then the
/// roofline over the same bytes (`timed_roofline()`), both flushed and timed alike. Afterwards
/// `check_after()` re-checks the answer ("" when right: a kernel that breaks under repetition
/// fails here), and the counter `roofline_pct` = roofline time / kernel time is set. A figure
/// above 100 % fails the benchmark: no kernel can read its bytes faster than a kernel that only
/// reads them, so such a figure means skipped bytes or a broken timer, not a record.
template <class TimedKernel, class TimedRoofline, class CheckAfter>
void time_against_roofline(benchmark::State& state, TimedKernel&& timed_kernel,
                           TimedRoofline&& timed_roofline, CheckAfter&& check_after) {
  double kernel_seconds = 0.0, roofline_seconds = 0.0;
  for (auto _ : state) {
    const double t = timed_kernel();
    state.SetIterationTime(t);
    kernel_seconds += t;
    roofline_seconds += timed_roofline();  // outside the manual time: not counted
  }
  if (const std::string error = check_after(); !error.empty()) {
    state.SkipWithError(("after timing: " + error).c_str());
    return;
  }
  const double pct = kernel_seconds > 0 ? 100.0 * roofline_seconds / kernel_seconds : 0.0;
  state.counters["roofline_pct"] = pct;
  if (pct > 100.0) {
    state.SkipWithError(("impossible: " + std::to_string(pct) +
                         " % of the same-run read roofline; the kernel skips bytes it must read, "
                         "or the timing is wrong")
                            .c_str());
  }
}
/// [gpu_series]

}  // namespace pa::bench
