// Lab 05, given device code: the kernels' helpers (common/pa/device_helpers.cuh: Vec<T, N>,
// to_float / from_float, dot, ceil_div / imax / imin, WARP_SIZE, FULL_MASK, PA_TODO_KERNEL)
// brought into the kernels' namespace, pa::cuda_v1::SIMT_BACKEND.
#pragma once

#include "pa/device_helpers.cuh"
#include "paged_attention_v1.hpp"

namespace pa::cuda_v1::SIMT_BACKEND {
// Every helper of pa/device_helpers.cuh (and of the launchers' pa/device_tensors.cuh) by its
// plain name. Vec by a declaration as well: the directive alone meets the host's pa::Vec (an
// Eigen vector) one namespace up, where Vec would be ambiguous.
using namespace pa::device;
using pa::device::Vec;
static_assert(WARP_SIZE == kWarpSize, "the API's warp size is the device's");
}  // namespace pa::cuda_v1::SIMT_BACKEND
