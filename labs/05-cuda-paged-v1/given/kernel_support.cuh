// Lab 05, given device code: the kernels' helpers (common/pa/device_helpers.cuh: Vec<T, N>,
// to_float / from_float, dot, ceil_div / imax / imin, WARP_SIZE, FULL_MASK, PA_TODO_KERNEL)
// brought into the kernels' namespace, pa::cuda_v1::SIMT_BACKEND.
#pragma once

#include <cstdint>

#include "pa/device_helpers.cuh"
#include "paged_attention_v1.hpp"

namespace pa::cuda_v1::SIMT_BACKEND {
// Every helper of pa/device_helpers.cuh (and of the launchers' pa/device_tensors.cuh) by its
// plain name. Vec by a declaration as well: the directive alone meets the host's pa::Vec (an
// Eigen vector) one namespace up, where Vec would be ambiguous.
using namespace pa::device;
using pa::device::Vec;
static_assert(WARP_SIZE == kWarpSize, "the API's warp size is the device's");

/// A probe launch's exit at `here` (Probe A or B): when the launch's probe_stage is `here`, waits
/// for the whole block (other threads wrote the row), copies the first `count` floats of the
/// block's dynamic shared memory to its row of `probe` ([gridDim.y, gridDim.x, row_stride]
/// float32: sequence, query head, column) and returns true, and the kernel returns. probe_stage
/// is one value for the whole grid, so every thread of a block meets the barrier, or none does.
__device__ inline bool probe_exit(Probe here, Probe probe_stage, float* probe, int count,
                                  int row_stride) {
  if (probe_stage != here) return false;
  __syncthreads();
  SIMT_DYNAMIC_SHARED(float, row);
  float* dst = probe + (static_cast<std::int64_t>(blockIdx.y) * gridDim.x + blockIdx.x) *
                           static_cast<std::int64_t>(row_stride);
  for (int i = threadIdx.x; i < count; i += blockDim.x) dst[i] = row[i];
  return true;
}
}  // namespace pa::cuda_v1::SIMT_BACKEND
