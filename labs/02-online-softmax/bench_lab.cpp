// Lab 02 — dense against streaming: attention of one decode query that first materialises the
// whole score row over contiguous K and V (dense_attention), next to the one-pass online softmax
// over a paged cache with a shuffled block table (paged_online_attention), and next to the two
// memory baselines, for 1k .. 64k tokens (block size 16, head size 128, float64, one thread).
//
//   cmake --build build/solution --target lab02_bench && build/solution/lab02_bench
//   --benchmark_min_time=0.2 (tools/lab bench 02 runs and plots it.)
//
// Every series reports bytes/s over the K and V bytes it must read (seq_len * 128 * 8 each) and
// the counter `tokens`. Decode attention is a memory-bound read of the whole history, so the
// streaming path should get within a small factor of BM_BaselineRead at 64k tokens. Before
// and after timing, each series that runs lab code checks its answer against pa::testing on its
// own data and reports the message instead of a rate when it is wrong or not written yet.
#include <benchmark/benchmark.h>

#include <cstdint>

#include "online_softmax.hpp"
#include "pa/bench.hpp"
#include "pa/testing.hpp"

namespace pa::online_softmax {
namespace {

using pa::bench::BM_BaselineCopy;
using pa::bench::BM_BaselineRead;
using pa::bench::kBlockSize;
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

// ---- the lab's code ----------------------------------------------------------------------

void BM_DenseAttention(benchmark::State& state) {
  // Three sweeps: every score into an [seq_len] row, its max, then exp, sum and V^T w.
  const int seq_len = static_cast<int>(state.range(0));
  const Sequence& s = sequence(seq_len);
  const auto check = [&] {
    return pa::testing::AllClose(s.expected, dense_attention(s.q, s.k, s.v), kLongRowTol);
  };
  if (!time_between_checks(state, check, [&] {
        Vec out = dense_attention(s.q, s.k, s.v);  // [head_dim]
        benchmark::DoNotOptimize(out.data());
      })) {
    return;
  }
  report(state, seq_len);
}

void BM_PagedOnlineAttention(benchmark::State& state) {
  // One sweep over the blocks in table order, carrying (m, denom, acc): no score row at all.
  const int seq_len = static_cast<int>(state.range(0));
  const Sequence& s = sequence(seq_len);
  const auto check = [&] {
    return pa::testing::AllClose(
        s.expected,
        paged_online_attention(s.q, s.k_cache, s.v_cache, s.block_table, seq_len, kBlockSize),
        kLongRowTol);
  };
  if (!time_between_checks(state, check, [&] {
        Vec out = paged_online_attention(s.q, s.k_cache, s.v_cache, s.block_table, seq_len,
                                         kBlockSize);  // [head_dim]
        benchmark::DoNotOptimize(out.data());
      })) {
    return;
  }
  report(state, seq_len);
}

void BM_PagedOnlineInOrder(benchmark::State& state) {
  // The same sweep with the identity block table: k and v themselves are the cache, so the
  // blocks stream in address order. The gap to BM_PagedOnlineAttention is the gather tax (lab
  // 01); the gap to BM_BaselineRead is the streaming arithmetic itself.
  const int seq_len = static_cast<int>(state.range(0));
  const Sequence& s = sequence(seq_len);
  const auto check = [&] {
    return pa::testing::AllClose(
        s.expected, paged_online_attention(s.q, s.k, s.v, s.in_order, seq_len, kBlockSize),
        kLongRowTol);
  };
  if (!time_between_checks(state, check, [&] {
        Vec out = paged_online_attention(s.q, s.k, s.v, s.in_order, seq_len, kBlockSize);  // [head_dim]
        benchmark::DoNotOptimize(out.data());
      })) {
    return;
  }
  report(state, seq_len);
}

// ---- registered over 1k .. 64k tokens, with the baselines (pa/bench.hpp) ----------------

PA_BENCH_TOKEN_SWEEP(BM_DenseAttention);
PA_BENCH_TOKEN_SWEEP(BM_PagedOnlineAttention);
PA_BENCH_TOKEN_SWEEP(BM_PagedOnlineInOrder);
PA_BENCH_TOKEN_SWEEP(BM_BaselineRead);
PA_BENCH_TOKEN_SWEEP(BM_BaselineCopy);

}  // namespace
}  // namespace pa::online_softmax

PA_CPU_BENCHMARK_MAIN();
