// Schedules: they must order threads and blocks as documented, be reproducible, and turn a
// missing barrier into results that differ between schedules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "test_helpers.hpp"

namespace simt_tests {
namespace {

using simt::Schedule;

// Each thread stores its value in shared memory and reads its right neighbour's. Without the
// barrier, whether the neighbour has written yet depends on who ran first.
template <bool kWithBarrier>
__global__ void rotate_kernel(const float* in, float* out) {
  SIMT_DYNAMIC_SHARED(float, values);  // [blockDim.x]
  const unsigned t = threadIdx.x;
  values[t] = in[t];
  if (kWithBarrier) __syncthreads();
  out[t] = values[(t + 1) % blockDim.x];
}

template <bool kWithBarrier>
std::vector<float> rotate(Schedule schedule, std::uint64_t seed = 0) {
  const ScopedSchedule scoped(schedule, seed);
  const ScopedSharedNan nan(true);  // what nobody has written yet reads as NaN
  constexpr int n = 128;
  std::vector<float> in(n);
  std::iota(in.begin(), in.end(), 1.0f);
  simt::DeviceBuffer<float> d_in(n), d_out(n);
  d_in.upload(in.data(), n);
  simt::launch(rotate_kernel<kWithBarrier>, dim3(1), dim3(n), n * sizeof(float), d_in.data(),
               d_out.data());
  std::vector<float> out(n);
  d_out.download(out.data(), n);
  return out;
}

int count_nan(const std::vector<float>& v) {
  return static_cast<int>(std::count_if(v.begin(), v.end(), [](float x) { return std::isnan(x); }));
}

/// [test_missing_barrier]
TEST(SimtSchedules, MissingBarrierGivesResultsThatDependOnTheSchedule) {
  const std::vector<float> forward = rotate<false>(Schedule::Forward);
  const std::vector<float> reverse = rotate<false>(Schedule::Reverse);
  // Forward: threads 0-126 read a neighbour that has not run yet. Reverse: only thread 127,
  // which wraps around to thread 0, reads too early.
  EXPECT_EQ(count_nan(forward), 127);
  EXPECT_EQ(count_nan(reverse), 1);
}
/// [test_missing_barrier]

TEST(SimtSchedules, FixedKernelGivesTheSameResultUnderEverySchedule) {
  std::vector<float> want(128);
  for (int t = 0; t < 128; ++t) want[t] = static_cast<float>((t + 1) % 128 + 1);
  EXPECT_EQ(rotate<true>(Schedule::Forward), want);
  EXPECT_EQ(rotate<true>(Schedule::Reverse), want);
  for (std::uint64_t seed : {1, 2, 3}) EXPECT_EQ(rotate<true>(Schedule::Random, seed), want);
}

// Records the order in which the threads of each block run in the passes before and after a
// barrier, and the order of the blocks. counters ([2 * blocks + 1]) starts at zero.
__global__ void order_kernel(int* first_pass, int* second_pass, int* block_order, int* counters) {
  const unsigned id = blockIdx.x * blockDim.x + threadIdx.x;
  first_pass[id] = atomicAdd(&counters[2 * blockIdx.x], 1);
  __syncthreads();
  second_pass[id] = atomicAdd(&counters[2 * blockIdx.x + 1], 1);
  if (threadIdx.x == 0) block_order[blockIdx.x] = atomicAdd(&counters[2 * gridDim.x], 1);
}

constexpr int kBlocks = 6;
constexpr int kThreads = 64;

struct Orders {
  std::vector<int> first;   // [kBlocks * kThreads]: each thread's place in its block's first pass
  std::vector<int> second;  // [kBlocks * kThreads]: the same after the barrier
  std::vector<int> blocks;  // [kBlocks]: each block's place in the launch
};

Orders run_order(Schedule schedule, std::uint64_t seed) {
  const ScopedSchedule scoped(schedule, seed);
  simt::DeviceBuffer<int> first(kBlocks * kThreads), second(kBlocks * kThreads), blocks(kBlocks);
  simt::DeviceBuffer<int> counters(2 * kBlocks + 1);
  counters.fill_bytes(0);
  simt::launch(order_kernel, dim3(kBlocks), dim3(kThreads), 0, first.data(), second.data(),
               blocks.data(), counters.data());
  Orders o{std::vector<int>(first.size()), std::vector<int>(second.size()),
           std::vector<int>(kBlocks)};
  first.download(o.first.data(), o.first.size());
  second.download(o.second.data(), o.second.size());
  blocks.download(o.blocks.data(), o.blocks.size());
  return o;
}

TEST(SimtSchedules, ForwardAndReverseOrderThreadsAndBlocks) {
  const Orders forward = run_order(Schedule::Forward, 0);
  const Orders reverse = run_order(Schedule::Reverse, 0);
  for (int b = 0; b < kBlocks; ++b) {
    EXPECT_EQ(forward.blocks[b], b);
    EXPECT_EQ(reverse.blocks[b], kBlocks - 1 - b);
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(forward.first[b * kThreads + t], t);
      EXPECT_EQ(forward.second[b * kThreads + t], t);
      EXPECT_EQ(reverse.first[b * kThreads + t], kThreads - 1 - t);
      EXPECT_EQ(reverse.second[b * kThreads + t], kThreads - 1 - t);
    }
  }
}

TEST(SimtSchedules, RandomReshufflesEveryPassAndIsFixedByTheSeed) {
  const Orders a = run_order(Schedule::Random, 7);
  const Orders again = run_order(Schedule::Random, 7);
  const Orders other = run_order(Schedule::Random, 8);
  EXPECT_EQ(a.first, again.first);
  EXPECT_EQ(a.second, again.second);
  EXPECT_EQ(a.blocks, again.blocks);
  EXPECT_NE(a.first, other.first);

  const std::vector<int> block0(a.first.begin(), a.first.begin() + kThreads);
  std::vector<int> sorted = block0;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int> identity(kThreads);
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);   // every thread ran exactly once in the pass
  EXPECT_NE(block0, identity);   // and not in forward order
  EXPECT_NE(a.first, a.second);  // a new order after the barrier
  std::vector<int> block_ids = a.blocks;
  std::sort(block_ids.begin(), block_ids.end());
  EXPECT_EQ(block_ids, std::vector<int>({0, 1, 2, 3, 4, 5}));
}

}  // namespace
}  // namespace simt_tests
