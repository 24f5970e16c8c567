/// \file
/// What every lab's benchmark program (labs/NN-name/bench_lab.cpp) shares: the two counters
/// tools/lab bench plots, the answer check that comes before any timing, and the memory
/// baselines that turn a figure into a fraction of this machine's own limit. Header-only; only
/// the benchmark programs include it (they link Google Benchmark).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "pa/testing.hpp"
#include "pa/types.hpp"

namespace pa::bench {

// ---- The allocator under the CPU benchmarks ---------------------------------------------------

/// Keeps the memory the program frees inside the process for its next allocation, as an
/// inference engine's caching allocator does, so that a series times the code and not the page
/// faults of fresh memory. By default glibc maps a large allocation fresh from the operating
/// system and unmaps it when freed (above 128 KiB at first; the threshold rises with use, to at
/// most 32 MiB), so a call that allocates a history-sized buffer touches fresh pages each time
/// (lab 01's chapter measures that cost).
/// A no-op on a C library other than glibc.
inline void keep_freed_memory() {
#if defined(__GLIBC__)
  constexpr int kNeverMap = 1 << 30;  // 1 GiB: above any buffer a CPU benchmark allocates
  mallopt(M_MMAP_THRESHOLD, kNeverMap);
  mallopt(M_TRIM_THRESHOLD, kNeverMap);
#endif
}

/// The main() of a CPU lab's benchmark program: BENCHMARK_MAIN()'s, after keep_freed_memory().
#define PA_CPU_BENCHMARK_MAIN()                                    \
  int main(int argc, char** argv) {                                \
    ::pa::bench::keep_freed_memory();                              \
    ::benchmark::Initialize(&argc, argv);                          \
    if (::benchmark::ReportUnrecognizedArguments(argc, argv)) {    \
      return 1;                                                    \
    }                                                              \
    ::benchmark::RunSpecifiedBenchmarks();                         \
    ::benchmark::Shutdown();                                       \
    return 0;                                                      \
  }                                                                \
  int main(int, char**)

// ---- One head's decode over a paged cache, as the CPU labs (01-03) time it ------------------

/// [cpu_sequence]
inline constexpr int kBlockSize = 16;  // tokens per cache block
inline constexpr int kHeadDim = 128;   // one head, float64
// Scores k.q / sqrt(d) with standard deviation ~4: a peaked softmax, as in the tests.
inline constexpr double kLogitSpread = 4.0;
// Attention over up to 64k keys sums 64k terms in float64: worst-case relative rounding is
// ~n * eps ~ 1.5e-11 on O(1) outputs, so 1e-10 passes honest code and still fails a wrong weight.
inline constexpr double kLongRowTol = 1e-10;
// 1k .. 64k tokens, doubling: 64k tokens are 128 MiB of K+V, far past the last-level cache.
inline constexpr int kMinTokens = 1 << 10;
inline constexpr int kMaxTokens = 1 << 16;

/// One head's sequence, contiguous and paged, built once per length and shared by the series.
struct PagedSequence {
  Vec q;             // [head_dim] one decode query
  Mat k;             // [seq_len, head_dim] contiguous keys
  Mat v;             // [seq_len, head_dim] contiguous values
  IVec block_table;  // [seq_len / block_size] a random permutation of the physical blocks
  IVec in_order;     // [seq_len / block_size] 0, 1, 2, ...: the blocks where k and v lie
  Mat k_cache;       // [seq_len, head_dim] the keys in shuffled blocks (every block used)
  Mat v_cache;       // [seq_len, head_dim] the values in the same blocks
  Vec expected;      // [head_dim] reference attention of q over k, v (long double)
};

/// Returns the sequence of `seq_len` tokens (a multiple of kBlockSize), built on first use.
inline const PagedSequence& paged_sequence(int seq_len) {
  static std::map<int, std::unique_ptr<PagedSequence>> built;
  auto& slot = built[seq_len];
  if (!slot) {
    pa::testing::Rng rng(static_cast<std::uint64_t>(seq_len));
    auto s = std::make_unique<PagedSequence>();
    const int num_blocks = seq_len / kBlockSize;
    s->q = rng.normal_vec(kHeadDim, kLogitSpread);
    s->k = rng.normal(seq_len, kHeadDim);
    s->v = rng.normal(seq_len, kHeadDim);
    s->block_table = rng.permutation(num_blocks);
    s->in_order = IVec::LinSpaced(num_blocks, 0, num_blocks - 1);
    s->k_cache = pa::testing::paged_cache(s->k, s->block_table, kBlockSize, num_blocks);
    s->v_cache = pa::testing::paged_cache(s->v, s->block_table, kBlockSize, num_blocks);
    s->expected = pa::testing::reference_attention(s->q, s->k, s->v);
    slot = std::move(s);
  }
  return *slot;
}

/// Returns the bytes of K and V a pass over `seq_len` float64 tokens of one head must read.
inline std::int64_t kv_bytes(std::int64_t seq_len) {
  return 2 * seq_len * kHeadDim * static_cast<std::int64_t>(sizeof(double));
}
/// [cpu_sequence]

/// Sets the two numbers tools/lab bench plots: `tokens` (x) and the bytes of K and V one
/// iteration must read (y, as bytes per second).
inline void report(benchmark::State& state, std::int64_t tokens, std::int64_t kv_bytes) {
  state.counters["tokens"] = static_cast<double>(tokens);
  state.SetBytesProcessed(state.iterations() * kv_bytes);
}

namespace detail {
/// Runs `check` and returns true when it passes; otherwise skips the benchmark with the
/// message, prefixed by `when` ("" before the clock, "after timing: " after it).
template <class Check>
bool check_answer(benchmark::State& state, Check& check, const std::string& when) {
  try {
    const ::testing::AssertionResult ok = check();
    if (ok) return true;
    state.SkipWithError((when + "wrong answer: " + std::string(ok.message())).c_str());
  } catch (const std::exception& e) {
    state.SkipWithError((when + e.what()).c_str());
  }
  return false;
}
}  // namespace detail

/// Runs `check` (the lab's code and a comparison returning an AssertionResult) and returns true
/// when it passes; a wrong answer or an exception (the starter's "not implemented yet") skips
/// the benchmark with its message, since timing a wrong answer measures nothing.
template <class Check>
bool answer_is_right(benchmark::State& state, Check check) {
  return detail::check_answer(state, check, "");
}

/// Runs `check` again after the timed loop: code whose answer holds only on its first call
/// (state kept between calls, an input overwritten by the timed calls) reports an error
/// ("after timing: ...") instead of a rate.
template <class Check>
bool answer_still_right(benchmark::State& state, Check check) {
  return detail::check_answer(state, check, "after timing: ");
}

/// Times `call` in the benchmark loop between two runs of `check` (answer_is_right before the
/// clock, answer_still_right after it) and returns whether both passed. `call` hands its result
/// to benchmark::DoNotOptimize, so the compiler cannot drop the work being timed.
template <class Check, class Call>
bool time_between_checks(benchmark::State& state, Check check, Call call) {
  if (!answer_is_right(state, check)) return false;
  for (auto _ : state) {
    call();
    benchmark::ClobberMemory();
  }
  return answer_still_right(state, check);
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

/// One GPU series of a CUDA lab's benchmark: its name and its function.
using GpuSeries = std::pair<const char*, void (*)(benchmark::State&)>;

/// Registers every one of `series` over every decode batch of `shapes` ({seqs, tokens, heads,
/// kv_heads}, the run names tools/lab bench tables by), manual time in microseconds, a batch's
/// series next to each other so they share its prepared operands; without a CUDA device
/// (`device_present` false) registers none and says so.
inline void register_gpu_batches(bool device_present,
                                 const std::vector<std::vector<std::int64_t>>& shapes,
                                 std::initializer_list<GpuSeries> series) {
  if (!device_present) {
    std::fprintf(stderr, "no CUDA device: GPU benchmarks not registered\n");
    return;
  }
  for (const auto& args : shapes) {
    for (const auto& [name, fn] : series) {
      benchmark::RegisterBenchmark(name, fn)
          ->ArgNames({"seqs", "tokens", "heads", "kv_heads"})
          ->Args(args)
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

/// BENCHMARK_MAIN's steps with `register_gpu()` in between: whether the GPU series exist
/// depends on the machine, which only a running program can ask.
template <class RegisterGpu>
int main_with_gpu_series(int argc, char** argv, RegisterGpu register_gpu) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_gpu();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

/// [design_table]
/// What ptxas reports for one compiled kernel (nvcc -Xptxas -v): registers per thread, spill
/// stores in bytes, static shared memory in bytes.
struct PtxasFigures {
  int registers = 0;
  int spill_bytes = 0;
  int static_shared = 0;
};

/// Returns the figures of `--design_table=REGISTERS,SPILL_BYTES,STATIC_SHARED[;...]` (one
/// triple per kernel the lab benchmarks, in the lab's order), the flag `tools/lab bench --ptxas`
/// passes a benchmark program to make it print its design table instead of running; an empty
/// vector when the flag is absent.
inline std::vector<PtxasFigures> design_table_arg(int argc, char** argv) {
  static constexpr const char* kFlag = "--design_table=";
  std::vector<PtxasFigures> figures;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], kFlag, std::strlen(kFlag)) != 0) continue;
    const char* at = argv[i] + std::strlen(kFlag);
    while (*at != '\0') {
      PtxasFigures f;
      int used = 0;
      const int read =
          std::sscanf(at, "%d,%d,%d%n", &f.registers, &f.spill_bytes, &f.static_shared, &used);
      if (read != 3) {
        throw std::invalid_argument(std::string("--design_table: expected REGISTERS,SPILL_BYTES,"
                                                "STATIC_SHARED[;...], got ") + argv[i]);
      }
      figures.push_back(f);
      at += used;
      if (*at == ';') ++at;
    }
  }
  return figures;
}

/// Kilobytes with one decimal, for the design tables.
inline std::string kib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024.0);
  return text;
}

/// A count with a comma between thousands (16,384), as the book's prose writes numbers.
inline std::string grouped(std::int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out = n < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}
/// [design_table]

/// Registers `fn` over the token sweep kMinTokens .. kMaxTokens, doubling.
#define PA_BENCH_TOKEN_SWEEP(fn)                                \
  BENCHMARK(fn)                                                 \
      ->RangeMultiplier(2)                                      \
      ->Range(::pa::bench::kMinTokens, ::pa::bench::kMaxTokens) \
      ->Unit(benchmark::kMicrosecond)

/// BM_BaselineRead and BM_BaselineCopy over the K and V bytes of range(0) tokens.
inline void BM_BaselineRead(benchmark::State& state) {
  baseline_read(state, state.range(0), kv_bytes(state.range(0)));
}
inline void BM_BaselineCopy(benchmark::State& state) {
  baseline_copy(state, state.range(0), kv_bytes(state.range(0)));
}

}  // namespace pa::bench
