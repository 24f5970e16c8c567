// Lab 07 — the graded tests. Run: tools/lab grade 07   (or ctest --preset starter -L lab07)
//
// Every test runs on the SIMT emulator; the same tests run again on CUDA when the build has nvcc
// and a device is present (otherwise they are skipped with "no CUDA device"). Ground truth is
// pa::testing::reference_attention (long double, plain loops) over the logical tokens, computed
// from the very values the caches hold (already rounded to float16/bfloat16). Cache rows and
// blocks that no sequence owns hold NaN, so a kernel that reads one row too many fails loudly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gqa_decode.hpp"
#include "pa/decode_problems.hpp"
#include "pa/simt_testing.hpp"
#include "pa/testing.hpp"
#include "simt/errors_and_settings.hpp"

namespace pa::cuda_gqa {

namespace {

using pa::testing::AllClose;
using pa::testing::BitIdentical;
using pa::testing::DecodeConfig;
using pa::testing::DecodeProblem;
using pa::testing::FarFromUniform;
using pa::testing::KvLayout;
using pa::testing::load;
using pa::testing::make_token_batch;
using pa::testing::reference_reshape_and_cache;
using pa::testing::Rng;
using pa::testing::rounded;
using pa::testing::same_cache_bytes;
using pa::testing::TokenBatch;

constexpr KvLayout kFlash = KvLayout::kFlash;

/// [tolerances]
struct Tolerance {
  double atol;
  double rtol;
};

/// How far the kernel's output may sit from the reference (long double, rounded to float64), per
/// dtype: |out - ref| <= atol + rtol |ref|. The inputs are the same rounded values on both
/// sides; what remains is
///  - W: the weights e^(s - m) are rounded to the input type before the W·V product on the
///    tensor cores (as in FlashAttention), a relative error of up to u = 2^-11 (float16) or 2^-8
///    (bfloat16) per weight, which moves an output by at most u * sum_t p_t |v_t| (p_t: the
///    normalized weight): u times a p-weighted mean of |v|, near 0.8 (the mean |v| of N(0, 1)
///    values) when the softmax is flat (it reaches max|v| only if all the weight sits on the
///    largest value), and the per-weight errors' signs differ, so atol = 2u covers it with room;
///  - out: the final rounding to the output type, half an ulp; rtol is one ulp (two half-ulps)
///    (2^-11 * 2 ~ 1e-3, 2^-8 * 2 ~ 8e-3) as in lab 05;
///  - float32 sums and the GPU's approximate __expf: ~1e-6, far below both.
/// A wrong weight, row or partition moves outputs by more than 1e-2, as in lab 05.
Tolerance tolerance(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return {1e-3, 1e-3};
    case DType::kBFloat16:
      return {8e-3, 8e-3};
    default:  // never asked: lab 07 runs in float16 and bfloat16 only, the tensor cores' inputs
      return {0.0, 0.0};
  }
}
/// [tolerances]

// ---- The operands: pa/decode_problems.hpp writes them in vLLM V1's flash layout ---------------

/// A decode problem in the flash layout.
DecodeProblem make_problem(Rng& rng, DecodeConfig c) {
  c.layout = kFlash;
  return pa::testing::make_decode_problem(rng, c);
}

/// Runs the kernel under test: [num_seqs * num_heads, head_size].
Mat run(Backend backend, const DecodeProblem& p, int partition_size = 0) {
  const DecodeConfig& c = p.cfg;
  Tensor out = p.nan_out();
  gqa_decode(backend, out, p.query, p.key_cache, p.value_cache, p.scale(), p.block_tables,
             p.seq_lens, p.max_seq_len, partition_size);
  return pa::testing::to_mat(out, Eigen::Index{p.num_seqs()} * c.num_heads, c.head_size);
}

/// Runs the kernel with `scale` in place of the problem's own: [num_seqs * num_heads, head_size].
Mat run_with_scale(Backend backend, const DecodeProblem& p, float scale, int partition_size) {
  Tensor out = p.nan_out();
  gqa_decode(backend, out, p.query, p.key_cache, p.value_cache, scale, p.block_tables, p.seq_lens,
             p.max_seq_len, partition_size);
  return pa::testing::to_mat(out, Eigen::Index{p.num_seqs()} * p.cfg.num_heads, p.cfg.head_size);
}

/// Expects `got` within the dtype's tolerance of `want`, naming a failing element by
/// sequence, head and dimension.
::testing::AssertionResult CloseToReference(const DecodeProblem& p, const Mat& want,
                                            const Mat& got) {
  const Tolerance tol = tolerance(p.cfg.dtype);
  return AllClose(want, got, tol.atol, tol.rtol, pa::testing::decode_labels(p.cfg.num_heads));
}

/// Builds, runs and checks one configuration against the reference.
void expect_matches_reference(Backend backend, const DecodeConfig& c, std::uint64_t seed,
                              int partition_size = 0) {
  SCOPED_TRACE(pa::testing::describe(c) + " partition_size " + std::to_string(partition_size));
  Rng rng(seed);
  const DecodeProblem p = make_problem(rng, c);
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  EXPECT_TRUE(
      CloseToReference(p, pa::testing::expected_decode(p), run(backend, p, partition_size)));
}

/// A configuration: dtype, head size, block size, query heads / kv heads, sequence lengths.
DecodeConfig config(DType dtype, int head_size, int block_size, int num_heads, int num_kv_heads,
                    std::vector<int> seq_lens) {
  DecodeConfig c;
  c.layout = kFlash;
  c.dtype = dtype;
  c.head_size = head_size;
  c.block_size = block_size;
  c.num_heads = num_heads;
  c.num_kv_heads = num_kv_heads;
  c.seq_lens = std::move(seq_lens);
  return c;
}

using pa::testing::RestoreSchedule;

/// A partition longer than every sequence of the tests that pass it: each sequence is one
/// partition and its block writes out, with no merge. The tests of the groups, the softmax and the
/// loader use it, so that a bug in the merge (which has tests of its own) does not fail them too.
constexpr int kNoSplit = 8 * kTileTokens;

// ---- The fixture: every test once per backend ---------------------------------------------

// Every test once per backend, shared memory NaN-filled on the emulator (pa/simt_testing.hpp).
class GqaDecode : public pa::testing::BackendTest<&cuda_device_present> {};

INSTANTIATE_TEST_SUITE_P(, GqaDecode, ::testing::Values(Backend::kEmulator, Backend::kCuda),
                         pa::testing::backend_test_name);

// ---- reshape_and_cache_flash ---------------------------------------------------------------

/// [test_reshape_and_cache]
TEST_P(GqaDecode, ReshapeAndCacheFlashMatchesHostReference) {
  // 29 tokens, 5 of them padding (slot -1), written to random distinct slots of a NaN cache:
  // the kernel must reproduce the host's scatter byte for byte (including every NaN it skips).
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (const int head_size : {64, 256}) {
      SCOPED_TRACE(dtype_name(dtype) + " head_size " + std::to_string(head_size));
      Rng rng(701 + head_size);
      const int num_tokens = 29, num_kv_heads = 3, block_size = 16, num_blocks = 7;
      const Mat k = rng.normal(num_tokens, num_kv_heads * head_size);
      const Mat v = rng.normal(num_tokens, num_kv_heads * head_size);
      const IVec free_slots = rng.distinct_ids(num_tokens, num_blocks * block_size);
      std::vector<std::int64_t> slots(free_slots.begin(), free_slots.end());
      for (const int padded : {0, 3, 11, 12, 28}) slots[padded] = -1;
      const TokenBatch batch = make_token_batch(dtype, num_kv_heads, head_size, k, v, slots);

      Tensor key_cache = pa::testing::nan_key_cache(kFlash, dtype, num_blocks, block_size,
                                                    num_kv_heads, head_size);
      Tensor value_cache = pa::testing::nan_value_cache(kFlash, dtype, num_blocks, block_size,
                                                        num_kv_heads, head_size);
      Tensor want_key_cache = key_cache, want_value_cache = value_cache;
      reference_reshape_and_cache(kFlash, batch.key, batch.value, want_key_cache,
                                  want_value_cache, slots);

      reshape_and_cache_flash(GetParam(), batch.key, batch.value, key_cache, value_cache,
                              batch.slot_mapping);
      EXPECT_TRUE(
          same_cache_bytes(kFlash, want_key_cache, want_value_cache, key_cache, value_cache));
    }
  }
}
/// [test_reshape_and_cache]

TEST_P(GqaDecode, ReshapeAndCacheFlashPaddingSlotsWriteNothing) {
  // A batch made only of padding tokens (any negative slot) leaves the caches untouched.
  const DType dtype = DType::kBFloat16;
  Mat rows(4, 2 * 64);  // 4 tokens, 2 kv heads of 64
  for (Eigen::Index i = 0; i < rows.size(); ++i) rows.data()[i] = 1.0 + double(i % 7);
  const TokenBatch batch = make_token_batch(dtype, 2, 64, rows, rows, {-1, -1, -5, -1});
  Tensor key_cache = pa::testing::nan_key_cache(kFlash, dtype, 3, 16, 2, 64);
  Tensor value_cache = pa::testing::nan_value_cache(kFlash, dtype, 3, 16, 2, 64);
  const Tensor key_before = key_cache, value_before = value_cache;
  reshape_and_cache_flash(GetParam(), batch.key, batch.value, key_cache, value_cache,
                          batch.slot_mapping);
  EXPECT_TRUE(same_cache_bytes(kFlash, key_before, value_before, key_cache, value_cache));
}

/// [test_decode_step]
TEST_P(GqaDecode, ReshapeThenDecodeIsOneDecodeStep) {
  // The engine's order: prefill two prompts into the cache through slot_mapping (a padding
  // token after each), write one more token per sequence, then decode. Both kernels must agree
  // on the layout, and the result must match attention over the logical tokens. The first
  // sequence spans two partitions of 64 tokens, so the merge runs too.
  const DType dtype = DType::kBFloat16;
  const int head_size = 128, block_size = 16, num_heads = 8, num_kv_heads = 2;
  const int width = num_kv_heads * head_size;
  const std::vector<int> prompt = {70, 9};
  Rng rng(703);
  const int num_blocks = 9;
  const IVec order = rng.permutation(num_blocks);
  const std::vector<std::vector<int>> blocks = {{order[0], order[1], order[2], order[3], order[4]},
                                                {order[5]}};
  std::vector<Mat> k(2), v(2);
  for (int s = 0; s < 2; ++s) {
    k[s] = rounded(dtype, rng.normal(prompt[s] + 1, width));
    v[s] = rounded(dtype, rng.normal(prompt[s] + 1, width));
  }
  Tensor key_cache =
      pa::testing::nan_key_cache(kFlash, dtype, num_blocks, block_size, num_kv_heads, head_size);
  Tensor value_cache =
      pa::testing::nan_value_cache(kFlash, dtype, num_blocks, block_size, num_kv_heads, head_size);

  // One reshape_and_cache_flash call per phase: tokens [first[s], last[s]) of both sequences as
  // one flat batch, each sequence followed by a padding token (slot -1) full of 7s.
  auto write = [&](const std::vector<int>& first, const std::vector<int>& last) {
    const TokenBatch batch = pa::testing::step_token_batch(dtype, num_kv_heads, head_size,
                                                           block_size, k, v, blocks, first, last);
    reshape_and_cache_flash(GetParam(), batch.key, batch.value, key_cache, value_cache,
                            batch.slot_mapping);
  };
  write({0, 0}, prompt);                          // prefill
  write(prompt, {prompt[0] + 1, prompt[1] + 1});  // the decode step's new token

  const Mat q = rounded(dtype, rng.normal(2 * num_heads, head_size, 4.0));
  const Tensor query = pa::testing::to_tensor(dtype, q, {2, num_heads, head_size});
  Tensor block_tables(DType::kInt32, {2, 6});
  const std::int32_t table[] = {blocks[0][0], blocks[0][1], blocks[0][2], blocks[0][3],
                                blocks[0][4], order[8],     blocks[1][0], order[8],
                                order[8],     order[8],     order[8],     order[8]};
  std::copy(std::begin(table), std::end(table), block_tables.data_as<std::int32_t>());
  Tensor seq_lens(DType::kInt32, {2});
  seq_lens.data_as<std::int32_t>()[0] = prompt[0] + 1;
  seq_lens.data_as<std::int32_t>()[1] = prompt[1] + 1;

  Tensor out(dtype, {2, num_heads, head_size});
  gqa_decode(GetParam(), out, query, key_cache, value_cache,
             static_cast<float>(1.0 / std::sqrt(double(head_size))), block_tables, seq_lens,
             prompt[0] + 1, kTileTokens);
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

// ---- Every head size and block size --------------------------------------------------------

/// [test_grid]
// Each dtype over the 3 head sizes x 2 block sizes (6 instantiations), four query heads per kv
// head (12 padding rows), lengths that end mid-block and mid-tile (3 tiles), one token, and a
// whole number of blocks; the default split gives the longest sequence two partitions.
void expect_grid(Backend backend, DType dtype, std::uint64_t seed) {
  for (const int block_size : kSupportedBlockSizes) {
    for (const int head_size : kSupportedHeadSizes) {
      const DecodeConfig c = config(dtype, head_size, block_size, 8, 2,
                                    {2 * kTileTokens + block_size + 3, 1, 2 * block_size});
      expect_matches_reference(backend, c,
                               seed + static_cast<std::uint64_t>(head_size * block_size));
    }
  }
}

TEST_P(GqaDecode, EveryHeadAndBlockSizeFloat16) {
  expect_grid(GetParam(), DType::kFloat16, 710);
}
TEST_P(GqaDecode, EveryHeadAndBlockSizeBFloat16) {
  expect_grid(GetParam(), DType::kBFloat16, 720);
}
/// [test_grid]

// ---- Groups: 1, 3, 4, 8 and 16 query heads per kv head -------------------------------------

/// [test_groups]
// One partition per sequence (kNoSplit): these are about which rows serve which heads.
TEST_P(GqaDecode, GroupOfOneIsMultiHead) {
  // num_heads == num_kv_heads: one real row in the tile, fifteen zero rows.
  expect_matches_reference(GetParam(), config(DType::kFloat16, 64, 16, 6, 6, {100, 37}), 730,
                           kNoSplit);
}

TEST_P(GqaDecode, GroupOfFourPadsTwelveRows) {
  expect_matches_reference(GetParam(), config(DType::kBFloat16, 128, 32, 12, 3, {90, 200}), 731,
                           kNoSplit);
}

TEST_P(GqaDecode, GroupOfEightThirtyTwoHeadsOverFour) {
  // The benchmark's grouped-query ratio: query heads 8k .. 8k + 7 read kv head k.
  expect_matches_reference(GetParam(), config(DType::kFloat16, 128, 16, 32, 4, {77, 130}), 732,
                           kNoSplit);
}

TEST_P(GqaDecode, GroupOfSixteenFillsTheTile) {
  // Every row of the tile is a real query head: no padding at all.
  expect_matches_reference(GetParam(), config(DType::kBFloat16, 64, 16, 16, 1, {150, 20}), 733,
                           kNoSplit);
}
/// [test_groups]

// ---- Lengths, partitions and the merge -----------------------------------------------------

/// [test_ragged]
TEST_P(GqaDecode, RaggedLengthsAroundBlockTileAndPartitionEdges) {
  // Three query heads per kv head; partitions of 128 tokens (two tiles). Lengths one below, at
  // and one above every edge: block (16), tile (64), partition (128), two partitions (256).
  const DecodeConfig c =
      config(DType::kFloat16, 64, 16, 6, 2, {1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 255, 257});
  Rng rng(740);
  const DecodeProblem p = make_problem(rng, c);
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  EXPECT_TRUE(CloseToReference(p, pa::testing::expected_decode(p), run(GetParam(), p, 128)));
}
/// [test_ragged]

TEST_P(GqaDecode, MergeCountsEachSequencesOwnPartitions) {
  // Partitions of 64 tokens: the sequences have 6, 1, 4 and 2 of them while the grid has 6 for
  // every sequence. The merge of a sequence must take exactly its own partitions: the result
  // buffers of the ones it does not have hold NaN.
  expect_matches_reference(GetParam(),
                           config(DType::kBFloat16, 128, 32, 8, 2, {5 * 64 + 7, 40, 200, 65}), 741,
                           kTileTokens);
}

TEST_P(GqaDecode, EveryPartitionSizeGivesTheSameAnswer) {
  // The same problem split into partitions of one tile, two, eight and the default: every split
  // must merge back to the reference.
  const DecodeConfig c = config(DType::kFloat16, 64, 32, 4, 1, {520, 301});
  Rng rng(742);
  const DecodeProblem p = make_problem(rng, c);
  const Mat want = pa::testing::expected_decode(p);
  for (const int partition_size : {kTileTokens, 2 * kTileTokens, 8 * kTileTokens, 0}) {
    SCOPED_TRACE("partition_size " + std::to_string(partition_size));
    EXPECT_TRUE(CloseToReference(p, want, run(GetParam(), p, partition_size)));
  }
}

TEST_P(GqaDecode, OnePartitionAndOneTilePartitionsAgree) {
  // The split is invisible: the same batch as one partition per sequence (512 tokens, every
  // sequence shorter: each block writes out itself, nothing is merged) and as partitions of one
  // tile (up to 8 per sequence, written and merged) must give the same answer, whatever both
  // are worth against the reference (the other tests check that). Both are float32 sums of the
  // same terms in another order, rounded once to float16: at most one ulp of the output apart,
  // which the dtype's tolerance covers. An element NaN both ways agrees: what made it NaN is not
  // the split (the tests against the reference name it); this test is about what the split
  // alone changes.
  const DecodeConfig c = config(DType::kFloat16, 64, 16, 8, 2, {500, 130, 64, 1});
  Rng rng(743);
  const DecodeProblem p = make_problem(rng, c);
  Mat whole = run(GetParam(), p, 8 * kTileTokens);  // [num_seqs * num_heads, head_size]
  Mat split = run(GetParam(), p, kTileTokens);
  for (Eigen::Index i = 0; i < whole.rows(); ++i) {
    for (Eigen::Index j = 0; j < whole.cols(); ++j) {
      if (std::isnan(whole(i, j)) && std::isnan(split(i, j))) whole(i, j) = split(i, j) = 0.0;
    }
  }
  const Tolerance tol = tolerance(c.dtype);
  EXPECT_TRUE(AllClose(whole, split, tol.atol, tol.rtol,
                       pa::testing::decode_labels(c.num_heads, "one partition",
                                                  "partitions of one tile")));
}

// ---- Softmax: per-row statistics, the mask, large scores -----------------------------------

/// [test_logit_scales]
TEST_P(GqaDecode, QueryHeadsOfAGroupWithVeryDifferentLogitScales) {
  // The four query heads of each group see logits of very different sizes: head 0's are about
  // 15 times the usual (its max near 100), head 1's a tenth. Each row of the tile needs its own
  // max: one max for the group (or for a warp's rows) subtracts head 0's from head 1's scores,
  // and every weight of head 1 underflows. One partition per sequence: no merge.
  const DecodeConfig c = config(DType::kFloat16, 64, 16, 8, 2, {150, 70});
  Rng rng(750);
  DecodeProblem p = make_problem(rng, c);
  const int group = c.num_heads / c.num_kv_heads;
  const double factors[] = {15.0, 0.1, 1.0, 3.0};
  for (int s = 0; s < p.num_seqs(); ++s) {
    for (int h = 0; h < c.num_heads; ++h) {
      pa::testing::scale_query_row(p, Eigen::Index{s} * c.num_heads + h, factors[h % group]);
    }
  }
  // The data is what the comment says: in every group, head 0's top score is far above head 1's.
  for (int s = 0; s < p.num_seqs(); ++s) {
    for (int kv = 0; kv < c.num_kv_heads; ++kv) {
      const Eigen::Index r0 = Eigen::Index{s} * c.num_heads + kv * group;
      const double top0 = pa::testing::query_scores(p, r0).maxCoeff();
      const double top1 = pa::testing::query_scores(p, r0 + 1).maxCoeff();
      ASSERT_GT(top0 - top1, 60.0) << "sequence " << s << " kv head " << kv;
    }
  }
  EXPECT_TRUE(CloseToReference(p, pa::testing::expected_decode(p), run(GetParam(), p, kNoSplit)));
}
/// [test_logit_scales]

TEST_P(GqaDecode, TokensPastTheEndWeighNothingWhenEveryScoreIsNegative) {
  // Each kv head's keys point away from its (single) query head, so every real score is below
  // -4. A token past seq_len that is left unmasked scores 0 in the tile (its key is a zero
  // row) and, the largest score of all, takes nearly the whole softmax. One partition per
  // sequence: no merge.
  const DecodeConfig c = config(DType::kFloat16, 64, 16, 2, 2, {37, 100, 5});
  Rng rng(751);
  DecodeProblem p = make_problem(rng, c);
  for (int s = 0; s < p.num_seqs(); ++s) {
    Mat& k = p.k[static_cast<std::size_t>(s)];  // [seq_len, num_kv_heads * head_size]
    for (int h = 0; h < c.num_kv_heads; ++h) {
      const Eigen::RowVectorXd q = p.q.row(Eigen::Index{s} * c.num_heads + h);
      const Eigen::RowVectorXd away = -q / q.norm();
      for (Eigen::Index t = 0; t < k.rows(); ++t) {
        const double depth = 2.0 + 0.5 * std::abs(rng.normal_vec(1)[0]);  // at least 2 deep
        k.row(t).segment(h * c.head_size, c.head_size) =
            rounded(c.dtype, (depth * away + 0.1 * rng.normal(1, c.head_size)).eval());
      }
    }
  }
  // Write the new keys into the same blocks; every table row ends in the padding block's id.
  const int pad_id = p.block_tables.data_as<std::int32_t>()[p.block_tables.size(1) - 1];
  pa::testing::place_at(p, p.blocks, p.num_blocks, pad_id);
  for (int s = 0; s < p.num_seqs(); ++s) {
    for (int h = 0; h < c.num_kv_heads; ++h) {
      const double top = pa::testing::query_scores(p, Eigen::Index{s} * c.num_heads + h).maxCoeff();
      ASSERT_LT(top, -4.0) << "sequence " << s << " head " << h;
    }
  }
  EXPECT_TRUE(CloseToReference(p, pa::testing::expected_decode(p), run(GetParam(), p, kNoSplit)));
}

TEST_P(GqaDecode, LargeLogitsStayFinite) {
  // Scores near 300: exp(300) overflows float32 (the limit is ~88), so only a kernel that
  // subtracts each row's running maximum, and rescales when a later tile raises it, stays
  // finite and right. The longer sequence has five tiles in one partition.
  const DecodeConfig c = config(DType::kFloat16, 64, 16, 2, 1, {300, 45});
  Rng rng(752);
  DecodeProblem p = make_problem(rng, c);
  for (int s = 0; s < p.num_seqs(); ++s) {
    for (int h = 0; h < c.num_heads; ++h) {  // scale each head's query so its top score is 300
      const Eigen::Index r = Eigen::Index{s} * c.num_heads + h;
      const double top = pa::testing::query_scores(p, r).maxCoeff();
      ASSERT_GT(top, 0.0);
      pa::testing::scale_query_row(p, r, 300.0 / top);
    }
  }
  EXPECT_TRUE(CloseToReference(p, pa::testing::expected_decode(p), run(GetParam(), p, 512)));
}

TEST_P(GqaDecode, AttentionSinkInTheFirstTileStaysTheMax) {
  // Token 0's key is the sum of its group's queries, stretched until its logit is 120 for every
  // head: more than 100 above every later token (an attention sink). Only a running max kept as
  // max(m_run, tile max) stays finite on the later tiles, whose own maxima are near 4: a max
  // replaced by the tile's gives alpha = e^(120 - 4), which overflows float.
  const DecodeConfig c = config(DType::kFloat16, 64, 16, 4, 2, {200, 90});
  Rng rng(754);
  DecodeProblem p = make_problem(rng, c);
  pa::testing::add_attention_sink(p, 120.0);
  for (Eigen::Index r = 0; r < Eigen::Index{p.num_seqs()} * c.num_heads; ++r) {
    const Vec scores = pa::testing::query_scores(p, r);
    ASSERT_GE(scores(0), 120.0) << "query row " << r;
    ASSERT_LT(scores.tail(scores.size() - kTileTokens).maxCoeff(), 20.0) << "query row " << r;
  }
  EXPECT_TRUE(CloseToReference(p, pa::testing::expected_decode(p), run(GetParam(), p, 512)));
}

TEST_P(GqaDecode, ScaleOtherThanTheDefaultIsUsed) {
  // A model may scale its logits by something other than 1/sqrt(head_size). Twice the scale is
  // exactly the default scale on twice the query (doubling is exact in float16), so the
  // reference of the doubled query is the truth for scale * 2. One partition per sequence.
  const DecodeConfig c = config(DType::kFloat16, 128, 16, 8, 2, {150, 33});
  Rng rng(755);
  const DecodeProblem p = make_problem(rng, c);
  const DecodeProblem doubled = pa::testing::with_query_scaled(p, 2.0);
  EXPECT_TRUE(CloseToReference(p, pa::testing::expected_decode(doubled),
                               run_with_scale(GetParam(), p, 2.0f * p.scale(), kNoSplit)));
}

TEST_P(GqaDecode, SameSessionLaunchedTwiceGivesTheSameAnswerTwice) {
  // One DeviceSession, two launches, as a benchmark or an engine's next step does: the fused
  // merge's arrival counters must be back at zero after the first, or the second launch's
  // blocks count on from the first's and the wrong one merges (or none).
  const DecodeConfig c = config(DType::kBFloat16, 64, 16, 4, 2, {300, 40, 129});
  Rng rng(756);
  const DecodeProblem p = make_problem(rng, c);
  DeviceSession session(GetParam(), p.query, p.key_cache, p.value_cache, p.scale(),
                        p.block_tables, p.seq_lens, p.max_seq_len, 64);
  const Mat want = pa::testing::expected_decode(p);
  const Eigen::Index rows = Eigen::Index{p.num_seqs()} * c.num_heads;
  for (int launch = 1; launch <= 2; ++launch) {
    SCOPED_TRACE("launch " + std::to_string(launch) + " of the same session");
    Tensor out = p.nan_out();
    session.launch();
    session.download(out);
    EXPECT_TRUE(CloseToReference(p, want, pa::testing::to_mat(out, rows, c.head_size)));
  }
}

TEST_P(GqaDecode, OneTokenReturnsItsValueExactly) {
  // With one key the softmax is exactly [1]: out must be that token's V row, bit for bit, while
  // the 15 rows after it in the block are NaN and the tile's other 63 rows are not the
  // sequence's at all.
  const DecodeConfig c = config(DType::kBFloat16, 128, 16, 8, 2, {1, 1});
  Rng rng(753);
  const DecodeProblem p = make_problem(rng, c);
  const Mat out = run(GetParam(), p);
  const int group = c.num_heads / c.num_kv_heads;
  for (int s = 0; s < p.num_seqs(); ++s) {
    for (int h = 0; h < c.num_heads; ++h) {
      const Eigen::Index col = Eigen::Index{h / group} * c.head_size;
      EXPECT_TRUE(BitIdentical(p.v[static_cast<std::size_t>(s)].middleCols(col, c.head_size),
                               out.row(Eigen::Index{s} * c.num_heads + h)))
          << "sequence " << s << " head " << h;
    }
  }
}

// Two tests that each leave one half of the kernel nothing to get wrong (as lab 05's), over
// partitions of one tile of unequal sizes (8, 3, 1 and 1 per sequence, the last ones short), so
// that a failure says which half holds the bug. One key (1/2 in every dimension) in every slot of
// the key cache (rows past each end and spare blocks included) makes every score equal whatever the
// query, the scale, the tile, the partition and whichever keys are read: every partition's max is
// the same, the softmax is uniform and out is the plain mean of the values, so only which values
// are read and how the partitions are weighted (by how many tokens each holds: its sum) decide it.
// One value in every slot of the value cache makes out that value for any weights that sum to 1,
// whichever value rows are read: which tokens are scored and how cannot change it (the key slots no
// token holds get real keys, not NaN, so no key read can make a score NaN); the normalization of
// each partition and of the merge can.
TEST_P(GqaDecode, EqualKeysGiveTheMeanOfTheValues) {
  const DecodeConfig c = config(DType::kFloat16, 64, 16, 8, 2, {500, 130, 64, 1});
  Rng rng(754);
  DecodeProblem p = make_problem(rng, c);
  pa::testing::place_shuffled(p, rng);
  pa::testing::fill_cache_with_one_row(p, pa::testing::CacheSide::kKeys);
  SCOPED_TRACE("every key slot of the cache holds one row: every weight is 1 / seq_len, in every "
               "partition, and out is the mean of the sequence's values");
  EXPECT_TRUE(
      CloseToReference(p, pa::testing::expected_decode(p), run(GetParam(), p, kTileTokens)));
}

TEST_P(GqaDecode, EqualKeysInOnePartitionGiveTheMeanOfTheValues) {
  // The same equal keys with no split: every weight is 1 / seq_len and nothing is merged, so
  // only the value rows the tile copy brings in (and P·V's sum of them) decide the output.
  const DecodeConfig c = config(DType::kFloat16, 64, 16, 8, 2, {500, 130, 64, 1});
  Rng rng(757);
  DecodeProblem p = make_problem(rng, c);
  pa::testing::place_shuffled(p, rng);
  pa::testing::fill_cache_with_one_row(p, pa::testing::CacheSide::kKeys);
  SCOPED_TRACE("every key slot of the cache holds one row and each sequence is one partition: "
               "out is the mean of the sequence's own values of its kv head");
  EXPECT_TRUE(CloseToReference(p, pa::testing::expected_decode(p), run(GetParam(), p, kNoSplit)));
}

TEST_P(GqaDecode, EqualValuesComeBackWhateverTheWeights) {
  const DecodeConfig c = config(DType::kFloat16, 64, 16, 8, 2, {500, 130, 64, 1});
  Rng rng(755);
  DecodeProblem p = make_problem(rng, c);
  pa::testing::place_shuffled(p, rng);
  pa::testing::fill_cache_with_one_row(p, pa::testing::CacheSide::kValues);
  EXPECT_TRUE(pa::testing::SpreadIsWide(p));
  SCOPED_TRACE("every value slot of the cache holds one row: out is that row for any weights "
               "that sum to 1 over the sequence's tokens and its partitions");
  EXPECT_TRUE(
      CloseToReference(p, pa::testing::expected_decode(p), run(GetParam(), p, kTileTokens)));
}

// ---- Stage probes: each partition's state, and the weights themselves -----------------------
//
// The tests above compare the final output, which every step feeds. These look at what one
// stage leaves: the split's buffers, partition by partition (the softmax's m and denom, then the
// partition's normalized rows), and, through values that are one-hot, the weights the softmax
// gives each token, whose ratios depend on the scores alone and whose sum on the normalization
// alone. Which of them fail says which stage went wrong first.

/// A fresh session launched once: the output and what the split's buffers hold after it.
struct SplitRun {
  Mat out;  // [num_seqs * num_heads, head_size]
  PartitionState state;
};

SplitRun run_split(Backend backend, const DecodeProblem& p, int partition_size) {
  DeviceSession session(backend, p.query, p.key_cache, p.value_cache, p.scale(), p.block_tables,
                        p.seq_lens, p.max_seq_len, partition_size);
  session.launch();
  Tensor out = p.nan_out();
  session.download(out);
  return {pa::testing::to_mat(out, Eigen::Index{p.num_seqs()} * p.cfg.num_heads, p.cfg.head_size),
          session.partition_state()};
}

/// One partition's softmax state in long double, from the stored inputs and the kernel's float
/// scale: the largest scaled score m, denom = sum of e^(s - m), and o = sum e^(s - m) v / denom.
struct HostPartition {
  double m = 0.0;
  double denom = 0.0;
  Vec o;  // [head_size]
};

/// Query head h of sequence s over its tokens [first, last).
HostPartition host_partition(const DecodeProblem& p, int s, int h, int first, int last) {
  const int d = p.cfg.head_size;
  const Eigen::Index kv_col = Eigen::Index{h / (p.cfg.num_heads / p.cfg.num_kv_heads)} * d;
  const Mat& k = p.k[static_cast<std::size_t>(s)];  // [seq_len, num_kv_heads * head_size]
  const Mat& v = p.v[static_cast<std::size_t>(s)];
  const Eigen::RowVectorXd q = p.q.row(Eigen::Index{s} * p.cfg.num_heads + h);
  std::vector<long double> scores;
  for (int t = first; t < last; ++t) {
    long double dot = 0;
    for (int i = 0; i < d; ++i) dot += static_cast<long double>(q[i]) * k(t, kv_col + i);
    scores.push_back(dot * static_cast<long double>(p.scale()));
  }
  const long double m = *std::max_element(scores.begin(), scores.end());
  std::vector<long double> acc(static_cast<std::size_t>(d), 0.0L);
  long double denom = 0;
  for (int t = first; t < last; ++t) {
    const long double e = std::exp(scores[static_cast<std::size_t>(t - first)] - m);
    denom += e;
    for (int i = 0; i < d; ++i) acc[static_cast<std::size_t>(i)] += e * v(t, kv_col + i);
  }
  HostPartition r;
  r.m = static_cast<double>(m);
  r.denom = static_cast<double>(denom);
  r.o = Vec(d);
  for (int i = 0; i < d; ++i)
    r.o[i] = static_cast<double>(acc[static_cast<std::size_t>(i)] / denom);
  return r;
}

// The split's buffers are float32 whatever the dtype, from the same rounded inputs as the host.
// m: a float32 scaled dot product of <= 256 terms (tensor cores round inside their adder tree on
// a GPU): errors ~1e-5 on scores of ~10; a wrong key, query row or token moves a max by 1e-1.
constexpr double kMaxLogitTol = 1e-3;
// denom: a float32 sum of <= 512 terms e^(s - m) from __expf (a few ulps each) whose exponents
// carry the scores' ~1e-5: relative ~1e-5; a missed rescale or token moves it by 1e-2 and more.
constexpr double kExpSumRtol = 1e-3;

/// What a check of the split's buffers compares.
enum class PartitionPart { kMaxLogits, kExpSums, kRows, kNothingPastTheEnd };

/// Passes when the split's buffers hold, for every sequence of more than one partition, every
/// query head and each of the sequence's own partitions, the host's part `part` of that
/// partition's state (kRows: tmp_out within the dtype's output tolerance, which covers P's
/// rounding to 16 bits); kNothingPastTheEnd: every slot past a sequence's own partitions is still
/// NaN (never written).
::testing::AssertionResult PartitionsMatchHost(const DecodeProblem& p, const PartitionState& got,
                                               int partition_size, PartitionPart part) {
  const int num_heads = p.cfg.num_heads, head_size = p.cfg.head_size;
  const int parts = got.max_num_partitions;
  const Tolerance tol = tolerance(p.cfg.dtype);
  for (int s = 0; s < p.num_seqs(); ++s) {
    const int len = p.cfg.seq_lens[static_cast<std::size_t>(s)];
    const int own = (len + partition_size - 1) / partition_size;
    for (int h = 0; h < num_heads; ++h) {
      for (int part_idx = 0; part_idx < parts; ++part_idx) {
        const std::int64_t slot = (std::int64_t{s} * num_heads + h) * parts + part_idx;
        const int first = part_idx * partition_size;
        const int last = std::min(first + partition_size, len);
        std::ostringstream where;
        where << "sequence " << s << " (" << len << " tokens, " << own << " partition(s)), head "
              << h << ", partition " << part_idx;
        const double m = load(got.max_logits, slot), denom = load(got.exp_sums, slot);
        if (part == PartitionPart::kNothingPastTheEnd) {
          if (part_idx < own) continue;
          bool written = !std::isnan(m) || !std::isnan(denom);
          for (int d = 0; d < head_size && !written; ++d) {
            written = !std::isnan(load(got.tmp_out, slot * head_size + d));
          }
          if (written) {
            return ::testing::AssertionFailure()
                   << where.str() << " starts at token " << first << ", past the sequence's "
                   << len << ": its slot was written (max_logits " << m << ", exp_sums " << denom
                   << "). A block with no tokens must leave before writing or counting itself "
                      "(TODO 1)";
          }
          continue;
        }
        if (own == 1 || part_idx >= own) continue;  // no slot to compare
        where << " (tokens [" << first << ", " << last << "))";
        const HostPartition want = host_partition(p, s, h, first, last);
        if (part == PartitionPart::kMaxLogits) {
          if (!(std::abs(m - want.m) <= kMaxLogitTol)) {
            return ::testing::AssertionFailure()
                   << where.str() << ": max_logits is " << m << ", the host's largest scaled "
                   << "score over those tokens is " << want.m << " (tolerance " << kMaxLogitTol
                   << "): the partition's scores are wrong before the softmax sums them (its "
                      "range: TODO 1; the group's query rows or the table slice: TODO 2; the "
                      "key tile: the tile copy; Q·Kᵀ: TODO 3b; the scale, the mask or the row's "
                      "own max: TODO 3c)";
          }
        } else if (part == PartitionPart::kExpSums) {
          if (!(std::abs(denom - want.denom) <= kExpSumRtol * want.denom)) {
            return ::testing::AssertionFailure()
                   << where.str() << ": exp_sums is " << denom << ", the host's sum of "
                   << "e^(s - m) over those tokens is " << want.denom << " (max_logits " << m
                   << ", the host's " << want.m << "): denom, with its rescale by alpha when a "
                      "tile raises m, is wrong (TODO 3c), or is not what the slot receives "
                      "(TODO 5)";
          }
        } else {
          for (int d = 0; d < head_size; ++d) {
            const double o = load(got.tmp_out, slot * head_size + d);
            const double bound = tol.atol + tol.rtol * std::abs(want.o[d]);
            if (!(std::abs(o - want.o[d]) <= bound)) {
              return ::testing::AssertionFailure()
                     << where.str() << ": tmp_out dimension " << d << " is " << o
                     << ", the host's normalized acc / denom is " << want.o[d] << " (tolerance "
                     << bound << "; exp_sums " << denom << ", the host's " << want.denom
                     << "): the partition's result is not acc / denom at its slot (TODO 5), or "
                        "acc is (TODO 3e)";
            }
          }
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// Partitions of two tiles (the second rescales what the first left) over sequences of 5, 3, 1, 1
// and 4 partitions (the grid has 5), three query heads per kv head whose queries are scaled
// apart, so that each row's state is its own.
void expect_partitions(Backend backend, PartitionPart part, std::uint64_t seed) {
  const DecodeConfig c = config(DType::kFloat16, 128, 16, 9, 3, {600, 257, 128, 1, 450});
  Rng rng(seed);
  DecodeProblem p = make_problem(rng, c);
  for (int s = 0; s < p.num_seqs(); ++s) {
    for (int h = 0; h < c.num_heads; ++h) {
      pa::testing::scale_query_row(p, Eigen::Index{s} * c.num_heads + h, 0.5 + 0.25 * (h % 3));
    }
  }
  const SplitRun got = run_split(backend, p, 2 * kTileTokens);
  ASSERT_EQ(got.state.max_num_partitions, 5);
  EXPECT_TRUE(PartitionsMatchHost(p, got.state, 2 * kTileTokens, part));
}

/// [test_partitions]
TEST_P(GqaDecode, PartitionMaxesMatchTheHost) {
  // max_logits of every (sequence, head, partition) the merge reads: the largest scaled score
  // over the partition's own tokens. Wrong only when the scores, the mask or the row's max are.
  expect_partitions(GetParam(), PartitionPart::kMaxLogits, 790);
}

TEST_P(GqaDecode, PartitionExpSumsMatchTheHost) {
  // exp_sums: sum of e^(s - m) over the partition's tokens, with m its own max_logits.
  expect_partitions(GetParam(), PartitionPart::kExpSums, 791);
}

TEST_P(GqaDecode, PartitionResultsMatchTheHost) {
  // tmp_out: the partition's normalized rows acc / denom, at slot [b, h, p].
  expect_partitions(GetParam(), PartitionPart::kRows, 792);
}

TEST_P(GqaDecode, PartitionsPastTheSequenceWriteNothing) {
  // The grid has 5 partitions for every sequence; the slots of the ones a sequence does not
  // have stay NaN: their blocks have no tokens and leave at once.
  expect_partitions(GetParam(), PartitionPart::kNothingPastTheEnd, 793);
}
/// [test_partitions]

// The weight probe: value row t of every kv head is e_t (1 in dimension t, 0 elsewhere), so the
// output row of a query head is its softmax weights, w_t in dimension t, and 0 in the dimensions
// past seq_len (zero-filled rows add exactly 0). Head size 256 holds sequences up to 256 tokens,
// and its scale 1/16 is exact. Logits of spread 2: more tokens weigh enough to be compared.
DecodeProblem weight_probe(Rng& rng) {
  DecodeConfig c = config(DType::kFloat16, 256, 16, 12, 3, {250, 129, 64, 17, 1});
  c.logit_spread = 2.0;
  DecodeProblem p = make_problem(rng, c);
  for (int s = 0; s < p.num_seqs(); ++s) {
    Mat& v = p.v[static_cast<std::size_t>(s)];  // [seq_len, num_kv_heads * head_size]
    v.setZero();
    for (Eigen::Index t = 0; t < v.rows(); ++t) {
      for (int kv = 0; kv < c.num_kv_heads; ++kv) v(t, kv * c.head_size + t) = 1.0;
    }
  }
  pa::testing::place_shuffled(p, rng);
  return p;
}

// A weight of at least 1e-3 is a normal float16 number, held to 2^-11 relative: the ratio of two
// such outputs carries 4 roundings (two of P to 16 bits, two of out), ~2e-3; a wrong score moves
// it by e^(error), 1e-1 for an error of 0.1.
constexpr double kComparedWeight = 1e-3;
constexpr double kRatioRtol = 1e-2;
// The sum of a row's weights: each is off by at most 2^-11 (P) + 2^-11 (out) relative, and the
// float16 subnormals below 6e-5 by 3e-8 each: |sum - 1| <= 1e-3 + 1e-5; a token counted in denom
// but not in acc, or one partition's sum missing, moves it by 1e-2 and more.
constexpr double kSumTol = 3e-3;

/// Passes when in every row (every sequence and query head) each token t that weighs at least
/// kComparedWeight is, against the row's heaviest token r, in the ratio of the reference:
/// out[t] / out[r] = e^(s_t - s_r) (a factor common to the row cancels).
::testing::AssertionResult WeightsInTheRatioOfTheLogits(const DecodeProblem& p, const Mat& want,
                                                       const Mat& got, const char* why) {
  for (int s = 0; s < p.num_seqs(); ++s) {
    const int len = p.cfg.seq_lens[static_cast<std::size_t>(s)];
    for (int h = 0; h < p.cfg.num_heads; ++h) {
      const Eigen::Index row = Eigen::Index{s} * p.cfg.num_heads + h;
      Eigen::Index r = 0;
      want.row(row).head(len).maxCoeff(&r);
      for (Eigen::Index t = 0; t < len; ++t) {
        if (t == r || want(row, t) < kComparedWeight) continue;
        const double want_ratio = want(row, t) / want(row, r);
        const double got_ratio = got(row, t) / got(row, r);
        if (!(std::abs(got_ratio - want_ratio) <= kRatioRtol * want_ratio)) {
          return ::testing::AssertionFailure()
                 << "sequence " << s << ", head " << h << ": token " << t << " weighs "
                 << got(row, t) << " and token " << r << " " << got(row, r) << ", a ratio of "
                 << got_ratio << "; e^(s_" << t << " - s_" << r << ") is " << want_ratio
                 << " (the reference's weights " << want(row, t) << " and " << want(row, r)
                 << "): " << why;
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

/// Passes when in every row the weights of the sequence's own tokens sum to 1 (within kSumTol)
/// and every dimension past seq_len (a token that does not exist) holds exactly 0.
::testing::AssertionResult WeightsSumToOne(const DecodeProblem& p, const Mat& got) {
  for (int s = 0; s < p.num_seqs(); ++s) {
    const int len = p.cfg.seq_lens[static_cast<std::size_t>(s)];
    for (int h = 0; h < p.cfg.num_heads; ++h) {
      const Eigen::Index row = Eigen::Index{s} * p.cfg.num_heads + h;
      const double sum = got.row(row).head(len).sum();
      if (!(std::abs(sum - 1.0) <= kSumTol)) {
        return ::testing::AssertionFailure()
               << "sequence " << s << " (" << len << " tokens), head " << h
               << ": the weights of its tokens sum to " << sum << ", not 1 (tolerance "
               << kSumTol << "): what acc is divided by is not the sum of the weights it holds "
                  "(denom and its rescale: TODO 3c; the division: TODO 4)";
      }
      for (Eigen::Index t = len; t < p.cfg.head_size; ++t) {
        if (!(got(row, t) == 0.0)) {
          return ::testing::AssertionFailure()
                 << "sequence " << s << " (" << len << " tokens), head " << h << ": dimension " << t
                 << " is " << got(row, t) << ", the weight of token " << t
                 << ", which does not exist: it must be exactly 0 (a token at or past the end is a "
                    "zero "
                    "row of the tile: the tile copy; and its score is masked: TODO 3c)";
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

/// [test_weights]
TEST_P(GqaDecode, WeightsAreInTheRatioOfExpLogits) {
  // One partition per sequence (no merge): only the scores decide the ratios.
  Rng rng(794);
  const DecodeProblem p = weight_probe(rng);
  EXPECT_TRUE(WeightsInTheRatioOfTheLogits(
      p, pa::testing::expected_decode(p), run(GetParam(), p, 4 * kTileTokens),
      "the scores the softmax exponentiates are wrong (the group's query rows: TODO 2; the key "
      "tile: the tile copy; Q·Kᵀ: TODO 3b; the scale or the mask: TODO 3c), or tokens' values "
      "are added with another token's weight (W·V and the rescale of acc: TODO 3e)"));
}

TEST_P(GqaDecode, WeightsSumToOneOverTheRealTokens) {
  // One partition per sequence (no merge): only the normalization and the set of tokens summed
  // decide the sum; the scores cannot change it.
  Rng rng(795);
  const DecodeProblem p = weight_probe(rng);
  EXPECT_TRUE(WeightsSumToOne(p, run(GetParam(), p, 4 * kTileTokens)));
}

TEST_P(GqaDecode, MergedWeightsKeepTheRatioOfExpLogits) {
  // Partitions of one tile (4, 3, 1, 1 and 1), merged: the tokens of different partitions keep
  // the ratio of their scores only if each partition is weighed by its own sum and max.
  Rng rng(796);
  const DecodeProblem p = weight_probe(rng);
  EXPECT_TRUE(WeightsInTheRatioOfTheLogits(
      p, pa::testing::expected_decode(p), run(GetParam(), p, kTileTokens),
      "the partitions are weighed wrongly against each other: each partition's tmp_out, "
      "max_logits and exp_sums (TODO 5) or the merge's weights denom_p e^(m_p - M) (TODO 6); "
      "WeightsAreInTheRatioOfExpLogits says whether one partition alone is right"));
}
/// [test_weights]

// ---- Poison, paging, placement -------------------------------------------------------------

TEST_P(GqaDecode, NaNInEveryUnusedRowAndBlockStaysOut) {
  // The rows after each sequence's last token, every block no sequence owns, and the table
  // columns past each sequence's blocks (they name an all-NaN block) hold NaN; the last tile of
  // every sequence reaches over all of them. The output is finite and right. One partition
  // per sequence: no merge.
  const DecodeConfig c = config(DType::kBFloat16, 64, 32, 4, 2, {33, 70, 3});
  Rng rng(760);
  const DecodeProblem p = make_problem(rng, c);
  const std::int64_t width = p.block_tables.size(1);
  for (int s = 0; s < p.num_seqs(); ++s) {
    const int len = c.seq_lens[static_cast<std::size_t>(s)];
    const int last = p.blocks[static_cast<std::size_t>(s)].back();
    for (int row = len % c.block_size; row < c.block_size; ++row) {
      ASSERT_TRUE(std::isnan(
          load(p.key_cache, pa::testing::key_index(kFlash, p.key_cache, last, 1, row, 0))));
      ASSERT_TRUE(std::isnan(
          load(p.value_cache, pa::testing::value_index(kFlash, p.value_cache, last, 1, row, 63))));
    }
    const int pad = p.block_tables.data_as<std::int32_t>()[s * width + width - 1];
    ASSERT_TRUE(std::isnan(
        load(p.value_cache, pa::testing::value_index(kFlash, p.value_cache, pad, 0, 0, 0))));
  }
  EXPECT_TRUE(CloseToReference(p, pa::testing::expected_decode(p), run(GetParam(), p, kNoSplit)));
}

/// [test_invariance]
TEST_P(GqaDecode, PagingIsInvisibleBitForBit) {
  // The same logical tokens dealt to different physical blocks (and a bigger cache) give the
  // same bits: the kernel's arithmetic may depend on token order, never on block ids.
  const DecodeConfig c = config(DType::kFloat16, 64, 16, 8, 2, {161, 9, 64});
  Rng rng(761);
  const DecodeProblem a = make_problem(rng, c);
  DecodeProblem b = a;
  b.cfg.spare_blocks = 11;
  pa::testing::place_shuffled(b, rng);
  ASSERT_NE(a.blocks, b.blocks);
  EXPECT_TRUE(BitIdentical(run(GetParam(), a, kTileTokens), run(GetParam(), b, kTileTokens),
                           pa::testing::decode_labels(c.num_heads, "first placement",
                                                      "second placement")));
}

TEST_P(GqaDecode, SchedulesAgreeBitForBit) {
  // On the emulator: the threads of each block run first-to-last, last-to-first and shuffled
  // between synchronisation points, the blocks in order and reversed, and the wmma fragments'
  // elements sit in other lanes under each. A kernel with every barrier in place that never
  // reads a fragment element by position gives the same bits every time. On a GPU: two runs
  // agree.
  // Partitions of three tiles: from the second tile on, o is rescaled by row, which a kernel
  // that reads fragment elements by position gets wrong, differently under each schedule.
  const DecodeConfig c = config(DType::kBFloat16, 128, 16, 12, 3, {150, 3, 77});
  Rng rng(762);
  const DecodeProblem p = make_problem(rng, c);
  const RestoreSchedule restore;
  constexpr int kPartition = 3 * kTileTokens;
  simt::set_schedule(simt::Schedule::Forward);
  const Mat forward = run(GetParam(), p, kPartition);
  simt::set_schedule(simt::Schedule::Reverse);
  const Mat reverse = run(GetParam(), p, kPartition);
  simt::set_schedule(simt::Schedule::Random, 2024);
  const Mat shuffled = run(GetParam(), p, kPartition);
  EXPECT_TRUE(BitIdentical(forward, reverse,
                           pa::testing::decode_labels(c.num_heads, "forward schedule",
                                                      "reverse schedule")));
  EXPECT_TRUE(BitIdentical(forward, shuffled,
                           pa::testing::decode_labels(c.num_heads, "forward schedule",
                                                      "random:2024 schedule")));
  EXPECT_TRUE(CloseToReference(p, pa::testing::expected_decode(p), forward));
}
/// [test_invariance]

TEST_P(GqaDecode, GroupsNeverWriteTheirNeighboursHeads) {
  // Blocks run last to first on the emulator: a kv head's block that also writes its padding
  // rows lands them on the next group's heads after that group has written them. Two query
  // heads per kv head, so 14 padding rows per tile; one sequence short, one split in two.
  const DecodeConfig c = config(DType::kFloat16, 64, 16, 6, 3, {20, 100});
  Rng rng(763);
  const DecodeProblem p = make_problem(rng, c);
  const RestoreSchedule restore;
  simt::set_schedule(simt::Schedule::Reverse);
  EXPECT_TRUE(CloseToReference(p, pa::testing::expected_decode(p), run(GetParam(), p, 64)));
}

TEST_P(GqaDecode, SequenceInTheLastBlocksOfTheCache) {
  // The sequence fills the cache's last three physical blocks (in shuffled order) to their
  // final row, and the last kv head is read: the last byte of both caches is read, and nothing
  // after it. Under the asan preset a read past the end is an error.
  DecodeConfig c = config(DType::kFloat16, 128, 16, 8, 2, {3 * 16});
  Rng rng(764);
  DecodeProblem p = make_problem(rng, c);
  pa::testing::place_at(p, {{4, 5, 3}}, 6, 0);  // blocks 0-2 are NaN padding, 3-5 the sequence
  EXPECT_TRUE(CloseToReference(p, pa::testing::expected_decode(p), run(GetParam(), p)));
}

// ---- Different layouts, same numbers: lab 06's V0 cache --------------------------------------

/// [test_v0_agreement]
TEST_P(GqaDecode, AgreesWithTheV0LayoutOnMultiHeadShapes) {
  // Lab 06's kernel reads the V0 layout, this one the flash layout. Placed from one seed, the
  // two caches hold the same numbers: read back out of the V0 cache, every token equals the one
  // the flash cache holds, so the float64 reference is one and the same. This kernel must match
  // it within tolerance(dtype), as lab 06's must within its own: the two kernels then agree to
  // the sum of the two tolerances. MHA (one query head per kv head, lab 06's shapes) and
  // partitions of 512 tokens, vLLM v2's partition size.
  for (const auto& [head_size, lens] :
       {std::pair{128, std::vector<int>{600, 37, 129}}, std::pair{64, std::vector<int>{513, 1}}}) {
    DecodeConfig c = config(DType::kFloat16, head_size, 16, 4, 4, lens);
    SCOPED_TRACE(pa::testing::describe(c));
    Rng flash_rng(770 + head_size), v0_rng(770 + head_size);
    const DecodeProblem flash = make_problem(flash_rng, c);
    c.layout = KvLayout::kV0;
    const DecodeProblem v0 = pa::testing::make_decode_problem(v0_rng, c);
    ASSERT_EQ(flash.blocks, v0.blocks);
    // Read every token back out of the V0 cache: the reference lab 06 is graded against.
    Mat want(flash.num_seqs() * c.num_heads, c.head_size);
    for (int s = 0; s < v0.num_seqs(); ++s) {
      const int len = c.seq_lens[static_cast<std::size_t>(s)];
      const std::int32_t* table =
          v0.block_tables.data_as<std::int32_t>() + std::int64_t{s} * v0.block_tables.size(1);
      for (int h = 0; h < c.num_heads; ++h) {
        Mat k(len, c.head_size), v(len, c.head_size);
        for (int t = 0; t < len; ++t) {
          pa::testing::read_token(KvLayout::kV0, v0.key_cache, v0.value_cache, table, c.block_size,
                                  t, h, k, v);
        }
        want.row(Eigen::Index{s} * c.num_heads + h) = pa::testing::reference_attention(
            v0.q.row(Eigen::Index{s} * c.num_heads + h).transpose(), k, v);
      }
    }
    EXPECT_TRUE(BitIdentical(pa::testing::expected_decode(flash), want))
        << "the flash and V0 placements must hold the same numbers";
    EXPECT_TRUE(CloseToReference(flash, want, run(GetParam(), flash, 512)));
  }
}
/// [test_v0_agreement]

// ---- Long contexts -------------------------------------------------------------------------

TEST_P(GqaDecode, LongContexts) {
  // Default partitions over long contexts, eight query heads per kv head. On a GPU: one
  // sequence of 20,000 tokens, and a batch of 16 with ragged lengths up to 3,055. The emulator
  // runs one sequence of 2,000 tokens (32 tiles) instead: the larger shapes would take minutes.
  if (GetParam() == Backend::kEmulator) {
    expect_matches_reference(GetParam(), config(DType::kBFloat16, 128, 16, 16, 2, {2000}), 779);
    return;
  }
  expect_matches_reference(GetParam(), config(DType::kBFloat16, 128, 16, 32, 4, {20000}), 780);
  std::vector<int> lens;
  for (int s = 0; s < 16; ++s) lens.push_back(1000 + 137 * s);
  expect_matches_reference(GetParam(), config(DType::kFloat16, 128, 32, 32, 8, lens), 781);
}

}  // namespace
}  // namespace pa::cuda_gqa
