// Lab 04 — the graded tests. Run: tools/lab grade 04   (or ctest --preset starter -L lab04)
//
// Ground truth is a per-sequence dense causal reference: for every query row, the test calls
// pa::testing::reference_attention (long double, plain loops) over exactly the key prefix that
// row may see, taken from the sequence's contiguous K/V. Every pool row no sequence owns is
// poisoned (NaN, or 1e6 in one test), so reading a slot too many is never quiet.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "pa/testing.hpp"
#include "varlen_batch.hpp"

namespace pa::varlen_batch {
namespace {

using pa::testing::AllClose;
using pa::testing::BitIdentical;
using pa::testing::FarFromUniform;
using pa::testing::Rng;

// Paged and dense attention are the same float64 arithmetic up to summation order; the
// reference runs in long double. Outputs are O(1), so rounding stays below 1e-14: 1e-12 leaves
// room for order effects and none for a wrong weight, a wrong key or a wrong head.
constexpr double kExactTol = 1e-12;

// Query entries are drawn with this standard deviation and keys with 1, so every score has
// standard deviation ~4 and each softmax is peaked (asserted per test with FarFromUniform).
constexpr double kLogitSpread = 4.0;

// ---- the test's own view of a batch --------------------------------------------------------

/// One request in a test batch: how much is cached and how much is new this step.
struct Shape {
  int num_cached;
  int num_new;
};

/// A batch whose every sequence has contiguous K/V (the dense truth) and a copy in a paged pool.
struct Batch {
  int block_size = 0, num_heads = 0, num_kv_heads = 0, head_dim = 0, num_blocks = 0;
  std::vector<SeqStep> steps;  // what the scheduler would pass to build_forward_meta
  std::vector<Mat> k, v;       // per sequence [num_cached + num_new, num_kv_heads * head_dim]
  Mat q;                       // [total_new, num_heads * head_dim], token-major
  Mat k_pool, v_pool;          // [num_blocks * block_size, num_kv_heads * head_dim]
  ForwardMeta meta;            // computed by expected_meta below, not by the student's code

  int kv_width() const { return num_kv_heads * head_dim; }
  int q_width() const { return num_heads * head_dim; }
};

/// The pool row of position p of a sequence with blocks `blocks`, computed with plain integers.
int slot_of(const std::vector<int>& blocks, int p, int block_size) {
  const Eigen::Map<const IVec> table(blocks.data(), static_cast<Eigen::Index>(blocks.size()));
  return static_cast<int>(pa::testing::slot_of(table, p, block_size));
}

/// The metadata, written out with loops, independently of the student's build_forward_meta.
ForwardMeta expected_meta(const std::vector<SeqStep>& steps, int block_size) {
  const int num_seqs = static_cast<int>(steps.size());
  std::size_t width = 0;
  for (const SeqStep& s : steps) width = std::max(width, s.blocks.size());
  ForwardMeta m;
  m.block_size = block_size;
  m.cu_seqlens_q = IVec::Zero(num_seqs + 1);
  m.seq_lens_kv = IVec::Zero(num_seqs);
  m.block_table = IMat::Constant(num_seqs, static_cast<Eigen::Index>(width), -1);
  std::vector<int> slots, positions;
  for (int s = 0; s < num_seqs; ++s) {
    m.cu_seqlens_q[s + 1] = m.cu_seqlens_q[s] + steps[s].num_new;
    m.seq_lens_kv[s] = steps[s].num_cached + steps[s].num_new;
    for (std::size_t b = 0; b < steps[s].blocks.size(); ++b)
      m.block_table(s, b) = steps[s].blocks[b];
    for (int j = 0; j < steps[s].num_new; ++j) {
      const int p = steps[s].num_cached + j;
      positions.push_back(p);
      slots.push_back(slot_of(steps[s].blocks, p, block_size));
    }
  }
  m.slot_mapping = Eigen::Map<const IVec>(slots.data(), Eigen::Index(slots.size()));
  m.positions = Eigen::Map<const IVec>(positions.data(), Eigen::Index(positions.size()));
  return m;
}

/// Builds a batch: random K/V per sequence, random queries, blocks drawn without replacement
/// from a pool of num_blocks in random order, every sequence's tokens placed in the pool by the
/// test (so attn_paged is tested apart from set_kv), every other row set to `poison`.
Batch make_batch(Rng& rng, const std::vector<Shape>& shapes, int block_size, int num_heads,
                 int num_kv_heads, int head_dim, int num_blocks,
                 double poison = pa::testing::kPoison) {
  Batch b;
  b.block_size = block_size;
  b.num_heads = num_heads;
  b.num_kv_heads = num_kv_heads;
  b.head_dim = head_dim;
  b.num_blocks = num_blocks;
  int blocks_needed = 0, total_new = 0;
  for (const Shape& s : shapes) {
    blocks_needed += (s.num_cached + s.num_new + block_size - 1) / block_size;
    total_new += s.num_new;
  }
  const IVec ids = rng.distinct_ids(blocks_needed, num_blocks);
  int next = 0;
  for (const Shape& s : shapes) {
    const int seq_len = s.num_cached + s.num_new;
    SeqStep step{{}, s.num_cached, s.num_new};
    for (int i = 0; i < (seq_len + block_size - 1) / block_size; ++i)
      step.blocks.push_back(ids[next++]);
    b.steps.push_back(step);
    b.k.push_back(rng.normal(seq_len, b.kv_width()));
    b.v.push_back(rng.normal(seq_len, b.kv_width()));
  }
  b.q = rng.normal(total_new, b.q_width(), kLogitSpread);
  b.k_pool = Mat::Constant(Eigen::Index{num_blocks} * block_size, b.kv_width(), poison);
  b.v_pool = b.k_pool;
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    for (int p = 0; p < b.k[s].rows(); ++p) {
      const int row = slot_of(b.steps[s].blocks, p, block_size);
      b.k_pool.row(row) = b.k[s].row(p);
      b.v_pool.row(row) = b.v[s].row(p);
    }
  }
  b.meta = expected_meta(b.steps, block_size);
  return b;
}

/// The per-sequence dense causal reference: query u of sequence s attends the first
/// num_cached + u + 1 rows of that sequence's contiguous K/V, and nothing else.
/// -> [total_new, num_heads * head_dim], token-major.
Mat reference(const Batch& b) {
  Mat out(b.q.rows(), b.q_width());
  int row = 0;
  for (std::size_t s = 0; s < b.steps.size(); ++s) {
    for (int i = 0; i < b.steps[s].num_new; ++i, ++row) {
      const int visible = b.steps[s].num_cached + i + 1;
      const Mat q_heads = b.q.row(row).reshaped<Eigen::RowMajor>(b.num_heads, b.head_dim);
      const Mat o = pa::testing::reference_attention_heads(q_heads, b.k[s].topRows(visible),
                                                           b.v[s].topRows(visible));
      out.row(row) = o.reshaped<Eigen::RowMajor>(1, b.q_width());
    }
  }
  return out;
}

/// Asserts, on this test's own data, that the softmax of the last query of the sequence with
/// the most keys is far from uniform in head 0 (that row sees the whole sequence).
void expect_spread(const Batch& b) {
  std::size_t longest = 0;
  for (std::size_t s = 1; s < b.k.size(); ++s) {
    if (b.k[s].rows() > b.k[longest].rows()) longest = s;
  }
  const int last_row = b.meta.cu_seqlens_q[longest + 1] - 1;
  const Vec q0 = b.q.row(last_row).head(b.head_dim).transpose();
  EXPECT_TRUE(FarFromUniform(pa::testing::scores(q0, b.k[longest].leftCols(b.head_dim))));
}

/// Names an element of a token-major output [total_new, num_heads * head_dim] as the student
/// thinks of it ("sequence 1, new token 3, head 2, dimension 5") and labels the two sides.
pa::testing::Labels labels_of(const Batch& b, std::string expected = "reference",
                              std::string actual = "attn_paged") {
  pa::testing::Labels labels;
  std::vector<int> starts{0};  // first row of each sequence, computed here, not from meta
  for (const SeqStep& step : b.steps) starts.push_back(starts.back() + step.num_new);
  labels.where = [starts, head_dim = b.head_dim](Eigen::Index row, Eigen::Index col) {
    const auto seq = std::upper_bound(starts.begin(), starts.end(), int(row)) - starts.begin() - 1;
    return "sequence " + std::to_string(seq) + ", new token " +
           std::to_string(row - starts[std::size_t(seq)]) + " (row " + std::to_string(row) +
           "), head " + std::to_string(col / head_dim) + ", dimension " +
           std::to_string(col % head_dim);
  };
  labels.expected = std::move(expected);
  labels.actual = std::move(actual);
  return labels;
}

Mat run_attn(const Batch& b) {
  return attn_paged(b.q, b.k_pool, b.v_pool, b.meta, b.num_heads, b.num_kv_heads);
}

/// Asserts every metadata tensor of `actual` equals `expected` exactly.
void expect_meta_eq(const ForwardMeta& expected, const ForwardMeta& actual) {
  EXPECT_TRUE(BitIdentical(expected.cu_seqlens_q, actual.cu_seqlens_q)) << "cu_seqlens_q";
  EXPECT_TRUE(BitIdentical(expected.seq_lens_kv, actual.seq_lens_kv)) << "seq_lens_kv";
  EXPECT_TRUE(BitIdentical(expected.block_table, actual.block_table)) << "block_table";
  EXPECT_TRUE(BitIdentical(expected.slot_mapping, actual.slot_mapping)) << "slot_mapping";
  EXPECT_TRUE(BitIdentical(expected.positions, actual.positions)) << "positions";
  EXPECT_EQ(expected.block_size, actual.block_size) << "block_size";
}

// ---- build_forward_meta: the formulas, worked by hand ---------------------------------------

/// [meta_tests]
TEST(ForwardMeta, SinglePrefillOfN) {
  // 11 prompt tokens, block_size 4: blocks 7, 2, 5 hold positions 0-3, 4-7, 8-10.
  const ForwardMeta m = build_forward_meta({{{7, 2, 5}, 0, 11}}, 4);
  ForwardMeta e;
  e.cu_seqlens_q = IVec{{0, 11}};
  e.seq_lens_kv = IVec{{11}};
  e.block_table = IMat{{7, 2, 5}};
  e.slot_mapping = IVec{{28, 29, 30, 31, 8, 9, 10, 11, 20, 21, 22}};
  e.positions = IVec::LinSpaced(11, 0, 10);
  e.block_size = 4;
  expect_meta_eq(e, m);
}

TEST(ForwardMeta, SingleDecodeStep) {
  // 9 tokens cached, 1 new: it sits at position 9 = offset 1 of logical block 2 (physical 7).
  const ForwardMeta m = build_forward_meta({{{3, 0, 7}, 9, 1}}, 4);
  ForwardMeta e;
  e.cu_seqlens_q = IVec{{0, 1}};
  e.seq_lens_kv = IVec{{10}};
  e.block_table = IMat{{3, 0, 7}};
  e.slot_mapping = IVec{{29}};
  e.positions = IVec{{9}};
  e.block_size = 4;
  expect_meta_eq(e, m);
}

TEST(ForwardMeta, MixedDecodeAndPrefillChunk) {
  // A decodes its 7th token (6 cached); B prefills positions 5-10 of its prompt (5 cached).
  const ForwardMeta m = build_forward_meta({{{4, 1}, 6, 1}, {{0, 6, 3}, 5, 6}}, 4);
  ForwardMeta e;
  e.cu_seqlens_q = IVec{{0, 1, 7}};  // new tokens only: 1, then 6
  e.seq_lens_kv = IVec{{7, 11}};     // cached + new
  e.block_table = IMat{{4, 1, -1}, {0, 6, 3}};
  e.slot_mapping = IVec{{6, 25, 26, 27, 12, 13, 14}};  // A: block 1 offset 2; B: 5..10
  e.positions = IVec{{6, 5, 6, 7, 8, 9, 10}};
  e.block_size = 4;
  expect_meta_eq(e, m);
}

TEST(ForwardMeta, ThreeSequencesPadTheBlockTableWithMinusOne) {
  // 4, 1 and 2 blocks: the table is 4 wide and the two short rows end in -1.
  const ForwardMeta m =
      build_forward_meta({{{9, 3, 11, 0}, 12, 1}, {{5}, 0, 3}, {{2, 8}, 4, 2}}, 4);
  ForwardMeta e;
  e.cu_seqlens_q = IVec{{0, 1, 4, 6}};
  e.seq_lens_kv = IVec{{13, 3, 6}};
  e.block_table = IMat{{9, 3, 11, 0}, {5, -1, -1, -1}, {2, 8, -1, -1}};
  e.slot_mapping = IVec{{0, 20, 21, 22, 32, 33}};
  e.positions = IVec{{12, 0, 1, 2, 4, 5}};
  e.block_size = 4;
  expect_meta_eq(e, m);
}
/// [meta_tests]

TEST(ForwardMeta, RandomBatchMatchesTheLoopFormulas) {
  // Eight requests of every kind, block_size 16, shuffled blocks: every tensor equals the
  // formulas written out with loops.
  Rng rng(401);
  const Batch b =
      make_batch(rng, {{0, 37}, {52, 1}, {16, 16}, {15, 1}, {0, 1}, {31, 9}, {64, 1}, {3, 29}}, 16,
                 1, 1, 1, 64);
  expect_meta_eq(b.meta, build_forward_meta(b.steps, 16));
}

// ---- set_kv: the write map -----------------------------------------------------------------

TEST(SetKv, ScattersEveryRowAndTouchesNothingElse) {
  Rng rng(411);
  const int block_size = 4, num_blocks = 12, width = 6;
  Mat k_pool = Mat::Constant(num_blocks * block_size, width, pa::testing::kPoison);
  Mat v_pool = k_pool;
  const std::vector<SeqStep> steps{{{10, 2}, 5, 1}, {{7, 0, 4}, 0, 9}};
  const ForwardMeta m = build_forward_meta(steps, block_size);
  const Mat k = rng.normal(10, width), v = rng.normal(10, width);
  set_kv(k_pool, v_pool, m.slot_mapping, k, v);

  std::set<int> written;
  int row = 0;
  for (const SeqStep& s : steps) {
    for (int j = 0; j < s.num_new; ++j, ++row) {
      const int slot = slot_of(s.blocks, s.num_cached + j, block_size);
      written.insert(slot);
      ASSERT_TRUE(BitIdentical(k.row(row), k_pool.row(slot))) << "new token " << row;
      ASSERT_TRUE(BitIdentical(v.row(row), v_pool.row(slot))) << "new token " << row;
    }
  }
  for (int r = 0; r < k_pool.rows(); ++r) {
    if (written.count(r)) continue;
    ASSERT_TRUE(k_pool.row(r).array().isNaN().all()) << "row " << r << " was overwritten";
    ASSERT_TRUE(v_pool.row(r).array().isNaN().all()) << "row " << r << " was overwritten";
  }
}

TEST(SetKv, BlockTensorViewSeesTheSameBytes) {
  // The pool as [num_slots, H_kv * D] for writes and as [num_blocks, block_size * H_kv * D] for
  // reads: token p of a sequence is row p % block_size of block blocks[p / block_size].
  Rng rng(412);
  const int block_size = 8, num_blocks = 6, num_kv_heads = 2, head_dim = 4;
  const int width = num_kv_heads * head_dim;
  Mat k_pool = Mat::Constant(num_blocks * block_size, width, pa::testing::kPoison);
  Mat v_pool = k_pool;
  const SeqStep seq{{4, 1, 5}, 0, 19};
  const ForwardMeta m = build_forward_meta({seq}, block_size);
  const Mat k = rng.normal(19, width), v = rng.normal(19, width);
  set_kv(k_pool, v_pool, m.slot_mapping, k, v);

  const Eigen::Map<const Mat> k_blocks(k_pool.data(), num_blocks, block_size * width);
  for (int p = 0; p < 19; ++p) {
    const int block = seq.blocks[p / block_size], offset = p % block_size;
    for (int h = 0; h < num_kv_heads; ++h) {
      // element [block, offset, h, d] of the 4-D view
      const auto in_view =
          k_blocks.row(block).segment((offset * num_kv_heads + h) * head_dim, head_dim);
      ASSERT_TRUE(BitIdentical(k.row(p).segment(h * head_dim, head_dim), in_view))
          << "token " << p << ", kv head " << h;
    }
  }
}

// ---- attn_paged against the per-sequence dense causal reference ----------------------------

/// [attn_tests]
TEST(AttnPaged, SinglePrefillOfNIsCausal) {
  Rng rng(421);
  const Batch b = make_batch(rng, {{0, 37}}, 8, 4, 2, 8, 10);
  expect_spread(b);
  EXPECT_TRUE(AllClose(reference(b), run_attn(b), kExactTol, 0.0, labels_of(b)));
}

TEST(AttnPaged, SingleDecodeStepSeesTheWholeCache) {
  Rng rng(422);
  const Batch b = make_batch(rng, {{52, 1}}, 8, 4, 2, 8, 10);
  expect_spread(b);
  EXPECT_TRUE(AllClose(reference(b), run_attn(b), kExactTol, 0.0, labels_of(b)));
}

TEST(AttnPaged, MixedDecodeAndPrefillChunkInOneCall) {
  // A decodes at length 29; B prefills a 13-token chunk after 19 cached tokens.
  Rng rng(423);
  const Batch b = make_batch(rng, {{28, 1}, {19, 13}}, 8, 4, 2, 8, 12);
  expect_spread(b);
  EXPECT_TRUE(AllClose(reference(b), run_attn(b), kExactTol, 0.0, labels_of(b)));
}

TEST(AttnPaged, ThreeSequencesWithPaddedBlockTable) {
  // 6, 1 and 4 blocks of 8: the -1 padding in the table is never dereferenced.
  Rng rng(424);
  const Batch b = make_batch(rng, {{44, 1}, {0, 7}, {16, 9}}, 8, 4, 2, 8, 16);
  ASSERT_EQ(b.meta.block_table.cols(), 6);
  expect_spread(b);
  EXPECT_TRUE(AllClose(reference(b), run_attn(b), kExactTol, 0.0, labels_of(b)));
}
/// [attn_tests]

TEST(AttnPaged, UnusedSlotsNeverEnterTheSoftmax) {
  // The same kind of batch with 1e6 in every row no sequence owns (including the tails of the
  // last blocks): a read the causal mask leaves open lets one such key own the softmax. A read
  // the mask closes multiplies it by 0 and passes here; NaN padding (every other test) fails it.
  Rng rng(425);
  const Batch b =
      make_batch(rng, {{20, 1}, {0, 11}, {9, 5}}, 16, 2, 2, 8, 8, pa::testing::kHugePoison);
  expect_spread(b);
  EXPECT_TRUE(AllClose(reference(b), run_attn(b), kExactTol, 0.0, labels_of(b)));
}

TEST(AttnPaged, GroupedQueryHeadsEightOverTwo) {
  // Query heads 0-3 read kv head 0, heads 4-7 kv head 1; all eight hold different data, so a
  // wrong head mapping or a head-major output fails on every row.
  Rng rng(4261);
  const Batch b = make_batch(rng, {{30, 1}, {5, 12}, {0, 6}}, 16, 8, 2, 16, 8);
  expect_spread(b);
  EXPECT_TRUE(AllClose(reference(b), run_attn(b), kExactTol, 0.0, labels_of(b)));
}

TEST(AttnPaged, MultiHeadFourOverFour) {
  Rng rng(427);
  const Batch b = make_batch(rng, {{0, 21}, {33, 1}, {12, 3}, {47, 1}}, 4, 4, 4, 8, 40);
  expect_spread(b);
  EXPECT_TRUE(AllClose(reference(b), run_attn(b), kExactTol, 0.0, labels_of(b)));
}

TEST(AttnPaged, OutputIsTokenMajor) {
  // Two tokens, two heads, head_dim 1, one key each (a fresh prefill sees only itself at
  // query 0): the output is then exactly the value rows, laid out [token][head].
  // A head-major buffer read as token-major would put head 1 of token 0 where head 0 of
  // token 1 belongs.
  Rng rng(428);
  Batch b = make_batch(rng, {{0, 1}, {0, 1}}, 4, 2, 2, 1, 4);
  const Mat out = run_attn(b);
  ASSERT_EQ(out.rows(), 2);
  ASSERT_EQ(out.cols(), 2);
  // Each sequence has one key, so softmax is [1] and the output row is its value row.
  EXPECT_TRUE(AllClose(b.v[0], out.row(0), kExactTol)) << "token 0 should be [v0_h0, v0_h1]";
  EXPECT_TRUE(AllClose(b.v[1], out.row(1), kExactTol)) << "token 1 should be [v1_h0, v1_h1]";
}

TEST(AttnPaged, ScoresNearAThousandStayFinite) {
  // Every score of this mixed batch is its usual spread plus 1000, and exp(1000) overflows
  // float64 (the limit is ~709): only a softmax that subtracts each row's max stays finite.
  // The shift comes from one shared coordinate: the last dim of every query head holds
  // q_last and that of every key k_last, which adds q_last * k_last / sqrt(head_dim) = 1000 to
  // every score of a row and leaves the softmax, and so the reference, as it was.
  Rng rng(429);
  Batch b = make_batch(rng, {{23, 1}, {9, 10}, {0, 5}}, 8, 4, 2, 8, 12);
  const double shift = 1000.0, q_last = 40.0;
  const double k_last = shift * std::sqrt(static_cast<double>(b.head_dim)) / q_last;
  for (int h = 0; h < b.num_heads; ++h) b.q.col((h + 1) * b.head_dim - 1).setConstant(q_last);
  for (std::size_t s = 0; s < b.steps.size(); ++s) {
    for (int g = 0; g < b.num_kv_heads; ++g) {
      b.k[s].col((g + 1) * b.head_dim - 1).setConstant(k_last);
    }
    for (int p = 0; p < b.k[s].rows(); ++p) {  // the pool holds the same shifted keys
      b.k_pool.row(slot_of(b.steps[s].blocks, p, b.block_size)) = b.k[s].row(p);
    }
  }
  expect_spread(b);
  const Vec decode_query = b.q.row(0).head(b.head_dim).transpose();  // [head_dim] seq 0, head 0
  ASSERT_GT(pa::testing::scores(decode_query, b.k[0].leftCols(b.head_dim)).minCoeff(), 710.0)
      << "every score should be past exp's float64 limit";
  // Scores of ~1000 carry ~1000x the absolute rounding of scores of ~1 and exp() passes it into
  // every weight (~1e-13 on these outputs): 1e-11, lab 02's bound for the same case, leaves
  // 100x room for that and none for a wrong weight or a NaN.
  constexpr double kLargeScoreTol = 1e-11;
  EXPECT_TRUE(AllClose(reference(b), run_attn(b), kLargeScoreTol, 0.0, labels_of(b)));
}

// ---- what the batch must never do ----------------------------------------------------------

/// [leak_tests]
TEST(NoLeakage, AnotherSequencesKvNeverReachesThisOne) {
  // Rewrite every K/V row of sequence 1 (and its queries); sequences 0 and 2 must not move by a
  // single bit.
  Rng rng(431);
  Batch b = make_batch(rng, {{25, 1}, {10, 14}, {0, 9}}, 8, 4, 2, 8, 16);
  expect_spread(b);
  const Mat before = run_attn(b);
  ASSERT_TRUE(AllClose(reference(b), before, kExactTol, 0.0, labels_of(b)));

  const SeqStep& other = b.steps[1];
  for (int p = 0; p < other.num_cached + other.num_new; ++p) {
    const int row = slot_of(other.blocks, p, b.block_size);
    b.k_pool.row(row) = rng.normal(1, b.kv_width(), 10.0);
    b.v_pool.row(row) = rng.normal(1, b.kv_width(), 10.0);
  }
  b.q.middleRows(b.meta.cu_seqlens_q[1], other.num_new) =
      rng.normal(other.num_new, b.q_width(), kLogitSpread);
  const Mat after = run_attn(b);

  for (int s : {0, 2}) {
    const int start = b.meta.cu_seqlens_q[s], len = b.meta.cu_seqlens_q[s + 1] - start;
    EXPECT_TRUE(BitIdentical(before.middleRows(start, len), after.middleRows(start, len),
                             pa::testing::Labels{{}, "before the rewrite", "after it"}))
        << "sequence " << s << " changed when only sequence 1's data did";
  }
}

TEST(NoLeakage, LaterTokensNeverReachEarlierQueries) {
  // A 12-token chunk after 20 cached tokens: rewrite the K/V of the chunk's last 4 tokens.
  // Query rows 0-7 of the chunk must stay bit-identical; the last rows must change.
  Rng rng(432);
  Batch b = make_batch(rng, {{6, 1}, {20, 12}}, 8, 4, 2, 8, 12);
  expect_spread(b);
  const Mat before = run_attn(b);
  ASSERT_TRUE(AllClose(reference(b), before, kExactTol, 0.0, labels_of(b)));

  const SeqStep& seq = b.steps[1];
  for (int p = 28; p < 32; ++p) {
    const int row = slot_of(seq.blocks, p, b.block_size);
    b.k_pool.row(row) = rng.normal(1, b.kv_width(), 10.0);
    b.v_pool.row(row) = rng.normal(1, b.kv_width(), 10.0);
  }
  const Mat after = run_attn(b);
  const int start = b.meta.cu_seqlens_q[1];
  EXPECT_TRUE(BitIdentical(before.middleRows(start, 8), after.middleRows(start, 8),
                           pa::testing::Labels{{}, "before the rewrite", "after it"}))
      << "a query saw a key at a later position";
  EXPECT_FALSE(BitIdentical(before.row(start + 11), after.row(start + 11)))
      << "the last query should see the rewritten keys";
  EXPECT_TRUE(BitIdentical(before.row(0), after.row(0))) << "sequence 0 moved";
}
/// [leak_tests]

// ---- through the whole step: build_forward_meta, set_kv, attn_paged ------------------------

/// Runs one engine step for a single sequence through the student's three functions.
/// k, v: the sequence's contiguous K/V; q: its queries [num_tokens, q_width].
Mat step_through(Mat& k_pool, Mat& v_pool, const std::vector<int>& blocks, int num_cached,
                 int num_new, const Mat& q, const Mat& k, const Mat& v, int block_size,
                 int num_heads, int num_kv_heads) {
  const ForwardMeta m = build_forward_meta({{blocks, num_cached, num_new}}, block_size);
  set_kv(k_pool, v_pool, m.slot_mapping, k.middleRows(num_cached, num_new),
         v.middleRows(num_cached, num_new));
  return attn_paged(q.middleRows(num_cached, num_new), k_pool, v_pool, m, num_heads, num_kv_heads);
}

/// [chunk_test]
TEST(ChunkedPrefill, ChunksOfSixteenEqualOnePrefillOfForty) {
  // Chunking changes when a token is attended, never what it attends: feeding 40 prompt
  // tokens as 16 + 16 + 8 yields, row for row, what one 40-token prefill yields.
  Rng rng(441);
  const int block_size = 16, num_blocks = 8, num_heads = 4, num_kv_heads = 2, head_dim = 8;
  const int width = num_kv_heads * head_dim, n = 40;
  const Mat q = rng.normal(n, num_heads * head_dim, kLogitSpread);
  const Mat k = rng.normal(n, width), v = rng.normal(n, width);
  const Vec q0 = q.row(n - 1).head(head_dim).transpose();
  EXPECT_TRUE(FarFromUniform(pa::testing::scores(q0, k.leftCols(head_dim))));

  const Mat empty = Mat::Constant(num_blocks * block_size, width, pa::testing::kPoison);
  Mat k_one = empty, v_one = empty;
  const std::vector<int> blocks_one{5, 0, 3};
  const Mat one_shot =
      step_through(k_one, v_one, blocks_one, 0, n, q, k, v, block_size, num_heads, num_kv_heads);

  Mat k_chunk = empty, v_chunk = empty;
  const std::vector<int> blocks_chunk{2, 7, 4};  // another placement on purpose
  Mat chunked(n, num_heads * head_dim);
  int done = 0;
  for (int chunk : {16, 16, 8}) {
    chunked.middleRows(done, chunk) = step_through(k_chunk, v_chunk, blocks_chunk, done, chunk, q,
                                                   k, v, block_size, num_heads, num_kv_heads);
    done += chunk;
  }
  pa::testing::Labels rows;
  rows.where = [head_dim](Eigen::Index row, Eigen::Index col) {
    return "prompt token " + std::to_string(row) + ", head " + std::to_string(col / head_dim) +
           ", dimension " + std::to_string(col % head_dim);
  };
  rows.expected = "one-shot prefill";
  rows.actual = "chunked prefill (16 + 16 + 8)";
  EXPECT_TRUE(AllClose(one_shot, chunked, kExactTol, 0.0, rows));

  Batch dense;  // the dense truth for the same 40 rows
  dense.num_heads = num_heads;
  dense.num_kv_heads = num_kv_heads;
  dense.head_dim = head_dim;
  dense.steps = {{blocks_one, 0, n}};
  dense.k = {k};
  dense.v = {v};
  dense.q = q;
  rows.expected = "reference";
  EXPECT_TRUE(AllClose(reference(dense), chunked, kExactTol, 0.0, rows));
}
/// [chunk_test]

// ---- end to end: a tiny decoder generates the same tokens both ways ------------------------

/// A one-layer decoder with seeded random weights: x = embed[token] + pos[position];
/// q, k, v = x W_q, x W_k, x W_v; h = x + attention(q, k, v) W_o; logits = h W_out.
struct TinyDecoder {
  static constexpr int kVocab = 48, kHeads = 4, kKvHeads = 2, kHeadDim = 8, kMaxPos = 96;
  static constexpr int kModel = kHeads * kHeadDim;  // 32
  Mat embed;                                        // [kVocab, kModel]
  Mat pos;                                          // [kMaxPos, kModel]
  Mat w_q;                                          // [kModel, kHeads * kHeadDim]
  Mat w_k;                                          // [kModel, kKvHeads * kHeadDim]
  Mat w_v;                                          // [kModel, kKvHeads * kHeadDim]
  Mat w_o;                                          // [kHeads * kHeadDim, kModel]
  Mat w_out;                                        // [kModel, kVocab]

  explicit TinyDecoder(Rng& rng)
      : embed(rng.normal(kVocab, kModel)),
        pos(rng.normal(kMaxPos, kModel)),
        // x has entries of variance ~2, so q entries have std 0.5 * sqrt(64) = 4 and k entries
        // std 1: the scores spread like the rest of this file's (std ~4).
        w_q(rng.normal(kModel, kHeads * kHeadDim, 0.5)),
        w_k(rng.normal(kModel, kKvHeads * kHeadDim, 0.125)),
        w_v(rng.normal(kModel, kKvHeads * kHeadDim, 0.125)),
        w_o(rng.normal(kHeads * kHeadDim, kModel, 1.0 / std::sqrt(double(kModel)))),
        // logits of std ~10: neighbours in the ranking sit whole units apart, not 1e-12.
        w_out(rng.normal(kModel, kVocab, 1.0)) {}

  /// The layer input of each (token, position) pair: [n, kModel].
  Mat input(const std::vector<int>& tokens, const IVec& positions) const {
    Mat x(Eigen::Index(tokens.size()), kModel);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      x.row(i) = embed.row(tokens[i]) + pos.row(positions[i]);
    }
    return x;
  }

  /// The logits of each row given its input and its attention output: [n, kVocab].
  Mat logits(const Mat& x, const Mat& attn) const { return (x + attn * w_o) * w_out; }
};

/// The greedy choice from one row of logits, and how far ahead of the runner-up it is.
std::pair<int, double> argmax_with_margin(const Eigen::Ref<const Vec>& row) {
  int best = 0;
  for (int i = 1; i < row.size(); ++i) {
    if (row[i] > row[best]) best = i;
  }
  double second = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < row.size(); ++i) {
    if (i != best) second = std::max(second, row[i]);
  }
  return {best, row[best] - second};
}

// The two paths compute the same logits up to float64 rounding (~1e-12 on logits of ~10). A
// greedy pick can only flip if two logits sit within that distance; every pick of the dense run
// is asserted to lead by more than this, six orders of magnitude above the rounding.
constexpr double kMinMargin = 1e-6;

// Every row of the paged batch's logits against the dense model's: float64 rounding of two
// summation orders is ~1e-12 here; a wrong weight anywhere moves a logit by far more than 1e-9.
constexpr double kLogitTol = 1e-9;

/// What the dense model does with one request, with no paging at all: its greedy picks and the
/// logits of every position it processes.
struct DenseRun {
  std::vector<int> generated;  // the `count` greedy picks
  Mat logits;      // [prompt + count - 1, kVocab]: row p = the logits after the token at p
  Mat keys;        // [prompt + count - 1, kKvHeads * kHeadDim]: every key it cached
  Vec last_query;  // [kHeadDim] head 0 of the last query it fed
};

/// Greedy generation with a contiguous cache and plain dense causal attention: the prompt in one
/// prefill, then one token per step.
DenseRun run_dense(const TinyDecoder& model, const std::vector<int>& prompt, int count) {
  DenseRun run;
  run.keys = Mat(0, TinyDecoder::kKvHeads * TinyDecoder::kHeadDim);  // [len, H_kv * D]
  Mat values = run.keys;
  run.logits = Mat(0, TinyDecoder::kVocab);
  std::vector<int> fed = prompt;
  int len = 0;
  while (static_cast<int>(run.generated.size()) < count) {
    const int n = static_cast<int>(fed.size());
    const Mat x = model.input(fed, IVec::LinSpaced(n, len, len + n - 1));
    const Mat q = x * model.w_q;
    run.keys.conservativeResize(len + n, Eigen::NoChange);
    values.conservativeResize(len + n, Eigen::NoChange);
    run.keys.bottomRows(n) = x * model.w_k;
    values.bottomRows(n) = x * model.w_v;
    Mat attn(n, TinyDecoder::kModel);
    for (int i = 0; i < n; ++i) {  // row i sees the first len + i + 1 cached tokens
      const Mat q_heads =
          q.row(i).reshaped<Eigen::RowMajor>(TinyDecoder::kHeads, TinyDecoder::kHeadDim);
      const Mat o = pa::testing::reference_attention_heads(q_heads, run.keys.topRows(len + i + 1),
                                                           values.topRows(len + i + 1));
      attn.row(i) = o.reshaped<Eigen::RowMajor>(1, TinyDecoder::kModel);
    }
    len += n;
    const Mat logits = model.logits(x, attn);  // [n, kVocab]
    run.logits.conservativeResize(len, Eigen::NoChange);
    run.logits.bottomRows(n) = logits;
    run.last_query = q.row(n - 1).head(TinyDecoder::kHeadDim).transpose();
    const auto [token, margin] = argmax_with_margin(logits.row(n - 1).transpose());
    EXPECT_GT(margin, kMinMargin) << "dense pick " << run.generated.size()
                                  << " is too close to call: the test data needs another seed";
    run.generated.push_back(token);
    fed = {token};
  }
  return run;
}

/// One in-flight request of the paged engine.
struct Request {
  std::vector<int> prompt;
  int chunk;                   // prefill chunk size
  std::vector<int> blocks;     // grows on demand from the shuffled free list
  int num_cached = 0;          // tokens whose K/V are in the pool
  std::vector<int> generated;  // greedy picks so far
};

/// [e2e_test]
TEST(EndToEnd, PagedBatchGeneratesTheDenseTokens) {
  Rng rng(451);
  const TinyDecoder model(rng);
  const int block_size = 4, num_blocks = 40;
  const int kv_width = TinyDecoder::kKvHeads * TinyDecoder::kHeadDim;
  const int count = 20;

  // The request under test and two neighbours: a long prompt prefilled in chunks of 12 and a
  // short one. All three start together and share every step.
  std::vector<Request> reqs(3);
  reqs[0].prompt = {3, 17, 41, 8, 22, 5, 30, 11, 44, 2, 19, 27, 36};
  reqs[0].chunk = 64;
  for (int i = 0; i < 30; ++i) reqs[1].prompt.push_back((7 * i + 3) % TinyDecoder::kVocab);
  reqs[1].chunk = 12;
  reqs[2].prompt = {9, 1, 40, 33, 14};
  reqs[2].chunk = 64;

  // The reference first, from the dense model alone: what each request must produce, and the
  // data's spread (the last decode query of request 0 over its keys, head 0), checked on the
  // reference's own numbers so that it never depends on the code under test.
  std::vector<DenseRun> dense;
  for (const Request& r : reqs) dense.push_back(run_dense(model, r.prompt, count));
  ASSERT_TRUE(FarFromUniform(
      pa::testing::scores(dense[0].last_query, dense[0].keys.leftCols(TinyDecoder::kHeadDim))));
  ASSERT_GE(std::set<int>(dense[0].generated.begin(), dense[0].generated.end()).size(), 4u)
      << "the model should not collapse onto one token, or the test proves little";

  // A shuffled free list: blocks come out in random order and requests interleave in the pool.
  const IVec free_list = rng.permutation(num_blocks);
  int next_free = 0;
  Mat k_pool = Mat::Constant(num_blocks * block_size, kv_width, pa::testing::kPoison);
  Mat v_pool = k_pool;

  for (int step = 0; static_cast<int>(reqs[0].generated.size()) < count; ++step) {
    // Schedule: a request still in its prompt gets its next chunk, otherwise it decodes. The
    // token it decodes is the dense model's previous pick (teacher forcing), so both paths see
    // the same tokens and every row of every step can be compared, not only the last. Blocks are
    // reserved for what this step writes.
    std::vector<SeqStep> steps;
    std::vector<int> tokens;  // [total_new] the ids fed this step, sequence by sequence
    for (std::size_t s = 0; s < reqs.size(); ++s) {
      Request& r = reqs[s];
      const int prompt_left = static_cast<int>(r.prompt.size()) - r.num_cached;
      const int num_new = prompt_left > 0 ? std::min(r.chunk, prompt_left) : 1;
      for (int j = 0; j < num_new; ++j) {
        tokens.push_back(prompt_left > 0 ? r.prompt[r.num_cached + j]
                                         : dense[s].generated[r.generated.size() - 1]);
      }
      while (static_cast<int>(r.blocks.size()) * block_size < r.num_cached + num_new) {
        r.blocks.push_back(free_list[next_free++]);
      }
      steps.push_back({r.blocks, r.num_cached, num_new});
    }

    const ForwardMeta meta = build_forward_meta(steps, block_size);
    // One position per fed token, or model.input below would index past them.
    ASSERT_EQ(meta.positions.size(), static_cast<Eigen::Index>(tokens.size()))
        << "positions (and cu_seqlens_q) must count this step's new tokens only";
    const Mat x = model.input(tokens, meta.positions);  // [total_new, kModel]
    const Mat q = x * model.w_q;                        // [total_new, H * D]
    set_kv(k_pool, v_pool, meta.slot_mapping, x * model.w_k, x * model.w_v);
    const Mat attn = attn_paged(q, k_pool, v_pool, meta, TinyDecoder::kHeads,
                                TinyDecoder::kKvHeads);  // [total_new, H * D]
    const Mat logits = model.logits(x, attn);            // [total_new, kVocab]

    for (std::size_t s = 0; s < reqs.size(); ++s) {
      Request& r = reqs[s];
      const int num_new = steps[s].num_new, first = r.num_cached;
      pa::testing::Labels labels;
      labels.expected = "dense model";
      labels.actual = "paged batch";
      labels.where = [&](Eigen::Index row, Eigen::Index token) {
        return "request " + std::to_string(s) + ", position " + std::to_string(first + row) +
               " (row " + std::to_string(row) + " of the " + std::to_string(num_new) +
               " tokens it fed at step " + std::to_string(step) + "), logit of token " +
               std::to_string(token);
      };
      ASSERT_TRUE(AllClose(dense[s].logits.middleRows(first, num_new),
                           logits.middleRows(meta.cu_seqlens_q[s], num_new), kLogitTol, 0.0,
                           labels));
      r.num_cached += num_new;
      if (r.num_cached >= static_cast<int>(r.prompt.size())) {  // the prompt is all in: pick
        r.generated.push_back(
            argmax_with_margin(logits.row(meta.cu_seqlens_q[s + 1] - 1).transpose()).first);
      }
    }
  }
  for (std::size_t s = 0; s < reqs.size(); ++s) {
    const std::vector<int> want(dense[s].generated.begin(),
                                dense[s].generated.begin() + reqs[s].generated.size());
    EXPECT_EQ(want, reqs[s].generated) << "request " << s << ": greedy picks, dense vs paged";
  }
}
/// [e2e_test]

}  // namespace
}  // namespace pa::varlen_batch
