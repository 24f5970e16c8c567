// The memory checker: each kind of race and out-of-bounds access it must report, with both
// lines, both threads and the kernel, and the same accesses made correctly, which it must not.
// This file is compiled with the checker's instrumentation (pa_simt_checked), so every load and
// store of its kernels is seen; its tests skip where the build has no instrumentation (the asan
// preset) or where the checks are turned off.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_helpers.hpp"

namespace simt_tests {
namespace {

using simt::Schedule;

#ifndef SIMT_CHECKED
#define SIMT_CHECKED 0
#endif

constexpr Schedule kSchedules[] = {Schedule::Forward, Schedule::Reverse, Schedule::Random};

class SimtChecker : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!SIMT_CHECKED) GTEST_SKIP() << "built without the checker's instrumentation";
    if (!simt::memory_checks()) GTEST_SKIP() << "SIMT_CHECK=0 turned the checker off";
  }
};

/// Runs `run` under every schedule and expects no error.
void ExpectCleanUnderEverySchedule(const std::function<void()>& run) {
  for (const Schedule s : kSchedules) {
    const ScopedSchedule schedule(s, 7);
    EXPECT_NO_THROW(run()) << "schedule " << simt::schedule_name(s);
  }
}

/// Runs `run` under every schedule; expects each to throw a KernelError with every fragment.
void ExpectErrorUnderEverySchedule(const std::function<void()>& run,
                                   std::initializer_list<std::string> fragments) {
  for (const Schedule s : kSchedules) {
    SCOPED_TRACE(simt::schedule_name(s));
    const ScopedSchedule schedule(s, 7);
    ExpectKernelError(run, fragments);
  }
}

// ---- Shared memory between warps: __syncthreads ----------------------------------------------

constexpr int kWarpSumWrite = __LINE__ + 8;
constexpr int kWarpSumRead = __LINE__ + 10;
/// Lane 0 of each warp writes its warp's number; thread 0 then sums them. Without the barrier
/// thread 0 may read a slot before its warp's lane 0 wrote it.
__global__ void warp_slots_kernel(float* out, bool barrier) {
  __shared__ float slots[4];  // [warps]
  const int t = static_cast<int>(threadIdx.x);
  if (t % 32 == 0) {
    slots[t / 32] = static_cast<float>(t / 32);
  }
  if (barrier) __syncthreads();
  if (t == 0) out[blockIdx.x] = slots[0] + slots[1] + slots[2] + slots[3];
}

TEST_F(SimtChecker, MissingSyncthreadsIsARaceNamingBothLinesThreadsAndTheKernel) {
  simt::DeviceBuffer<float> out(2);
  ExpectErrorUnderEverySchedule(
      [&] { simt::launch(warp_slots_kernel, dim3(2), dim3(128), 0, out.data(), false); },
      {"race in warp_slots_kernel", "static __shared__ memory", "test_checker.cpp:" +
       std::to_string(kWarpSumRead), "test_checker.cpp:" + std::to_string(kWarpSumWrite),
       // Which of the two comes first depends on the schedule: each line and thread shows.
       "thread 0 (warp 0, lane 0)", ", which thread ", "with no barrier between them",
       "__syncthreads()"});
}

TEST_F(SimtChecker, TheSameAccessesWithTheBarrierRaiseNothing) {
  simt::DeviceBuffer<float> out(2);
  ExpectCleanUnderEverySchedule(
      [&] { simt::launch(warp_slots_kernel, dim3(2), dim3(128), 0, out.data(), true); });
  float sum = 0;
  out.download(&sum, 1);
  EXPECT_EQ(sum, 6.0f);
}

// ---- Lanes of one warp: __syncwarp ---------------------------------------------------------

constexpr int kLaneWrite = __LINE__ + 8;
constexpr int kLaneRead = __LINE__ + 9;
/// Every lane writes its slot of dynamic shared memory, then reads its neighbour's: within one
/// warp, so __syncwarp() is the barrier that orders them.
__global__ void neighbour_kernel(float* out, bool sync) {
  SIMT_DYNAMIC_SHARED(float, slots);  // [threads]
  const int t = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(blockDim.x);
  slots[t] = static_cast<float>(t);
  if (sync) __syncwarp();
  out[t] = slots[(t + 1) % n];
}

TEST_F(SimtChecker, MissingSyncwarpIsARaceBetweenLanesOfOneWarp) {
  simt::DeviceBuffer<float> out(32);
  ExpectErrorUnderEverySchedule(
      [&] {
        simt::launch(neighbour_kernel, dim3(1), dim3(32), 32 * sizeof(float), out.data(), false);
      },
      {"race in neighbour_kernel", "dynamic shared memory of neighbour_kernel",
       "test_checker.cpp:" + std::to_string(kLaneRead),
       "test_checker.cpp:" + std::to_string(kLaneWrite), "(warp 0, lane ", "__syncwarp()"});
}

TEST_F(SimtChecker, TheSameLanesWithSyncwarpRaiseNothing) {
  simt::DeviceBuffer<float> out(32);
  ExpectCleanUnderEverySchedule([&] {
    simt::launch(neighbour_kernel, dim3(1), dim3(32), 32 * sizeof(float), out.data(), true);
  });
}

constexpr int kShuffleLine = __LINE__ + 7;
/// A shuffle both lanes take part in orders them too, as on a GPU.
__global__ void neighbour_through_shuffle_kernel(float* out) {
  SIMT_DYNAMIC_SHARED(float, slots);  // [threads]
  const int t = static_cast<int>(threadIdx.x);
  slots[t] = static_cast<float>(t);
  const float any = __shfl_sync(0xffffffffu, slots[t], 0);
  out[t] = slots[(t + 1) % 32] + any;
}

TEST_F(SimtChecker, AWarpCollectiveOrdersTheLanesThatTakePart) {
  (void)kShuffleLine;
  simt::DeviceBuffer<float> out(32);
  ExpectCleanUnderEverySchedule([&] {
    simt::launch(neighbour_through_shuffle_kernel, dim3(1), dim3(32), 32 * sizeof(float),
                 out.data());
  });
}

// ---- Global memory within a block ----------------------------------------------------------

constexpr int kGlobalWrite = __LINE__ + 6;
constexpr int kGlobalRead = __LINE__ + 7;
/// Thread t writes its block's slot t of `scratch`, then reads slot t + 64 (another warp's).
__global__ void global_scratch_kernel(float* scratch, float* out, bool barrier) {
  const int t = static_cast<int>(threadIdx.x);
  float* mine = scratch + blockIdx.x * blockDim.x;
  mine[t] = static_cast<float>(t);
  if (barrier) __syncthreads();
  out[blockIdx.x * blockDim.x + t] = mine[(t + 64) % blockDim.x];
}

TEST_F(SimtChecker, GlobalMemoryWrittenAndReadByTwoThreadsOfABlockIsARace) {
  simt::DeviceBuffer<float> scratch(256), out(256);
  scratch.set_name("scratch");
  ExpectErrorUnderEverySchedule(
      [&] {
        simt::launch(global_scratch_kernel, dim3(2), dim3(128), 0, scratch.data(), out.data(),
                     false);
      },
      {"race in global_scratch_kernel", "of scratch (1024 bytes)",
       "test_checker.cpp:" + std::to_string(kGlobalRead),
       "test_checker.cpp:" + std::to_string(kGlobalWrite)});
}

TEST_F(SimtChecker, GlobalMemoryWithTheBarrierRaisesNothing) {
  simt::DeviceBuffer<float> scratch(256), out(256);
  ExpectCleanUnderEverySchedule([&] {
    simt::launch(global_scratch_kernel, dim3(2), dim3(128), 0, scratch.data(), out.data(), true);
  });
}

// ---- Global memory across blocks: the fused merge's handshake ------------------------------

constexpr int kPartialRead = __LINE__ + 21;
/// Each block writes its partial; the block that counts last sums them all (lab 07's fused
/// merge). `handshake` false drops the fence + atomic: the last block in launch order reads the
/// others' partials with nothing that orders it after them.
__global__ void fused_sum_kernel(float* partials, int* arrivals, float* out, bool handshake) {
  const int t = static_cast<int>(threadIdx.x);
  const int b = static_cast<int>(blockIdx.x);
  const int blocks = static_cast<int>(gridDim.x);
  if (t == 0) partials[b] = static_cast<float>(b + 1);
  __shared__ bool last;
  if (handshake) {
    __threadfence();
    __syncthreads();
    if (t == 0) last = atomicAdd(arrivals, 1) == blocks - 1;
    __syncthreads();
    if (!last) return;
  } else if (b != 0) {
    return;
  }
  if (t == 0) {
    float sum = 0;
    for (int i = 0; i < blocks; ++i) sum += partials[i];
    out[0] = sum;
    if (handshake) *arrivals = 0;  // ready for the next launch
  }
}

TEST_F(SimtChecker, ReadingAnotherBlocksPartialWithoutTheHandshakeIsARace) {
  simt::DeviceBuffer<float> partials(4), out(1);
  simt::DeviceBuffer<int> arrivals(1);
  partials.set_name("partials");
  const int zero = 0;
  arrivals.upload(&zero, 1);
  // Forward runs block 0 first, which then reads nothing another block wrote; reverse and
  // random run it after others.
  for (const Schedule s : {Schedule::Reverse, Schedule::Random}) {
    const ScopedSchedule schedule(s, 7);
    ExpectKernelError(
        [&] {
          simt::launch(fused_sum_kernel, dim3(4), dim3(64), 0, partials.data(), arrivals.data(),
                       out.data(), false);
        },
        {"race in fused_sum_kernel", "of partials (16 bytes)",
         "test_checker.cpp:" + std::to_string(kPartialRead), "nothing orders the two blocks",
         "__threadfence()"});
  }
}

TEST_F(SimtChecker, TheFenceAndAtomicHandshakeOrdersTheBlocks) {
  simt::DeviceBuffer<float> partials(4), out(1);
  simt::DeviceBuffer<int> arrivals(1);
  const int zero = 0;
  arrivals.upload(&zero, 1);
  ExpectCleanUnderEverySchedule([&] {
    simt::launch(fused_sum_kernel, dim3(4), dim3(64), 0, partials.data(), arrivals.data(),
                 out.data(), true);
  });
  float sum = 0;
  out.download(&sum, 1);
  EXPECT_EQ(sum, 10.0f);
}

// ---- Out of bounds -------------------------------------------------------------------------

constexpr int kBufferRead = __LINE__ + 5;
/// Thread t copies in[t + shift] to out[t]: a shift below 0 reads before the buffer, one above 0
/// past its end.
__global__ void shifted_copy_kernel(const float* in, float* out, int shift) {
  const int t = static_cast<int>(threadIdx.x);
  out[t] = in[t + shift];
}

TEST_F(SimtChecker, ReadPastTheEndOfADeviceBufferNamesItTheBlockThreadAndLine) {
  const ScopedSchedule schedule(Schedule::Forward);  // the first thread out of bounds is named
  simt::DeviceBuffer<float> in(64), out(64);
  in.set_name("query");
  ExpectKernelError(
      [&] { simt::launch(shifted_copy_kernel, dim3(1), dim3(64), 0, in.data(), out.data(), 2); },
      {"out of bounds in shifted_copy_kernel", "block (0, 0, 0)", "(warp 1, lane 30) reads 4 bytes",
       "test_checker.cpp:" + std::to_string(kBufferRead),
       ", 0 bytes past the end of query (256 bytes)"});
}

TEST_F(SimtChecker, ReadBeforeTheStartOfADeviceBufferIsReported) {
  const ScopedSchedule schedule(Schedule::Forward);  // the first thread out of bounds is named
  simt::DeviceBuffer<float> in(64), out(64);
  in.set_name("key_cache");
  ExpectKernelError(
      [&] { simt::launch(shifted_copy_kernel, dim3(1), dim3(64), 0, in.data(), out.data(), -1); },
      {"thread 0 (warp 0, lane 0) reads 4 bytes",
       "4 bytes before the start of key_cache (256 bytes)"});
}

constexpr int kAxpyAccess = __LINE__ + 6;
/// axpy_kernel (portable_kernels.hpp) without its guard `if (i < n)`: a grid rounded up to
/// whole blocks then runs threads past the end of x and y. Here, not in test_kernels.cpp, so
/// that the checker sees its accesses.
__global__ void axpy_unguarded_kernel([[maybe_unused]] int n, float a, const float* x, float* y) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  y[i] = a * x[i] + y[i];
}

TEST_F(SimtChecker, AxpyWithoutItsGuardRunsPastTheEndOfTheLastBlock) {
  // n = 13 over blocks of 8 threads: two blocks, and threads 5 to 7 of block 1 have i >= 13.
  const int n = 13, threads = 8, blocks = (n + threads - 1) / threads;
  simt::DeviceBuffer<float> x(n), y(n);
  x.set_name("x");
  y.set_name("y");
  const auto run = [&] {
    simt::launch(axpy_unguarded_kernel, dim3(blocks), dim3(threads), 0, n, 2.0f, x.data(),
                 y.data());
  };
  ExpectErrorUnderEverySchedule(run, {"out of bounds in axpy_unguarded_kernel", "block (1, 0, 0)",
                                      "test_checker.cpp:" + std::to_string(kAxpyAccess),
                                      "past the end of"});
  const ScopedSchedule schedule(Schedule::Forward);  // the first thread out of bounds is named
  ExpectKernelError(run, {"thread 5 (warp 0, lane 5) reads 4 bytes",
                          "0 bytes past the end of x (52 bytes)"});
}

TEST_F(SimtChecker, EveryByteInsideRaisesNothing) {
  simt::DeviceBuffer<float> in(64), out(64);
  ExpectCleanUnderEverySchedule(
      [&] { simt::launch(shifted_copy_kernel, dim3(1), dim3(64), 0, in.data(), out.data(), 0); });
}

constexpr int kSharedWrite = __LINE__ + 5;
/// Thread t writes slot t + shift of the dynamic shared memory (blockDim.x floats).
__global__ void shifted_shared_kernel(float* out, int shift) {
  SIMT_DYNAMIC_SHARED(float, slots);  // [threads]
  const int t = static_cast<int>(threadIdx.x);
  slots[t + shift] = 1.0f;
  __syncthreads();
  out[t] = slots[t];
}

TEST_F(SimtChecker, WritePastTheEndOfDynamicSharedMemoryNamesTheKernel) {
  const ScopedSchedule schedule(Schedule::Forward);  // the first thread out of bounds is named
  simt::DeviceBuffer<float> out(64);
  ExpectKernelError(
      [&] {
        simt::launch(shifted_shared_kernel, dim3(1), dim3(64), 64 * sizeof(float), out.data(), 1);
      },
      {"out of bounds in shifted_shared_kernel", "thread 63 (warp 1, lane 31) writes 4 bytes",
       "test_checker.cpp:" + std::to_string(kSharedWrite),
       ", 0 bytes past the end of dynamic shared memory of shifted_shared_kernel (256 bytes)"});
}

TEST_F(SimtChecker, WriteBeforeTheStartOfDynamicSharedMemoryIsReported) {
  const ScopedSchedule schedule(Schedule::Forward);  // the first thread out of bounds is named
  simt::DeviceBuffer<float> out(64);
  ExpectKernelError(
      [&] {
        simt::launch(shifted_shared_kernel, dim3(1), dim3(64), 64 * sizeof(float), out.data(), -2);
      },
      {"thread 0 (warp 0, lane 0) writes 4 bytes",
       "8 bytes before the start of dynamic shared memory of shifted_shared_kernel (256 bytes)"});
}

// ---- Asynchronous copies -------------------------------------------------------------------

constexpr int kCopyLine = __LINE__ + 13;
constexpr int kEarlyRead = __LINE__ + 16;
constexpr int kNeighbourRead = __LINE__ + 19;
/// Each thread copies one float of `src` into its slot of a shared tile asynchronously, then
/// reads according to `mode`: 0 its own slot before waiting (a read of a copy that has not
/// landed), 1 its neighbour's slot after its own wait but with no barrier (the neighbour's copy
/// may not have landed), 2 the neighbour's slot after wait + barrier (correct).
__global__ void async_tile_kernel(const float* src, float* out, int mode) {
  __shared__ __align__(16) float tile[64];  // [threads]
  const int t = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(blockDim.x);
  tile[t] = 0.0f;
  __syncthreads();
  __pipeline_memcpy_async(&tile[t], &src[t], sizeof(float));
  __pipeline_commit();
  float seen = 0.0f;
  if (mode == 0) {
    seen = tile[t];
  } else {
    __pipeline_wait_prior(0);
    if (mode == 2) __syncthreads();
    seen = tile[(t + 1) % n];
  }
  if (mode == 0) __pipeline_wait_prior(0);
  out[t] = seen;
}

TEST_F(SimtChecker, ReadingACopysDestinationBeforeTheWaitNamesTheCopyAndTheRead) {
  simt::DeviceBuffer<float> src(64), out(64);
  ExpectErrorUnderEverySchedule(
      [&] { simt::launch(async_tile_kernel, dim3(1), dim3(64), 0, src.data(), out.data(), 0); },
      {"race in async_tile_kernel", "reads static __shared__ memory",
       "test_checker.cpp:" + std::to_string(kEarlyRead),
       "__pipeline_memcpy_async at test_checker.cpp:" + std::to_string(kCopyLine),
       "which has not landed", "__pipeline_wait_prior"});
}

TEST_F(SimtChecker, AnotherThreadReadingACopyWithoutWaitAndBarrierIsARace) {
  simt::DeviceBuffer<float> src(64), out(64);
  ExpectErrorUnderEverySchedule(
      [&] { simt::launch(async_tile_kernel, dim3(1), dim3(64), 0, src.data(), out.data(), 1); },
      {"race in async_tile_kernel", "test_checker.cpp:" + std::to_string(kNeighbourRead),
       "test_checker.cpp:" + std::to_string(kCopyLine)});
}

TEST_F(SimtChecker, CopyWaitBarrierThenReadRaisesNothing) {
  simt::DeviceBuffer<float> src(64), out(64);
  std::vector<float> values(64);
  for (int i = 0; i < 64; ++i) values[i] = static_cast<float>(i);
  src.upload(values.data(), 64);
  ExpectCleanUnderEverySchedule(
      [&] { simt::launch(async_tile_kernel, dim3(1), dim3(64), 0, src.data(), out.data(), 2); });
  out.download(values.data(), 64);
  for (int t = 0; t < 64; ++t) EXPECT_EQ(values[t], static_cast<float>((t + 1) % 64));
}

// ---- wmma tiles ----------------------------------------------------------------------------

constexpr int kTileStore = __LINE__ + 10;
constexpr int kTileRead = __LINE__ + 12;
/// Warp 0 stores a 16x16 accumulator tile to shared memory; thread 32 (warp 1) reads it.
__global__ void tile_handoff_kernel(float* out, bool barrier) {
  using namespace nvcuda;
  __shared__ __align__(32) float tile[256];  // [16, 16]
  const int t = static_cast<int>(threadIdx.x);
  if (t < 32) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 2.0f);
    wmma::store_matrix_sync(tile, acc, 16, wmma::mem_row_major);
  }
  if (barrier) __syncthreads();
  if (t == 32) out[0] = tile[17];
}

TEST_F(SimtChecker, AWmmaStoreReadByAnotherWarpWithoutABarrierIsARace) {
  simt::DeviceBuffer<float> out(1);
  ExpectErrorUnderEverySchedule(
      [&] { simt::launch(tile_handoff_kernel, dim3(1), dim3(64), 0, out.data(), false); },
      {"thread 32 (warp 1, lane 0)", "test_checker.cpp:" + std::to_string(kTileRead),
       "warp 0 (a wmma call)", "test_checker.cpp:" + std::to_string(kTileStore)});
}

TEST_F(SimtChecker, AWmmaStoreThenABarrierRaisesNothing) {
  simt::DeviceBuffer<float> out(1);
  ExpectCleanUnderEverySchedule(
      [&] { simt::launch(tile_handoff_kernel, dim3(1), dim3(64), 0, out.data(), true); });
}

constexpr int kRescaleWrite = __LINE__ + 11;
constexpr int kTileLoad = __LINE__ + 13;
/// Each lane of warp 0 scales its 8 elements of a 16x16 tile in shared memory, then the warp
/// loads the tile with wmma (lab 07's rescale of o). The load reads what other lanes wrote: a
/// wmma call is a collective, but its loads see those writes only after a __syncwarp().
__global__ void rescale_then_load_kernel(float* out, bool sync) {
  using namespace nvcuda;
  __shared__ __align__(32) float tile[256];  // [16, 16]
  const int lane = static_cast<int>(threadIdx.x);
  for (int i = lane; i < 256; i += 32) tile[i] = 1.0f;
  __syncwarp();
  for (int i = lane; i < 256; i += 32) tile[i] *= 2.0f;
  if (sync) __syncwarp();
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::load_matrix_sync(acc, tile, 16, wmma::mem_row_major);
  wmma::store_matrix_sync(out, acc, 16, wmma::mem_row_major);
}

TEST_F(SimtChecker, AWmmaLoadOfWhatOtherLanesWroteNeedsASyncwarp) {
  simt::DeviceBuffer<float> out(256);
  ExpectErrorUnderEverySchedule(
      [&] { simt::launch(rescale_then_load_kernel, dim3(1), dim3(32), 0, out.data(), false); },
      {"race in rescale_then_load_kernel", "warp 0 (a wmma call) reads",
       "test_checker.cpp:" + std::to_string(kTileLoad),
       "test_checker.cpp:" + std::to_string(kRescaleWrite), "__syncwarp()"});
  ExpectCleanUnderEverySchedule(
      [&] { simt::launch(rescale_then_load_kernel, dim3(1), dim3(32), 0, out.data(), true); });
}

// ---- Switched off --------------------------------------------------------------------------

TEST_F(SimtChecker, SetMemoryChecksFalseLetsARacyKernelRun) {
  const ScopedMemoryChecks off(false);
  simt::DeviceBuffer<float> out(1);
  EXPECT_NO_THROW(simt::launch(warp_slots_kernel, dim3(1), dim3(128), 0, out.data(), false));
}

}  // namespace
}  // namespace simt_tests
