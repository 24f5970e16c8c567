// The CUDA C++ dialect on the host: qualifiers, built-in variables, vector types, math and
// atomics, so that kernel source compiles unchanged with g++ or clang++.
//
// Included through simt/cuda.hpp when nvcc is not the compiler; never include it under nvcc,
// where all of this is built in.
#pragma once

#include <math.h>  // the C names (expf, fmaxf, ...) in the global namespace, as CUDA has them

#include <cmath>
#include <cstddef>
#include <cstdint>

// ---- Qualifiers --------------------------------------------------------------------------
// Every function runs on the host, so the execution-space qualifiers say nothing.
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// One OS thread runs all fibers of a block, and one block at a time: a thread_local variable
// is therefore exactly one copy per running block, which is what __shared__ means.
#define __shared__ thread_local
// Note: __noinline__ is deliberately not defined; libstdc++ spells __attribute__((__noinline__)).

// ---- Built-in index types ----------------------------------------------------------------
struct uint3 {
  unsigned int x, y, z;
};

struct dim3 {
  unsigned int x, y, z;
  constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return uint3{x, y, z}; }
};

// The built-in variables. The emulator rewrites threadIdx before it resumes each fiber and the
// other three once per block; constinit lets every access compile to a plain TLS load.
extern thread_local constinit uint3 threadIdx;
extern thread_local constinit uint3 blockIdx;
extern thread_local constinit dim3 blockDim;
extern thread_local constinit dim3 gridDim;
inline constexpr int warpSize = 32;

// ---- Vector types (with CUDA's alignment, so vectorised loads keep their contract) ---------
struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned int x, y;
};
struct alignas(16) uint4 {
  unsigned int x, y, z, w;
};
struct alignas(8) int2 {
  int x, y;
};
struct alignas(16) int4 {
  int x, y, z, w;
};

/// Each make_* builds the vector from its components, in order.
constexpr float2 make_float2(float x, float y) {
  return {x, y};
}
constexpr float4 make_float4(float x, float y, float z, float w) {
  return {x, y, z, w};
}
constexpr uint2 make_uint2(unsigned int x, unsigned int y) {
  return {x, y};
}
constexpr uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) {
  return {x, y, z, w};
}
constexpr int2 make_int2(int x, int y) {
  return {x, y};
}
constexpr int4 make_int4(int x, int y, int z, int w) {
  return {x, y, z, w};
}
constexpr uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) {
  return {x, y, z};
}

// ---- Math --------------------------------------------------------------------------------
// CUDA's fast intrinsics trade accuracy for speed; here they are the exact library functions,
// so the emulator can be more accurate than the GPU (tolerances must allow for the GPU's error).

/// Returns e^x (CUDA: an approximation with a few ulp of error).
inline float __expf(float x) {
  return std::exp(x);
}
/// Returns ln x (CUDA: an approximation).
inline float __logf(float x) {
  return std::log(x);
}
/// Returns a / b (CUDA: an approximate division).
inline float __fdividef(float a, float b) {
  return a / b;
}
/// Returns 1 / x rounded to nearest even.
inline float __frcp_rn(float x) {
  return 1.0f / x;
}
/// Returns 1 / sqrt(x).
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
/// Returns sqrt(x) rounded to nearest even.
inline float __fsqrt_rn(float x) {
  return std::sqrt(x);
}
/// Returns x clamped to [0, 1] (NaN becomes 0, as on the GPU).
inline float __saturatef(float x) {
  return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f;
}

// CUDA's integer and floating min/max overloads for device code.
constexpr int min(int a, int b) {
  return a < b ? a : b;
}
constexpr int max(int a, int b) {
  return a > b ? a : b;
}
constexpr unsigned int min(unsigned int a, unsigned int b) {
  return a < b ? a : b;
}
constexpr unsigned int max(unsigned int a, unsigned int b) {
  return a > b ? a : b;
}
constexpr long long min(long long a, long long b) {
  return a < b ? a : b;
}
constexpr long long max(long long a, long long b) {
  return a > b ? a : b;
}
constexpr unsigned long long min(unsigned long long a, unsigned long long b) {
  return a < b ? a : b;
}
constexpr unsigned long long max(unsigned long long a, unsigned long long b) {
  return a > b ? a : b;
}
inline float min(float a, float b) {
  return fminf(a, b);
}
inline float max(float a, float b) {
  return fmaxf(a, b);
}

// ---- Memory ordering and atomics ---------------------------------------------------------
// Fibers of a block switch only at barriers and warp collectives, and blocks run one after
// another, so a read-modify-write can never be interrupted: plain code is already atomic. The
// memory checker (src/checker.cpp) is told of every atomic and fence: they are how blocks
// synchronise, and an atomic never races with another atomic.

namespace simt {
inline namespace emu {
namespace detail {
struct SourceSite;
/// Tell the memory checker of an atomic on [p, p + bytes) at `site`, or of a __threadfence().
void checker_atomic(const void* p, std::size_t bytes, const SourceSite& site);
void checker_fence();

// The atomics' own loads and stores are not instrumented (no_sanitize): the checker sees each
// one as one atomic access instead.
#define SIMT_ATOMIC_(name, update)                                                          \
  template <class T>                                                                        \
  __attribute__((no_sanitize("thread"))) T name(const SourceSite& site, T* address, T value) { \
    checker_atomic(address, sizeof(T), site);                                               \
    const T old = *address;                                                                 \
    *address = update;                                                                      \
    return old;                                                                             \
  }
SIMT_ATOMIC_(atomic_add, old + value)
SIMT_ATOMIC_(atomic_sub, old - value)
SIMT_ATOMIC_(atomic_max, old > value ? old : value)
SIMT_ATOMIC_(atomic_min, old < value ? old : value)
SIMT_ATOMIC_(atomic_exch, value)
SIMT_ATOMIC_(atomic_xor, old ^ value)
#undef SIMT_ATOMIC_

template <class T>
__attribute__((no_sanitize("thread"))) T atomic_cas(const SourceSite& site, T* address, T compare,
                                                    T value) {
  checker_atomic(address, sizeof(T), site);
  const T old = *address;
  if (old == compare) *address = value;
  return old;
}
}  // namespace detail
}  // namespace emu
}  // namespace simt

/// Orders memory accesses (a compiler barrier is enough on one OS thread); for the memory
/// checker, the first half of the handshake that publishes a block's writes to later blocks.
inline void __threadfence() {
  ::simt::detail::checker_fence();
  asm volatile("" ::: "memory");
}
/// Orders memory accesses within the block.
inline void __threadfence_block() {
  asm volatile("" ::: "memory");
}

/// Reads through the read-only cache on a GPU; a plain load here.
template <class T>
inline T __ldg(const T* p) {
  return *p;
}

// Each atomic* applies its operation to *address and returns the value it held before; macros,
// so that the checker can name the line.
#define atomicAdd(...) ::simt::detail::atomic_add(SIMT_SITE_, __VA_ARGS__)
#define atomicSub(...) ::simt::detail::atomic_sub(SIMT_SITE_, __VA_ARGS__)
#define atomicMax(...) ::simt::detail::atomic_max(SIMT_SITE_, __VA_ARGS__)
#define atomicMin(...) ::simt::detail::atomic_min(SIMT_SITE_, __VA_ARGS__)
#define atomicExch(...) ::simt::detail::atomic_exch(SIMT_SITE_, __VA_ARGS__)
#define atomicXor(...) ::simt::detail::atomic_xor(SIMT_SITE_, __VA_ARGS__)
#define atomicCAS(...) ::simt::detail::atomic_cas(SIMT_SITE_, __VA_ARGS__)
