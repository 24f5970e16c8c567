// Lab 04 — one call for a whole decode batch against one call per sequence, and what the step's
// bookkeeping (build_forward_meta and set_kv) adds to the attention. The batch: 8 sequences of
// ragged lengths whose cached tokens sum to 1k .. 64k (block size 16, one head of 128, float64,
// one thread), each bringing one new token, their blocks shuffled through one shared pool.
//
//   cmake --build build/solution --target lab04_bench && build/solution/lab04_bench
//   --benchmark_min_time=0.2 (tools/lab bench 04 runs and plots it.)
//
// Every series reports bytes/s over the K and V bytes the batch's attention must read
// (tokens * 128 * 8 each) and the counter `tokens`, so the three lab series and the two
// baselines share one axis. Before and after timing, each series that runs lab code checks the
// batch's output against pa::testing::reference_attention, sequence by sequence, and reports the
// message instead of a rate when it is wrong or not written yet.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "pa/bench.hpp"
#include "pa/testing.hpp"
#include "varlen_batch.hpp"

namespace pa::varlen_batch {
namespace {

using pa::bench::BM_BaselineCopy;
using pa::bench::BM_BaselineRead;
using pa::bench::kBlockSize;
using pa::bench::kHeadDim;
using pa::bench::kLongRowTol;
using pa::bench::time_between_checks;

constexpr int kNumSeqs = 8;  // a small decode batch: enough sequences for the per-call cost to show

/// One decode step of kNumSeqs sequences, built once per total length and shared by the series.
struct DecodeBatch {
  std::vector<SeqStep> steps;     // the scheduler's list: num_cached tokens, 1 new, its blocks
  ForwardMeta meta;               // build_forward_meta(steps) of the checked call
  std::vector<ForwardMeta> each;  // [num_seqs] the metadata of a batch of that sequence alone
  Mat q;                          // [num_seqs, head_dim] the new tokens' queries
  Mat k_new, v_new;               // [num_seqs, head_dim] the new tokens' keys and values
  Mat k_pool, v_pool;             // [num_blocks * block_size, head_dim], new rows included
  Mat expected;                   // [num_seqs, head_dim] reference attention, row per sequence
};

/// Returns the batch whose sequences hold `tokens` in all (the new ones included), built on first
/// use: lengths in the ratio 1 : 2 : ... : kNumSeqs, the last taking the remainder, so they are
/// ragged and most end inside a block; every sequence's blocks come from one random permutation
/// of the pool, and the rows past a sequence's end hold NaN. The series that fill `meta` and
/// `each` do it in their checked call, before the clock.
DecodeBatch& decode_batch(int tokens) {
  static std::map<int, std::unique_ptr<DecodeBatch>> built;
  auto& slot = built[tokens];
  if (slot) return *slot;
  pa::testing::Rng rng(static_cast<std::uint64_t>(4000 + tokens));
  auto b = std::make_unique<DecodeBatch>();
  const int parts = kNumSeqs * (kNumSeqs + 1) / 2;
  std::vector<int> seq_lens(kNumSeqs);  // tokens attended to, the new one included
  int assigned = 0;
  for (int s = 0; s < kNumSeqs; ++s) {
    seq_lens[s] = s + 1 < kNumSeqs ? tokens / parts * (s + 1) : tokens - assigned;
    assigned += seq_lens[s];
  }
  int num_blocks = 0;
  for (const int n : seq_lens) num_blocks += (n + kBlockSize - 1) / kBlockSize;
  const IVec shuffled = rng.permutation(num_blocks);
  b->k_pool = Mat::Constant(static_cast<Eigen::Index>(num_blocks) * kBlockSize, kHeadDim,
                            pa::testing::kPoison);
  b->v_pool = b->k_pool;
  b->q = rng.normal(kNumSeqs, kHeadDim, pa::bench::kLogitSpread);  // spread scores, as lab 01's
  b->k_new.resize(kNumSeqs, kHeadDim);
  b->v_new.resize(kNumSeqs, kHeadDim);
  b->expected.resize(kNumSeqs, kHeadDim);
  int next_block = 0;
  for (int s = 0; s < kNumSeqs; ++s) {
    const int n = seq_lens[s];
    const Mat k = rng.normal(n, kHeadDim);  // [n, head_dim] the sequence's keys, new one last
    const Mat v = rng.normal(n, kHeadDim);  // [n, head_dim]
    SeqStep step{{}, n - 1, 1};
    for (int j = 0; j * kBlockSize < n; ++j) step.blocks.push_back(shuffled(next_block++));
    for (int t = 0; t < n; ++t) {
      const int row = step.blocks[t / kBlockSize] * kBlockSize + t % kBlockSize;
      b->k_pool.row(row) = k.row(t);
      b->v_pool.row(row) = v.row(t);
    }
    b->k_new.row(s) = k.row(n - 1);
    b->v_new.row(s) = v.row(n - 1);
    b->expected.row(s) = pa::testing::reference_attention(b->q.row(s).transpose(), k, v).transpose();
    b->steps.push_back(step);
  }
  slot = std::move(b);
  return *slot;
}

/// Sets the two numbers tools/lab bench plots: tokens (x) and bytes read per second (y).
void report(benchmark::State& state, int tokens) {
  pa::bench::report(state, tokens, pa::bench::kv_bytes(tokens));
}

// ---- the lab's code ----------------------------------------------------------------------

void BM_OneCallPerBatch(benchmark::State& state) {
  // attn_paged once over the whole batch, its metadata built before the clock: what an engine
  // launches once per step.
  const int tokens = static_cast<int>(state.range(0));
  DecodeBatch& b = decode_batch(tokens);
  const auto check = [&] {
    b.meta = build_forward_meta(b.steps, kBlockSize);
    return pa::testing::AllClose(b.expected, attn_paged(b.q, b.k_pool, b.v_pool, b.meta, 1, 1),
                                 kLongRowTol);
  };
  if (!time_between_checks(state, check, [&] {
        Mat out = attn_paged(b.q, b.k_pool, b.v_pool, b.meta, 1, 1);  // [num_seqs, head_dim]
        benchmark::DoNotOptimize(out.data());
      })) {
    return;
  }
  report(state, tokens);
}

void BM_OneCallPerSequence(benchmark::State& state) {
  // The same work as kNumSeqs calls of one sequence each: the CPU's version of one launch per
  // request. On a CPU a call costs little, so the two series should be within the noise.
  const int tokens = static_cast<int>(state.range(0));
  DecodeBatch& b = decode_batch(tokens);
  Mat out(kNumSeqs, kHeadDim);  // [num_seqs, head_dim] the rows of the kNumSeqs calls
  const auto per_sequence = [&] {
    for (int s = 0; s < kNumSeqs; ++s) {
      out.row(s) = attn_paged(b.q.row(s), b.k_pool, b.v_pool, b.each[s], 1, 1);
    }
  };
  const auto check = [&] {
    b.each.clear();
    for (const SeqStep& step : b.steps) b.each.push_back(build_forward_meta({step}, kBlockSize));
    per_sequence();
    return pa::testing::AllClose(b.expected, out, kLongRowTol);
  };
  if (!time_between_checks(state, check, [&] {
        per_sequence();
        benchmark::DoNotOptimize(out.data());
      })) {
    return;
  }
  report(state, tokens);
}

void BM_WholeStep(benchmark::State& state) {
  // The step as an engine runs it: the metadata from the scheduler's list, the new K and V
  // scattered into the pool (the same rows every time, so the pool stays right), then attention.
  // The gap to BM_OneCallPerBatch is the bookkeeping.
  const int tokens = static_cast<int>(state.range(0));
  DecodeBatch& b = decode_batch(tokens);
  const auto step = [&] {
    const ForwardMeta meta = build_forward_meta(b.steps, kBlockSize);
    set_kv(b.k_pool, b.v_pool, meta.slot_mapping, b.k_new, b.v_new);
    return attn_paged(b.q, b.k_pool, b.v_pool, meta, 1, 1);  // [num_seqs, head_dim]
  };
  const auto check = [&] { return pa::testing::AllClose(b.expected, step(), kLongRowTol); };
  if (!time_between_checks(state, check, [&] {
        Mat out = step();
        benchmark::DoNotOptimize(out.data());
      })) {
    return;
  }
  report(state, tokens);
}

// ---- registered over 1k .. 64k tokens, with the baselines (pa/bench.hpp) ----------------

PA_BENCH_TOKEN_SWEEP(BM_OneCallPerBatch);
PA_BENCH_TOKEN_SWEEP(BM_OneCallPerSequence);
PA_BENCH_TOKEN_SWEEP(BM_WholeStep);
PA_BENCH_TOKEN_SWEEP(BM_BaselineRead);
PA_BENCH_TOKEN_SWEEP(BM_BaselineCopy);

}  // namespace
}  // namespace pa::varlen_batch

PA_CPU_BENCHMARK_MAIN();
