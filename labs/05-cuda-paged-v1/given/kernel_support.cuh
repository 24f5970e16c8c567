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

/// Copies the first `count` floats of `row` (this block's logits or probabilities in shared
/// memory) to the block's row of `probe` ([gridDim.y, gridDim.x, row_stride] float32: sequence,
/// query head, column), every thread of the block striding over them. The probe launch's exit.
__device__ inline void copy_row_to_probe(float* probe, const float* row, int count,
                                         int row_stride) {
  float* dst = probe + (static_cast<std::int64_t>(blockIdx.y) * gridDim.x + blockIdx.x) *
                           static_cast<std::int64_t>(row_stride);
  for (int i = threadIdx.x; i < count; i += blockDim.x) dst[i] = row[i];
}
}  // namespace pa::cuda_v1::SIMT_BACKEND
