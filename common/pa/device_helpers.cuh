/// \file
/// Device code every CUDA lab's kernels share (given code): the 16-byte vector type kernels load
/// through, float conversions of the three element types, a float32 dot product, small index
/// helpers, and the flag by which a skeleton kernel says "not implemented yet". CUDA C++: each
/// lab's given/kernel_support.cuh includes it and brings the names into its kernels' namespace.
/// Everything lives in pa::device::SIMT_BACKEND (an inline namespace), so the emulator's and
/// nvcc's builds of one lab link into one program.
#pragma once

#include <stdexcept>
#include <utility>

#include "pa/not_implemented.hpp"
#include "simt/cuda.hpp"

namespace pa::device {
inline namespace SIMT_BACKEND {

/// [device_helpers]
constexpr int WARP_SIZE = 32;
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
/// [device_helpers]

/// [todo_flag]
// A kernel cannot throw. A skeleton starts with PA_TODO_KERNEL(): thread 0 of every block
// raises a device-side flag and all threads return. After each launch the launcher calls
// throw_if_todo, which reads the flag back (cudaMemcpyFromSymbol on a GPU, a plain read on the
// emulator) and throws pa::NotImplemented on the host. Delete the line when you fill a body.
namespace {
__device__ int g_todo_kernel = 0;  // one flag per translation unit: per lab, per backend
}  // namespace

#define PA_TODO_KERNEL()                                          \
  do {                                                            \
    if (threadIdx.x == 0) ::pa::device::g_todo_kernel = 1;        \
    return;                                                       \
  } while (0)

/// Throws pa::NotImplemented naming `kernel` and the `file` that holds it if a skeleton ran
/// since the last call.
inline void throw_if_todo(const char* kernel, const char* file) {
  int flag = 0;
#if defined(__CUDACC__)
  const int reset = 0;
  if (cudaMemcpyFromSymbol(&flag, g_todo_kernel, sizeof flag) != cudaSuccess ||
      cudaMemcpyToSymbol(g_todo_kernel, &reset, sizeof reset) != cudaSuccess) {
    throw std::runtime_error("throw_if_todo: cannot read the device flag");
  }
#else
  flag = std::exchange(g_todo_kernel, 0);
#endif
  if (flag != 0) throw NotImplemented(kernel, file);
}
/// [todo_flag]

}  // namespace SIMT_BACKEND
}  // namespace pa::device
