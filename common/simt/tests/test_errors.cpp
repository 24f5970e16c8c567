// Kernel bugs a GPU hides or hangs on, and bad launches: each must end in an exception whose
// message names the block, the threads or lanes, and the lines involved.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace simt_tests {
namespace {

using simt::Schedule;

// ---- Barriers ------------------------------------------------------------------------------

constexpr int kLowerHalfBarrier = __LINE__ + 5;
constexpr int kUpperHalfBarrier = __LINE__ + 6;
// Only block 1 diverges: the two halves of its threads wait at different barriers.
__global__ void divergent_barrier_kernel() {
  if (blockIdx.x == 1 && threadIdx.x < 64) {
    __syncthreads();
  } else {
    __syncthreads();
  }
}

/// [test_divergent_barrier]
TEST(SimtErrors, DivergentSyncthreadsNamesBlockLinesAndThreadRanges) {
  ExpectKernelError([] { simt::launch(divergent_barrier_kernel, dim3(3), dim3(128), 0); },
                    {"block (1, 0, 0)", "divergent __syncthreads",
                     "threads 0-63 wait at " + site(__FILE__, kLowerHalfBarrier),
                     "threads 64-127 wait at " + site(__FILE__, kUpperHalfBarrier)});
}
/// [test_divergent_barrier]

constexpr int kLateBarrier = __LINE__ + 4;
// The classic early return: the upper threads leave before a barrier the others wait at.
__global__ void early_return_kernel() {
  if (threadIdx.x >= 96) return;
  __syncthreads();
}

TEST(SimtErrors, ThreadsThatExitedWhileOthersWaitAtABarrier) {
  for (const Schedule s : {Schedule::Forward, Schedule::Reverse}) {
    const ScopedSchedule schedule(s);
    ExpectKernelError([] { simt::launch(early_return_kernel, dim3(1), dim3(128), 0); },
                      {"block (0, 0, 0)", "threads 96-127 exited while others wait",
                       "threads 0-95 at " + site(__FILE__, kLateBarrier)});
  }
}

// Thread t waits at t % 2 + 1 barriers: the odd threads are still waiting when the even ones
// are gone. A GPU may hang here; the emulator must end with an error.
__global__ void uneven_loop_kernel() {
  for (unsigned i = 0; i <= threadIdx.x % 2; ++i) __syncthreads();
}

TEST(SimtErrors, DeadlockedKernelEndsWithAnErrorNotAHang) {
  ExpectKernelError([] { simt::launch(uneven_loop_kernel, dim3(1), dim3(64), 0); },
                    {"block (0, 0, 0)", "exited while others wait", "threads 0, 2, 4"});
}

// ---- Warp collectives ----------------------------------------------------------------------

constexpr int kLowerLanesShuffle = __LINE__ + 4;
// Lanes 16-31 return; lanes 0-15 then shuffle with a mask that still names them.
__global__ void shuffle_with_exited_lanes_kernel(float* out) {
  if (threadIdx.x % 32 >= 16) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.0f, 1);
}

TEST(SimtErrors, ShuffleMaskNamingLanesThatExited) {
  // Forward: lanes 0-15 wait first, the scheduler finds the others gone; reverse: the lanes are
  // gone before anyone arrives and the first arrival is refused. Both must name lanes 16-31.
  for (const Schedule s : {Schedule::Forward, Schedule::Reverse}) {
    const ScopedSchedule schedule(s);
    simt::DeviceBuffer<float> out(64);
    ExpectKernelError(
        [&] { simt::launch(shuffle_with_exited_lanes_kernel, dim3(1), dim3(64), 0, out.data()); },
        {"block (0, 0, 0)", "__shfl_xor_sync", site(__FILE__, kLowerLanesShuffle), "0xffffffff",
         "lanes 16-31, which exited"});
  }
}

constexpr int kWarpOneShuffle = __LINE__ + 3;
// A 48-thread block has a warp of 16 lanes, but the kernel assumes full warps.
__global__ void full_mask_in_partial_warp_kernel(int* out) {
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, static_cast<int>(threadIdx.x), 1);
}

TEST(SimtErrors, ShuffleMaskNamingLanesTheBlockDoesNotHave) {
  simt::DeviceBuffer<int> out(48);
  ExpectKernelError(
      [&] { simt::launch(full_mask_in_partial_warp_kernel, dim3(1), dim3(48), 0, out.data()); },
      {"block (0, 0, 0)", "warp 1", "__shfl_down_sync at " + site(__FILE__, kWarpOneShuffle),
       "lanes 16-31, which this block does not have (48 threads)"});
}

constexpr int kWaitingShuffle = __LINE__ + 5;
constexpr int kSkippingBarrier = __LINE__ + 5;
// Lanes 0-15 shuffle with the whole warp, but lanes 16-31 went to a barrier first: each side
// waits for the other forever.
__global__ void shuffle_versus_barrier_kernel(float* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0xffffffffu, 2.0f, 0);
  __syncthreads();
}

TEST(SimtErrors, ShuffleWaitingForLanesStuckAtABarrier) {
  simt::DeviceBuffer<float> out(32);
  ExpectKernelError(
      [&] { simt::launch(shuffle_versus_barrier_kernel, dim3(1), dim3(32), 0, out.data()); },
      {"block (0, 0, 0) is stuck", "warp 0: lanes 0-15 wait in __shfl_sync",
       site(__FILE__, kWaitingShuffle),
       "for lanes 16-31, which wait in __syncthreads (" + site(__FILE__, kSkippingBarrier) + ")",
       "threads 16-31: __syncthreads"});
}

constexpr int kHalfMaskShuffle = __LINE__ + 5;
// Half warps disagree: the low half names only itself, the high half names the whole warp and
// waits for low lanes that never join it.
__global__ void mismatched_masks_kernel(int* out) {
  const unsigned mask = threadIdx.x < 16 ? 0x0000ffffu : 0xffffffffu;
  out[threadIdx.x] = __shfl_xor_sync(mask, static_cast<int>(threadIdx.x), 1);
}

TEST(SimtErrors, MasksThatDisagree) {
  // Which low lanes have exited when a high lane is refused depends on the schedule.
  for (const Schedule s : {Schedule::Forward, Schedule::Reverse}) {
    const ScopedSchedule schedule(s);
    simt::DeviceBuffer<int> out(32);
    ExpectKernelError(
        [&] { simt::launch(mismatched_masks_kernel, dim3(1), dim3(32), 0, out.data()); },
        {"__shfl_xor_sync", site(__FILE__, kHalfMaskShuffle), "mask 0xffffffff", "which exited"});
  }
}

constexpr int kSkippedShuffle = __LINE__ + 8;
constexpr int kNextShuffle = __LINE__ + 8;
// The reported bug: a shuffle moved inside a branch. Lane 0 skips the first butterfly step and
// arrives at the second one, where the other lanes, still at the first, would complete its
// group: a GPU would pair different shuffles and exchange the wrong values.
__global__ void skipped_shuffle_kernel(float* out) {
  const unsigned lane = threadIdx.x % 32;
  float v = static_cast<float>(lane);
  if (lane != 0) v += __shfl_xor_sync(0xffffffffu, v, 1);
  v += __shfl_xor_sync(0xffffffffu, v, 2);
  out[threadIdx.x] = v;
}

/// [test_call_site_rule]
TEST(SimtErrors, ShufflesAreMatchedByCallSite) {
  // Forward: lane 0 waits at the later line first; reverse and random: lanes 1-31 do. Either
  // way the message names both lines and which lanes are at each.
  for (const Schedule s : {Schedule::Forward, Schedule::Reverse, Schedule::Random}) {
    const ScopedSchedule schedule(s, 5);
    simt::DeviceBuffer<float> out(32);
    ExpectKernelError(
        [&] { simt::launch(skipped_shuffle_kernel, dim3(1), dim3(32), 0, out.data()); },
        {"warp 0", "with mask 0xffffffff meet at different collectives",
         "lane 0 in __shfl_xor_sync (" + site(__FILE__, kNextShuffle) + ")",
         "lanes 1-31 in __shfl_xor_sync (" + site(__FILE__, kSkippedShuffle) + ")"});
  }
}
/// [test_call_site_rule]

constexpr int kLowerVote = __LINE__ + 5;
constexpr int kUpperShuffle = __LINE__ + 5;
// Different collectives with one mask: a vote against a shuffle.
__global__ void vote_against_shuffle_kernel(int* out) {
  const unsigned lane = threadIdx.x % 32;
  if (lane < 8) out[lane] = static_cast<int>(__ballot_sync(0xffffffffu, 1));
  if (lane >= 8) out[lane] = __shfl_sync(0xffffffffu, 1, 0);
}

TEST(SimtErrors, DifferentCollectivesWithOneMask) {
  simt::DeviceBuffer<int> out(32);
  ExpectKernelError(
      [&] { simt::launch(vote_against_shuffle_kernel, dim3(1), dim3(32), 0, out.data()); },
      {"meet at different collectives",
       "lanes 0-7 in __ballot_sync (" + site(__FILE__, kLowerVote) + ")",
       "lanes 8-31 in __shfl_sync (" + site(__FILE__, kUpperShuffle) + ")"});
}

// __syncwarp is the exception to the call-site rule: from sm_70 on, the lanes of a mask may
// meet at different __syncwarp calls. Lanes 0-15 write, both halves meet, lanes 16-31 read.
__global__ void split_syncwarp_kernel(int* out) {
  __shared__ int values[32];  // [32]
  const unsigned lane = threadIdx.x % 32;
  if (lane < 16) {
    values[lane] = static_cast<int>(lane) + 100;
    __syncwarp();
  } else {
    __syncwarp();
    out[lane] = values[lane - 16];
  }
}

TEST(SimtErrors, SyncwarpMayMeetAtDifferentCallSites) {
  for (const Schedule s : {Schedule::Forward, Schedule::Reverse}) {
    const ScopedSchedule schedule(s);
    simt::DeviceBuffer<int> out(32);
    out.fill_bytes(0);
    simt::launch(split_syncwarp_kernel, dim3(1), dim3(32), 0, out.data());
    std::vector<int> host(32);
    out.download(host.data(), 32);
    for (int lane = 16; lane < 32; ++lane) EXPECT_EQ(host[lane], lane - 16 + 100) << lane;
  }
}

constexpr int kStuckShuffle = __LINE__ + 6;
constexpr int kOtherShuffle = __LINE__ + 6;
// Lanes 0-15 at one shuffle, lane 16 at another, lanes 17-31 at a barrier: nobody can go on, and
// the report says that lane 16 waits at a different line.
__global__ void three_places_kernel(float* out) {
  const unsigned lane = threadIdx.x % 32;
  if (lane < 16) out[lane] = __shfl_sync(0xffffffffu, 1.0f, 0);
  if (lane == 16) out[lane] = __shfl_sync(0xffffffffu, 2.0f, 0);
  if (lane > 16) __syncthreads();
}

TEST(SimtErrors, StuckReportNamesLanesAtAnotherLine) {
  simt::DeviceBuffer<float> out(32);
  ExpectKernelError(
      [&] { simt::launch(three_places_kernel, dim3(1), dim3(32), 0, out.data()); },
      {"warp 0: lanes 0-15 wait in __shfl_sync (" + site(__FILE__, kStuckShuffle) + ")",
       "lane 16, which waits in __shfl_sync (" + site(__FILE__, kOtherShuffle),
       "lanes 17-31, which wait in __syncthreads",
       "warp 0: lane 16 waits in __shfl_sync (" + site(__FILE__, kOtherShuffle) + ")"});
}

__global__ void read_outside_mask_kernel(int* out) {
  if (threadIdx.x < 8)
    out[threadIdx.x] = __shfl_down_sync(0x000000ffu, static_cast<int>(threadIdx.x), 4);
}

TEST(SimtErrors, ShuffleReadingALaneOutsideTheMask) {
  simt::DeviceBuffer<int> out(32);
  ExpectKernelError(
      [&] { simt::launch(read_outside_mask_kernel, dim3(1), dim3(32), 0, out.data()); },
      {"thread 4 (warp 0, lane 4)", "reads lane 8, which the mask does not name"});
}

__global__ void bad_width_kernel(int* out) {
  out[threadIdx.x] = __shfl_sync(0xffffffffu, 1, 0, 12);
}

TEST(SimtErrors, ShuffleWidthThatIsNotAPowerOfTwo) {
  simt::DeviceBuffer<int> out(32);
  ExpectKernelError([&] { simt::launch(bad_width_kernel, dim3(1), dim3(32), 0, out.data()); },
                    {"width 12 — expected a power of two from 1 to 32"});
}

// ---- Exceptions out of kernel threads ------------------------------------------------------

int constructed = 0;
int destroyed = 0;

struct Counted {
  Counted() { ++constructed; }
  ~Counted() { ++destroyed; }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
};

int blocks_started = 0;

// Thread 37 of block 2 throws between two barriers, while the others wait at the second one:
// every thread holds a Counted, so an unwound block destroys exactly as many as it built.
__global__ void throwing_kernel() {
  if (threadIdx.x == 0) ++blocks_started;
  const Counted guard;
  __syncthreads();
  if (blockIdx.x == 2 && threadIdx.x == 37) throw std::out_of_range("thread 37 gave up");
  __syncthreads();
}

TEST(SimtErrors, ExceptionInAKernelThreadPropagatesOutOfLaunch) {
  constructed = destroyed = blocks_started = 0;
  try {
    simt::launch(throwing_kernel, dim3(5), dim3(64), 0);
    ADD_FAILURE() << "the exception did not leave simt::launch";
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "thread 37 gave up");  // the original exception, type and message
  }
  // Blocks run one at a time and the launch stops at the block that threw. Forward runs blocks
  // 0, 1, 2 and reverse 4, 3, 2: three either way; a random schedule may reach block 2 earlier.
  if (simt::schedule() != simt::Schedule::Random) {
    EXPECT_EQ(blocks_started, 3);
  }
  EXPECT_EQ(constructed, blocks_started * 64);
  EXPECT_EQ(destroyed, constructed);  // the waiting threads of block 2 were unwound
}

__global__ void nested_launch_kernel() {
  simt::launch(nested_launch_kernel, dim3(1), dim3(1), 0);
}

TEST(SimtErrors, LaunchFromInsideAKernel) {
  ExpectKernelError([] { simt::launch(nested_launch_kernel, dim3(1), dim3(1), 0); },
                    {"no dynamic parallelism"});
}

TEST(SimtErrors, SyncthreadsOutsideAKernel) {
  ExpectKernelError([] { __syncthreads(); }, {"outside a kernel thread", site(__FILE__, __LINE__)});
}

// ---- Launch configurations -----------------------------------------------------------------

__global__ void empty_kernel() {}

TEST(SimtErrors, LaunchConfigurationsACudaLaunchRejects) {
  ExpectKernelError(
      [] { simt::launch(empty_kernel, dim3(1), dim3(33, 32), 0); },
      {"simt::launch: block — expected at most 1024 threads, got (33, 32, 1) = 1056"});
  ExpectKernelError([] { simt::launch(empty_kernel, dim3(0), dim3(32), 0); },
                    {"simt::launch: grid — expected every dimension >= 1, got (0, 1, 1)"});
  ExpectKernelError([] { simt::launch(empty_kernel, dim3(1), dim3(1, 1, 65), 0); },
                    {"simt::launch: block — expected x and y <= 1024, z <= 64"});
  ExpectKernelError([] { simt::launch(empty_kernel, dim3(1, 65536), dim3(1), 0); },
                    {"simt::launch: grid — expected x <= 2^31 - 1, y and z <= 65535"});
}

__global__ void big_shared_kernel() {
  SIMT_DYNAMIC_SHARED(unsigned char, bytes);
  bytes[threadIdx.x] = 1;
}

TEST(SimtErrors, DynamicSharedMemoryAboveTheDefaultNeedsTheOptIn) {
  const std::size_t bytes = 64 * 1024;
  ExpectKernelError([&] { simt::launch(big_shared_kernel, dim3(1), dim3(32), bytes); },
                    {"dynamic_shared_bytes — expected at most 49152",
                     "simt::set_max_dynamic_shared_bytes", "got 65536"});
  EXPECT_EQ(simt::max_dynamic_shared_bytes(big_shared_kernel), simt::kMaxDynamicSharedOptIn);
  simt::set_max_dynamic_shared_bytes(big_shared_kernel, bytes);
  simt::launch(big_shared_kernel, dim3(1), dim3(32), bytes);  // now allowed
  ExpectKernelError([] { simt::set_max_dynamic_shared_bytes(big_shared_kernel, 240 * 1024); },
                    {"expected at most 232448"});
}

__global__ void static_and_dynamic_shared_kernel() {
  __shared__ float partials[72];  // 288 bytes, declared to the emulator below
  SIMT_DYNAMIC_SHARED(unsigned char, bytes);
  partials[threadIdx.x] = 1.0f;
  bytes[threadIdx.x] = static_cast<unsigned char>(partials[threadIdx.x]);
}

// A GPU counts a kernel's static __shared__ arrays against its shared memory, so the dynamic part
// may opt in to 227 KiB less them; declared, the emulator refuses what an H100 refuses.
TEST(SimtErrors, DeclaredStaticSharedMemoryComesOffTheDynamicLimit) {
  const auto kernel = static_and_dynamic_shared_kernel;
  simt::declare_static_shared_bytes(kernel, 288);
  EXPECT_EQ(simt::max_dynamic_shared_bytes(kernel), simt::kMaxDynamicSharedOptIn - 288);
  ExpectKernelError([&] { simt::launch(kernel, dim3(1), dim3(32), 48 * 1024); },
                    {"dynamic_shared_bytes — expected at most 48864", "up to 232160",
                     "got 49152"});
  ExpectKernelError([&] { simt::set_max_dynamic_shared_bytes(kernel, 227 * 1024); },
                    {"expected at most 232160", "less the kernel's 288 bytes of static shared",
                     "got 232448"});
  simt::set_max_dynamic_shared_bytes(kernel, 227 * 1024 - 288);
  simt::launch(kernel, dim3(1), dim3(32), 227 * 1024 - 288);  // the whole remainder is allowed
  ExpectKernelError([&] { simt::declare_static_shared_bytes(kernel, 64 * 1024); },
                    {"simt::declare_static_shared_bytes: bytes — expected at most 49152",
                     "got 65536"});
}

// ---- The watchdog --------------------------------------------------------------------------

// Thread 0 spins until thread 1 raises a flag; under the forward schedule thread 1 never runs,
// because fibers switch only at barriers and collectives. (On a GPU this may work or hang.)
__global__ void spin_wait_kernel(int* flag) {
  if (threadIdx.x == 1) *static_cast<volatile int*>(flag) = 1;
  while (threadIdx.x == 0 && *static_cast<volatile int*>(flag) == 0) {
  }
}

TEST(SimtErrorsDeathTest, SpinWaitEndsInTheWatchdogsDiagnosis) {
  // A fresh process for the child (not a fork of this one, whose watchdog thread it would lack).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        const ScopedSchedule schedule(Schedule::Forward);
        simt::set_watchdog_seconds(0.3);
        simt::DeviceBuffer<int> flag(1);
        flag.fill_bytes(0);
        simt::launch(spin_wait_kernel, dim3(1), dim3(32), 0, flag.data());
      },
      "simt watchdog: block \\(0, 0, 0\\), thread 0 ran for .* of CPU time");
}

}  // namespace
}  // namespace simt_tests
