// Lab 06 — the tests of the given argument checks (ctest label `checks`). They pass under the
// starter too: bad input gets std::invalid_argument naming the argument, the expected and the
// actual value, before any of your code runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>

#include "pa/testing.hpp"
#include "paged_attention_v2.hpp"
#include "simt/occupancy.hpp"

namespace pa::cuda_v2 {

namespace {

using pa::testing::ThrowsInvalidArgument;

/// A small valid call to mutate: 2 sequences, 4 heads over 2 kv heads, float16, head 64, block
/// 16, the longest sequence 600 tokens: 2 partitions of 512.
struct Call {
  Tensor out{DType::kFloat16, {2, 4, 64}};
  Tensor exp_sums{DType::kFloat32, {2, 4, 2}};
  Tensor max_logits{DType::kFloat32, {2, 4, 2}};
  Tensor tmp_out{DType::kFloat32, {2, 4, 2, 64}};
  Tensor query{DType::kFloat16, {2, 4, 64}};
  Tensor key_cache{DType::kFloat16, {40, 2, 8, 16, 8}};
  Tensor value_cache{DType::kFloat16, {40, 2, 64, 16}};
  int num_kv_heads = 2;
  Tensor block_tables{DType::kInt32, {2, 38}};
  Tensor seq_lens{DType::kInt32, {2}};
  int block_size = 16;
  int max_seq_len = 600;
  int partition_size = kPartitionSize;

  Call() {
    std::int32_t* table = block_tables.data_as<std::int32_t>();
    for (int i = 0; i < 76; ++i) table[i] = (i * 7) % 40;  // 38 blocks per row, all in the cache
    seq_lens.data_as<std::int32_t>()[0] = 600;
    seq_lens.data_as<std::int32_t>()[1] = 3;
  }
  void operator()() {
    paged_attention_v2(Backend::kEmulator, out, exp_sums, max_logits, tmp_out, query, key_cache,
                       value_cache, num_kv_heads, 0.125f, block_tables, seq_lens, block_size,
                       max_seq_len, partition_size);
  }
};

// ---- lab 05's rules for the operands ------------------------------------------------------

TEST(PagedAttentionV2Checks, RejectsOutShapeUnlikeQuery) {
  Call call;
  call.out = Tensor(DType::kFloat16, {2, 4, 32});
  EXPECT_TRUE(
      ThrowsInvalidArgument(call, {"paged_attention_v2", "out.shape", "[2, 4, 64]", "[2, 4, 32]"}));
}

TEST(PagedAttentionV2Checks, RejectsCacheDtypeUnlikeQuery) {
  Call call;
  call.value_cache = Tensor(DType::kBFloat16, {40, 2, 64, 16});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"value_cache.dtype", "float16", "bfloat16"}));
}

TEST(PagedAttentionV2Checks, RejectsKeyCacheNotSplitByX) {
  Call call;
  call.key_cache = Tensor(DType::kFloat16, {40, 2, 16, 16, 4});
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"key_cache.shape", "[40, 2, 8, 16, 8]", "x = 8", "[40, 2, 16, 16, 4]"}));
}

TEST(PagedAttentionV2Checks, RejectsInt64BlockTables) {
  Call call;
  call.block_tables = Tensor(DType::kInt64, {2, 38});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"block_tables.dtype", "int32", "got int64"}));
}

TEST(PagedAttentionV2Checks, RejectsUnsupportedHeadSize) {
  Call call;
  call.query = Tensor(DType::kFloat16, {2, 4, 72});
  call.out = call.query;
  EXPECT_TRUE(
      ThrowsInvalidArgument(call, {"head_size", "one of {64, 80, 96, 112, 128, 256}", "got 72"}));
}

TEST(PagedAttentionV2Checks, RejectsHeadsNotAMultipleOfKvHeads) {
  Call call;
  call.query = Tensor(DType::kFloat16, {2, 3, 64});
  call.out = call.query;
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"num_heads", "multiple of num_kv_heads = 2", "got 3"}));
}

TEST(PagedAttentionV2Checks, RejectsSeqLenAboveMaxSeqLen) {
  Call call;
  call.max_seq_len = 599;  // still 2 partitions: only the length check can fire
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"seq_lens[0]", "<= 599", "max_seq_len", "got 600"}));
}

TEST(PagedAttentionV2Checks, RejectsBlockIdOutsideTheCache) {
  Call call;
  call.block_tables.data_as<std::int32_t>()[38 + 0] = 40;  // sequence 1 reads block 0 of its row
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"block_tables[1, 0]", "[0, 40)", "got 40"}));
}

// ---- The partition size -------------------------------------------------------------------

/// [test_partition_checks]
TEST(PagedAttentionV2Checks, RejectsPartitionSizeNotAPowerOfTwo) {
  Call call;
  call.partition_size = 384;
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"partition_size", "a power of two", "got 384"}));
}

TEST(PagedAttentionV2Checks, RejectsPartitionSizeNotAWholeNumberOfBlocks) {
  // 16 tokens per partition with 32 tokens per block would split every block in two.
  Call call;
  call.block_size = 32;
  call.key_cache = Tensor(DType::kFloat16, {40, 2, 8, 32, 8});
  call.value_cache = Tensor(DType::kFloat16, {40, 2, 64, 32});
  call.partition_size = 16;
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"partition_size", "a multiple of block_size", "= 32", "got 16"}));
}

TEST(PagedAttentionV2Checks, RejectsPartitionSizeNotCompiled) {
  Call call;
  call.partition_size = 256;  // a power of two and whole blocks, but not instantiated
  call.exp_sums = Tensor(DType::kFloat32, {2, 4, 3});
  call.max_logits = call.exp_sums;
  call.tmp_out = Tensor(DType::kFloat32, {2, 4, 3, 64});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"partition_size", "one of {64, 512}", "got 256"}));
}

TEST(PagedAttentionV2Checks, RejectsZeroPartitionSize) {
  Call call;
  call.partition_size = 0;
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"partition_size", "> 0", "got 0"}));
}
/// [test_partition_checks]

// ---- The scratch tensors --------------------------------------------------------------------

/// [test_scratch_checks]
TEST(PagedAttentionV2Checks, RejectsScratchWithTheWrongPartitionCount) {
  // 600 tokens in partitions of 512 make 2; a scratch sized for 1 or 3 is a caller's bug.
  Call call;
  call.exp_sums = Tensor(DType::kFloat32, {2, 4, 1});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"exp_sums.shape", "[2, 4, 2]",
                                           "ceil(max_seq_len / partition_size) = 2", "[2, 4, 1]"}));
  call = Call();
  call.max_logits = Tensor(DType::kFloat32, {2, 4, 3});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"max_logits.shape", "[2, 4, 2]", "[2, 4, 3]"}));
  call = Call();
  call.partition_size = 64;  // now 10 partitions: the 512-sized scratch no longer fits
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"exp_sums.shape", "[2, 4, 10]", "[2, 4, 2]"}));
}

TEST(PagedAttentionV2Checks, RejectsTmpOutOfTheWrongShape) {
  Call call;
  call.tmp_out = Tensor(DType::kFloat32, {2, 4, 64, 2});  // [.., head_size, partitions]
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"tmp_out.shape", "[2, 4, 2, 64]", "max_num_partitions, head_size", "[2, 4, 64, 2]"}));
}

TEST(PagedAttentionV2Checks, RejectsScratchThatIsNotFloat32) {
  Call call;
  call.tmp_out = Tensor(DType::kFloat16, {2, 4, 2, 64});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"tmp_out.dtype", "float32", "got float16"}));
  call = Call();
  call.exp_sums = Tensor(DType::kBFloat16, {2, 4, 2});
  EXPECT_TRUE(ThrowsInvalidArgument(call, {"exp_sums.dtype", "float32", "got bfloat16"}));
}
/// [test_scratch_checks]

TEST(PagedAttentionV2Checks, RejectsMorePartitionsThanAGridHolds) {
  // 65535 partitions is the most a grid's z extent holds on any CUDA device: with 64-token
  // partitions that is 4,194,240 tokens; one more token needs a 65536th partition.
  Call call;
  call.partition_size = 64;
  call.max_seq_len = 65535 * 64 + 1;
  call.exp_sums = Tensor(DType::kFloat32, {2, 4, 65536});
  call.max_logits = call.exp_sums;
  EXPECT_TRUE(ThrowsInvalidArgument(
      call, {"max_num_partitions", "<= 65535", "gridDim.z", "larger partition_size", "got 65536"}));
}

TEST(PagedAttentionV2Checks, DeviceSessionChecksLikeTheCall) {
  Call call;
  call.partition_size = 384;
  EXPECT_TRUE(ThrowsInvalidArgument(
      [&] {
        DeviceSession session(Backend::kEmulator, call.query, call.key_cache, call.value_cache,
                              call.num_kv_heads, 0.125f, call.block_tables, call.seq_lens,
                              call.block_size, call.max_seq_len, call.partition_size);
      },
      {"DeviceSession", "partition_size", "a power of two", "got 384"}));
}

TEST(PagedAttentionV2Checks, AcceptsA128kContext) {
  // No context cap: max_seq_len 131072 only sizes the grid and the scratch (256 partitions of
  // 512). The checks pass; the starter's kernel then reports NotImplemented, which is not this
  // test's business.
  Call call;
  call.max_seq_len = 131072;
  call.exp_sums = Tensor(DType::kFloat32, {2, 4, 256});
  call.max_logits = call.exp_sums;
  call.tmp_out = Tensor(DType::kFloat32, {2, 4, 256, 64});
  try {
    call();
  } catch (const std::invalid_argument& e) {
    ADD_FAILURE() << "max_seq_len = 131072 was rejected: " << e.what();
  } catch (const std::logic_error&) {
  }
}

// ---- The reduce alone -------------------------------------------------------------------------

/// A valid call of the reduce alone to mutate: Call's scratch and out, its sequence lengths.
struct ReduceCall {
  Call call;
  void operator()() {
    paged_attention_v2_reduce(Backend::kEmulator, call.out, call.exp_sums, call.max_logits,
                              call.tmp_out, call.seq_lens, call.max_seq_len, call.partition_size);
  }
};

TEST(PagedAttentionV2Checks, ReduceRejectsScratchOfTheWrongShape) {
  ReduceCall reduce;
  reduce.call.tmp_out = Tensor(DType::kFloat32, {2, 4, 3, 64});
  EXPECT_TRUE(ThrowsInvalidArgument(
      reduce, {"paged_attention_v2_reduce", "tmp_out.shape", "[2, 4, 2, 64]", "[2, 4, 3, 64]"}));
  reduce = ReduceCall();
  reduce.call.exp_sums = Tensor(DType::kFloat16, {2, 4, 2});
  EXPECT_TRUE(ThrowsInvalidArgument(reduce, {"exp_sums.dtype", "float32", "got float16"}));
}

TEST(PagedAttentionV2Checks, ReduceRejectsSequencesPastMaxSeqLenAndOtherPartitionSizes) {
  ReduceCall reduce;
  reduce.call.seq_lens.data_as<std::int32_t>()[1] = 601;
  EXPECT_TRUE(ThrowsInvalidArgument(reduce, {"seq_lens[1]", "[1, max_seq_len = 600]", "got 601"}));
  reduce = ReduceCall();
  reduce.call.partition_size = 128;
  EXPECT_TRUE(ThrowsInvalidArgument(reduce, {"partition_size", "one of", "got 128"}));
  reduce = ReduceCall();
  reduce.call.out = Tensor(DType::kFloat16, {2, 4, 48});
  EXPECT_TRUE(ThrowsInvalidArgument(reduce, {"head_size (out.shape[2])", "got 48"}));
}

TEST(PagedAttentionV2Checks, PartitionSizeFollowsTheWaveRule) {
  // 660 slots (five blocks per SM on 132 SMs). 32 rows of 16k tokens: partitions
  // of 512 give 1024 blocks (1.55 waves, 78 % busy), of 64 8192 (12.4 waves, 95 %): 64.
  EXPECT_EQ(v2_partition_size(1, 32, 16384, 660), 64);
  EXPECT_EQ(v2_partition_size(4, 32, 8192, 660), 64);   // 2048 blocks (78 %) or 16384 (99 %)
  EXPECT_EQ(v2_partition_size(16, 32, 4096, 660), 512);  // 4096 blocks, 89 %: near enough
  EXPECT_EQ(v2_partition_size(32, 32, 4096, 660), 512);  // 1024 rows fill the slots already
  // 396 slots (three per SM): 512 gives 1024 blocks, 2.6 waves, 86 % busy: near enough.
  EXPECT_EQ(v2_partition_size(1, 32, 16384, 396), 512);
}

TEST(PagedAttentionV2Checks, TheEmulatorChoosesAsAnH100AtTheDesignBudget) {
  // The emulator's occupancy is an H100's at kDesignRegisters: the same choice as the rule's.
  const int blocks = simt::blocks_per_sm(
      {kNumThreads, kDesignRegisters, v2_shared_mem_bytes(128, kPartitionSize)});
  EXPECT_EQ(choose_partition_size(Backend::kEmulator, DType::kFloat16, 128, 16, 1, 32, 16384),
            v2_partition_size(1, 32, 16384, blocks * 132));
  EXPECT_EQ(choose_partition_size(Backend::kEmulator, DType::kFloat16, 128, 16, 16, 32, 4096),
            v2_partition_size(16, 32, 4096, blocks * 132));
}

}  // namespace
}  // namespace pa::cuda_v2
