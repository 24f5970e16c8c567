// Kernels that use CUDA's asynchronous copies (<cuda_pipeline.h>), written once for both
// backends: test_pipeline.cpp runs them on the emulator, cuda_probe.cu compiles them with nvcc.
// Each one records what a thread sees in its destination at a chosen moment, so the tests can
// say when the bytes landed.
#pragma once

#include <cstddef>
#include <vector>

#include "simt/cuda.hpp"

namespace simt_tests::SIMT_BACKEND {

/// [async_copy_two_groups]
/// Thread t copies src[4t .. 4t+3] (16 bytes) into its own shared slot in two groups of two
/// floats each, and writes what its slot holds: before any wait (seen[0..3]), after
/// __pipeline_wait_prior(1) (seen[4..7]: the first group only) and after
/// __pipeline_wait_prior(0) (seen[8..11]). The slot starts as -1 in every float.
__global__ void async_copy_groups_kernel(const float* __restrict__ src, float* __restrict__ seen) {
  alignas(16) __shared__ float slots[32][4];  // [threads, 4]
  const int t = static_cast<int>(threadIdx.x);
  for (int i = 0; i < 4; ++i) slots[t][i] = -1.0f;
  __pipeline_memcpy_async(&slots[t][0], &src[4 * t], 8);  // group 0: floats 0 and 1
  __pipeline_commit();
  __pipeline_memcpy_async(&slots[t][2], &src[4 * t + 2], 8);  // group 1: floats 2 and 3
  __pipeline_commit();
  for (int i = 0; i < 4; ++i) seen[12 * t + i] = slots[t][i];
  __pipeline_wait_prior(1);
  for (int i = 0; i < 4; ++i) seen[12 * t + 4 + i] = slots[t][i];
  __pipeline_wait_prior(0);
  for (int i = 0; i < 4; ++i) seen[12 * t + 8 + i] = slots[t][i];
}
/// [async_copy_two_groups]

/// Thread t copies 16 bytes with `zfill` of them zero-filled into its shared slot (which starts
/// as -1 in every float), waits, and writes the slot to out[4t .. 4t+3].
__global__ void async_copy_zfill_kernel(const float* __restrict__ src, float* __restrict__ out,
                                        int zfill) {
  alignas(16) __shared__ float slots[32][4];  // [threads, 4]
  const int t = static_cast<int>(threadIdx.x);
  for (int i = 0; i < 4; ++i) slots[t][i] = -1.0f;
  __pipeline_memcpy_async(&slots[t][0], &src[4 * t], 16, static_cast<std::size_t>(zfill));
  __pipeline_commit();
  __pipeline_wait_prior(0);
  for (int i = 0; i < 4; ++i) out[4 * t + i] = slots[t][i];
}

/// [async_copy_staged]
/// The pattern of a pipelined kernel: each thread copies one float of the tile into shared
/// memory, waits for its own copy, and only after a barrier reads its neighbour's float. With
/// `wait_first` false the wait comes after the barrier instead, which is a bug (the neighbour's
/// copy may not have landed when the neighbour passes the barrier); `out` receives what thread t
/// read of slot (t + 1) % blockDim.x.
__global__ void async_copy_neighbour_kernel(const float* __restrict__ src, float* __restrict__ out,
                                            bool wait_first) {
  alignas(16) __shared__ float tile[64];  // [threads]
  const int t = static_cast<int>(threadIdx.x);
  const int n = static_cast<int>(blockDim.x);
  tile[t] = -1.0f;
  __syncthreads();  // every slot holds -1 before any copy starts
  __pipeline_memcpy_async(&tile[t], &src[t], 4);
  __pipeline_commit();
  if (wait_first) __pipeline_wait_prior(0);
  __syncthreads();
  if (!wait_first) __pipeline_wait_prior(0);
  out[t] = tile[(t + 1) % n];
}
/// [async_copy_staged]

/// [async_copy_ring]
/// out[blockIdx.x, t] = the sum of column t of the block's [tiles * 4, 64] rows of
/// `in`, read through a ring of two stages: tile i + 1's copies start before tile i is
/// summed. Each thread copies 16 bytes of a tile and sums a column, so it reads floats
/// other threads copied. `wait_count` is what each iteration passes to
/// __pipeline_wait_prior: 1 is right.
__global__ void ring_column_sum_kernel(const float* __restrict__ in,
                                       float* __restrict__ out, int tiles,
                                       int wait_count) {
  constexpr int kCols = 64;                        // = blockDim.x
  constexpr int kTile = 4 * kCols;                 // floats in a tile: 4 rows of kCols
  alignas(16) __shared__ float stage[2][kTile];  // [stages, 4, kCols]
  const int t = static_cast<int>(threadIdx.x);
  const float* rows = in + blockIdx.x * tiles * kTile;  // [tiles, 4, kCols], its own
  for (int i = 0; i < 4; ++i) stage[0][4 * t + i] = stage[1][4 * t + i] = 0.0f;
  __syncthreads();  // zeros: a stage read before its copy landed shows in the sum
  const auto start_tile = [&](int tile) {  // one group per tile, empty past the end
    if (tile < tiles)
      __pipeline_memcpy_async(&stage[tile % 2][4 * t], &rows[tile * kTile + 4 * t], 16);
    __pipeline_commit();
  };
  start_tile(0);
  float sum = 0.0f;
  for (int tile = 0; tile < tiles; ++tile) {
    start_tile(tile + 1);               // the other stage, free since the last barrier
    __pipeline_wait_prior(wait_count);  // 1: all but tile + 1's group have landed ...
    __syncthreads();                    // ... for every thread, and are visible to all
    for (int r = 0; r < 4; ++r) sum += stage[tile % 2][r * kCols + t];
    __syncthreads();  // all done with this stage: the next iteration refills it
  }
  out[blockIdx.x * kCols + t] = sum;
}
/// [async_copy_ring]

// ---- Host drivers --------------------------------------------------------------------------

/// Runs async_copy_groups_kernel over 32 threads; returns seen, [32, 12].
inline std::vector<float> async_copy_groups(const std::vector<float>& src) {
  simt::DeviceBuffer<float> d_src(src.size()), d_seen(32 * 12);
  d_src.upload(src.data(), src.size());
  simt::launch(async_copy_groups_kernel, dim3(1), dim3(32), 0, d_src.data(), d_seen.data());
  std::vector<float> seen(32 * 12);
  d_seen.download(seen.data(), seen.size());
  return seen;
}

/// Runs async_copy_zfill_kernel over 32 threads; returns out, [32, 4].
inline std::vector<float> async_copy_zfill(const std::vector<float>& src, int zfill) {
  simt::DeviceBuffer<float> d_src(src.size()), d_out(32 * 4);
  d_src.upload(src.data(), src.size());
  simt::launch(async_copy_zfill_kernel, dim3(1), dim3(32), 0, d_src.data(), d_out.data(), zfill);
  std::vector<float> out(32 * 4);
  d_out.download(out.data(), out.size());
  return out;
}

/// Runs async_copy_neighbour_kernel over `threads` threads; returns out, [threads].
inline std::vector<float> async_copy_neighbour(const std::vector<float>& src, int threads,
                                               bool wait_first) {
  simt::DeviceBuffer<float> d_src(src.size()), d_out(static_cast<std::size_t>(threads));
  d_src.upload(src.data(), src.size());
  simt::launch(async_copy_neighbour_kernel, dim3(1), dim3(static_cast<unsigned>(threads)), 0,
               d_src.data(), d_out.data(), wait_first);
  std::vector<float> out(static_cast<std::size_t>(threads));
  d_out.download(out.data(), out.size());
  return out;
}

/// Runs ring_column_sum_kernel over `in` ([blocks, tiles * 4, 64]); returns out, [blocks, 64].
inline std::vector<float> ring_column_sums(const std::vector<float>& in, int blocks, int tiles,
                                           int wait_count) {
  simt::DeviceBuffer<float> d_in(in.size()), d_out(static_cast<std::size_t>(blocks) * 64);
  d_in.upload(in.data(), in.size());
  simt::launch(ring_column_sum_kernel, dim3(static_cast<unsigned>(blocks)), dim3(64), 0,
               d_in.data(), d_out.data(), tiles, wait_count);
  std::vector<float> out(static_cast<std::size_t>(blocks) * 64);
  d_out.download(out.data(), out.size());
  return out;
}

}  // namespace simt_tests::SIMT_BACKEND
