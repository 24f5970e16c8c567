// FA2's wave-efficiency rule (pa/waves.hpp) on the grids the CUDA labs size, and the
// occupancy arithmetic (simt/occupancy.hpp) it is fed with.
#include <gtest/gtest.h>

#include <array>

#include "pa/waves.hpp"
#include "simt/occupancy.hpp"

namespace pa_tests {
namespace {

TEST(Waves, EfficiencyIsTheBusyFractionOfTheLastWave) {
  EXPECT_DOUBLE_EQ(pa::waves::efficiency(660, 660), 1.0);        // one full wave
  EXPECT_DOUBLE_EQ(pa::waves::efficiency(661, 660), 661.0 / 1320);  // a second, nearly empty
  EXPECT_DOUBLE_EQ(pa::waves::efficiency(512, 660), 512.0 / 660);
  EXPECT_DOUBLE_EQ(pa::waves::efficiency(0, 660), 0.0);
  EXPECT_DOUBLE_EQ(pa::waves::waves(1024, 660), 1024.0 / 660);
}

TEST(Waves, EnoughBlocksAreNotSplit) {
  // 80 % of 660 slots is 528: 528 units already keep the GPU busy enough.
  EXPECT_EQ(pa::waves::num_splits(528, 64, 660, 128), 1);
  EXPECT_EQ(pa::waves::num_splits(1024, 64, 660, 128), 1);
}

TEST(Waves, SplitCountIsTheSmallestNearTheBestEfficiency) {
  // 256 units on 660 slots: s = 2 fills 78 % of one wave, s = 4 1.55 waves (78 %), s = 5
  // 1.94 waves (97 %): the smallest within 85 % of the best (~1.0) is 5.
  EXPECT_EQ(pa::waves::num_splits(256, 64, 660, 128), 5);
  // 8 units of 256 chunks on 660 slots: only the split counts that change ceil(256 / s) count
  // (s = 82 would be 99 % busy, but its partitions of 4 chunks are s = 64's). The best of those
  // is 77.6 % (s = 64 or 128: 512 or 1024 blocks); s = 52 (5 chunks each) reaches only 63 %.
  EXPECT_EQ(pa::waves::num_splits(8, 256, 660, 128), 64);
}

TEST(Waves, SplitCountNeverExceedsTheChunksOrTheCap) {
  EXPECT_EQ(pa::waves::num_splits(1, 3, 660, 128), 3);  // only 3 tiles to hand out
  EXPECT_LE(pa::waves::num_splits(1, 1000, 660, 16), 16);
  EXPECT_EQ(pa::waves::num_splits(1, 1, 660, 128), 1);
  EXPECT_EQ(pa::waves::num_splits(0, 64, 660, 128), 1);
}

TEST(Waves, SplitCountsThatGiveTheSamePartitionsAreSkipped) {
  // 10 chunks: s = 6..9 all give partitions of 2 chunks (ceil(10 / s) = 2), the same as s = 5;
  // with 1 unit on 9 slots s = 9 would be a perfect wave but it is s = 5's grid in disguise.
  // Efficiencies 1/9 .. 5/9 for s = 1..5, 10/18 for s = 10: the best is 5/9, first reached at 5.
  EXPECT_EQ(pa::waves::num_splits(1, 10, 9, 128), 5);
}

TEST(Waves, ChunkSizeAmongTheSupportedOnes) {
  constexpr std::array<int, 2> sizes{64, 512};
  // 32 heads x 16k tokens on 924 slots: 512 gives 1024 blocks (1.11 waves, 55 %), 64 gives
  // 8192 (8.9 waves, 99 %): 64.
  EXPECT_EQ(pa::waves::pick_chunk_size(sizes, 32, 16384, 924), 64);
  // 512 units already fill 80 % of 640 slots: the largest size.
  EXPECT_EQ(pa::waves::pick_chunk_size(sizes, 512, 4096, 640), 512);
  // Both within 85 % of the best: the larger partition (a smaller merge).
  EXPECT_EQ(pa::waves::pick_chunk_size(sizes, 100, 8192, 400), 512);  // 1600 blocks, 4 waves
  EXPECT_EQ(pa::waves::pick_chunk_size(std::array<int, 0>{}, 1, 1, 1), 0);
}

TEST(Occupancy, RegistersSharedMemoryThreadsAndBlockSlotsEachLimit) {
  // 128 threads: 4 warps. 95 registers round up to 3072 per warp: 21 warps, 5 blocks.
  EXPECT_EQ(simt::blocks_per_sm({128, 95, 0}), 5);
  // 72 registers: 2304 per warp, 28 warps, 7 blocks.
  EXPECT_EQ(simt::blocks_per_sm({128, 72, 0}), 7);
  // 37.5 KiB of shared memory plus 1 KiB reserved per block: 228 / 38.5 = 5 blocks.
  EXPECT_EQ(simt::blocks_per_sm({128, 32, 37 * 1024 + 512}), 5);
  // 32 registers, no shared memory: 16 blocks of 128 threads fill the 2048 threads.
  EXPECT_EQ(simt::blocks_per_sm({128, 32, 0}), 16);
  // 32 threads: the 32 block slots bind before the threads (64 blocks).
  EXPECT_EQ(simt::blocks_per_sm({32, 16, 0}), 32);
  // A block that does not fit at all: 0.
  EXPECT_EQ(simt::blocks_per_sm({128, 32, 300 * 1024}), 0);
  EXPECT_EQ(simt::blocks_per_sm({4096, 32, 0}), 0);
}

__global__ void occupancy_probe_kernel(int* out) {
  if (threadIdx.x == 0) *out = 1;
}

TEST(Occupancy, TheEmulatorAnswersForAnH100AtTheDesignBudget) {
  const simt::Occupancy o = simt::occupancy(occupancy_probe_kernel, 128, 37 * 1024 + 512, 95);
  EXPECT_EQ(o.sm_count, simt::kH100.sm_count);
  EXPECT_EQ(o.blocks_per_sm, 5);
  EXPECT_EQ(o.slots(), 660);
  // Never 0: a grid is sized by dividing by it.
  EXPECT_EQ(simt::occupancy(occupancy_probe_kernel, 128, 300 * 1024, 95).blocks_per_sm, 1);
}

}  // namespace
}  // namespace pa_tests
