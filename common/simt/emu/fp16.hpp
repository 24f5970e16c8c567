// __half and __nv_bfloat16 on the host, built on Eigen::half and Eigen::bfloat16.
//
// Eigen converts float to half and to bfloat16 with round-to-nearest-even, subnormals and
// overflow to infinity included, which is what CUDA's __float2half / __float2bfloat16 do; the
// one difference is the NaN it produces, so the intrinsics below return CUDA's canonical NaN
// (0x7FFF) and are bit-identical to the GPU's conversions. Converting back to float is exact.
#pragma once

#include <Eigen/Core>

#include <cstdint>

#include "simt/emu/dialect.hpp"

using __half = Eigen::half;
using __nv_bfloat16 = Eigen::bfloat16;

/// Two halves, as CUDA packs them into one 32-bit register.
struct alignas(4) __half2 {
  __half x, y;
};

/// Two bfloat16 values, as CUDA packs them into one 32-bit register.
struct alignas(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
};

/// Returns the raw 16 bits of h.
inline unsigned short __half_as_ushort(__half h) {
  return Eigen::numext::bit_cast<unsigned short>(h);
}
/// Returns the half whose raw bits are `bits`.
inline __half __ushort_as_half(unsigned short bits) {
  return Eigen::numext::bit_cast<__half>(bits);
}
/// Returns the raw 16 bits of b.
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) {
  return Eigen::numext::bit_cast<unsigned short>(b);
}
/// Returns the bfloat16 whose raw bits are `bits`.
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) {
  return Eigen::numext::bit_cast<__nv_bfloat16>(bits);
}

/// Returns f rounded to the nearest half, ties to even; every NaN becomes 0x7FFF as on CUDA.
inline __half __float2half_rn(float f) {
  return std::isnan(f) ? __ushort_as_half(0x7FFF) : __half(f);
}
/// Returns f rounded to the nearest half, ties to even (CUDA's default rounding).
inline __half __float2half(float f) {
  return __float2half_rn(f);
}
/// Returns h as a float (exact).
inline float __half2float(__half h) {
  return static_cast<float>(h);
}

/// Returns f rounded to the nearest bfloat16, ties to even; every NaN becomes 0x7FFF as on CUDA.
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  return std::isnan(f) ? __ushort_as_bfloat16(0x7FFF) : __nv_bfloat16(f);
}
/// Returns f rounded to the nearest bfloat16, ties to even (CUDA's default rounding).
inline __nv_bfloat16 __float2bfloat16(float f) {
  return __float2bfloat16_rn(f);
}
/// Returns b as a float (exact).
inline float __bfloat162float(__nv_bfloat16 b) {
  return static_cast<float>(b);
}

// ---- Pairs ---------------------------------------------------------------------------------
/// Returns the pair (lo, hi).
inline __half2 __halves2half2(__half lo, __half hi) {
  return {lo, hi};
}
/// Returns the low (x) half of h.
inline __half __low2half(__half2 h) {
  return h.x;
}
/// Returns the high (y) half of h.
inline __half __high2half(__half2 h) {
  return h.y;
}
/// Returns (a, b) rounded to halves, ties to even.
inline __half2 __floats2half2_rn(float a, float b) {
  return {__float2half_rn(a), __float2half_rn(b)};
}
/// Returns both halves of h as floats.
inline float2 __half22float2(__half2 h) {
  return {__half2float(h.x), __half2float(h.y)};
}

/// Returns the pair (lo, hi).
inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return {lo, hi};
}
/// Returns the low (x) value of b.
inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 b) {
  return b.x;
}
/// Returns the high (y) value of b.
inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 b) {
  return b.y;
}
/// Returns (a, b) rounded to bfloat16, ties to even.
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
  return {__float2bfloat16_rn(a), __float2bfloat16_rn(b)};
}
/// Returns both values of b as floats.
inline float2 __bfloat1622float2(__nv_bfloat162 b) {
  return {__bfloat162float(b.x), __bfloat162float(b.y)};
}
