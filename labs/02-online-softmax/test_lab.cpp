// Lab 02 — the graded tests. Run: tools/lab grade 02   (or ctest --preset starter -L lab02)
//
// Ground truth is pa::testing::reference_attention (long double, plain loops, contiguous K/V),
// never the student's own dense_attention. Every cache row the sequence does not own is poisoned
// (NaN or 1e6), so reading one row too many is never quiet.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "online_softmax.hpp"
#include "pa/testing.hpp"

namespace pa::online_softmax {
namespace {

using pa::testing::AllClose;
using pa::testing::BitIdentical;
using pa::testing::FarFromUniform;
using pa::testing::Rng;

// O(1) logits and values: the streaming float64 result and the long double reference differ
// only by rounding (~1e-15 here), so 1e-12 leaves room for summation order and none for a
// wrong weight.
constexpr double kExactTol = 1e-12;

// Logits near 90 or 1000 carry an absolute rounding error of ~|s| * eps * sqrt(d) (about 4e-13
// at 1000, d = 16), and exp() turns it into the same relative error in every weight, so outputs
// of size ~3 may move by ~1e-12; 1e-11 allows that and is still ~1e10 below a wrong rescale.
constexpr double kLargeLogitTol = 1e-11;

// Scores k.q / sqrt(d) have standard deviation ~kLogitSpread: the softmax is peaked, so a
// wrong weighting moves the output by O(1), not by a rounding error.
constexpr double kLogitSpread = 4.0;

// FarFromUniform asks for a top weight >= factor / n. On short rows (about a dozen keys) the
// default factor 10 would demand a single weight >= 0.8; 3x uniform still rules out averaging.
constexpr double kShortRowPeak = 3.0;

constexpr double kInf = std::numeric_limits<double>::infinity();

/// One sequence's contiguous K/V and query, plus a cache that holds it in paged blocks.
struct PagedSequence {
  Vec q;             // [head_dim]
  Mat k;             // [seq_len, head_dim], contiguous (the dense truth)
  Mat v;             // [seq_len, dv]
  Mat k_cache;       // [num_blocks * block_size, head_dim], rows the sequence does not own poisoned
  Mat v_cache;       // [num_blocks * block_size, dv]
  IVec block_table;  // [>= ceil(seq_len / block_size)] physical block ids
  int seq_len = 0;
  int block_size = 0;
  int num_blocks = 0;
};

/// Places the sequence in its blocks of fresh caches (pa::testing::paged_cache computes the rows
/// itself, independently of any student code); every other row of both caches holds `poison`.
void place(PagedSequence& s, double poison) {
  s.k_cache = pa::testing::paged_cache(s.k, s.block_table, s.block_size, s.num_blocks, poison);
  s.v_cache = pa::testing::paged_cache(s.v, s.block_table, s.block_size, s.num_blocks, poison);
}

/// A sequence with random peaked data at the given block table.
PagedSequence make_sequence(Rng& rng, int seq_len, int block_size, const IVec& block_table,
                            int num_blocks, double poison = pa::testing::kPoison,
                            int head_dim = 16, int dv = 12) {
  PagedSequence s;
  s.seq_len = seq_len;
  s.block_size = block_size;
  s.num_blocks = num_blocks;
  s.block_table = block_table;
  // score std = std(q) * std(k) * sqrt(d) / sqrt(d) = kLogitSpread
  s.q = rng.normal_vec(head_dim, kLogitSpread);
  s.k = rng.normal(seq_len, head_dim);
  s.v = rng.normal(seq_len, dv);
  place(s, poison);
  return s;
}

/// The same, with a random block table of distinct ids drawn from num_blocks.
PagedSequence make_shuffled(Rng& rng, int seq_len, int block_size, int num_blocks,
                            double poison = pa::testing::kPoison) {
  const int used = (seq_len + block_size - 1) / block_size;
  return make_sequence(rng, seq_len, block_size, rng.distinct_ids(used, num_blocks), num_blocks,
                       poison);
}

Vec truth(const PagedSequence& s) { return pa::testing::reference_attention(s.q, s.k, s.v); }

Vec run(const PagedSequence& s) {
  return paged_online_attention(s.q, s.k_cache, s.v_cache, s.block_table, s.seq_len,
                                s.block_size);
}

Vec scores_of(const PagedSequence& s) { return pa::testing::scores(s.q, s.k); }

/// Moves every key along q so that the scores become (their random part) + a constant, chosen
/// so the largest score is exactly `top`; then re-places the sequence in its cache.
void lift_scores_to(PagedSequence& s, double top, double poison = pa::testing::kPoison) {
  const double d = static_cast<double>(s.q.size());
  const double lift = top - scores_of(s).maxCoeff();
  // Adding c * q to a key adds c * |q|^2 / sqrt(d) to its score.
  const double c = lift * std::sqrt(d) / s.q.squaredNorm();
  s.k.rowwise() += c * s.q.transpose();
  place(s, poison);
}

// ---- dense_attention ----------------------------------------------------------------------

/// [dense_tests]
TEST(DenseAttention, MatchesReferenceOnARaggedRow) {
  Rng rng(1);
  const Vec q = rng.normal_vec(16, kLogitSpread);  // [16]
  const Mat K = rng.normal(37, 16);                // [37, 16]
  const Mat V = rng.normal(37, 12);                // [37, 12]
  EXPECT_TRUE(FarFromUniform(pa::testing::scores(q, K)));
  EXPECT_TRUE(AllClose(pa::testing::reference_attention(q, K, V), dense_attention(q, K, V),
                       kExactTol));
}

TEST(DenseAttention, LogitsNearAThousandStayFinite) {
  Rng rng(2);
  PagedSequence s = make_shuffled(rng, 40, 8, 6);
  lift_scores_to(s, 1000.0);
  const Vec sc = scores_of(s);
  ASSERT_NEAR(sc.maxCoeff(), 1000.0, 1e-9);  // exp(1000) is +inf in float64 (limit ~709.78)
  EXPECT_TRUE(FarFromUniform(sc));
  EXPECT_TRUE(AllClose(truth(s), dense_attention(s.q, s.k, s.v), kLargeLogitTol));
}
/// [dense_tests]

TEST(DenseAttention, OneKeyReturnsItsValue) {
  // softmax of a single score is [1], whatever the score: the output is that key's value row.
  Rng rng(3);
  const Vec q = rng.normal_vec(8, kLogitSpread);
  const Mat K = rng.normal(1, 8), V = rng.normal(1, 5);
  EXPECT_TRUE(AllClose(V.row(0).transpose(), dense_attention(q, K, V), kExactTol));
}

// ---- paged_online_attention: the seed table -----------------------------------------------

/// [aligned_test]
TEST(PagedOnlineAttention, SixteenTokensOverScatteredBlocksAligned) {
  // 16 tokens = 4 full blocks of 4, stored in physical blocks 3, 1, 7, 0 of an 8-block cache.
  Rng rng(10);
  const PagedSequence s = make_sequence(rng, 16, 4, IVec{{3, 1, 7, 0}}, 8);
  EXPECT_TRUE(FarFromUniform(scores_of(s), kShortRowPeak));
  EXPECT_TRUE(AllClose(truth(s), run(s), kExactTol));
}
/// [aligned_test]

/// [partial_last_block_test]
TEST(PagedOnlineAttention, ThirteenTokensEndInAOneTokenBlock) {
  // 13 tokens = 3 full blocks of 4 + 1 token in physical block 0, whose rows 1..3 are poison.
  Rng rng(11);
  const PagedSequence s = make_sequence(rng, 13, 4, IVec{{3, 1, 7, 0}}, 8);
  EXPECT_TRUE(FarFromUniform(scores_of(s), kShortRowPeak));
  EXPECT_TRUE(AllClose(truth(s), run(s), kExactTol));
}
/// [partial_last_block_test]

/// [paging_invariance_test]
TEST(PagedOnlineAttention, TwoPhysicalPlacementsAreBitIdentical) {
  // The same 11 logical tokens in physical blocks [0, 1, 2] and in [7, 3, 5]: the block table is
  // the only link between logical and physical, so the answers agree to the last bit.
  Rng rng(12);
  PagedSequence a = make_sequence(rng, 11, 4, IVec{{0, 1, 2}}, 8);
  PagedSequence b = a;
  b.block_table = IVec{{7, 3, 5}};
  place(b, pa::testing::kPoison);
  EXPECT_TRUE(FarFromUniform(scores_of(a), kShortRowPeak));
  const Vec out_a = run(a);
  EXPECT_TRUE(BitIdentical(out_a, run(b), {{}, "first placement", "second placement"}));
  EXPECT_TRUE(AllClose(truth(a), out_a, kExactTol));
}
/// [paging_invariance_test]

// ---- the two stumbles and the rescale -----------------------------------------------------

/// [later_max_test]
TEST(PagedOnlineAttention, LaterBlocksHoldTheMax) {
  // Every block plants one key whose score beats all earlier blocks by 2.5, so the running max
  // rises at every block and each step must shrink the history by corr = exp(m - m_new) ~ e^-2.5.
  // Skip the rescale and the early blocks are over-weighted by up to e^12.5.
  Rng rng(20);
  const int seq_len = 45, block_size = 8, num_blocks = 9;
  PagedSequence s = make_shuffled(rng, seq_len, block_size, num_blocks);
  s.q = rng.normal_vec(16);  // background scores with std ~1
  const double d = static_cast<double>(s.q.size());
  const int num_logical = (seq_len + block_size - 1) / block_size;
  for (int j = 0; j < num_logical; ++j) {
    const int valid = std::min(block_size, seq_len - j * block_size);
    const int t = j * block_size + (3 * j) % valid;  // the planted key's token
    const double target = 2.5 * (j + 1) + 3.0;      // above any background score
    s.k.row(t) = (target * std::sqrt(d) / s.q.squaredNorm()) * s.q.transpose();
  }
  place(s, pa::testing::kPoison);

  // On this data: the block maxima strictly increase, so the max lives in the last block.
  const Vec sc = scores_of(s);
  for (int j = 1; j < num_logical; ++j) {
    const int len = std::min(block_size, seq_len - j * block_size);
    ASSERT_GT(sc.segment(j * block_size, len).maxCoeff(),
              sc.segment((j - 1) * block_size, block_size).maxCoeff() + 2.0);
  }
  EXPECT_TRUE(FarFromUniform(sc));
  EXPECT_TRUE(AllClose(truth(s), run(s), kExactTol));
}
/// [later_max_test]

/// [first_block_guard_test]
TEST(PagedOnlineAttention, MaskedFirstBlocksNeedTheGuard) {
  // Kernels mask a key by giving it the score -inf. Here the first two logical blocks are fully
  // masked, so when they are read the running max is still -inf and the block max is -inf too:
  // exp(-inf - (-inf)) is NaN unless the first-block guard steps in. The masked keys must get
  // weight 0, exactly as in the reference.
  Rng rng(21);
  PagedSequence s = make_shuffled(rng, 30, 8, 6);
  for (int t = 0; t < 16; ++t) {
    for (Eigen::Index i = 0; i < s.q.size(); ++i) {
      ASSERT_NE(s.q[i], 0.0);  // so that every product k_i * q_i below is -inf, never NaN
      s.k(t, i) = s.q[i] > 0 ? -kInf : kInf;
    }
  }
  place(s, pa::testing::kPoison);

  const Vec sc = scores_of(s);
  ASSERT_TRUE((sc.head(16).array() == -kInf).all());
  EXPECT_TRUE(FarFromUniform(sc));
  // The reference treats them as absent: attention over the 14 unmasked keys alone.
  ASSERT_TRUE(AllClose(pa::testing::reference_attention(s.q, s.k.bottomRows(14),
                                                        s.v.bottomRows(14)),
                       truth(s), kExactTol));
  EXPECT_TRUE(AllClose(truth(s), run(s), kExactTol));
}
/// [first_block_guard_test]

/// [poison_tests]
TEST(PagedOnlineAttention, PoisonedCacheIsNeverReadNaN) {
  // seq_len 35 over blocks of 16: two full blocks and 3 rows of a third. Every other row of the
  // cache, the 13-row tail of the last block included, is NaN.
  Rng rng(22);
  const PagedSequence s = make_shuffled(rng, 35, 16, 5, pa::testing::kPoison);
  EXPECT_TRUE(FarFromUniform(scores_of(s)));
  EXPECT_TRUE(AllClose(truth(s), run(s), kExactTol));
}

TEST(PagedOnlineAttention, PoisonedCacheIsNeverReadHuge) {
  // The same layout with 1e6 in every row the sequence does not own. q is turned so a poisoned
  // key scores +1e6 * sum(q) / sqrt(d) > 0: one read row would take all the weight, and bring
  // its value 1e6 along.
  Rng rng(23);
  PagedSequence s = make_shuffled(rng, 35, 16, 5, pa::testing::kHugePoison);
  if (s.q.sum() < 0) s.q = -s.q;
  const Vec sc = scores_of(s);
  ASSERT_GT(pa::testing::kHugePoison * s.q.sum() / std::sqrt(16.0), sc.maxCoeff() + 100.0);
  EXPECT_TRUE(FarFromUniform(sc));
  EXPECT_TRUE(AllClose(truth(s), run(s), kExactTol));
}
/// [poison_tests]

TEST(PagedOnlineAttention, RaggedLengthsAcrossBlockSizes) {
  // Last blocks holding 1 row, half a block, and all but one row, for several block sizes.
  Rng rng(24);
  for (int block_size : {4, 5, 8, 16}) {
    for (int last : {1, block_size / 2, block_size - 1}) {
      const int seq_len = 3 * block_size + last;
      SCOPED_TRACE("block_size " + std::to_string(block_size) + ", seq_len " +
                   std::to_string(seq_len));
      const PagedSequence s = make_shuffled(rng, seq_len, block_size, 7);
      EXPECT_TRUE(FarFromUniform(scores_of(s), kShortRowPeak));
      EXPECT_TRUE(AllClose(truth(s), run(s), kExactTol));
    }
  }
}

TEST(PagedOnlineAttention, RandomShuffledBlockTables) {
  Rng rng(25);
  const int block_sizes[] = {1, 2, 3, 5, 8, 16, 32};
  for (int trial = 0; trial < 30; ++trial) {
    const int block_size = block_sizes[rng.uniform_int(0, 6)];
    const int seq_len = rng.uniform_int(20, 300);
    const int used = (seq_len + block_size - 1) / block_size;
    const int num_blocks = used + rng.uniform_int(0, 8);  // spare blocks, all poison
    SCOPED_TRACE("trial " + std::to_string(trial) + ": block_size " +
                 std::to_string(block_size) + ", seq_len " + std::to_string(seq_len));
    const PagedSequence s = make_shuffled(rng, seq_len, block_size, num_blocks,
                                          trial % 2 ? pa::testing::kPoison
                                                    : pa::testing::kHugePoison);
    EXPECT_TRUE(FarFromUniform(scores_of(s), kShortRowPeak));
    EXPECT_TRUE(AllClose(truth(s), run(s), kExactTol));
  }
}

TEST(PagedOnlineAttention, UnreadTableEntriesArePadding) {
  // Engines pad block tables to a common width. Only the blocks covering seq_len = 7 (two blocks
  // of 4) are read; the padding entries -1 and 99 name no block and must never be touched.
  Rng rng(26);
  PagedSequence s = make_sequence(rng, 7, 4, IVec{{5, 2}}, 6);
  s.block_table = IVec{{5, 2, -1, 99}};
  EXPECT_TRUE(FarFromUniform(scores_of(s), kShortRowPeak));
  EXPECT_TRUE(AllClose(truth(s), run(s), kExactTol));
}

// ---- edges of the shape space -------------------------------------------------------------

TEST(PagedOnlineAttention, BlockSizeOne) {
  // Every block is a single row, so every block is both "first" and "last" of something:
  // the recurrence runs once per token.
  Rng rng(30);
  const PagedSequence s = make_shuffled(rng, 37, 1, 50);
  EXPECT_TRUE(FarFromUniform(scores_of(s)));
  EXPECT_TRUE(AllClose(truth(s), run(s), kExactTol));
}

TEST(PagedOnlineAttention, OneTokenReturnsItsValue) {
  // One key: softmax is [1] (a peak test is meaningless here), so the output is that value row.
  // Its block has 15 poisoned rows after it.
  Rng rng(31);
  const PagedSequence s = make_shuffled(rng, 1, 16, 3);
  EXPECT_TRUE(AllClose(s.v.row(0).transpose(), run(s), kExactTol));
}

TEST(PagedOnlineAttention, FourThousandNinetySixTokens) {
  Rng rng(32);
  const PagedSequence s = make_shuffled(rng, 4096, 16, 300);
  EXPECT_TRUE(FarFromUniform(scores_of(s)));
  // 4096-term sums round with relative error <= n * eps ~ 5e-13 even in the worst case, so the
  // O(1)-data bound kExactTol still holds; no looser tolerance is needed for length alone.
  EXPECT_TRUE(AllClose(truth(s), run(s), kExactTol));
}

// ---- large logits -------------------------------------------------------------------------

/// [large_logit_tests]
TEST(PagedOnlineAttention, LogitsNearNinetyStayFinite) {
  // exp(90) is already +inf in float32 (limit ~88.7): the reason kernels subtract the max.
  Rng rng(40);
  PagedSequence s = make_shuffled(rng, 45, 8, 8);
  lift_scores_to(s, 90.0);
  const Vec sc = scores_of(s);
  ASSERT_NEAR(sc.maxCoeff(), 90.0, 1e-9);
  EXPECT_TRUE(FarFromUniform(sc));
  EXPECT_TRUE(AllClose(truth(s), run(s), kLargeLogitTol));
}

TEST(PagedOnlineAttention, LogitsNearAThousandStayFinite) {
  // Every score lies within a few tens of 1000, far past float64's exp limit (~709.78): code
  // that exponentiates raw scores, or forgets to carry the max across blocks, gets inf / inf.
  Rng rng(41);
  PagedSequence s = make_shuffled(rng, 45, 8, 8);
  lift_scores_to(s, 1000.0);
  const Vec sc = scores_of(s);
  ASSERT_NEAR(sc.maxCoeff(), 1000.0, 1e-9);
  ASSERT_GT(sc.minCoeff(), 710.0);  // so even the smallest exp(score) overflows
  EXPECT_TRUE(FarFromUniform(sc));
  EXPECT_TRUE(AllClose(truth(s), run(s), kLargeLogitTol));
}
/// [large_logit_tests]

}  // namespace
}  // namespace pa::online_softmax
