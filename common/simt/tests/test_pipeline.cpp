// The asynchronous copies of <cuda_pipeline.h>: when the bytes land (only at the copying
// thread's wait for their group, never at a barrier), the zero fill, and the argument rules.
// The memory checker's rules for them (a read before the wait, another thread's read without
// wait + barrier) are in test_checker.cpp, whose kernels it instruments.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "portable_pipeline.hpp"
#include "test_helpers.hpp"

namespace simt_tests {
namespace {

using simt_tests::emu::async_copy_groups;
using simt_tests::emu::async_copy_neighbour;
using simt_tests::emu::async_copy_zfill;
using simt_tests::emu::ring_column_sums;

std::vector<float> iota_floats(std::size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 1.0f);
  return v;
}

TEST(SimtPipeline, BytesLandOnlyWhenTheWaitCoversTheirGroup) {
  const std::vector<float> src = iota_floats(32 * 4);
  for (const simt::Schedule s : {simt::Schedule::Forward, simt::Schedule::Reverse}) {
    const ScopedSchedule schedule(s);
    const std::vector<float> seen = async_copy_groups(src);
    for (int t = 0; t < 32; ++t) {
      for (int i = 0; i < 4; ++i) {
        const float copied = src[4 * t + i];
        EXPECT_EQ(seen[12 * t + i], -1.0f)
            << "thread " << t << " float " << i << ": before any wait the slot keeps its old bytes";
        EXPECT_EQ(seen[12 * t + 4 + i], i < 2 ? copied : -1.0f)
            << "thread " << t << " float " << i
            << ": __pipeline_wait_prior(1) lands the first group only";
        EXPECT_EQ(seen[12 * t + 8 + i], copied)
            << "thread " << t << " float " << i << ": __pipeline_wait_prior(0) lands both";
      }
    }
  }
}

TEST(SimtPipeline, ZfillZeroesTheLastBytesAndCopiesTheRest) {
  const std::vector<float> src = iota_floats(32 * 4);
  for (const int zfill : {0, 4, 12, 16}) {
    const std::vector<float> out = async_copy_zfill(src, zfill);
    for (int t = 0; t < 32; ++t) {
      for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(out[4 * t + i], 4 * i >= 16 - zfill ? 0.0f : src[4 * t + i])
            << "zfill " << zfill << ", thread " << t << ", float " << i;
      }
    }
  }
}

TEST(SimtPipeline, WaitBeforeTheBarrierShowsEveryCopyToEveryThread) {
  const std::vector<float> src = iota_floats(64);
  for (const simt::Schedule s : {simt::Schedule::Forward, simt::Schedule::Reverse}) {
    const ScopedSchedule schedule(s);
    const std::vector<float> out = async_copy_neighbour(src, 64, /*wait_first=*/true);
    for (int t = 0; t < 64; ++t) EXPECT_EQ(out[t], src[(t + 1) % 64]) << "thread " << t;
  }
}

TEST(SimtPipeline, ABarrierAloneDoesNotLandAnotherThreadsCopy) {
  // Forward order: thread t passes the barrier and reads slot t + 1 before thread t + 1 resumes
  // to its wait, so every reader but the last sees the old -1, as it may on a GPU.
  const ScopedSchedule schedule(simt::Schedule::Forward);
  const std::vector<float> out = async_copy_neighbour(iota_floats(64), 64, /*wait_first=*/false);
  for (int t = 0; t < 63; ++t) EXPECT_EQ(out[t], -1.0f) << "thread " << t;
}

// ---- A two-stage ring ----------------------------------------------------------------------

// The sums of each block's columns of in ([blocks, tiles * 4, 64], small integers) over its
// tiles from `first` to `last` (exact in float, in any order).
std::vector<float> column_sums(const std::vector<float>& in, int blocks, int tiles, int first,
                               int last) {
  std::vector<float> sums(static_cast<std::size_t>(blocks) * 64, 0.0f);
  for (int b = 0; b < blocks; ++b) {
    for (int row = 4 * first; row < 4 * (last + 1); ++row) {
      for (int c = 0; c < 64; ++c) sums[b * 64 + c] += in[(b * tiles * 4 + row) * 64 + c];
    }
  }
  return sums;
}

std::vector<float> small_integer_rows(int blocks, int tiles) {  // [blocks, tiles * 4, 64]
  return small_integers(static_cast<std::size_t>(blocks) * tiles * 4 * 64, 7);
}

TEST(SimtPipeline, TwoStageRingSumsEveryTileUnderBothSchedules) {
  for (const int tiles : {1, 2, 7}) {
    const std::vector<float> in = small_integer_rows(3, tiles);
    for (const simt::Schedule s : {simt::Schedule::Forward, simt::Schedule::Reverse}) {
      const ScopedSchedule schedule(s);
      EXPECT_EQ(ring_column_sums(in, 3, tiles, /*wait_count=*/1),
                column_sums(in, 3, tiles, 0, tiles - 1))
          << tiles << " tiles, " << simt::schedule_name(s);
      // wait_prior(0) is right too, but waits for tile + 1 as well: nothing overlaps.
      EXPECT_EQ(ring_column_sums(in, 3, tiles, 0), column_sums(in, 3, tiles, 0, tiles - 1));
    }
  }
}

TEST(SimtPipeline, AWaitCountOneTooHighIsCaught) {
  // With wait_prior(2) the group of the tile being summed is still in flight. The emulator
  // stops the kernel when the next copy into a stage finds the one before not landed.
  const int tiles = 7;
  const std::vector<float> in = small_integer_rows(3, tiles);
  const bool checks = simt::memory_checks();
  for (const simt::Schedule s : {simt::Schedule::Forward, simt::Schedule::Reverse}) {
    const ScopedSchedule schedule(s);
    if (checks) {
      ExpectKernelError(
          [&] { ring_column_sums(in, 3, tiles, /*wait_count=*/2); },
          {"race in ring_column_sum_kernel", "__pipeline_memcpy_async at", "which has not landed"});
    }
    // With the checks off, each iteration reads its stage as the tile two before left it
    // (zeros at first), so the sums miss the last two tiles.
    const ScopedMemoryChecks off(false);
    EXPECT_EQ(ring_column_sums(in, 3, tiles, 2), column_sums(in, 3, tiles, 0, tiles - 3))
        << simt::schedule_name(s);
  }
}

// ---- Argument rules ------------------------------------------------------------------------

constexpr int kBadCopyLine = __LINE__ + 3;
__global__ void bad_copy_kernel(float* buffer, int size, int offset, int zfill) {
  __shared__ __align__(16) float slots[8];
  __pipeline_memcpy_async(&slots[offset], buffer + offset, static_cast<std::size_t>(size),
                          static_cast<std::size_t>(zfill));
  __pipeline_commit();
  __pipeline_wait_prior(0);
}

TEST(SimtPipeline, SizeOtherThan4Or8Or16IsAnErrorNamingTheLine) {
  simt::DeviceBuffer<float> buffer(8);
  ExpectKernelError(
      [&] { simt::launch(bad_copy_kernel, dim3(1), dim3(1), 0, buffer.data(), 12, 0, 0); },
      {"thread 0", "__pipeline_memcpy_async at " + site(__FILE__, kBadCopyLine),
       "size — expected 4, 8 or 16 bytes, got 12"});
}

TEST(SimtPipeline, MisalignedPointerIsAnError) {
  simt::DeviceBuffer<float> buffer(8);
  ExpectKernelError(
      [&] { simt::launch(bad_copy_kernel, dim3(1), dim3(1), 0, buffer.data(), 16, 1, 0); },
      {"dst — expected a pointer aligned to the size (16 bytes), got one 4 bytes past"});
}

TEST(SimtPipeline, ZfillAboveTheSizeIsAnError) {
  simt::DeviceBuffer<float> buffer(8);
  ExpectKernelError(
      [&] { simt::launch(bad_copy_kernel, dim3(1), dim3(1), 0, buffer.data(), 8, 0, 12); },
      {"zfill — expected at most the size (8 bytes), got 12"});
}

}  // namespace
}  // namespace simt_tests
