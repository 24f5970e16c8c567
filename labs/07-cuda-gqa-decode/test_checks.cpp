// Lab 07 — the tests of the given argument checks (ctest label `checks`). They pass under the
// starter too: bad input gets std::invalid_argument naming the argument, the expected and the
// actual value, before any of your code runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>

#include "gqa_decode.hpp"
#include "pa/testing.hpp"

namespace pa::cuda_gqa {

namespace {

using pa::testing::ThrowsInvalidArgument;

/// A small valid call to mutate: 2 sequences, 8 query heads over 2 kv heads, float16, head 64,
/// block 16, 6 blocks in the flash layout.
struct Call {
  Tensor out{DType::kFloat16, {2, 8, 64}};
  Tensor query{DType::kFloat16, {2, 8, 64}};
  Tensor key_cache{DType::kFloat16, {6, 16, 2, 64}};
  Tensor value_cache{DType::kFloat16, {6, 16, 2, 64}};
  Tensor block_tables{DType::kInt32, {2, 3}};
  Tensor seq_lens{DType::kInt32, {2}};
  int max_seq_len = 40;
  int partition_size = 0;

  Call() {
    const std::int32_t table[] = {4, 0, 2, 1, 5, 3};
    std::copy(std::begin(table), std::end(table), block_tables.data_as<std::int32_t>());
    seq_lens.data_as<std::int32_t>()[0] = 40;
    seq_lens.data_as<std::int32_t>()[1] = 3;
  }
  /// Sets query and out to `shape` in `dtype`.
  void query_as(DType dtype, std::vector<std::int64_t> shape) {
    query = Tensor(dtype, shape);
    out = Tensor(dtype, std::move(shape));
  }
  /// Sets both caches to `shape` in `dtype`.
  void caches_as(DType dtype, const std::vector<std::int64_t>& shape) {
    key_cache = Tensor(dtype, shape);
    value_cache = Tensor(dtype, shape);
  }
  void operator()() {
    gqa_decode(Backend::kEmulator, out, query, key_cache, value_cache, 0.125f, block_tables,
               seq_lens, max_seq_len, partition_size);
  }
};

TEST(GqaDecodeChecks, RejectsFloat32AsUnsupportedOnTensorCores) {
  Call call;
  call.query_as(DType::kFloat32, {2, 8, 64});
  call.caches_as(DType::kFloat32, {6, 16, 2, 64});
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"gqa_decode", "query.dtype", "float16 or bfloat16", "float32 is not supported",
             "got float32"}));
}

TEST(GqaDecodeChecks, RejectsOutShapeUnlikeQuery) {
  Call call;
  call.out = Tensor(DType::kFloat16, {2, 8, 32});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"out.shape", "[2, 8, 64]", "got [2, 8, 32]"}));
}

TEST(GqaDecodeChecks, RejectsCacheDtypeUnlikeQuery) {
  Call call;
  call.value_cache = Tensor(DType::kBFloat16, {6, 16, 2, 64});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"value_cache.dtype", "float16", "got bfloat16"}));
}

TEST(GqaDecodeChecks, RejectsTheV0Layout) {
  // Lab 05's key cache [num_blocks, num_kv_heads, head_size / x, block_size, x] is rank 5.
  Call call;
  call.key_cache = Tensor(DType::kFloat16, {6, 2, 8, 16, 8});
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"key_cache.dim()", "4", "flash layout", "V0", "got 5"}));
}

TEST(GqaDecodeChecks, RejectsHeadsBeforeTokens) {
  // [num_blocks, num_kv_heads, block_size, head_size] (FlashInfer's HND) is not this layout: the
  // shape reads as block size 2 with 16 kv heads.
  Call call;
  call.caches_as(DType::kFloat16, {6, 2, 16, 64});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"block_size", "one of {16, 32}", "got 2"}));
}

TEST(GqaDecodeChecks, RejectsValueCacheUnlikeKeyCache) {
  Call call;
  call.value_cache = Tensor(DType::kFloat16, {6, 16, 2, 128});
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"value_cache.shape", "[6, 16, 2, 64]", "the shape of key_cache", "[6, 16, 2, 128]"}));
}

TEST(GqaDecodeChecks, RejectsCacheHeadSizeUnlikeQuery) {
  Call call;
  call.caches_as(DType::kFloat16, {6, 16, 2, 128});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"key_cache.shape", "[6, 16, 2, 64]", "head_size"}));
}

TEST(GqaDecodeChecks, RejectsUnsupportedHeadSize) {
  Call call;
  call.query_as(DType::kFloat16, {2, 8, 96});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"head_size", "one of {64, 128, 256}", "got 96"}));
}

TEST(GqaDecodeChecks, RejectsUnsupportedBlockSize) {
  Call call;
  call.caches_as(DType::kFloat16, {12, 8, 2, 64});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"block_size", "one of {16, 32}", "got 8"}));
}

TEST(GqaDecodeChecks, RejectsHeadsNotAMultipleOfKvHeads) {
  Call call;
  call.query_as(DType::kFloat16, {2, 7, 64});
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"num_heads", "multiple of num_kv_heads (key_cache.shape[2]) = 2", "got 7"}));
}

TEST(GqaDecodeChecks, RejectsAGroupLargerThanTheTile) {
  Call call;
  call.query_as(DType::kFloat16, {2, 34, 64});  // 17 query heads per kv head
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"num_heads / num_kv_heads", "<= 16", "rows of one wmma tile", "got 17"}));
}

TEST(GqaDecodeChecks, RejectsInt64BlockTables) {
  Call call;
  call.block_tables = Tensor(DType::kInt64, {2, 3});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"block_tables.dtype", "int32", "got int64"}));
}

TEST(GqaDecodeChecks, RejectsZeroSeqLen) {
  Call call;
  call.seq_lens.data_as<std::int32_t>()[1] = 0;
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"seq_lens[1]", "> 0", "got 0"}));
}

TEST(GqaDecodeChecks, RejectsSeqLenBeyondItsBlockTable) {
  Call call;  // 3 blocks of 16 per row: 48 tokens at most
  call.seq_lens.data_as<std::int32_t>()[0] = 49;
  call.max_seq_len = 64;
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"seq_lens[0]", "<= 48", "block_tables.shape[1] * block_size", "got 49"}));
}

TEST(GqaDecodeChecks, RejectsSeqLenAboveMaxSeqLen) {
  Call call;
  call.max_seq_len = 39;
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"seq_lens[0]", "<= 39", "max_seq_len", "got 40"}));
}

TEST(GqaDecodeChecks, RejectsBlockIdOutsideTheCache) {
  Call call;
  call.block_tables.data_as<std::int32_t>()[2] = 6;  // sequence 0 reads 3 blocks; 6 blocks exist
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"block_tables[0, 2]", "[0, 6)", "got 6"}));
}

TEST(GqaDecodeChecks, RejectsAPartitionOfPartialTiles) {
  Call call;
  call.partition_size = 100;
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"partition_size", "a multiple of kTileTokens", "= 64", "got 100"}));
  call.partition_size = -64;
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"partition_size", ">= 0", "got -64"}));
}

TEST(GqaDecodeChecks, RejectsMorePartitionsThanAGridHolds) {
  Call call;
  call.partition_size = 64;
  call.max_seq_len = 64 * 65535 + 1;
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"ceil(max_seq_len / partition_size)", "<= 65535", "larger partition_size",
             "got 65536"}));
}

TEST(GqaDecodeChecks, RejectsAPartitionLongerThanItsStagedBlockTable) {
  Call call;
  call.partition_size = kMaxPartitionSize + kTileTokens;
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"partition_size", "<= 8192", "kMaxPartitionSize", "got 8256"}));
}

TEST(GqaDecodeChecks, DefaultPartitionSizeFollowsTheWaveRule) {
  // 132 slots: an H100 holding one decode block per SM (head size 128, three stages).
  // Pairs already at 80 % of the slots or more: one partition per sequence.
  EXPECT_EQ(default_partition_size(128, 8, 2048, 132), 2048);  // 1024 pairs, 7.8 waves
  EXPECT_EQ(default_partition_size(16, 32, 4096, 132), 4096);  // 512 pairs, 3.9 waves
  EXPECT_EQ(default_partition_size(64, 4, 4096, 132), 4096);   // 256 pairs, 1.9 waves
  // 8 pairs of 256 tiles: 14 partitions of 19 tiles fill 112 of 132 slots (85 %), the fewest
  // splits within 85 % of the best; 396 slots (three blocks per SM) take 37 of 7 tiles.
  EXPECT_EQ(default_partition_size(1, 8, 16384, 132), 19 * kTileTokens);
  EXPECT_EQ(default_partition_size(1, 8, 16384, 396), 7 * kTileTokens);
  EXPECT_EQ(default_partition_size(1, 8, 65536, 132), 74 * kTileTokens);  // 14 of 74 tiles
  EXPECT_EQ(default_partition_size(1, 1, 100, 132), 64);    // 2 tiles, 2 partitions
  EXPECT_EQ(default_partition_size(600, 1, 100, 132), 128);  // enough pairs: 2 tiles, whole
  // Never longer than kMaxPartitionSize, whose block-table slice fits the shared memory.
  EXPECT_EQ(default_partition_size(1, 1, 1000000, 132), kMaxPartitionSize);
  EXPECT_EQ(default_partition_size(1024, 8, 100000, 132), kMaxPartitionSize);
}

/// A small valid reshape_and_cache_flash call to mutate: 3 tokens, 2 kv heads, float32, head 64.
struct CacheCall {
  Tensor key{DType::kFloat32, {3, 2, 64}};
  Tensor value{DType::kFloat32, {3, 2, 64}};
  Tensor key_cache{DType::kFloat32, {4, 8, 2, 64}};
  Tensor value_cache{DType::kFloat32, {4, 8, 2, 64}};
  Tensor slot_mapping{DType::kInt64, {3}};

  CacheCall() {
    const std::int64_t slots[] = {5, -1, 31};
    std::copy(std::begin(slots), std::end(slots), slot_mapping.data_as<std::int64_t>());
  }
  void operator()() {
    reshape_and_cache_flash(Backend::kEmulator, key, value, key_cache, value_cache, slot_mapping);
  }
};

TEST(GqaDecodeChecks, ReshapeAndCacheFlashRejectsValueUnlikeKey) {
  CacheCall call;
  call.value = Tensor(DType::kFloat32, {3, 2, 32});
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"reshape_and_cache_flash", "value.shape", "[3, 2, 64]", "[3, 2, 32]"}));
}

TEST(GqaDecodeChecks, ReshapeAndCacheFlashRejectsTheV0Layout) {
  CacheCall call;
  call.key_cache = Tensor(DType::kFloat32, {4, 2, 16, 8, 4});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"key_cache.dim()", "4", "flash layout", "got 5"}));
}

TEST(GqaDecodeChecks, ReshapeAndCacheFlashRejectsHeadsBeforeTokens) {
  CacheCall call;
  call.key_cache = Tensor(DType::kFloat32, {4, 2, 8, 64});
  call.value_cache = call.key_cache;
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"key_cache.shape", "[4, 2, 2, 64]", "[4, 2, 8, 64]"}));
}

TEST(GqaDecodeChecks, ReshapeAndCacheFlashRejectsInt32SlotMapping) {
  CacheCall call;
  call.slot_mapping = Tensor(DType::kInt32, {3});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"slot_mapping.dtype", "int64", "got int32"}));
}

TEST(GqaDecodeChecks, ReshapeAndCacheFlashRejectsSlotPastTheCache) {
  CacheCall call;
  call.slot_mapping.data_as<std::int64_t>()[2] = 32;  // 4 blocks of 8 rows: slots 0 .. 31
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"slot_mapping[2]", "< 32", "got 32"}));
}

}  // namespace
}  // namespace pa::cuda_gqa
