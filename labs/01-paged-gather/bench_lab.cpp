// Lab 01 — the gather tax: what it costs to read a sequence's K and V rows through a shuffled
// block table, next to reading the same rows from one contiguous buffer and next to the two
// memory baselines, for 1k .. 64k tokens (block size 16, head size 128, one kv head, float64).
//
//   cmake --build build/solution --target lab01_bench && build/solution/lab01_bench
//   --benchmark_min_time=0.2 (tools/lab bench 01 runs and plots it.)
//
// Every series reports bytes/s over the K and V bytes it must read (seq_len * 128 * 8 each) and
// the counter `tokens`. Before and after timing, each series that runs lab code checks its
// answer against pa::testing on its own data and reports the message instead of a rate when it
// is wrong or not written yet.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "pa/bench.hpp"
#include "pa/testing.hpp"
#include "paged_gather.hpp"

namespace pa::paged_gather {
namespace {

using pa::bench::BM_BaselineCopy;
using pa::bench::BM_BaselineRead;
using pa::bench::kBlockSize;
using pa::bench::kHeadDim;
using pa::bench::kLongRowTol;
using pa::bench::time_between_checks;
using Sequence = pa::bench::PagedSequence;

const Sequence& sequence(int seq_len) {
  return pa::bench::paged_sequence(seq_len);
}

/// Sets the two numbers tools/lab bench plots: tokens (x) and bytes read per second (y).
void report(benchmark::State& state, int seq_len) {
  pa::bench::report(state, seq_len, pa::bench::kv_bytes(seq_len));
}

/// The lab's read path without the attention: the slots of tokens 0 .. seq_len-1, then K and V
/// gathered through them into contiguous buffers (what paged_attention does before its maths).
void gather(const Sequence& s, int seq_len, Mat& keys, Mat& values) {
  const IVec slots = build_slot_mapping(s.block_table, kBlockSize, 0, seq_len);  // [seq_len]
  keys = s.k_cache(slots, Eigen::all);    // [seq_len, head_dim], same size: no reallocation
  values = s.v_cache(slots, Eigen::all);  // [seq_len, head_dim]
}

// ---- the lab's code ----------------------------------------------------------------------

void BM_GatherShuffled(benchmark::State& state) {
  const int seq_len = static_cast<int>(state.range(0));
  const Sequence& s = sequence(seq_len);
  // Filled by the checked call below, so their pages exist before the clock starts: the loop
  // times the gather, not the kernel handing out fresh pages.
  Mat keys(seq_len, kHeadDim);    // [seq_len, head_dim]
  Mat values(seq_len, kHeadDim);  // [seq_len, head_dim]
  const auto check = [&] {
    gather(s, seq_len, keys, values);
    const ::testing::AssertionResult k_ok = pa::testing::BitIdentical(s.k, keys);
    return k_ok ? pa::testing::BitIdentical(s.v, values) : k_ok;
  };
  if (!time_between_checks(state, check, [&] {
        gather(s, seq_len, keys, values);
        benchmark::DoNotOptimize(keys.data());
        benchmark::DoNotOptimize(values.data());
      })) {
    return;
  }
  report(state, seq_len);
}

void BM_ReadContiguous(benchmark::State& state) {
  // The same rows copied out of one contiguous buffer per tensor: what the gather would cost
  // if the sequence's blocks sat in order. No lab code runs here, so there is nothing to check.
  const int seq_len = static_cast<int>(state.range(0));
  const Sequence& s = sequence(seq_len);
  Mat keys(seq_len, kHeadDim);    // [seq_len, head_dim]
  Mat values(seq_len, kHeadDim);  // [seq_len, head_dim]
  const auto read = [&] {
    keys = s.k.middleRows(0, seq_len);
    values = s.v.middleRows(0, seq_len);
  };
  read();  // once untimed, so the destination's pages exist before the clock starts
  for (auto _ : state) {
    read();
    benchmark::DoNotOptimize(keys.data());
    benchmark::DoNotOptimize(values.data());
    benchmark::ClobberMemory();
  }
  report(state, seq_len);
}

void BM_PagedAttention(benchmark::State& state) {
  // The whole decode step of the lab: gather, scores, softmax, weighted sum of values. Its
  // gathered K and V are fresh buffers on every call, so past the caches this series also pays
  // for the pages of a 2 * seq_len * head_dim copy: the price of gathering before attending.
  const int seq_len = static_cast<int>(state.range(0));
  const Sequence& s = sequence(seq_len);
  const auto check = [&] {
    return pa::testing::AllClose(s.expected.transpose(),
                                 paged_attention(s.q.transpose(), s.k_cache, s.v_cache,
                                                 s.block_table, seq_len, kBlockSize),
                                 kLongRowTol);
  };
  if (!time_between_checks(state, check, [&] {
        Mat out =
            paged_attention(s.q.transpose(), s.k_cache, s.v_cache, s.block_table, seq_len, kBlockSize);
        benchmark::DoNotOptimize(out.data());  // [1, head_dim]
      })) {
    return;
  }
  report(state, seq_len);
}

// ---- registered over 1k .. 64k tokens, with the baselines (pa/bench.hpp) ----------------

PA_BENCH_TOKEN_SWEEP(BM_GatherShuffled);
PA_BENCH_TOKEN_SWEEP(BM_ReadContiguous);
PA_BENCH_TOKEN_SWEEP(BM_PagedAttention);
PA_BENCH_TOKEN_SWEEP(BM_BaselineRead);
PA_BENCH_TOKEN_SWEEP(BM_BaselineCopy);

}  // namespace
}  // namespace pa::paged_gather

PA_CPU_BENCHMARK_MAIN();
