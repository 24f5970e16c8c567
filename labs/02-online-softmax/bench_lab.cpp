// Lab 02 — dense against streaming: attention of one decode query that first materialises the
// whole score row over contiguous K and V (dense_attention), next to the one-pass online softmax
// over a paged cache with a shuffled block table (paged_online_attention), and next to the two
// memory baselines, for 1k .. 64k tokens (block size 16, head size 128, float64, one thread).
//
//   cmake --build build/solution --target lab02_bench && build/solution/lab02_bench --benchmark_min_time=0.2
//   (tools/lab bench 02 runs and plots it.)
//
// Every series reports bytes/s over the K and V bytes it must read (seq_len * 128 * 8 each) and
// the counter `tokens`. Decode attention is a memory-bound read of the whole history, so the
// streaming path should get within a small factor of BM_BaselineRead at 64k tokens. Before
// timing, each series that runs lab code checks its answer against pa::testing on its own data
// and skips with the message when it is wrong or not written yet.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "online_softmax.hpp"
#include "pa/bench.hpp"
#include "pa/testing.hpp"

namespace pa::online_softmax {
namespace {

constexpr int kBlockSize = 16;
constexpr int kHeadDim = 128;

// Scores k.q / sqrt(d) with standard deviation ~4: a peaked softmax, as in the tests.
constexpr double kLogitSpread = 4.0;

// Attention over up to 64k keys sums 64k terms in float64: worst-case relative rounding is
// ~n * eps ~ 1.5e-11 on O(1) outputs, so 1e-10 passes honest code and still fails a wrong weight.
constexpr double kLongRowTol = 1e-10;

/// One head's sequence, contiguous and paged, built once per length and shared by the series.
struct Sequence {
  Vec q;             // [head_dim] one decode query
  Mat k;             // [seq_len, head_dim] contiguous keys (what dense_attention reads)
  Mat v;             // [seq_len, head_dim] contiguous values
  IVec block_table;  // [seq_len / block_size] a random permutation of the physical blocks
  IVec in_order;     // [seq_len / block_size] 0, 1, 2, ...: the blocks where k and v lie
  Mat k_cache;       // [seq_len, head_dim] the keys in shuffled blocks (every block used)
  Mat v_cache;       // [seq_len, head_dim] the values in the same blocks
  Vec expected;      // [head_dim] reference attention of q over k, v (long double)
};

/// The sequence of `seq_len` tokens (a multiple of kBlockSize), built on first use.
const Sequence& sequence(int seq_len) {
  static std::map<int, std::unique_ptr<Sequence>> built;
  auto& slot = built[seq_len];
  if (!slot) {
    pa::testing::Rng rng(static_cast<std::uint64_t>(seq_len));
    auto s = std::make_unique<Sequence>();
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

/// The bytes of K and V a pass over `seq_len` tokens must read.
std::int64_t kv_bytes(int seq_len) {
  return 2 * std::int64_t{seq_len} * kHeadDim * static_cast<std::int64_t>(sizeof(double));
}

/// Sets the two numbers tools/lab bench plots: tokens (x) and bytes read per second (y).
void report(benchmark::State& state, int seq_len) {
  pa::bench::report(state, seq_len, kv_bytes(seq_len));
}

using pa::bench::answer_is_right;

// ---- the lab's code ----------------------------------------------------------------------

void BM_DenseAttention(benchmark::State& state) {
  // Three sweeps: every score into an [seq_len] row, its max, then exp, sum and V^T w.
  const int seq_len = static_cast<int>(state.range(0));
  const Sequence& s = sequence(seq_len);
  if (!answer_is_right(state, [&] {
        return pa::testing::AllClose(s.expected, dense_attention(s.q, s.k, s.v), kLongRowTol);
      })) {
    return;
  }
  for (auto _ : state) {
    Vec out = dense_attention(s.q, s.k, s.v);  // [head_dim]
    benchmark::DoNotOptimize(out.data());
  }
  report(state, seq_len);
}

void BM_PagedOnlineAttention(benchmark::State& state) {
  // One sweep over the blocks in table order, carrying (m, denom, acc): no score row at all.
  const int seq_len = static_cast<int>(state.range(0));
  const Sequence& s = sequence(seq_len);
  if (!answer_is_right(state, [&] {
        return pa::testing::AllClose(
            s.expected,
            paged_online_attention(s.q, s.k_cache, s.v_cache, s.block_table, seq_len, kBlockSize),
            kLongRowTol);
      })) {
    return;
  }
  for (auto _ : state) {
    Vec out = paged_online_attention(s.q, s.k_cache, s.v_cache, s.block_table, seq_len,
                                     kBlockSize);  // [head_dim]
    benchmark::DoNotOptimize(out.data());
  }
  report(state, seq_len);
}

void BM_PagedOnlineInOrder(benchmark::State& state) {
  // The same sweep with the identity block table: k and v themselves are the cache, so the
  // blocks stream in address order. The gap to BM_PagedOnlineAttention is the gather tax (lab
  // 01); the gap to BM_BaselineRead is the streaming arithmetic itself.
  const int seq_len = static_cast<int>(state.range(0));
  const Sequence& s = sequence(seq_len);
  if (!answer_is_right(state, [&] {
        return pa::testing::AllClose(
            s.expected, paged_online_attention(s.q, s.k, s.v, s.in_order, seq_len, kBlockSize),
            kLongRowTol);
      })) {
    return;
  }
  for (auto _ : state) {
    Vec out = paged_online_attention(s.q, s.k, s.v, s.in_order, seq_len, kBlockSize);  // [head_dim]
    benchmark::DoNotOptimize(out.data());
  }
  report(state, seq_len);
}

// ---- baselines: the memory system alone, over exactly the K+V bytes -------------------

void BM_BaselineRead(benchmark::State& state) {
  pa::bench::baseline_read(state, state.range(0), kv_bytes(static_cast<int>(state.range(0))));
}

void BM_BaselineCopy(benchmark::State& state) {
  pa::bench::baseline_copy(state, state.range(0), kv_bytes(static_cast<int>(state.range(0))));
}

// 1k .. 64k tokens, doubling: 64k tokens are 128 MiB of K+V, far past the last-level cache.
constexpr int kMinTokens = 1 << 10;
constexpr int kMaxTokens = 1 << 16;

BENCHMARK(BM_DenseAttention)->RangeMultiplier(2)->Range(kMinTokens, kMaxTokens)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PagedOnlineAttention)->RangeMultiplier(2)->Range(kMinTokens, kMaxTokens)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PagedOnlineInOrder)->RangeMultiplier(2)->Range(kMinTokens, kMaxTokens)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BaselineRead)->RangeMultiplier(2)->Range(kMinTokens, kMaxTokens)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BaselineCopy)->RangeMultiplier(2)->Range(kMinTokens, kMaxTokens)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace pa::online_softmax

BENCHMARK_MAIN();
