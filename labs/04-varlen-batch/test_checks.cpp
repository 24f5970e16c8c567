// Lab 04 — the tests of the given argument checks (ctest label `checks`). They pass under the
// starter too: bad input gets std::invalid_argument naming the argument, the expected and the
// actual value, before any of your code runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "pa/testing.hpp"
#include "given/checks.hpp"
#include "varlen_batch.hpp"

namespace pa::varlen_batch {
namespace {

using pa::testing::ThrowsInvalidArgument;

// build_forward_meta

TEST(VarlenBatchChecks, MetaRejectsNonPositiveBlockSize) {
  EXPECT_TRUE(ThrowsInvalidArgument([] { build_forward_meta({{{0}, 0, 1}}, 0); },
                                    {"build_forward_meta", "block_size", "> 0", "got 0"}));
}

TEST(VarlenBatchChecks, MetaRejectsNumNewBelowOne) {
  EXPECT_TRUE(ThrowsInvalidArgument([] { build_forward_meta({{{0}, 2, 1}, {{1}, 2, 0}}, 4); },
                                    {"batch[1].num_new", ">= 1", "got 0"}));
}

TEST(VarlenBatchChecks, MetaRejectsNegativeNumCached) {
  EXPECT_TRUE(ThrowsInvalidArgument([] { build_forward_meta({{{0}, -1, 1}}, 4); },
                                    {"batch[0].num_cached", ">= 0", "got -1"}));
}

TEST(VarlenBatchChecks, MetaRejectsTooFewBlocks) {
  // 7 cached + 2 new = 9 tokens need 3 blocks of 4.
  EXPECT_TRUE(ThrowsInvalidArgument([] { build_forward_meta({{{3, 1}, 7, 2}}, 4); },
                                    {"batch[0].blocks.size()", ">= 3", "got 2"}));
}

TEST(VarlenBatchChecks, MetaRejectsNegativeBlockId) {
  EXPECT_TRUE(ThrowsInvalidArgument([] { build_forward_meta({{{3, -1}, 4, 1}}, 4); },
                                    {"batch[0].blocks[1]", ">= 0", "got -1"}));
}

// set_kv

TEST(VarlenBatchChecks, SetKvRejectsPoolsOfDifferentShapes) {
  Mat k_pool = Mat::Zero(16, 8), v_pool = Mat::Zero(16, 4);
  const Mat k = Mat::Zero(2, 8);
  EXPECT_TRUE(ThrowsInvalidArgument([&] { set_kv(k_pool, v_pool, IVec{{0, 1}}, k, k); },
                                    {"set_kv", "v_pool", "[16, 8]", "[16, 4]"}));
}

TEST(VarlenBatchChecks, SetKvRejectsRowsThatDoNotMatchSlots) {
  Mat k_pool = Mat::Zero(16, 8), v_pool = Mat::Zero(16, 8);
  const Mat k = Mat::Zero(2, 8);
  EXPECT_TRUE(ThrowsInvalidArgument([&] { set_kv(k_pool, v_pool, IVec{{0, 1, 2}}, k, k); },
                                    {"k.rows()", "3", "got 2"}));
}

TEST(VarlenBatchChecks, SetKvRejectsWidthOtherThanThePools) {
  Mat k_pool = Mat::Zero(16, 8), v_pool = Mat::Zero(16, 8);
  const Mat k = Mat::Zero(2, 4);
  EXPECT_TRUE(ThrowsInvalidArgument([&] { set_kv(k_pool, v_pool, IVec{{0, 1}}, k, k); },
                                    {"k.cols()", "8", "got 4"}));
}

TEST(VarlenBatchChecks, SetKvRejectsVOfAnotherShape) {
  Mat k_pool = Mat::Zero(16, 8), v_pool = Mat::Zero(16, 8);
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] { set_kv(k_pool, v_pool, IVec{{0, 1}}, Mat::Zero(2, 8), Mat::Zero(1, 8)); },
      {"v", "[2, 8]", "[1, 8]"}));
}

TEST(VarlenBatchChecks, SetKvRejectsSlotOutsideThePool) {
  Mat k_pool = Mat::Zero(16, 8), v_pool = Mat::Zero(16, 8);
  const Mat k = Mat::Zero(2, 8);
  EXPECT_TRUE(ThrowsInvalidArgument([&] { set_kv(k_pool, v_pool, IVec{{3, 16}}, k, k); },
                                    {"slot_mapping[1]", "[0, 16)", "got 16"}));
}

// attn_paged: a valid call to start from — two sequences, 4 heads over 2 kv heads of dim 8,
// a pool of 4 blocks of 8 slots.

struct ValidCall {
  Mat q = Mat::Zero(5, 32);        // [total_new = 5, 4 heads * 8]
  Mat k_pool = Mat::Zero(32, 16);  // [4 blocks * 8, 2 kv heads * 8]
  Mat v_pool = Mat::Zero(32, 16);
  ForwardMeta meta{IVec{{0, 1, 5}}, IVec{{9, 4}}, IMat{{2, 0}, {3, -1}}, IVec{{8, 24, 25, 26, 27}},
                   IVec{{8, 0, 1, 2, 3}}, 8};
  int num_heads = 4, num_kv_heads = 2;
  void operator()() const { attn_paged(q, k_pool, v_pool, meta, num_heads, num_kv_heads); }
};

TEST(VarlenBatchChecks, AttnValidCallPassesTheChecks) {
  // The base of the tests below is itself valid (under the starter this reaches the throw of
  // "not implemented yet", which is not std::invalid_argument).
  const ValidCall call;
  EXPECT_NO_THROW(checks::attn_paged(call.q, call.k_pool, call.v_pool, call.meta, 4, 2));
}

TEST(VarlenBatchChecks, AttnRejectsHeadsThatDoNotDivide) {
  ValidCall call;
  call.num_heads = 3;
  call.q = Mat::Zero(5, 24);
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"attn_paged", "num_heads", "multiple of num_kv_heads = 2", "got 3"}));
}

TEST(VarlenBatchChecks, AttnRejectsNonPositiveKvHeads) {
  ValidCall call;
  call.num_kv_heads = 0;
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"num_kv_heads", "> 0", "got 0"}));
}

TEST(VarlenBatchChecks, AttnRejectsQWidthNotAMultipleOfHeads) {
  ValidCall call;
  call.q = Mat::Zero(5, 30);
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"q.cols()", "multiple of num_heads = 4", "got 30"}));
}

TEST(VarlenBatchChecks, AttnRejectsPoolWidthOtherThanKvHeadsTimesHeadDim) {
  ValidCall call;
  call.k_pool = call.v_pool = Mat::Zero(32, 32);
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"k_pool.cols()", "16", "got 32"}));
}

TEST(VarlenBatchChecks, AttnRejectsPoolsOfDifferentShapes) {
  ValidCall call;
  call.v_pool = Mat::Zero(24, 16);
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"v_pool", "[32, 16]", "[24, 16]"}));
}

TEST(VarlenBatchChecks, AttnRejectsPoolRowsNotAMultipleOfBlockSize) {
  ValidCall call;
  call.k_pool = call.v_pool = Mat::Zero(30, 16);
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"k_pool.rows()", "multiple of meta.block_size = 8",
                                           "got 30"}));
}

TEST(VarlenBatchChecks, AttnRejectsNonPositiveBlockSize) {
  ValidCall call;
  call.meta.block_size = 0;
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"meta.block_size", "> 0", "got 0"}));
}

TEST(VarlenBatchChecks, AttnRejectsCuSeqlensNotStartingAtZero) {
  ValidCall call;
  call.meta.cu_seqlens_q = IVec{{1, 1, 5}};
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"meta.cu_seqlens_q[0]", "expected 0", "got 1"}));
}

TEST(VarlenBatchChecks, AttnRejectsDecreasingCuSeqlens) {
  ValidCall call;
  call.meta.cu_seqlens_q = IVec{{0, 6, 5}};
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"meta.cu_seqlens_q[2]", ">= 6", "got 5"}));
}

TEST(VarlenBatchChecks, AttnRejectsQRowsOtherThanTheLastCuSeqlens) {
  ValidCall call;
  call.q = Mat::Zero(6, 32);
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"q.rows()", "5", "got 6"}));
}

TEST(VarlenBatchChecks, AttnRejectsSeqLensOfTheWrongLength) {
  ValidCall call;
  call.meta.seq_lens_kv = IVec{{9, 4, 3}};
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"meta.seq_lens_kv.size()", "2", "got 3"}));
}

TEST(VarlenBatchChecks, AttnRejectsSeqLenShorterThanItsQueries) {
  ValidCall call;
  call.meta.seq_lens_kv = IVec{{9, 3}};  // sequence 1 has 4 queries
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"meta.seq_lens_kv[1]", ">= 4", "got 3"}));
}

TEST(VarlenBatchChecks, AttnRejectsBlockTableWithTheWrongRowCount) {
  ValidCall call;
  call.meta.block_table = IMat{{2, 0}};
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"meta.block_table.rows()", "2", "got 1"}));
}

TEST(VarlenBatchChecks, AttnRejectsBlockTableTooShortForASequence) {
  ValidCall call;
  call.meta.seq_lens_kv = IVec{{17, 4}};  // 17 tokens need 3 blocks of 8; the table has 2
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"meta.seq_lens_kv[0]", "<= 16", "got 17"}));
}

TEST(VarlenBatchChecks, AttnRejectsBlockIdOutsideThePool) {
  ValidCall call;
  call.meta.block_table(0, 1) = 4;  // the pool has blocks 0-3
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"meta.block_table(0, 1)", "[0, 4)", "got 4"}));
}

TEST(VarlenBatchChecks, AttnRejectsPaddingReadAsABlock) {
  ValidCall call;
  call.meta.seq_lens_kv = IVec{{9, 12}};  // 12 tokens need block 1 of row 1, which is -1
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"meta.block_table(1, 1)", "[0, 4)", "got -1"}));
}

}  // namespace
}  // namespace pa::varlen_batch
