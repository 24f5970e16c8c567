// Lab 02 — the tests of the given argument checks (ctest label `checks`). They pass under the
// starter too: bad input gets std::invalid_argument naming the argument, the expected and the
// actual value, before any of your code runs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "online_softmax.hpp"
#include "pa/testing.hpp"

namespace pa::online_softmax {
namespace {

using pa::testing::ThrowsInvalidArgument;

// A well-formed call: q [8], caches of 4 blocks of 4 rows, a two-block table, seq_len 6.
const Vec kQ = Vec::Zero(8);
const Mat kKCache = Mat::Zero(16, 8);
const Mat kVCache = Mat::Zero(16, 5);
const IVec kTable{{3, 1}};

TEST(OnlineSoftmaxChecks, DenseRejectsAnEmptyQuery) {
  EXPECT_TRUE(ThrowsInvalidArgument([] { dense_attention(Vec(0), Mat(3, 0), Mat::Zero(3, 2)); },
                                    {"dense_attention", "q.size()", "> 0", "got 0"}));
}

TEST(OnlineSoftmaxChecks, DenseRejectsKeysOfAnotherWidth) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { dense_attention(Vec::Zero(8), Mat::Zero(3, 6), Mat::Zero(3, 2)); },
      {"dense_attention", "K.cols()", "8", "got 6"}));
}

TEST(OnlineSoftmaxChecks, DenseRejectsValueRowsOtherThanKeyRows) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { dense_attention(Vec::Zero(8), Mat::Zero(3, 8), Mat::Zero(4, 2)); },
      {"dense_attention", "V.rows()", "3", "got 4"}));
}

TEST(OnlineSoftmaxChecks, DenseRejectsZeroKeys) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { dense_attention(Vec::Zero(8), Mat(0, 8), Mat(0, 2)); },
      {"dense_attention", "K.rows()", "> 0", "got 0"}));
}

TEST(OnlineSoftmaxChecks, PagedRejectsNonPositiveBlockSize) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { paged_online_attention(kQ, kKCache, kVCache, kTable, 6, 0); },
      {"paged_online_attention", "block_size", "> 0", "got 0"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { paged_online_attention(kQ, kKCache, kVCache, kTable, 6, -4); },
      {"block_size", "> 0", "got -4"}));
}

TEST(OnlineSoftmaxChecks, PagedRejectsAnEmptyQuery) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { paged_online_attention(Vec(0), Mat(16, 0), kVCache, kTable, 6, 4); },
      {"paged_online_attention", "q.size()", "> 0", "got 0"}));
}

TEST(OnlineSoftmaxChecks, PagedRejectsKeyCacheOfAnotherWidth) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { paged_online_attention(kQ, Mat::Zero(16, 6), kVCache, kTable, 6, 4); },
      {"paged_online_attention", "k_cache.cols()", "8 (q.size())", "got 6"}));
}

TEST(OnlineSoftmaxChecks, PagedRejectsCachesWithDifferentRowCounts) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { paged_online_attention(kQ, kKCache, Mat::Zero(12, 5), kTable, 6, 4); },
      {"paged_online_attention", "v_cache.rows()", "16 (k_cache.rows())", "got 12"}));
}

TEST(OnlineSoftmaxChecks, PagedRejectsCacheRowsNotAMultipleOfBlockSize) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { paged_online_attention(kQ, Mat::Zero(18, 8), Mat::Zero(18, 5), kTable, 6, 4); },
      {"paged_online_attention", "k_cache.rows()", "multiple of block_size = 4", "got 18"}));
}

TEST(OnlineSoftmaxChecks, PagedRejectsNonPositiveSeqLen) {
  // Attention over zero keys is 0 / 0: there is no answer to return.
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { paged_online_attention(kQ, kKCache, kVCache, kTable, 0, 4); },
      {"paged_online_attention", "seq_len", "> 0", "got 0"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { paged_online_attention(kQ, kKCache, kVCache, kTable, -3, 4); },
      {"seq_len", "> 0", "got -3"}));
}

TEST(OnlineSoftmaxChecks, PagedRejectsSeqLenBeyondTheTable) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { paged_online_attention(kQ, kKCache, kVCache, kTable, 9, 4); },
      {"paged_online_attention", "seq_len", "<= 8", "block_table.size() * block_size",
       "got 9"}));
}

TEST(OnlineSoftmaxChecks, PagedRejectsBlockIdsOutsideTheCache) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { paged_online_attention(kQ, kKCache, kVCache, IVec{{3, 4}}, 6, 4); },
      {"paged_online_attention", "block_table[1]", "[0, 4)", "got 4"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { paged_online_attention(kQ, kKCache, kVCache, IVec{{-1, 2}}, 6, 4); },
      {"block_table[0]", "[0, 4)", "got -1"}));
}

}  // namespace
}  // namespace pa::online_softmax
