// Lab 03 — the tests of the given argument checks (ctest label `checks`). They pass under the
// starter too: bad input gets std::invalid_argument naming the argument, the expected and the
// actual value, before any of your code runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "flash_decoding.hpp"
#include "pa/testing.hpp"

namespace pa::flash_decoding {
namespace {

using pa::testing::ThrowsInvalidArgument;

TEST(FlashDecodingChecks, AttendPartialRejectsZeroHeadDim) {
  EXPECT_TRUE(ThrowsInvalidArgument([] { attend_partial(Vec(0), Mat(3, 0), Mat(3, 4)); },
                                    {"attend_partial", "q.size() (head_dim)", "> 0", "got 0"}));
}

TEST(FlashDecodingChecks, AttendPartialRejectsKeysOfTheWrongWidth) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { attend_partial(Vec::Zero(8), Mat::Zero(10, 6), Mat::Zero(10, 4)); },
      {"attend_partial", "K.cols()", "8 (q.size())", "got 6"}));
}

TEST(FlashDecodingChecks, AttendPartialRejectsValuesWithTheWrongRowCount) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { attend_partial(Vec::Zero(8), Mat::Zero(10, 8), Mat::Zero(9, 4)); },
      {"attend_partial", "V.rows()", "10 (K.rows())", "got 9"}));
}

TEST(FlashDecodingChecks, MergeRejectsAccumulatorsOfDifferentLengths) {
  const Partial a{0.5, 2.0, Vec::Ones(4)}, b{1.0, 3.0, Vec::Ones(3)};
  EXPECT_TRUE(ThrowsInvalidArgument([&] { merge(a, b); },
                                    {"merge", "b.acc.size()", "4 (a.acc.size())", "got 3"}));
}

TEST(FlashDecodingChecks, MergePartialsRejectsAnEmptyList) {
  EXPECT_TRUE(ThrowsInvalidArgument([] { merge_partials({}); },
                                    {"merge_partials", "partials.size()", "> 0", "got 0"}));
}

TEST(FlashDecodingChecks, MergePartialsRejectsAccumulatorsOfDifferentLengths) {
  const std::vector<Partial> partials{
      {0.5, 2.0, Vec::Ones(4)}, {1.0, 3.0, Vec::Ones(4)}, {0.0, 1.0, Vec::Ones(5)}};
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { merge_partials(partials); },
      {"merge_partials", "partials[2].acc.size()", "4 (partials[0].acc.size())", "got 5"}));
}

TEST(FlashDecodingChecks, MergePartialsRejectsOnlyEmptyPartials) {
  // Valid partials, each over zero keys; but their merge has denom 0, nothing to divide by.
  const std::vector<Partial> partials(
      3, Partial{-std::numeric_limits<double>::infinity(), 0.0, Vec::Zero(4)});
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { merge_partials(partials); },
      {"merge_partials", "partials", "m > -inf", "3 partials, all empty"}));
}

TEST(FlashDecodingChecks, PartitionedAttentionRejectsNonPositivePartitionCount) {
  const Vec q = Vec::Zero(8);
  const Mat K = Mat::Zero(10, 8), V = Mat::Zero(10, 4);
  EXPECT_TRUE(ThrowsInvalidArgument([&] { partitioned_attention(q, K, V, 0); },
                                    {"partitioned_attention", "num_partitions", "> 0", "got 0"}));
  EXPECT_TRUE(ThrowsInvalidArgument([&] { partitioned_attention(q, K, V, -2); },
                                    {"partitioned_attention", "num_partitions", "got -2"}));
}

TEST(FlashDecodingChecks, PartitionedAttentionRejectsNonPositiveThreadCount) {
  const Vec q = Vec::Zero(8);
  const Mat K = Mat::Zero(10, 8), V = Mat::Zero(10, 4);
  EXPECT_TRUE(ThrowsInvalidArgument([&] { partitioned_attention(q, K, V, 2, 0); },
                                    {"partitioned_attention", "num_threads", "> 0", "got 0"}));
  EXPECT_TRUE(ThrowsInvalidArgument([&] { partitioned_attention(q, K, V, 2, -1); },
                                    {"partitioned_attention", "num_threads", "> 0", "got -1"}));
}

TEST(FlashDecodingChecks, PartitionedAttentionRejectsZeroKeys) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { partitioned_attention(Vec::Zero(8), Mat(0, 8), Mat(0, 4), 2); },
      {"partitioned_attention", "K.rows() (number of keys)", "> 0", "got 0"}));
}

TEST(FlashDecodingChecks, PartitionedAttentionRejectsZeroHeadDim) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { partitioned_attention(Vec(0), Mat(3, 0), Mat(3, 4), 2); },
      {"partitioned_attention", "q.size() (head_dim)", "> 0", "got 0"}));
}

TEST(FlashDecodingChecks, PartitionedAttentionRejectsKeysOfTheWrongWidth) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { partitioned_attention(Vec::Zero(8), Mat::Zero(10, 6), Mat::Zero(10, 4), 2); },
      {"partitioned_attention", "K.cols()", "8 (q.size())", "got 6"}));
}

TEST(FlashDecodingChecks, PartitionedAttentionRejectsValuesWithTheWrongRowCount) {
  EXPECT_TRUE(ThrowsInvalidArgument(
      [] { partitioned_attention(Vec::Zero(8), Mat::Zero(10, 8), Mat::Zero(11, 4), 2); },
      {"partitioned_attention", "V.rows()", "10 (K.rows())", "got 11"}));
}

}  // namespace
}  // namespace pa::flash_decoding
