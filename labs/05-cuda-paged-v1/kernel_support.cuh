/// \file
/// Lab 05, given device code: the 16-byte vector type the kernels load through, the float
/// conversions of the three element types and small index helpers. starter.cpp and the
/// reference solution both include this file at the top, so there is one copy of it: read it,
/// do not edit it.
///
/// Everything below sits in an anonymous namespace inside pa::cuda_v1::SIMT_BACKEND: private
/// to the one build of the kernel file that includes it (once for nvcc, once for the emulator).
#pragma once

#include "paged_attention_v1.hpp"
#include "simt/cuda.hpp"

namespace pa::cuda_v1::SIMT_BACKEND {
namespace {

/// [kernel_support]
constexpr int WARP_SIZE = kWarpSize;
constexpr unsigned FULL_MASK = 0xffffffffu;  // every lane of the warp takes part

__host__ __device__ constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }
__host__ __device__ constexpr int imax(int a, int b) { return a > b ? a : b; }
__host__ __device__ constexpr int imin(int a, int b) { return a < b ? a : b; }

/// N consecutive elements that move as one load: with N * sizeof(T) == 16 a thread fetches
/// them in a single 128-bit transaction (alignas makes the compiler emit exactly that).
template <typename T, int N>
struct alignas(sizeof(T) * N) Vec {
  T val[N];  // [N]
};

/// An element widened to float32 (exact for all three element types).
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/// Stores float32 `v` into `dst`, rounded to the nearest value of dst's type.
__device__ __forceinline__ void from_float(float& dst, float v) { dst = v; }
__device__ __forceinline__ void from_float(__half& dst, float v) { dst = __float2half_rn(v); }
__device__ __forceinline__ void from_float(__nv_bfloat16& dst, float v) {
  dst = __float2bfloat16_rn(v);
}

/// sum_i a[i] * b[i], multiplied and accumulated in float32 whatever T is.
template <typename T, int N>
__device__ __forceinline__ float dot(const Vec<T, N>& a, const Vec<T, N>& b) {
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) sum += to_float(a.val[i]) * to_float(b.val[i]);
  return sum;
}
/// [kernel_support]

}  // namespace
}  // namespace pa::cuda_v1::SIMT_BACKEND
