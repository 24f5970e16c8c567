// Lab 06, given device code: the kernels' helpers (common/pa/device_helpers.cuh: Vec<T, N>,
// to_float / from_float, dot, ceil_div / imax / imin, WARP_SIZE, FULL_MASK, PA_TODO_KERNEL)
// brought into the kernels' namespace, pa::cuda_v2::SIMT_BACKEND, and then lab 05's kernel cut
// into the pieces v2 reuses (given/decode_pieces.cuh).
#pragma once

#include "pa/device_helpers.cuh"
#include "paged_attention_v2.hpp"

namespace pa::cuda_v2::SIMT_BACKEND {
namespace {
// Declarations, not a using-directive: they hide pa::Vec (the host's Eigen vector) in here.
using pa::device::ceil_div;
using pa::device::dot;
using pa::device::from_float;
using pa::device::FULL_MASK;
using pa::device::imax;
using pa::device::imin;
using pa::device::throw_if_todo;
using pa::device::to_float;
using pa::device::Vec;
using pa::device::WARP_SIZE;
static_assert(WARP_SIZE == kWarpSize, "the API's warp size is the device's");
}  // namespace
}  // namespace pa::cuda_v2::SIMT_BACKEND

#include "given/decode_pieces.cuh"
