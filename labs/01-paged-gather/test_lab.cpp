// Lab 01 — the graded tests. Run: tools/lab grade 01   (or ctest --preset starter -L lab01)
//
// Ground truth is pa::testing::reference_attention (long double, plain loops, contiguous K/V).
// Unused cache rows are poisoned (NaN or 1e6), so reading one row too many is never quiet.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "paged_gather.hpp"
#include "pa/testing.hpp"

namespace pa::paged_gather {
namespace {

using pa::testing::AllClose;
using pa::testing::BitIdentical;
using pa::testing::FarFromUniform;
using pa::testing::Rng;

// Paged and dense attention are the same float64 arithmetic up to summation order; the
// reference runs in long double. Outputs are O(1), so rounding stays below 1e-14: 1e-12 leaves
// room for order effects and none for a wrong weight.
constexpr double kExactTol = 1e-12;

// The logits in these tests have standard deviation ~kLogitSpread, so the softmax is peaked.
constexpr double kLogitSpread = 4.0;

/// One sequence's contiguous K/V and its queries, plus a cache that holds it in shuffled blocks.
struct PagedSequence {
  Mat q;          // [num_heads, head_dim]
  Mat k;          // [seq_len, num_kv_heads * head_dim], contiguous (the dense truth)
  Mat v;          // [seq_len, num_kv_heads * head_dim]
  Mat k_cache;    // [num_blocks * block_size, num_kv_heads * head_dim], unused rows poisoned
  Mat v_cache;    // [num_blocks * block_size, num_kv_heads * head_dim]
  IVec block_table;  // [ceil(seq_len / block_size)] distinct physical ids in random order
  int seq_len;
  int block_size;
};

/// Places the sequence in its blocks of fresh caches (pa::testing::paged_cache computes the rows
/// itself, independently of the student's build_slot_mapping); every other row holds `poison`.
void place(PagedSequence& s, int num_blocks, double poison) {
  s.k_cache = pa::testing::paged_cache(s.k, s.block_table, s.block_size, num_blocks, poison);
  s.v_cache = pa::testing::paged_cache(s.v, s.block_table, s.block_size, num_blocks, poison);
}

PagedSequence make_sequence(Rng& rng, int seq_len, int block_size, int num_heads,
                            int num_kv_heads, int head_dim, int num_blocks,
                            double poison = pa::testing::kPoison) {
  PagedSequence s;
  s.seq_len = seq_len;
  s.block_size = block_size;
  // score std = std(q) * std(k) * sqrt(d) / sqrt(d) = kLogitSpread
  s.q = rng.normal(num_heads, head_dim, kLogitSpread);
  s.k = rng.normal(seq_len, Eigen::Index{num_kv_heads} * head_dim);
  s.v = rng.normal(seq_len, Eigen::Index{num_kv_heads} * head_dim);
  const int blocks_used = (seq_len + block_size - 1) / block_size;
  s.block_table = rng.distinct_ids(blocks_used, num_blocks);
  place(s, num_blocks, poison);
  return s;
}

Mat dense_truth(const PagedSequence& s) {
  return pa::testing::reference_attention_heads(s.q, s.k, s.v);
}

/// Asserts on the test's own data that head 0's softmax is far from uniform.
void expect_spread(const PagedSequence& s) {
  const Eigen::Index d = s.q.cols();
  EXPECT_TRUE(FarFromUniform(pa::testing::scores(s.q.row(0).transpose(), s.k.leftCols(d))));
}

// ---- build_slot_mapping -------------------------------------------------------------------

TEST(SlotMapping, FormulaAtBlockEdgesAndMidBlock) {
  const IVec table{{5, 2, 9}};  // logical block 0 -> physical 5, 1 -> 2, 2 -> 9
  // block_size 4: token 3 is the last row of block 5, token 4 the first row of block 2 ...
  const IVec expected{{20, 21, 22, 23, 8, 9, 10, 11, 36, 37, 38, 39}};
  EXPECT_TRUE(BitIdentical(expected, build_slot_mapping(table, 4, 0, 12)));
}

TEST(SlotMapping, SingleDecodeToken) {
  // A decode step writes one token at start = current length: token 9, block_size 4 -> offset 1
  // of logical block 2, which is physical block 7.
  const IVec table{{3, 0, 7}};
  EXPECT_TRUE(BitIdentical(IVec{{29}}, build_slot_mapping(table, 4, 9, 1)));
}

TEST(SlotMapping, ChunkStartingMidSequence) {
  // A prefill chunk of 7 tokens that starts at token 6 crosses two block boundaries.
  const IVec table{{4, 1, 6, 2}};
  const IVec expected{{6, 7, 24, 25, 26, 27, 8}};  // blocks 1, 6, 2 with block_size 4
  EXPECT_TRUE(BitIdentical(expected, build_slot_mapping(table, 4, 6, 7)));
}

TEST(SlotMapping, BlockSizeOneIsTheTableItself) {
  const IVec table{{8, 3, 5, 0, 6}};
  EXPECT_TRUE(BitIdentical(table, build_slot_mapping(table, 1, 0, 5)));
}

TEST(SlotMapping, EmptyRangeIsEmpty) {
  EXPECT_EQ(build_slot_mapping(IVec{{2, 1}}, 16, 10, 0).size(), 0);
}

// ---- write_kv -----------------------------------------------------------------------------

TEST(WriteKv, WriteThenGatherRoundTrips) {
  Rng rng(101);
  const int block_size = 8, num_blocks = 6, width = 12, seq_len = 21;
  const IVec table = rng.distinct_ids(3, num_blocks);
  Mat k_cache = Mat::Constant(num_blocks * block_size, width, pa::testing::kPoison);
  Mat v_cache = k_cache;
  const Mat new_k = rng.normal(seq_len, width), new_v = rng.normal(seq_len, width);

  const IVec slots = build_slot_mapping(table, block_size, 0, seq_len);
  write_kv(k_cache, v_cache, new_k, new_v, slots);

  // The read map (the table) finds every token where the write map put it.
  for (int t = 0; t < seq_len; ++t) {
    const Eigen::Index row = pa::testing::slot_of(table, t, block_size);
    ASSERT_TRUE(BitIdentical(new_k.row(t), k_cache.row(row))) << "token " << t;
    ASSERT_TRUE(BitIdentical(new_v.row(t), v_cache.row(row))) << "token " << t;
  }
}

TEST(WriteKv, LeavesEveryOtherSlotUntouched) {
  Rng rng(102);
  Mat k_cache = rng.normal(32, 4), v_cache = rng.normal(32, 4);
  const Mat k_before = k_cache, v_before = v_cache;
  const IVec slots{{17, 3, 30}};
  write_kv(k_cache, v_cache, rng.normal(3, 4), rng.normal(3, 4), slots);
  for (int row = 0; row < 32; ++row) {
    if (row == 17 || row == 3 || row == 30) continue;
    ASSERT_TRUE(BitIdentical(k_before.row(row), k_cache.row(row))) << "row " << row;
    ASSERT_TRUE(BitIdentical(v_before.row(row), v_cache.row(row))) << "row " << row;
  }
}

TEST(WriteKv, ChunkedPrefillThenDecodeMatchesDense) {
  // A 40-token prompt written in chunks of 16, then 3 decode tokens, each attended in turn:
  // chunking changes when rows are written, never what attention sees.
  Rng rng(103);
  const int block_size = 16, num_blocks = 8, head_dim = 8, total = 43;
  const IVec table = rng.distinct_ids(3, num_blocks);
  Mat k_cache = Mat::Constant(num_blocks * block_size, head_dim, pa::testing::kPoison);
  Mat v_cache = k_cache;
  const Mat k = rng.normal(total, head_dim), v = rng.normal(total, head_dim);
  const Mat q = rng.normal(1, head_dim, kLogitSpread);

  int written = 0;
  for (int chunk : {16, 16, 8, 1, 1, 1}) {
    const IVec slots = build_slot_mapping(table, block_size, written, chunk);
    write_kv(k_cache, v_cache, k.middleRows(written, chunk), v.middleRows(written, chunk), slots);
    written += chunk;
    const Mat expected =
        pa::testing::reference_attention_heads(q, k.topRows(written), v.topRows(written));
    ASSERT_TRUE(AllClose(expected, paged_attention(q, k_cache, v_cache, table, written, block_size),
                         kExactTol))
        << "after " << written << " tokens";
  }
}

// ---- paged_attention ----------------------------------------------------------------------

TEST(PagedAttention, MatchesDenseUnderShuffledBlockTable) {
  Rng rng(201);
  const PagedSequence s = make_sequence(rng, 53, 8, 4, 4, 16, 12);
  expect_spread(s);
  EXPECT_TRUE(AllClose(dense_truth(s), paged_attention(s.q, s.k_cache, s.v_cache, s.block_table,
                                                      s.seq_len, s.block_size),
                       kExactTol));
}

/// [poisoned_tail_tests]
TEST(PagedAttention, PoisonedTailOfLastBlockIsNeverReadHuge) {
  // seq_len 35 = two full blocks of 16 and 3 rows of the third; the other 13 rows hold 1e6.
  // Each head's query is turned so that its elements sum to more than 0: a poisoned key then
  // scores about 1e6 times that sum, the largest score by far, and takes every weight.
  Rng rng(202);
  PagedSequence s = make_sequence(rng, 35, 16, 2, 2, 8, 5, pa::testing::kHugePoison);
  for (Eigen::Index h = 0; h < s.q.rows(); ++h) {
    if (s.q.row(h).sum() < 0) s.q.row(h) *= -1.0;
    // The poisoned score 1e6 * sum / sqrt(8) must clear the real ones (spread ~4) by far.
    ASSERT_GT(pa::testing::kHugePoison * s.q.row(h).sum() / std::sqrt(8.0), 100.0) << "head " << h;
  }
  expect_spread(s);
  EXPECT_TRUE(AllClose(dense_truth(s), paged_attention(s.q, s.k_cache, s.v_cache, s.block_table,
                                                      s.seq_len, s.block_size),
                       kExactTol));
}

TEST(PagedAttention, PoisonedTailOfLastBlockIsNeverReadNaN) {
  Rng rng(203);
  const PagedSequence s = make_sequence(rng, 35, 16, 2, 2, 8, 5, pa::testing::kPoison);
  expect_spread(s);
  EXPECT_TRUE(AllClose(dense_truth(s), paged_attention(s.q, s.k_cache, s.v_cache, s.block_table,
                                                      s.seq_len, s.block_size),
                       kExactTol));
}
/// [poisoned_tail_tests]

/// [placement_invariance_test]
TEST(PagedAttention, TwoPhysicalPlacementsAreBitIdentical) {
  // The same logical tokens in two different sets of physical blocks: the layout is invisible.
  Rng rng(204);
  PagedSequence a = make_sequence(rng, 29, 4, 2, 1, 8, 16);
  PagedSequence b = a;
  b.block_table = rng.distinct_ids(a.block_table.size(), 16);
  place(b, 16, pa::testing::kPoison);
  ASSERT_FALSE(a.block_table == b.block_table);
  const Mat out_a = paged_attention(a.q, a.k_cache, a.v_cache, a.block_table, 29, 4);
  const Mat out_b = paged_attention(b.q, b.k_cache, b.v_cache, b.block_table, 29, 4);
  EXPECT_TRUE(BitIdentical(out_a, out_b, {{}, "first placement", "second placement"}));
  EXPECT_TRUE(AllClose(dense_truth(a), out_a, kExactTol));
}
/// [placement_invariance_test]

TEST(PagedAttention, GroupedQueryHeadsEightOverTwo) {
  // 8 query heads share 2 kv heads: heads 0-3 read kv head 0, heads 4-7 kv head 1. The two kv
  // heads hold different data, so h % num_kv_heads (or any other mapping) fails.
  Rng rng(205);
  const PagedSequence s = make_sequence(rng, 37, 16, 8, 2, 16, 6);
  expect_spread(s);
  EXPECT_TRUE(AllClose(dense_truth(s), paged_attention(s.q, s.k_cache, s.v_cache, s.block_table,
                                                      s.seq_len, s.block_size),
                       kExactTol));
}

TEST(PagedAttention, BlockSizeOne) {
  Rng rng(206);
  const PagedSequence s = make_sequence(rng, 11, 1, 2, 2, 4, 20);
  EXPECT_TRUE(AllClose(dense_truth(s), paged_attention(s.q, s.k_cache, s.v_cache, s.block_table,
                                                      s.seq_len, s.block_size),
                       kExactTol));
}

TEST(PagedAttention, SeqLenExactMultipleOfBlockSize) {
  Rng rng(207);
  const PagedSequence s = make_sequence(rng, 32, 16, 4, 2, 8, 4);
  expect_spread(s);
  EXPECT_TRUE(AllClose(dense_truth(s), paged_attention(s.q, s.k_cache, s.v_cache, s.block_table,
                                                      s.seq_len, s.block_size),
                       kExactTol));
}

TEST(PagedAttention, OneTokenReturnsItsValue) {
  // With one key the softmax is [1]: the output is that token's value row, whatever q is.
  Rng rng(208);
  const PagedSequence s = make_sequence(rng, 1, 16, 2, 2, 8, 3);
  const Mat out = paged_attention(s.q, s.k_cache, s.v_cache, s.block_table, 1, 16);
  EXPECT_TRUE(AllClose(s.v.reshaped<Eigen::RowMajor>(2, 8), out, kExactTol));
}

TEST(PagedAttention, LogitsNearAThousandStayFinite) {
  // Scores around 1000: exp(1000) overflows float64 (the limit is ~709), so only a softmax that
  // subtracts the max first stays finite.
  Rng rng(209);
  PagedSequence s = make_sequence(rng, 24, 8, 2, 2, 16, 4);
  for (Eigen::Index h = 0; h < s.q.rows(); ++h) {  // scale each head so its top score is 1000
    const Eigen::Index col = h * 16;
    const double top =
        pa::testing::scores(s.q.row(h).transpose(), s.k.middleCols(col, 16)).maxCoeff();
    ASSERT_GT(top, 0.0);
    s.q.row(h) *= 1000.0 / top;
  }
  // Scores of ~1000 carry ~1000x the absolute rounding of scores of ~1 (~1e-15), and exp()
  // passes that on to the weights: up to ~1e-12 on the outputs. 1e-11 allows that, as in labs
  // 02 and 04, and is still far below what a wrong softmax produces.
  constexpr double kLargeLogitTol = 1e-11;
  EXPECT_TRUE(AllClose(dense_truth(s), paged_attention(s.q, s.k_cache, s.v_cache, s.block_table,
                                                      s.seq_len, s.block_size),
                       kLargeLogitTol));
}

}  // namespace
}  // namespace pa::paged_gather
