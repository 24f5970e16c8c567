// Kernels that must work: reductions, shared memory, launches, grids, shuffles and votes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "portable_kernels.hpp"  // the only file that includes it (its kernels are not inline)
#include "test_helpers.hpp"

namespace simt_tests {
namespace {

using simt::Schedule;

std::vector<float> sums_of(const std::vector<float>& in, int per_block) {
  std::vector<float> sums(in.size() / per_block, 0.0f);
  for (std::size_t i = 0; i < in.size(); ++i) sums[i / per_block] += in[i];
  return sums;
}

// in ([blocks * n]) with each block's n values in reverse order, computed on the host.
std::vector<float> reversed_blocks(const std::vector<float>& in, int n) {
  std::vector<float> out(in.size());
  for (std::size_t b = 0; b < in.size() / n; ++b) {
    for (int i = 0; i < n; ++i) out[b * n + i] = in[b * n + n - 1 - i];
  }
  return out;
}

constexpr Schedule kAllSchedules[] = {Schedule::Forward, Schedule::Reverse, Schedule::Random};

// ---- One thread per element ----------------------------------------------------------------

// Sizes around the block of 128: one element, one short of a block, a block, one past, and a
// last block of 104 threads out of 128 (test_checker.cpp runs the kernel without its guard).
TEST(SimtKernels, AxpyOverRaggedSizesIsExactUnderEverySchedule) {
  for (const int n : {1, 127, 128, 129, 1000}) {
    const std::vector<float> x = small_integers(n, 5);
    const std::vector<float> y = small_integers(n, 6);
    std::vector<float> expected(n);
    for (int i = 0; i < n; ++i) expected[i] = 3.0f * x[i] + y[i];  // small integers: exact
    for (const Schedule s : kAllSchedules) {
      const ScopedSchedule schedule(s, 14);
      EXPECT_EQ(emu::axpy(3.0f, x, y, 128), expected) << "n " << n << ", "
                                                      << simt::schedule_name(s);
    }
  }
}

/// [test_tree_reduce]
TEST(SimtKernels, SharedMemoryTreeReductionOver128Threads) {
  const std::vector<float> in = small_integers(3 * 128, 1);  // [3 blocks * 128]
  for (const Schedule s : kAllSchedules) {
    const ScopedSchedule schedule(s, 11);
    EXPECT_EQ(emu::block_sums<128>(in, /*use_shuffles=*/false), sums_of(in, 128))
        << simt::schedule_name(s);
  }
}
/// [test_tree_reduce]

TEST(SimtKernels, ShuffleXorReductionOver128Threads) {
  const std::vector<float> in = small_integers(3 * 128, 2);
  for (const Schedule s : kAllSchedules) {
    const ScopedSchedule schedule(s, 12);
    EXPECT_EQ(emu::block_sums<128>(in, /*use_shuffles=*/true), sums_of(in, 128))
        << simt::schedule_name(s);
  }
}

// ---- Across blocks: the last block merges --------------------------------------------------

TEST(SimtKernels, TheLastBlockToCountSumsEveryPartialAndResetsTheCounter) {
  for (const int blocks : {1, 2, 5, 33, 100}) {
    const std::vector<float> in = small_integers(static_cast<std::size_t>(blocks) * 32, 3);
    const float total = sums_of(in, blocks * 32)[0];
    for (const Schedule s : kAllSchedules) {
      const ScopedSchedule schedule(s, 13);
      // Three launches on the same counter: each starts from the 0 the one before left.
      const emu::LastBlockSums r = emu::last_block_sums(in, 3);
      for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(r.sums[i], total)
            << blocks << " blocks, launch " << i << ", " << simt::schedule_name(s);
      }
      EXPECT_EQ(r.arrivals_after, 0u) << blocks << " blocks, " << simt::schedule_name(s);
      // Whoever arrives last merges: the emulator runs the blocks forward or backward.
      if (s == Schedule::Forward) {
        EXPECT_EQ(r.mergers[0], blocks - 1);
      } else if (s == Schedule::Reverse) {
        EXPECT_EQ(r.mergers[0], 0);
      }
    }
  }
}

// ---- Shared memory -------------------------------------------------------------------------

// Thread 0 of each block publishes a value in static shared memory; after the barrier every
// thread of that block reads it, and each block sees its own.
__global__ void broadcast_kernel(int* out) {
  __shared__ int value;
  if (threadIdx.x == 0) value = 1000 + static_cast<int>(blockIdx.x);
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = value;
}

TEST(SimtKernels, StaticSharedMemoryIsOnePerBlock) {
  simt::DeviceBuffer<int> out(4 * 64);  // [4 blocks * 64 threads]
  simt::launch(broadcast_kernel, dim3(4), dim3(64), 0, out.data());
  std::vector<int> got(out.size());
  out.download(got.data(), got.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i], 1000 + static_cast<int>(i / 64)) << i;
}

TEST(SimtKernels, DynamicSharedMemoryIsSizedByTheLaunch) {
  // 300 values over 128 threads: the last pass leaves threads idle, as real sizes do.
  const std::vector<float> in = small_integers(3 * 300, 3);
  EXPECT_EQ(emu::reverse_blocks(in, 300, 128), reversed_blocks(in, 300));
}

TEST(SimtKernels, DynamicSharedMemoryAboveTheDefaultAfterOptIn) {
  const int n = 20000;  // 80,000 bytes: above the default 48 KiB, below the 96 KiB opt-in limit
  const std::vector<float> in = small_integers(2 * n, 4);
  EXPECT_EQ(emu::reverse_blocks(in, n, 256), reversed_blocks(in, n));
}

__global__ void shared_address_kernel(std::uintptr_t* out) {
  SIMT_DYNAMIC_SHARED(double, first);
  SIMT_DYNAMIC_SHARED(float, second);
  out[0] = reinterpret_cast<std::uintptr_t>(first);
  out[1] = reinterpret_cast<std::uintptr_t>(second);
}

TEST(SimtKernels, DynamicSharedDeclarationsAliasAndAreAligned) {
  simt::DeviceBuffer<std::uintptr_t> out(2);
  simt::launch(shared_address_kernel, dim3(1), dim3(1), 40, out.data());
  std::uintptr_t got[2];
  out.download(got, 2);
  EXPECT_EQ(got[0], got[1]);
  EXPECT_EQ(got[0] % 16, 0u);
}

__global__ void read_unwritten_shared_kernel(float* out) {
  SIMT_DYNAMIC_SHARED(float, scratch);
  out[threadIdx.x] = scratch[threadIdx.x];
}

TEST(SimtKernels, NanFillPoisonsUnwrittenSharedMemory) {
  const ScopedSharedNan nan(true);
  simt::DeviceBuffer<float> out(32);
  simt::launch(read_unwritten_shared_kernel, dim3(2), dim3(32), 32 * sizeof(float), out.data());
  std::vector<float> got(32);
  out.download(got.data(), got.size());
  for (float v : got) EXPECT_TRUE(std::isnan(v)) << v;
}

// ---- Launch arguments and grids ------------------------------------------------------------

struct Params {
  int base;
  float scale;
};

// Every thread changes its own copies of the by-value parameters before using them: if the
// threads shared one copy, later threads would see earlier threads' changes.
__global__ void by_value_kernel(int n, Params p, long long widened, int* out) {
  n += static_cast<int>(threadIdx.x);
  p.base *= 2;
  out[threadIdx.x] = n + p.base + static_cast<int>(p.scale) + static_cast<int>(widened);
}

TEST(SimtKernels, LaunchPassesArgumentsByValue) {
  simt::DeviceBuffer<int> out(64);
  Params p{10, 3.0f};
  const short narrow = 7;  // converted to the kernel's long long once, at launch
  simt::launch(by_value_kernel, dim3(1), dim3(64), 0, 100, p, narrow, out.data());
  std::vector<int> got(64);
  out.download(got.data(), got.size());
  for (int t = 0; t < 64; ++t) EXPECT_EQ(got[t], 100 + t + 20 + 3 + 7) << "thread " << t;
  EXPECT_EQ(p.base, 10);  // the host's argument is untouched
}

// Records every built-in of every thread: blockIdx, threadIdx, blockDim and gridDim in 2-D/3-D.
__global__ void coordinates_kernel(uint4* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  out[block * threads + thread] = make_uint4(blockIdx.x | blockIdx.y << 8 | blockIdx.z << 16,
                                             threadIdx.x | threadIdx.y << 8 | threadIdx.z << 16,
                                             blockDim.x | blockDim.y << 8 | blockDim.z << 16,
                                             gridDim.x | gridDim.y << 8 | gridDim.z << 16);
}

TEST(SimtKernels, MultiBlockGridIn2DWith3DBlocks) {
  const dim3 grid(3, 2), block(8, 4, 2);
  simt::DeviceBuffer<uint4> out(3 * 2 * 64);
  out.fill_bytes(0xFF);
  simt::launch(coordinates_kernel, grid, block, 0, out.data());
  std::vector<uint4> got(out.size());
  out.download(got.data(), got.size());
  std::size_t i = 0;
  for (unsigned by = 0; by < 2; ++by) {
    for (unsigned bx = 0; bx < 3; ++bx) {
      for (unsigned tz = 0; tz < 2; ++tz) {
        for (unsigned ty = 0; ty < 4; ++ty) {
          for (unsigned tx = 0; tx < 8; ++tx, ++i) {
            EXPECT_EQ(got[i].x, bx | by << 8) << i;
            EXPECT_EQ(got[i].y, tx | ty << 8 | tz << 16) << i;
            EXPECT_EQ(got[i].z, 8u | 4u << 8 | 2u << 16) << i;
            EXPECT_EQ(got[i].w, 3u | 2u << 8 | 1u << 16) << i;
          }
        }
      }
    }
  }
}

// ---- Warp shuffles and votes ---------------------------------------------------------------

__global__ void narrow_shuffles_kernel(int* out, int width) {
  const int lane = static_cast<int>(threadIdx.x);
  const int v = 100 + lane;
  out[0 * 32 + lane] = __shfl_sync(0xffffffffu, v, 3, width);
  out[1 * 32 + lane] = __shfl_down_sync(0xffffffffu, v, 2, width);
  out[2 * 32 + lane] = __shfl_up_sync(0xffffffffu, v, 2, width);
  out[3 * 32 + lane] = __shfl_xor_sync(0xffffffffu, v, 1, width);
  out[4 * 32 + lane] = __shfl_sync(0xffffffffu, v, width + 1, width);  // srcLane wraps mod width
}

TEST(SimtKernels, ShufflesWithWidthBelow32StayInTheirSegment) {
  for (const int width : {4, 8, 16}) {
    simt::DeviceBuffer<int> out(5 * 32);
    simt::launch(narrow_shuffles_kernel, dim3(1), dim3(32), 0, out.data(), width);
    std::vector<int> got(out.size());
    out.download(got.data(), got.size());
    for (int lane = 0; lane < 32; ++lane) {
      const int start = lane / width * width;  // the first lane of this lane's segment
      const int in_segment = lane - start;
      SCOPED_TRACE("width " + std::to_string(width) + ", lane " + std::to_string(lane));
      EXPECT_EQ(got[0 * 32 + lane], 100 + start + 3);
      EXPECT_EQ(got[1 * 32 + lane], 100 + (in_segment + 2 < width ? lane + 2 : lane));
      EXPECT_EQ(got[2 * 32 + lane], 100 + (in_segment >= 2 ? lane - 2 : lane));
      EXPECT_EQ(got[3 * 32 + lane], 100 + (lane ^ 1));
      EXPECT_EQ(got[4 * 32 + lane], 100 + start + 1);
    }
  }
}

__global__ void shuffle_types_kernel(double* d, long long* ll, __half* h) {
  const int lane = static_cast<int>(threadIdx.x);
  d[lane] = __shfl_xor_sync(0xffffffffu, 0.5 + lane, 31);
  ll[lane] = __shfl_down_sync(0xffffffffu, (1ll << 40) + lane, 1);
  h[lane] = __shfl_sync(0xffffffffu, __float2half(static_cast<float>(lane)), 7);
}

TEST(SimtKernels, ShufflesMoveEightByteAndHalfValues) {
  simt::DeviceBuffer<double> d(32);
  simt::DeviceBuffer<long long> ll(32);
  simt::DeviceBuffer<__half> h(32);
  simt::launch(shuffle_types_kernel, dim3(1), dim3(32), 0, d.data(), ll.data(), h.data());
  std::vector<double> dv(32);
  std::vector<long long> lv(32);
  std::vector<__half> hv(32);
  d.download(dv.data(), 32);
  ll.download(lv.data(), 32);
  h.download(hv.data(), 32);
  for (int lane = 0; lane < 32; ++lane) {
    EXPECT_EQ(dv[lane], 0.5 + (lane ^ 31));
    EXPECT_EQ(lv[lane], (1ll << 40) + (lane < 31 ? lane + 1 : lane));
    EXPECT_EQ(__half2float(hv[lane]), 7.0f);
  }
}

// Per warp: the ballot of odd lanes, whether any lane is lane 5 of warp 1, and for each half
// warp (its own mask) whether all its threads have threadIdx.x < 48.
__global__ void votes_kernel(unsigned* out) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const unsigned ballot = __ballot_sync(0xffffffffu, lane % 2 == 1);
  const bool any = __any_sync(0xffffffffu, lane == 5 && warp == 1);
  const unsigned half_warp = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  const bool all = __all_sync(half_warp, threadIdx.x < 48);
  __syncwarp();
  if (lane == 0) {
    out[warp * 4 + 0] = ballot;
    out[warp * 4 + 1] = any;
  }
  if (lane % 16 == 0) out[warp * 4 + 2 + lane / 16] = all;
}

TEST(SimtKernels, VotesOverTheMask) {
  simt::DeviceBuffer<unsigned> out(2 * 4);  // [warps, {ballot, any, all low, all high}]
  simt::launch(votes_kernel, dim3(1), dim3(64), 0, out.data());
  unsigned got[8];
  out.download(got, 8);
  EXPECT_EQ(got[0], 0xaaaaaaaau);
  EXPECT_EQ(got[4], 0xaaaaaaaau);
  EXPECT_EQ(got[1], 0u);
  EXPECT_EQ(got[5], 1u);
  EXPECT_EQ(got[2], 1u);  // threads 0-15
  EXPECT_EQ(got[3], 1u);  // threads 16-31
  EXPECT_EQ(got[6], 1u);  // threads 32-47
  EXPECT_EQ(got[7], 0u);  // threads 48-63
}

// ---- half and bfloat16 inside a kernel -----------------------------------------------------

TEST(SimtKernels, HalfAndBfloat16ConversionsInsideAKernel) {
  const std::vector<float> in = {0.0f,  -0.0f,    1.0f,    1.0f / 3.0f, 65504.0f, 65520.0f,
                                 1e-8f, -2.5e-6f, 3.0e38f, 1.00390625f, -7.75f};
  const emu::RoundTrip r = emu::round_trip(in);
  for (std::size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(__half_as_ushort(r.halves[i]), __half_as_ushort(__float2half_rn(in[i]))) << in[i];
    EXPECT_EQ(__bfloat16_as_ushort(r.bf16s[i]), __bfloat16_as_ushort(__float2bfloat16_rn(in[i])))
        << in[i];
    EXPECT_EQ(r.back[2 * i], __half2float(r.halves[i]));
    EXPECT_EQ(r.back[2 * i + 1], __bfloat162float(r.bf16s[i]));
  }
  EXPECT_EQ(r.back[2 * 2], 1.0f);
  EXPECT_TRUE(std::isinf(r.back[2 * 5]));  // 65520 is the tie between 65504 and 2^16: even is inf
}

// ---- Device memory -------------------------------------------------------------------------

TEST(SimtKernels, DeviceBufferCopiesFillsAndMoves) {
  simt::DeviceBuffer<int> a(5);
  EXPECT_EQ(a.size(), 5u);
  const int host[3] = {7, 8, 9};
  a.fill_bytes(0);
  a.upload(host, 3);
  int back[5] = {};
  a.download(back, 5);
  EXPECT_EQ(std::vector<int>(back, back + 5), (std::vector<int>{7, 8, 9, 0, 0}));

  simt::DeviceBuffer<int> b = std::move(a);
  EXPECT_EQ(b.size(), 5u);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(a.data(), nullptr);
  b.fill_bytes(0xFF);
  b.download(back, 5);
  EXPECT_EQ(back[4], -1);

  std::vector<int> six(6);
  EXPECT_THROW(b.upload(six.data(), 6), std::invalid_argument);
  EXPECT_THROW(b.download(six.data(), 6), std::invalid_argument);
}

}  // namespace
}  // namespace simt_tests
