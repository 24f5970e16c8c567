// Lab 01 — the tests of the given argument checks (ctest label `checks`). They pass under the
// starter too: bad input gets std::invalid_argument naming the argument, the expected and the
// actual value, before any of your code runs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "paged_gather.hpp"
#include "pa/testing.hpp"

namespace pa::paged_gather {
namespace {

using pa::testing::ThrowsInvalidArgument;

TEST(PagedGatherChecks, SlotMappingRejectsBadArguments) {
  const IVec table{{2, 0}};
  EXPECT_TRUE(ThrowsInvalidArgument([&] { build_slot_mapping(table, 0, 0, 1); },
                                    {"build_slot_mapping", "block_size", "> 0", "got 0"}));
  EXPECT_TRUE(ThrowsInvalidArgument([&] { build_slot_mapping(table, 4, -1, 1); },
                                    {"start", ">= 0", "got -1"}));
  EXPECT_TRUE(ThrowsInvalidArgument([&] { build_slot_mapping(table, 4, 0, -2); },
                                    {"num_tokens", "got -2"}));
  EXPECT_TRUE(ThrowsInvalidArgument([&] { build_slot_mapping(table, 4, 6, 3); },
                                    {"start + num_tokens", "<= 8", "got 9"}));
  EXPECT_TRUE(ThrowsInvalidArgument([&] { build_slot_mapping(IVec{{1, -1}}, 4, 2, 4); },
                                    {"block_table[1]", "got -1"}));
}

TEST(PagedGatherChecks, WriteKvRejectsBadArguments) {
  Mat k_cache = Mat::Zero(16, 8), v_cache = Mat::Zero(16, 8);
  Mat narrow = Mat::Zero(16, 4);
  const Mat two_rows = Mat::Zero(2, 8);
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { write_kv(k_cache, narrow, two_rows, two_rows, IVec{{0, 1}}); },
      {"write_kv", "v_cache", "[16, 8]", "[16, 4]"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { write_kv(k_cache, v_cache, two_rows, two_rows, IVec{{0, 1, 2}}); },
      {"new_k.rows()", "3", "got 2"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { write_kv(k_cache, v_cache, Mat::Zero(2, 4), Mat::Zero(2, 4), IVec{{0, 1}}); },
      {"new_k.cols()", "8", "got 4"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { write_kv(k_cache, v_cache, two_rows, Mat::Zero(1, 8), IVec{{0, 1}}); },
      {"new_v", "[2, 8]", "[1, 8]"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { write_kv(k_cache, v_cache, two_rows, two_rows, IVec{{3, 16}}); },
      {"slot_mapping[1]", "[0, 16)", "got 16"}));
}

TEST(PagedGatherChecks, PagedAttentionRejectsBadArguments) {
  const Mat q = Mat::Zero(4, 8);          // 4 heads of dim 8
  const Mat cache = Mat::Zero(32, 16);    // 2 kv heads, 32 slots = 4 blocks of 8
  const IVec table{{3, 1}};
  EXPECT_TRUE(ThrowsInvalidArgument([&] { paged_attention(q, cache, cache, table, 10, 0); },
                                    {"paged_attention", "block_size", "got 0"}));
  EXPECT_TRUE(ThrowsInvalidArgument([&] { paged_attention(q, cache, cache, table, 0, 8); },
                                    {"seq_len", "> 0", "got 0"}));
  EXPECT_TRUE(ThrowsInvalidArgument([&] { paged_attention(q, cache, cache, table, -3, 8); },
                                    {"seq_len", "got -3"}));
  EXPECT_TRUE(ThrowsInvalidArgument([&] { paged_attention(q, cache, cache, table, 17, 8); },
                                    {"seq_len", "<= 16", "got 17"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { paged_attention(q, cache, cache, IVec{{3, 4}}, 10, 8); },
      {"block_table[1]", "[0, 4)", "got 4"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { paged_attention(Mat::Zero(3, 8), cache, cache, table, 10, 8); },
      {"num_heads", "multiple of num_kv_heads = 2", "got 3"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { paged_attention(q, cache, Mat::Zero(32, 8), table, 10, 8); },
      {"v_cache", "[32, 16]", "[32, 8]"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { paged_attention(q, Mat::Zero(32, 12), Mat::Zero(32, 12), table, 10, 8); },
      {"k_cache.cols()", "multiple of head_dim = 8", "got 12"}));
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { paged_attention(q, Mat::Zero(30, 16), Mat::Zero(30, 16), table, 10, 8); },
      {"k_cache.rows()", "multiple of block_size = 8", "got 30"}));
}

}  // namespace
}  // namespace pa::paged_gather
