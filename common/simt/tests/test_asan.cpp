// AddressSanitizer sees through the emulator: an out-of-bounds read inside a kernel, on a fiber
// stack, is reported like any other.
//
// Compiled only when this file is built with ASan (the `asan` preset). In other builds the read
// is undefined behaviour that nothing reports, so there is nothing to test; the tests are left
// out at compile time rather than compiled as skipped placeholders.
#include <gtest/gtest.h>

#include "simt/cuda.hpp"
#include "simt/sanitizer.hpp"

#if SIMT_HAS_ASAN

namespace simt_tests {
namespace {

// Thread t reads element t, and the block has one thread more than the buffer has elements.
__global__ void read_one_past_kernel(const float* cache, float* out) {
  out[threadIdx.x] = cache[threadIdx.x];
}

TEST(SimtAsanDeathTest, ReadPastADeviceBufferIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        simt::DeviceBuffer<float> cache(31);  // exactly 31 floats: element 31 is outside
        simt::DeviceBuffer<float> out(32);
        cache.fill_bytes(0);
        simt::launch(read_one_past_kernel, dim3(1), dim3(32), 0, cache.data(), out.data());
      },
      // ASan's report, then the emulator's note of which CUDA thread made the read.
      "heap-buffer-overflow.*block \\(0, 0, 0\\), thread 31 \\(warp 0, lane 31\\)");
}

// Each thread reads the dynamic shared float after its own; the last one reads past the launch's
// size.
__global__ void read_past_shared_kernel(float* out) {
  SIMT_DYNAMIC_SHARED(float, shared);  // [blockDim.x]
  shared[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = shared[threadIdx.x + 1];
}

TEST(SimtAsanDeathTest, ReadPastDynamicSharedMemoryIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        simt::DeviceBuffer<float> out(32);
        simt::launch(read_past_shared_kernel, dim3(1), dim3(32), 32 * sizeof(float), out.data());
      },
      "heap-buffer-overflow");
}

// A 16x16 tile with ldm 16 needs 256 elements; the buffer has 255. The warp's last lane to arrive
// reads the whole tile, so the report names whichever lane that was.
__global__ void tile_past_the_end_kernel(const __half* tile) {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, __half, nvcuda::wmma::row_major> a;
  nvcuda::wmma::load_matrix_sync(a, tile, 16);
}

TEST(SimtAsanDeathTest, WmmaTileReadPastADeviceBufferIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        simt::DeviceBuffer<__half> tile(255);
        tile.fill_bytes(0);
        simt::launch(tile_past_the_end_kernel, dim3(1), dim3(32), 0, tile.data());
      },
      "heap-buffer-overflow.*block \\(0, 0, 0\\), thread [0-9]+ \\(warp 0, lane [0-9]+\\)");
}

}  // namespace
}  // namespace simt_tests

#endif  // SIMT_HAS_ASAN
