// Lab 05 — the graded tests. Run: tools/lab grade 05   (or ctest --preset starter -L lab05)
//
// Every test runs on the SIMT emulator; the same tests run again on CUDA when the build has nvcc
// and a device is present (otherwise they are skipped with "no CUDA device"). Ground truth is
// pa::testing::reference_attention (long double, plain loops) over the logical tokens, computed
// from the very values the caches hold (already rounded to float16/bfloat16). Cache rows and
// blocks that no sequence owns hold NaN, so a kernel that reads one row too many fails loudly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "pa/decode_problems.hpp"
#include "pa/simt_testing.hpp"
#include "pa/testing.hpp"
#include "paged_attention_v1.hpp"
#include "simt/errors_and_settings.hpp"

namespace pa::cuda_v1 {

namespace {

using pa::testing::AllClose;
using pa::testing::BitIdentical;
using pa::testing::FarFromUniform;
using pa::testing::Rng;

// The logits in these tests have standard deviation ~kLogitSpread (q ~ N(0, 4^2), k ~ N(0, 1),
// scale 1/sqrt(head_size)), so every softmax is peaked and a kernel that averages V cannot pass.
constexpr double kLogitSpread = 4.0;

/// [tolerances]
// The per-dtype tolerance every decode kernel of these labs is held to, and why it is that size:
// pa::testing::decode_tolerance (pa/decode_problems.hpp).
using Tolerance = pa::testing::DecodeTolerance;
Tolerance tolerance(DType dtype) {
  return pa::testing::decode_tolerance(dtype);
}
/// [tolerances]

// ---- The operands: pa/decode_problems.hpp writes them in vLLM's V0 layout ----------------------

using pa::testing::blocks_for;
using pa::testing::DecodeConfig;
using pa::testing::DecodeProblem;
using pa::testing::KvLayout;
using pa::testing::load;
using pa::testing::make_decode_problem;
using pa::testing::make_token_batch;
using pa::testing::reference_reshape_and_cache;
using pa::testing::rounded;
using pa::testing::same_cache_bytes;
using pa::testing::TokenBatch;
using Config = DecodeConfig;
using Problem = DecodeProblem;

constexpr KvLayout kV0 = KvLayout::kV0;

/// Runs the kernel under test (with the problem's scale unless given another):
/// [num_seqs * num_heads, head_size].
Mat run(Backend backend, const Problem& p, std::optional<float> scale = std::nullopt) {
  const Config& c = p.cfg;
  Tensor out = p.nan_out();
  paged_attention_v1(backend, out, p.query, p.key_cache, p.value_cache, c.num_kv_heads,
                     scale.value_or(p.scale()), p.block_tables, p.seq_lens, c.block_size,
                     p.max_seq_len);
  return pa::testing::to_mat(out, Eigen::Index{p.num_seqs()} * c.num_heads, c.head_size);
}

/// A decode problem in the V0 layout.
Problem make_problem(Rng& rng, Config c) {
  c.layout = kV0;
  return make_decode_problem(rng, c);
}

/// Expects `got` within the dtype's tolerance of the float64 reference, naming a failing
/// element by sequence, head and dimension.
void expect_close_to_reference(const Problem& p, const Mat& got,
                               std::optional<double> tolerance_override = std::nullopt) {
  const Tolerance tol = tolerance(p.cfg.dtype);
  const double atol = tolerance_override.value_or(tol.atol);
  const double rtol = tolerance_override.value_or(tol.rtol);
  EXPECT_TRUE(AllClose(pa::testing::expected_decode(p), got, atol, rtol,
                       pa::testing::decode_labels(p.cfg.num_heads)));
}

/// Builds, runs and checks one configuration against the reference.
void expect_matches_reference(Backend backend, const Config& c, std::uint64_t seed) {
  SCOPED_TRACE(pa::testing::describe(c));
  Rng rng(seed);
  const Problem p = make_problem(rng, c);
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  expect_close_to_reference(p, run(backend, p));
}

// ---- The fixture: every test once per backend ---------------------------------------------

// Every test once per backend, shared memory NaN-filled on the emulator (pa/simt_testing.hpp).
class PagedAttentionV1 : public pa::testing::BackendTest<&cuda_device_present> {};

INSTANTIATE_TEST_SUITE_P(, PagedAttentionV1, ::testing::Values(Backend::kEmulator, Backend::kCuda),
                         pa::testing::backend_test_name);

// ---- reshape_and_cache ---------------------------------------------------------------------

/// [test_reshape_and_cache]
TEST_P(PagedAttentionV1, ReshapeAndCacheMatchesHostReference) {
  // 29 tokens, 5 of them padding (slot -1), written to random distinct slots of a NaN cache:
  // the kernel must reproduce the host's scatter byte for byte (including every NaN it skips).
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const int head_size : {80, 256}) {
      SCOPED_TRACE(dtype_name(dtype) + " head_size " + std::to_string(head_size));
      Rng rng(501 + head_size);
      const int num_tokens = 29, num_kv_heads = 2, block_size = 16, num_blocks = 7;
      const Mat k = rng.normal(num_tokens, num_kv_heads * head_size);
      const Mat v = rng.normal(num_tokens, num_kv_heads * head_size);
      const IVec free_slots = rng.distinct_ids(num_tokens, num_blocks * block_size);
      std::vector<std::int64_t> slots(free_slots.begin(), free_slots.end());
      for (const int padded : {0, 3, 11, 12, 28}) slots[padded] = -1;
      const TokenBatch batch = make_token_batch(dtype, num_kv_heads, head_size, k, v, slots);

      Tensor key_cache =
          pa::testing::nan_key_cache(kV0, dtype, num_blocks, block_size, num_kv_heads, head_size);
      Tensor value_cache =
          pa::testing::nan_value_cache(kV0, dtype, num_blocks, block_size, num_kv_heads, head_size);
      Tensor want_key_cache = key_cache, want_value_cache = value_cache;
      reference_reshape_and_cache(kV0, batch.key, batch.value, want_key_cache,
                                  want_value_cache, slots);

      reshape_and_cache(GetParam(), batch.key, batch.value, key_cache, value_cache,
                        batch.slot_mapping);
      EXPECT_TRUE(
          same_cache_bytes(kV0, want_key_cache, want_value_cache, key_cache, value_cache));
    }
  }
}
/// [test_reshape_and_cache]

TEST_P(PagedAttentionV1, ReshapeAndCachePaddingSlotsWriteNothing) {
  // A batch made only of padding tokens (any negative slot) leaves the caches untouched.
  const DType dtype = DType::kFloat16;
  Mat rows(4, 2 * 64);  // 4 tokens, 2 kv heads of 64
  for (Eigen::Index i = 0; i < rows.size(); ++i) rows.data()[i] = 1.0 + double(i % 7);
  const TokenBatch batch = make_token_batch(dtype, 2, 64, rows, rows, {-1, -1, -5, -1});
  Tensor key_cache = pa::testing::nan_key_cache(kV0, dtype, 3, 8, 2, 64);
  Tensor value_cache = pa::testing::nan_value_cache(kV0, dtype, 3, 8, 2, 64);
  const Tensor key_before = key_cache, value_before = value_cache;
  reshape_and_cache(GetParam(), batch.key, batch.value, key_cache, value_cache, batch.slot_mapping);
  EXPECT_TRUE(same_cache_bytes(kV0, key_before, value_before, key_cache, value_cache));
}

/// [test_decode_step]
TEST_P(PagedAttentionV1, ReshapeAndCacheWritesSlotZero) {
  // Slot 0 is the first row of block 0, a real slot: only negative slots are padding. Three
  // tokens go to slots 0, 1 and 17; every other byte of the caches stays NaN.
  const DType dtype = DType::kBFloat16;
  Rng rng(503);
  const Mat k = rng.normal(3, 2 * 64), v = rng.normal(3, 2 * 64);  // 3 tokens, 2 kv heads of 64
  const std::vector<std::int64_t> slots = {0, 1, 17};
  const TokenBatch batch = make_token_batch(dtype, 2, 64, k, v, slots);
  Tensor key_cache = pa::testing::nan_key_cache(kV0, dtype, 3, 16, 2, 64);
  Tensor value_cache = pa::testing::nan_value_cache(kV0, dtype, 3, 16, 2, 64);
  Tensor want_key_cache = key_cache, want_value_cache = value_cache;
  reference_reshape_and_cache(kV0, batch.key, batch.value, want_key_cache, want_value_cache, slots);
  reshape_and_cache(GetParam(), batch.key, batch.value, key_cache, value_cache, batch.slot_mapping);
  EXPECT_TRUE(same_cache_bytes(kV0, want_key_cache, want_value_cache, key_cache, value_cache));
}

TEST_P(PagedAttentionV1, ReshapeThenAttendIsOneDecodeStep) {
  // The engine's real order: prefill two prompts into the cache through slot_mapping (padding
  // tokens mixed in), write one more token per sequence, then attend. Both kernels must agree
  // on the layout, and the result must match attention over the logical tokens.
  const DType dtype = DType::kBFloat16;
  const int head_size = 96, block_size = 8, num_heads = 6, num_kv_heads = 3;
  const int width = num_kv_heads * head_size;
  const std::vector<int> prompt = {21, 8};
  Rng rng(503);
  const int num_blocks = 12;
  const IVec order = rng.permutation(num_blocks);
  const std::vector<std::vector<int>> blocks = {{order[0], order[1], order[2]},
                                                {order[3], order[4]}};
  std::vector<Mat> k(2), v(2);
  for (int s = 0; s < 2; ++s) {
    k[s] = rounded(dtype, rng.normal(prompt[s] + 1, width));
    v[s] = rounded(dtype, rng.normal(prompt[s] + 1, width));
  }
  Tensor key_cache =
      pa::testing::nan_key_cache(kV0, dtype, num_blocks, block_size, num_kv_heads, head_size);
  Tensor value_cache =
      pa::testing::nan_value_cache(kV0, dtype, num_blocks, block_size, num_kv_heads, head_size);

  // One reshape_and_cache call per phase: tokens [first[s], last[s]) of both sequences as one
  // flat batch, each sequence followed by a padding token (slot -1) full of 7s.
  auto write = [&](const std::vector<int>& first, const std::vector<int>& last) {
    const TokenBatch batch = pa::testing::step_token_batch(dtype, num_kv_heads, head_size,
                                                           block_size, k, v, blocks, first, last);
    reshape_and_cache(GetParam(), batch.key, batch.value, key_cache, value_cache,
                      batch.slot_mapping);
  };
  write({0, 0}, prompt);                          // prefill
  write(prompt, {prompt[0] + 1, prompt[1] + 1});  // the decode step's new token

  const Mat q = rounded(dtype, rng.normal(2 * num_heads, head_size, kLogitSpread));
  const Tensor query = pa::testing::to_tensor(dtype, q, {2, num_heads, head_size});
  Tensor block_tables(DType::kInt32, {2, 4});
  const std::int32_t table[] = {blocks[0][0], blocks[0][1], blocks[0][2], order[11],
                                blocks[1][0], blocks[1][1], order[11],    order[11]};
  std::copy(std::begin(table), std::end(table), block_tables.data_as<std::int32_t>());
  Tensor seq_lens(DType::kInt32, {2});
  seq_lens.data_as<std::int32_t>()[0] = prompt[0] + 1;
  seq_lens.data_as<std::int32_t>()[1] = prompt[1] + 1;

  Tensor out(dtype, {2, num_heads, head_size});
  paged_attention_v1(GetParam(), out, query, key_cache, value_cache, num_kv_heads,
                     static_cast<float>(1.0 / std::sqrt(double(head_size))), block_tables, seq_lens,
                     block_size, prompt[0] + 1);
  Mat want(2 * num_heads, head_size);  // [num_seqs * num_heads, head_size]
  for (int s = 0; s < 2; ++s) {
    want.middleRows(s * num_heads, num_heads) =
        pa::testing::reference_attention_heads(q.middleRows(s * num_heads, num_heads), k[s], v[s]);
  }
  EXPECT_TRUE(FarFromUniform(pa::testing::scores(q.row(0).transpose(), k[0].leftCols(head_size))));
  const Tolerance tol = tolerance(dtype);
  EXPECT_TRUE(AllClose(want, pa::testing::to_mat(out, 2 * num_heads, head_size), tol.atol, tol.rtol,
                       pa::testing::decode_labels(num_heads)));
}
/// [test_decode_step]

// ---- paged_attention_v1: every dtype, head size and block size ----------------------------

/// [test_grid]
// Each dtype over all 6 head sizes x 3 block sizes (18 kernel instantiations per test), with
// ragged lengths that end mid-block, exactly on a block edge and after one token, GQA 4/2.
void expect_grid(Backend backend, DType dtype, std::uint64_t seed) {
  for (const int block_size : kSupportedBlockSizes) {
    for (const int head_size : kSupportedHeadSizes) {
      Config c;
      c.dtype = dtype;
      c.head_size = head_size;
      c.block_size = block_size;
      c.seq_lens = {7 * block_size + 3, 1, 2 * block_size};
      expect_matches_reference(backend, c,
                               seed + static_cast<std::uint64_t>(head_size * block_size));
    }
  }
}

TEST_P(PagedAttentionV1, EveryHeadAndBlockSizeFloat32) {
  expect_grid(GetParam(), DType::kFloat32, 600);
}
TEST_P(PagedAttentionV1, EveryHeadAndBlockSizeFloat16) {
  expect_grid(GetParam(), DType::kFloat16, 700);
}
TEST_P(PagedAttentionV1, EveryHeadAndBlockSizeBFloat16) {
  expect_grid(GetParam(), DType::kBFloat16, 800);
}
/// [test_grid]

// ---- paged_attention_v1: lengths, the poisoned tail, GQA ----------------------------------

/// [test_ragged]
TEST_P(PagedAttentionV1, RaggedLengthsAroundBlockEdgesAndTheSharedMemoryBound) {
  // 1, block_size - 1, block_size, block_size + 1 and a context a few tokens short of the
  // longest that v1's shared memory holds on this backend, in one batch.
  Config c;
  c.dtype = DType::kFloat16;
  c.head_size = 64;
  c.block_size = 16;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  const int bound = v1_max_seq_len(GetParam(), c.dtype, c.head_size, c.block_size);
  c.seq_lens = {1, c.block_size - 1, c.block_size, c.block_size + 1, bound - 3};
  Rng rng(901);
  const Problem p = make_problem(rng, c);
  // The data really is poisoned: the rows after each sequence's last token hold NaN.
  for (int s = 0; s < p.num_seqs(); ++s) {
    const int len = c.seq_lens[static_cast<std::size_t>(s)];
    if (len % c.block_size == 0) continue;
    const int last = p.blocks[static_cast<std::size_t>(s)].back();
    const int first_unused_row = len % c.block_size;
    ASSERT_TRUE(std::isnan(load(p.value_cache, pa::testing::value_index(kV0, p.value_cache, last, 0,
                                                                        first_unused_row, 0))));
    ASSERT_TRUE(std::isnan(
        load(p.key_cache, pa::testing::key_index(kV0, p.key_cache, last, 0, c.block_size - 1, 0))));
  }
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  expect_close_to_reference(p, run(GetParam(), p));
}
/// [test_ragged]

TEST_P(PagedAttentionV1, OneTokenReturnsItsValueExactly) {
  // With one key the softmax is exactly [1]: out must be that token's V row, bit for bit, even
  // though the 15 rows after it in the block are NaN.
  Config c;
  c.dtype = DType::kBFloat16;
  c.seq_lens = {1, 1};
  Rng rng(902);
  const Problem p = make_problem(rng, c);
  const Mat out = run(GetParam(), p);
  const int group = c.num_heads / c.num_kv_heads;
  for (int s = 0; s < 2; ++s) {
    for (int h = 0; h < c.num_heads; ++h) {
      const Eigen::Index col = Eigen::Index{h / group} * c.head_size;
      EXPECT_TRUE(BitIdentical(p.v[s].middleCols(col, c.head_size), out.row(s * c.num_heads + h)))
          << "sequence " << s << " head " << h;
    }
  }
}

TEST_P(PagedAttentionV1, EveryAnswerLandsInItsOwnRow) {
  // Where each answer goes, not what it is worth: three sequences of four query heads over two kv
  // heads, every query head's query its own, so every (sequence, head) has an answer of its own.
  // A row of out that holds another row's answer (within the tolerance) was computed from that
  // head's query, or written to the wrong row. A row that matches no answer at all is left to
  // the other tests: a wrong value is theirs, this one only says where an answer went.
  Config c;
  c.dtype = DType::kFloat32;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.seq_lens = {5, 20, 33};
  Rng rng(913);
  const Problem p = make_problem(rng, c);
  const Mat want = pa::testing::expected_decode(p);  // [num_seqs * num_heads, head_size]
  const Mat got = run(GetParam(), p);
  const Tolerance tol = tolerance(c.dtype);
  const auto holds = [&](Eigen::Index row, Eigen::Index answer) {
    const auto diff = (got.row(row) - want.row(answer)).cwiseAbs();
    const auto bound = (tol.atol + tol.rtol * want.row(answer).cwiseAbs().array()).matrix();
    return (diff.array() <= bound.array()).all();
  };
  const auto name = [&](Eigen::Index row) {
    return "sequence " + std::to_string(row / c.num_heads) + " head " +
           std::to_string(row % c.num_heads);
  };
  for (Eigen::Index row = 0; row < want.rows(); ++row) {
    if (holds(row, row)) continue;
    for (Eigen::Index other = 0; other < want.rows(); ++other) {
      EXPECT_FALSE(other != row && holds(row, other))
          << "the row of out of " << name(row) << " holds the answer of " << name(other)
          << ": was it computed from that head's query, or written to the wrong row of out "
             "([num_seqs, num_heads, head_size])?";
    }
  }
}

// Two tests that each leave one half of the kernel nothing to get wrong, so that a failure says
// which half holds the bug. One key (1/2 in every dimension) in every slot of the key cache (every
// block, kv head and row, the rows past each end and the spare block included) makes every score
// equal whatever the query, the scale, the max and whichever keys are read, right or wrong: the
// softmax is uniform and out is the plain mean of the values, which the value side and the
// normalization alone decide. One value in every slot of the value cache makes out that value for
// any weights that sum to 1, whichever value rows are read: the scores alone cannot change it (the
// key slots no token holds get real keys there, not NaN, so no key read can make a score NaN
// either); the normalization and the sum over blocks can. Lengths run to nine blocks, so every warp
// folds several blocks.
TEST_P(PagedAttentionV1, EqualKeysGiveTheMeanOfTheValues) {
  Config c;
  c.dtype = DType::kFloat32;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.seq_lens = {1, 15, 16, 17, 40, 9 * 16 + 5};
  Rng rng(911);
  Problem p = make_problem(rng, c);
  pa::testing::place_shuffled(p, rng);
  pa::testing::fill_cache_with_one_row(p, pa::testing::CacheSide::kKeys);
  // The one test with a flat softmax on purpose: its reference, the mean of each sequence's
  // values (the value rows past each end are still NaN), is far from zero and from any one row.
  expect_close_to_reference(p, run(GetParam(), p));
}

TEST_P(PagedAttentionV1, EqualValuesComeBackWhateverTheWeights) {
  Config c;
  c.dtype = DType::kFloat32;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.seq_lens = {1, 15, 16, 17, 40, 9 * 16 + 5};
  Rng rng(912);
  Problem p = make_problem(rng, c);
  pa::testing::place_shuffled(p, rng);
  pa::testing::fill_cache_with_one_row(p, pa::testing::CacheSide::kValues);
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  expect_close_to_reference(p, run(GetParam(), p));
}

// ---- The stage probes: the kernel stopped halfway ----------------------------------------
//
// paged_attention_v1_probe runs the kernel only up to the given Probe A (after TODO 2) or
// Probe B (after TODO 4) and returns the row it holds in shared memory there, so these two tests
// grade the first half of the kernel before TODOs 5-7 exist. float32 throughout, so the host's
// float64 logits are the yardstick to ~1e-6; every thread-group size (block sizes 8, 16, 32 at
// head sizes 64, 128, 256: groups of 4, 2 and 1), GQA 4/2, lengths around the block edges and
// past nine blocks (every warp folds several), shuffled blocks. The rows past each end hold NaN
// for Probe A (a key read there poisons a logit) and finite stale keys for Probe B (one that
// reaches the running max zeroes every weight).

/// Fills the rows after each sequence's last token, in its last block, with a freed sequence's
/// keys and values: finite, every element +-kStale. Each stale key points along the query of
/// the first query head of its kv head, so its logit (~1e4 at kStale = 1e3) dwarfs the real
/// ones (~10): a kernel that keeps it out of the logits but not out of the running max pushes
/// every real weight to 0. Returns, per sequence, by how much the stale logit beats the real
/// maximum of that head (0 for a sequence that fills its last block).
std::vector<double> put_stale_rows(Problem& p) {
  constexpr double kStale = 1e3;  // every element of a stale key or value row, up to sign
  const Config& c = p.cfg;
  const int width = c.num_kv_heads * c.head_size;
  const int group = c.num_heads / c.num_kv_heads;
  std::vector<double> lead(static_cast<std::size_t>(p.num_seqs()), 0.0);
  for (int s = 0; s < p.num_seqs(); ++s) {
    const int len = c.seq_lens[static_cast<std::size_t>(s)];
    if (len % c.block_size == 0) continue;  // a full last block has no rows past the end
    Eigen::RowVectorXd stale_key(width);    // [num_kv_heads * head_size]
    for (int g = 0; g < c.num_kv_heads; ++g) {
      stale_key.segment(g * c.head_size, c.head_size) =
          kStale * p.q.row(s * c.num_heads + g * group).array().sign().matrix();
    }
    const Eigen::RowVectorXd stale_value = Eigen::RowVectorXd::Constant(width, kStale);
    const int last = p.blocks[static_cast<std::size_t>(s)].back();
    for (int row = len % c.block_size; row < c.block_size; ++row) {
      pa::testing::put_token(kV0, p.key_cache, p.value_cache, last, row, stale_key, stale_value);
    }
    const double stale_logit =
        p.scale() * p.q.row(s * c.num_heads).dot(stale_key.head(c.head_size));
    lead[static_cast<std::size_t>(s)] =
        stale_logit - pa::testing::query_scores(p, s * c.num_heads).maxCoeff();
  }
  return lead;
}

/// A shape of the probes: float32, GQA 4/2, lengths 1, a block minus one, a block, a block
/// plus one and several blocks per warp (every warp's first block is not its last).
Config float32_gqa_config(int head_size, int block_size, int num_heads = 4,
                          int num_kv_heads = 2) {
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = head_size;
  c.block_size = block_size;
  c.num_heads = num_heads;
  c.num_kv_heads = num_kv_heads;
  c.seq_lens = {1, block_size - 1, block_size, block_size + 1, 9 * block_size + 5};
  return c;
}

/// The shapes both stage probes run: thread groups of 4, 2 and 1. The middle one has 6 query
/// heads over 3 kv heads, where the group size (2) differs from num_kv_heads (3): a kv-head map
/// that divides by num_kv_heads then stays inside the cache and reads the wrong head, so Probe A
/// names TODO 0 instead of a later test reporting an overrun at the key load of TODO 2.
std::vector<Config> stage_probe_configs() {
  return {float32_gqa_config(64, 8), float32_gqa_config(128, 16, 6, 3),
          float32_gqa_config(256, 32)};
}

/// Runs the kernel up to `stage` on `p`: [num_seqs * num_heads, max_num_blocks_per_seq *
/// block_size], one row per (sequence, query head).
Mat run_probe(Backend backend, const Problem& p, Probe stage) {
  const Config& c = p.cfg;
  const Tensor rows =
      paged_attention_v1_probe(backend, stage, p.query, p.key_cache, p.value_cache,
                               c.num_kv_heads, p.scale(), p.block_tables, p.seq_lens,
                               c.block_size, p.max_seq_len);
  return pa::testing::to_mat(rows, Eigen::Index{p.num_seqs()} * c.num_heads, rows.size(2));
}

/// Checks one probed row: columns [0, seq_len) against `want` within atol + rtol * |want|,
/// the columns from seq_len to the end of the last block exactly 0. `what` names the quantity,
/// `todo` the step that writes it; a failure names the first column that differs.
::testing::AssertionResult ProbedRowMatches(const Eigen::RowVectorXd& got, const Vec& want,
                                            int padded_len, double atol, double rtol,
                                            const std::string& who, const std::string& what,
                                            const std::string& todo) {
  for (Eigen::Index t = 0; t < padded_len; ++t) {
    const bool real = t < want.size();
    const double expected = real ? want(t) : 0.0;
    const bool ok = real ? std::abs(got(t) - expected) <= atol + rtol * std::abs(expected)
                         : got(t) == 0.0;  // NaN fails both
    if (ok) continue;
    auto failure = ::testing::AssertionFailure();
    failure << who << ", token " << t << ": the " << what << " is " << got(t) << ", want "
            << expected << ". ";
    if (!real) {
      failure << "Token " << t << " is past seq_len = " << want.size()
              << " in the last block: its row holds stale data or NaN, and the invariant is "
                 "that it holds exactly 0 and never reaches the max (TODO 2's mask"
              << (what == "logit" ? ")" : "; TODO 4 leaves it alone)");
    } else if (std::isnan(got(t))) {
      failure << "NaN: a key read from a row no token holds (every such row is NaN here), or "
                 "from the wrong block or x-chunk (" << todo << ")";
    } else {
      failure << todo;
    }
    return failure;
  }
  return ::testing::AssertionSuccess();
}

TEST_P(PagedAttentionV1, ProbeALogitsMatchTheHost) {
  for (const Config& c : stage_probe_configs()) {
    SCOPED_TRACE(pa::testing::describe(c));
    Rng rng(971 + static_cast<std::uint64_t>(c.block_size));
    const Problem p = make_problem(rng, c);  // shuffled blocks, NaN past every end
    EXPECT_TRUE(pa::testing::SpreadIsWide(p));
    const Mat rows = run_probe(GetParam(), p, Probe::kLogits);
    for (Eigen::Index row = 0; row < rows.rows(); ++row) {
      const int seq_len = c.seq_lens[static_cast<std::size_t>(row / c.num_heads)];
      const Vec logits = pa::testing::query_scores(p, row);  // scale * q·k_t, [seq_len]
      // A logit row that is the host's divided by scale has the right q·k and no scale: say so.
      const Eigen::RowVectorXd unscaled = logits.transpose() / p.scale();
      if (((rows.row(row).head(seq_len) - unscaled).array().abs() <=
           1e-3 * (1.0 + unscaled.array().abs())).all()) {
        ADD_FAILURE() << "sequence " << row / c.num_heads << " head " << row % c.num_heads
                      << ": every logit is 1/scale = " << 1.0 / p.scale()
                      << " times the host's: q·k is right, and the product is not multiplied "
                         "by scale (TODO 2)";
        continue;
      }
      // float32 q·k over <= 256 products carries a few 1e-6 of absolute error (observed on the
      // emulator: 3.3e-6); 1e-4 is 30 times that, while a wrong key, a missing rank's slice or a
      // missing scale moves a logit by O(1).
      EXPECT_TRUE(ProbedRowMatches(
          rows.row(row), logits, blocks_for(seq_len, c.block_size) * c.block_size, 1e-4, 0.0,
          "sequence " + std::to_string(row / c.num_heads) + " head " +
              std::to_string(row % c.num_heads),
          "logit",
          "logit t is scale * q·k_t: the kv head (TODO 0), the query in q_vecs, each rank's vecs "
          "in its own row (TODO 1), this token's key through block_table and its x-chunks, every "
          "rank's slice summed by the group's butterfly, times scale (TODO 2)"));
    }
  }
}

TEST_P(PagedAttentionV1, ProbeBProbabilitiesMatchTheHost) {
  for (const Config& c : stage_probe_configs()) {
    SCOPED_TRACE(pa::testing::describe(c));
    Rng rng(981 + static_cast<std::uint64_t>(c.block_size));
    Problem p = make_problem(rng, c);
    // Here the rows past each end hold finite stale keys whose logits beat the real ones by
    // ~1e3 (put_stale_rows): kept out of the logits by TODO 2's store but not out of its
    // running max, they push every real weight to 0 and the probabilities to NaN.
    put_stale_rows(p);
    EXPECT_TRUE(pa::testing::SpreadIsWide(p));
    const Mat rows = run_probe(GetParam(), p, Probe::kProbabilities);
    for (Eigen::Index row = 0; row < rows.rows(); ++row) {
      const int seq_len = c.seq_lens[static_cast<std::size_t>(row / c.num_heads)];
      const Vec logits = pa::testing::query_scores(p, row);
      const Vec e = (logits.array() - logits.maxCoeff()).exp().matrix();
      const Vec probs = e / e.sum();
      // A logit off by a few 1e-6 moves its weight by as much relatively, and __expf and
      // __fdividef add a few ulp (observed on the emulator: 2.5e-6 relative, 4.9e-7 absolute):
      // 1e-4 relative is 40 times that, and 1e-6 absolute lets go the weights below e^-14, which
      // float32 keeps to few digits; a max or a sum over the wrong tokens moves weights by far
      // more.
      EXPECT_TRUE(ProbedRowMatches(
          rows.row(row), probs, blocks_for(seq_len, c.block_size) * c.block_size, 1e-6, 1e-4,
          "sequence " + std::to_string(row / c.num_heads) + " head " +
              std::to_string(row % c.num_heads),
          "probability",
          "probability t is e^(s_t - max) / (the sum of e^(s_t' - max) over t' < seq_len). If "
          "ProbeALogitsMatchTheHost passes, the logits are right and the bug is in TODO 3 (the "
          "max over the whole block, in every thread), in TODO 4 (the exponentials of exactly "
          "the tokens before seq_len, summed over every lane and warp, each divided by that one "
          "sum), or in TODO 2's running max: the rows past seq_len hold finite stale keys here, "
          "with logits far above the real ones, and must not reach qk_max"));
    }
  }
}

// ---- The weight probe: out = the softmax weights themselves --------------------------------
//
// The kernel writes only out, but with one-hot values (token t's value row is e_t of its kv
// head: 1 in dimension t, 0 elsewhere) out[seq, head, t] = sum_t' p_t' v_t'[t] = p_t: the output
// row IS the weight vector, one dimension per token. Two tests then split the softmax in two.
// The ratio of two weights, p_t / p_t' = e^(l_t - l_t'), does not depend on the denominator at
// all: it holds whatever the normalization and is broken by a wrong logit (the query, q·k, the
// scale, the mask) or a max that differs between tokens (TODOs 1-3). The sum of the weights over
// the real tokens is 1 whatever the logits are, and is broken by a wrong denominator or a wrong
// set of exponentials summed (TODO 4). Both go through the value side (TODOs 5-7), which the
// equal-keys and equal-values tests pin on their own.
//
// float32 throughout: 0 and 1 are exact in every dtype, and a float32 output keeps each weight
// to ~1e-7 instead of a float16's 5e-4. Each sequence is at most head_size tokens long, so every
// token has a dimension of its own, the rows past its end in its last block included: there the
// key is NaN (a logit that is not masked poisons the result) and the value is the row's own
// one-hot vector, so whatever weight a row past the end gets shows in its own dimension of out
// instead of turning every output into NaN (reading those values is the value side's business,
// which the tests with NaN values pin).

/// The shapes both probes run: thread groups of 4 (block size 8) and of 2 (block size 16), GQA
/// 4/2, lengths 1, a block minus one, a block, a block plus one, several blocks per warp (every
/// warp's first block is not its last) and the longest the head holds, in shuffled blocks.
std::vector<Config> weight_probe_configs() {
  std::vector<Config> configs;
  for (const auto& [head_size, block_size] : {std::pair{128, 8}, std::pair{256, 16}}) {
    configs.push_back(float32_gqa_config(head_size, block_size));
    configs.back().seq_lens.push_back(head_size);
  }
  return configs;
}

/// A decode problem whose values are the one-hot rows above, placed in shuffled blocks.
Problem make_weight_probe(Rng& rng, const Config& c) {
  Problem p = make_problem(rng, c);
  for (int s = 0; s < p.num_seqs(); ++s) {
    Mat& v = p.v[static_cast<std::size_t>(s)];  // [seq_len, num_kv_heads * head_size]
    EXPECT_LE(v.rows(), c.head_size) << "a token without a dimension of its own";
    v.setZero();
    for (Eigen::Index t = 0; t < v.rows(); ++t) {
      for (int g = 0; g < c.num_kv_heads; ++g) v(t, Eigen::Index{g} * c.head_size + t) = 1.0;
    }
  }
  pa::testing::place_shuffled(p, rng);
  const Eigen::RowVectorXd nan_key = Eigen::RowVectorXd::Constant(
      Eigen::Index{c.num_kv_heads} * c.head_size, std::numeric_limits<double>::quiet_NaN());
  for (int s = 0; s < p.num_seqs(); ++s) {
    const int len = c.seq_lens[static_cast<std::size_t>(s)];
    const int last = p.blocks[static_cast<std::size_t>(s)].back();
    for (int t = len; t < blocks_for(len, c.block_size) * c.block_size; ++t) {
      Eigen::RowVectorXd one_hot = Eigen::RowVectorXd::Zero(nan_key.size());
      for (int g = 0; g < c.num_kv_heads; ++g) one_hot(Eigen::Index{g} * c.head_size + t) = 1.0;
      pa::testing::put_token(kV0, p.key_cache, p.value_cache, last, t % c.block_size, nan_key,
                             one_hot);
    }
  }
  return p;
}

/// Expects every element of `row` (the out row of `who`) to be finite; names the first that is not.
::testing::AssertionResult AllFinite(const Eigen::RowVectorXd& row, const std::string& who) {
  for (Eigen::Index d = 0; d < row.size(); ++d) {
    if (!std::isfinite(row(d))) {
      return ::testing::AssertionFailure()
             << who << ": out[" << d << "] holds " << row(d)
             << ", not a finite weight (with one-hot values each out element is one token's "
                "weight or 0)";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST_P(PagedAttentionV1, WeightsAreInTheRatioOfExpLogits) {
  for (const Config& c : weight_probe_configs()) {
    SCOPED_TRACE(pa::testing::describe(c));
    Rng rng(931 + static_cast<std::uint64_t>(c.block_size));
    const Problem p = make_weight_probe(rng, c);
    EXPECT_TRUE(pa::testing::SpreadIsWide(p));
    const Mat out = run(GetParam(), p);  // [num_seqs * num_heads, head_size]: the weights
    for (Eigen::Index row = 0; row < out.rows(); ++row) {
      const std::string who = "sequence " + std::to_string(row / c.num_heads) + " head " +
                              std::to_string(row % c.num_heads);
      const Vec logits = pa::testing::query_scores(p, row);  // l_t = scale q·k_t, [seq_len]
      const Eigen::RowVectorXd weights = out.row(row).head(logits.size());
      if (!AllFinite(weights, who)) {
        ADD_FAILURE() << AllFinite(weights, who).message();
        continue;
      }
      Eigen::Index top = 0;  // the token the reference weighs most: every ratio is taken to it
      logits.maxCoeff(&top);
      if (!(weights(top) > 0.0)) {
        ADD_FAILURE() << who << ": token " << top << ", the one with the largest logit ("
                      << logits(top) << "), weighs " << weights(top)
                      << " — the logits are wrong before the softmax (the query of TODO 1, or "
                         "q·k, the scale or the mask of TODO 2)";
        continue;
      }
      for (Eigen::Index t = 0; t < logits.size(); ++t) {
        const double want = std::exp(logits(t) - logits(top));
        const double got = weights(t) / weights(top);
        // float32 logits of <= 256 products carry ~1e-6 absolute error, which exp() turns into
        // as much relative error (observed: 4e-6; the GPU's __expf adds up to ~2e-6 at these
        // arguments): 1e-4 relative is 25 times that, and 1e-6 absolute lets go the ratios below
        // e^-14, whose float32 weights keep few digits. A ratio moves by a factor e^(error) of
        // its logits, so a logit off by more than 1e-4 fails.
        if (std::abs(got - want) > 1e-6 + 1e-4 * want) {
          ADD_FAILURE() << who << ": the weights are not in the ratio e^(l_t - l_t'): token " << t
                        << " vs token " << top << " (the largest logit), out[" << t << "] / out["
                        << top << "] = " << got << ", want e^(" << logits(t) << " - "
                        << logits(top) << ") = " << want
                        << ". A common factor of all weights (the normalization) cancels in this "
                           "ratio, so the logits themselves are wrong before the softmax: the "
                           "query in shared memory (TODO 1), q·k of this token's key, the scale "
                           "or the mask (TODO 2), or a max that is not the same for every token "
                           "(TODO 3)";
          break;  // one token per (sequence, head) says it; the next row may say more
        }
      }
    }
  }
}

TEST_P(PagedAttentionV1, WeightsSumToOneOverTheRealTokens) {
  for (const Config& c : weight_probe_configs()) {
    SCOPED_TRACE(pa::testing::describe(c));
    Rng rng(941 + static_cast<std::uint64_t>(c.block_size));
    const Problem p = make_weight_probe(rng, c);
    EXPECT_TRUE(pa::testing::SpreadIsWide(p));
    const Mat out = run(GetParam(), p);  // [num_seqs * num_heads, head_size]: the weights
    for (Eigen::Index row = 0; row < out.rows(); ++row) {
      const std::string who = "sequence " + std::to_string(row / c.num_heads) + " head " +
                              std::to_string(row % c.num_heads);
      const int seq_len = c.seq_lens[static_cast<std::size_t>(row / c.num_heads)];
      if (!AllFinite(out.row(row), who)) {
        ADD_FAILURE() << AllFinite(out.row(row), who).message();
        continue;
      }
      const double sum = out.row(row).head(seq_len).sum();
      // <= 256 float32 weights, each off by a few ulp of itself after the exp and the division
      // by exp_sum, add up to 1 within ~1e-6 (observed: 2e-7); 1e-5 is 50 times that, while a
      // denominator that misses or adds some tokens' exponentials moves the sum by their share.
      EXPECT_NEAR(sum, 1.0, 1e-5)
          << who << ": the weights of the " << seq_len << " real tokens (out[0.." << seq_len - 1
          << "]) sum to " << sum
          << ", not 1 — the probabilities are e^(l_t - max) divided by their sum over exactly "
             "the tokens t < seq_len, taken over the whole thread block, both warp levels "
             "(TODO 4)";
      for (int d = seq_len; d < c.head_size; ++d) {
        if (out(row, d) != 0.0) {  // no real token has dimension d: nothing may land there
          ADD_FAILURE() << who << ": out[" << d << "] = " << out(row, d) << ", want exactly 0: "
                        << "the sequence has " << seq_len << " tokens, so "
                        << (d < blocks_for(seq_len, c.block_size) * c.block_size
                                ? "a row past seq_len in its last block got a weight and its "
                                  "value reached out: rows past the end keep probability 0 "
                                  "(masked in TODO 2, left out of the exponentials of TODO 4) "
                                  "and their columns add nothing in TODO 5"
                                : "no token has this dimension: a value landed in the wrong one");
          break;
        }
      }
    }
  }
}

TEST_P(PagedAttentionV1, ConstantQueryLeavesOnlyTheKeysToRead) {
  // Every query of the batch is one constant vector: then the dot product of a key with any vec
  // of the query, in any order, is the same, so where and in what order the query was loaded
  // (TODO 1) cannot change the logits, and everything after it still can: the kv head, the keys'
  // x-chunks, the group's butterfly, the scale and the mask (TODO 2), and the rest of the kernel.
  // With k ~ N(0, 1) and scale 1/sqrt(head_size), the logits scale * 4 * sum_d k_t[d] spread
  // like N(0, 4^2), the same spread as the other tests'.
  for (const auto& [head_size, block_size] : {std::pair{128, 8}, std::pair{96, 16}}) {
    Config c = float32_gqa_config(head_size, block_size);
    c.seq_lens = {1, block_size + 1, 9 * block_size + 5};
    SCOPED_TRACE(pa::testing::describe(c));
    Rng rng(951 + static_cast<std::uint64_t>(block_size));
    Problem p = make_problem(rng, c);
    p.q.setConstant(4.0);  // exact in every dtype
    p.query = pa::testing::to_tensor(c.dtype, p.q, {p.num_seqs(), c.num_heads, c.head_size});
    EXPECT_TRUE(pa::testing::SpreadIsWide(p));
    const Mat got = run(GetParam(), p);
    const Tolerance tol = tolerance(c.dtype);
    EXPECT_TRUE(AllClose(pa::testing::expected_decode(p), got, tol.atol, tol.rtol,
                         pa::testing::decode_labels(c.num_heads)))
        << "every query is the same constant vector here, so the query's load cannot matter: "
           "the logits are wrong after it — the kv head (TODO 0), the keys' x-chunks, the "
           "group's butterfly, the scale or the mask (TODO 2) — or a later step is";
  }
}

/// [test_gqa]
TEST_P(PagedAttentionV1, GroupedQueryEightHeadsOverTwo) {
  // Heads 0-3 read kv head 0, heads 4-7 kv head 1; the kv heads hold different data, so any
  // other mapping (h % num_kv_heads, h itself) fails.
  Config c;
  c.dtype = DType::kFloat16;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.seq_lens = {45, 17, 64};
  expect_matches_reference(GetParam(), c, 903);
}

TEST_P(PagedAttentionV1, GroupedQueryThirtyTwoHeadsOverFour) {
  Config c;
  c.dtype = DType::kBFloat16;
  c.head_size = 128;
  c.block_size = 32;
  c.num_heads = 32;
  c.num_kv_heads = 4;
  c.seq_lens = {70, 33};
  expect_matches_reference(GetParam(), c, 904);
}

TEST_P(PagedAttentionV1, MultiHeadOneKvHeadPerQueryHead) {
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 112;
  c.block_size = 8;
  c.num_heads = 6;
  c.num_kv_heads = 6;
  c.seq_lens = {29, 100, 8};
  expect_matches_reference(GetParam(), c, 905);
}
/// [test_gqa]

TEST_P(PagedAttentionV1, SequenceInTheLastBlocksOfTheCache) {
  // The sequence fills the cache's last three physical blocks (in shuffled order) to their
  // final row, and the kv head its query heads 4-7 read is the last one: the last byte of both
  // caches is read, and nothing after it. Under the asan preset a read past the end is an error.
  Config c;
  c.dtype = DType::kFloat16;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.seq_lens = {3 * c.block_size};
  Rng rng(910);
  Problem p = make_problem(rng, c);
  const int num_blocks = 6;  // blocks 0-2 are NaN padding, 3-5 hold the sequence
  pa::testing::place_at(p, {{4, 5, 3}}, num_blocks, 0);
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  expect_close_to_reference(p, run(GetParam(), p));
}

TEST_P(PagedAttentionV1, ScaleOtherThanTheDefaultIsUsed) {
  // A model may scale its logits by something other than 1/sqrt(head_size). Twice the scale is
  // exactly the default scale on twice the query (doubling is exact in every dtype), so the
  // reference of the doubled query is the truth for scale * 2.
  Config c;
  c.dtype = DType::kFloat16;
  c.head_size = 128;
  c.block_size = 16;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.seq_lens = {150, 33};
  Rng rng(549);
  const Problem p = make_problem(rng, c);
  const Problem doubled = pa::testing::with_query_scaled(p, 2.0);
  expect_close_to_reference(doubled, run(GetParam(), p, 2.0f * p.scale()));
}

TEST_P(PagedAttentionV1, LargeLogitsStayFinite) {
  // Scores near 300: exp(300) overflows float32 (the limit is ~88), so only a kernel that
  // subtracts the block-wide maximum (not a warp's own) stays finite and right.
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 64;
  c.block_size = 8;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.seq_lens = {150};
  Rng rng(906);
  Problem p = make_problem(rng, c);
  for (int h = 0; h < c.num_heads; ++h) {  // scale each head's query so its top score is 300
    const double top = pa::testing::query_scores(p, h).maxCoeff();
    ASSERT_GT(top, 0.0);
    pa::testing::scale_query_row(p, h, 300.0 / top);
  }
  // Scores of ~300 carry ~300x the absolute float32 rounding of scores of ~1, and exp() passes
  // that on to the weights; 1e-3 is still far below what a wrong maximum produces.
  constexpr double kLargeLogitTol = 1e-3;
  expect_close_to_reference(p, run(GetParam(), p), kLargeLogitTol);
}

TEST_P(PagedAttentionV1, StaleKeysPastTheEndNeverSetTheMax) {
  // In an engine the rows after a sequence's last token hold a freed sequence's keys: finite,
  // not NaN (put_stale_rows). The stale values are finite too: this test is about keys.
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 64;
  c.block_size = 16;
  c.num_heads = 3;
  c.num_kv_heads = 3;  // one query head per kv head, so each stale key can aim at its query
  c.seq_lens = {37, 5, 25};
  Rng rng(911);
  Problem p = make_problem(rng, c);
  const std::vector<double> lead = put_stale_rows(p);
  for (int s = 0; s < p.num_seqs(); ++s) {
    // The data really is what the comment says: a stale logit beats the real maximum by far.
    if (c.seq_lens[static_cast<std::size_t>(s)] % c.block_size != 0) {
      ASSERT_GT(lead[static_cast<std::size_t>(s)], 1000.0) << "sequence " << s;
    }
  }
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  expect_close_to_reference(p, run(GetParam(), p));
}

// ---- Invariances ---------------------------------------------------------------------------

/// [test_invariance]
TEST_P(PagedAttentionV1, PagingIsInvisibleBitForBit) {
  // The same logical tokens dealt to different physical blocks (and a bigger cache) give the
  // same bits: the kernel's arithmetic may depend on token order, never on block ids.
  Config c;
  c.dtype = DType::kFloat16;
  c.block_size = 8;
  c.seq_lens = {61, 9, 24};
  Rng rng(907);
  Problem a = make_problem(rng, c);
  Problem b = a;
  b.cfg.spare_blocks = 11;
  pa::testing::place_shuffled(b, rng);
  ASSERT_NE(a.blocks, b.blocks);
  EXPECT_TRUE(
      BitIdentical(run(GetParam(), a), run(GetParam(), b),
                   pa::testing::decode_labels(c.num_heads, "first placement", "second placement")));
}

TEST_P(PagedAttentionV1, SchedulesAgreeBitForBit) {
  // On the emulator: the threads of each block run first-to-last, last-to-first and shuffled
  // between synchronisation points. A kernel with every barrier in place gives the same bits
  // every time; a missing __syncthreads makes the result depend on the order. On a GPU: two
  // runs must agree.
  Config c;
  c.dtype = DType::kFloat32;
  c.head_size = 80;
  c.block_size = 16;
  c.seq_lens = {150, 3, 77};
  Rng rng(908);
  const Problem p = make_problem(rng, c);
  const pa::testing::RestoreSchedule restore;
  simt::set_schedule(simt::Schedule::Forward);
  const Mat forward = run(GetParam(), p);
  simt::set_schedule(simt::Schedule::Reverse);
  const Mat reverse = run(GetParam(), p);
  simt::set_schedule(simt::Schedule::Random, 2024);
  const Mat shuffled = run(GetParam(), p);
  // First the schedules against each other (a NaN is named as such): a difference is a race.
  const ::testing::AssertionResult reverse_agrees =
      BitIdentical(forward, reverse,
                   pa::testing::decode_labels(c.num_heads, "forward schedule", "reverse schedule"));
  const ::testing::AssertionResult random_agrees =
      BitIdentical(forward, shuffled,
                   pa::testing::decode_labels(c.num_heads, "forward schedule", "random:2024"));
  EXPECT_TRUE(reverse_agrees);
  EXPECT_TRUE(random_agrees);
  // Then, only when they agree, the answer itself: a wrong answer here is not a race.
  if (reverse_agrees && random_agrees) {
    EXPECT_TRUE(AllClose(pa::testing::expected_decode(p), forward, tolerance(c.dtype).atol,
                         tolerance(c.dtype).rtol,
                         pa::testing::decode_labels(
                             c.num_heads, "reference",
                             "kernel (the same bits under all three schedules: not a race)")));
  }
}
/// [test_invariance]

}  // namespace
}  // namespace pa::cuda_v1
