// Lab 01 — the gather tax: what it costs to read a sequence's K and V rows through a shuffled
// block table, next to reading the same rows from one contiguous buffer and next to the two
// memory baselines, for 1k .. 64k tokens (block size 16, head size 128, one kv head, float64).
//
//   cmake --build build/solution --target lab01_bench && build/solution/lab01_bench --benchmark_min_time=0.2
//   (tools/lab bench 01 runs and plots it.)
//
// Every series reports bytes/s over the K and V bytes it must read (seq_len * 128 * 8 each) and
// the counter `tokens`. Before timing, each series that runs lab code checks its answer against
// pa::testing on its own data and skips with the message when it is wrong or not written yet.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "paged_gather.hpp"
#include "pa/bench.hpp"
#include "pa/testing.hpp"

namespace pa::paged_gather {
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
  Mat q;             // [1, head_dim] one decode query
  Mat k;             // [seq_len, head_dim] contiguous keys (the truth)
  Mat v;             // [seq_len, head_dim] contiguous values
  IVec block_table;  // [seq_len / block_size] a random permutation of the physical blocks
  Mat k_cache;       // [seq_len, head_dim] the keys in shuffled blocks (every block used)
  Mat v_cache;       // [seq_len, head_dim] the values in the same blocks
  Mat expected;      // [1, head_dim] reference attention of q over k, v (long double)
};

/// The sequence of `seq_len` tokens (a multiple of kBlockSize), built on first use.
const Sequence& sequence(int seq_len) {
  static std::map<int, std::unique_ptr<Sequence>> built;
  auto& slot = built[seq_len];
  if (!slot) {
    pa::testing::Rng rng(static_cast<std::uint64_t>(seq_len));
    auto s = std::make_unique<Sequence>();
    const int num_blocks = seq_len / kBlockSize;
    s->q = rng.normal(1, kHeadDim, kLogitSpread);
    s->k = rng.normal(seq_len, kHeadDim);
    s->v = rng.normal(seq_len, kHeadDim);
    s->block_table = rng.permutation(num_blocks);
    s->k_cache = pa::testing::paged_cache(s->k, s->block_table, kBlockSize, num_blocks);
    s->v_cache = pa::testing::paged_cache(s->v, s->block_table, kBlockSize, num_blocks);
    s->expected = pa::testing::reference_attention_heads(s->q, s->k, s->v);
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
  if (!answer_is_right(state, [&] {
        gather(s, seq_len, keys, values);
        const ::testing::AssertionResult k_ok = pa::testing::BitIdentical(s.k, keys);
        return k_ok ? pa::testing::BitIdentical(s.v, values) : k_ok;
      })) {
    return;
  }
  for (auto _ : state) {
    gather(s, seq_len, keys, values);
    benchmark::DoNotOptimize(keys.data());
    benchmark::DoNotOptimize(values.data());
    benchmark::ClobberMemory();
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
  if (!answer_is_right(state, [&] {
        return pa::testing::AllClose(
            s.expected,
            paged_attention(s.q, s.k_cache, s.v_cache, s.block_table, seq_len, kBlockSize),
            kLongRowTol);
      })) {
    return;
  }
  for (auto _ : state) {
    Mat out = paged_attention(s.q, s.k_cache, s.v_cache, s.block_table, seq_len, kBlockSize);
    benchmark::DoNotOptimize(out.data());  // [1, head_dim]
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

BENCHMARK(BM_GatherShuffled)->RangeMultiplier(2)->Range(kMinTokens, kMaxTokens)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadContiguous)->RangeMultiplier(2)->Range(kMinTokens, kMaxTokens)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_PagedAttention)->RangeMultiplier(2)->Range(kMinTokens, kMaxTokens)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BaselineRead)->RangeMultiplier(2)->Range(kMinTokens, kMaxTokens)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BaselineCopy)->RangeMultiplier(2)->Range(kMinTokens, kMaxTokens)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace pa::paged_gather

BENCHMARK_MAIN();
