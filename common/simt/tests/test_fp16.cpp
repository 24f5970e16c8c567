// __half and __nv_bfloat16 conversions against a bit-level reference written here from the
// IEEE-754 definition: round to nearest, ties to even, subnormals, overflow to infinity, and
// CUDA's canonical NaN 0x7FFF.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "simt/cuda.hpp"

namespace simt_tests {
namespace {

struct Format {
  int exponent_bits;
  int fraction_bits;
};
constexpr Format kHalf{5, 10};
constexpr Format kBfloat16{8, 7};

/// [rne_reference]
/// Rounds the float whose bits are `f` to `format` (sign on top, then exponent, then fraction)
/// with round-to-nearest-even, using integers only.
std::uint16_t round_to(std::uint32_t f, Format format) {
  const int man = format.fraction_bits;
  const int bias = (1 << (format.exponent_bits - 1)) - 1;
  const std::uint32_t sign = (f >> 31) << (format.exponent_bits + man);
  const std::uint32_t infinity = ((1u << format.exponent_bits) - 1) << man;
  const std::uint32_t exponent = f >> 23 & 0xFF;
  const std::uint32_t fraction = f & 0x7FFFFF;
  if (exponent == 0xFF) return fraction != 0 ? 0x7FFF : static_cast<std::uint16_t>(sign | infinity);

  // The float's value is exactly m * 2^e.
  const std::uint64_t m = exponent == 0 ? fraction : fraction | 0x800000;
  const int e = exponent == 0 ? -149 : static_cast<int>(exponent) - 150;
  if (m == 0) return static_cast<std::uint16_t>(sign);

  // The spacing of the target format around the value is 2^q: `man` fraction bits below the
  // leading bit, but never finer than the subnormals' spacing 2^(1 - bias - man).
  const int leading = e + static_cast<int>(std::bit_width(m)) - 1;
  const int q = std::max(leading, 1 - bias) - man;

  // rounded = m * 2^(e - q), to the nearest integer, ties to the even one.
  std::uint64_t rounded = 0;
  if (e >= q) {
    rounded = m << (e - q);
  } else if (q - e < 64) {
    const int shift = q - e;
    rounded = m >> shift;
    const std::uint64_t rest = m & ((std::uint64_t{1} << shift) - 1);
    const std::uint64_t half = std::uint64_t{1} << (shift - 1);
    if (rest > half || (rest == half && (rounded & 1) != 0)) ++rounded;
  }

  // Encoding: rounded counts units of 2^q, and the exponent field is the one of 2^(q + man)
  // (0 for subnormals). Adding `rounded` to the field shifted left carries correctly when
  // rounding reaches the next power of two, including from the subnormals into the normals.
  const std::uint64_t bits = (static_cast<std::uint64_t>(q + man + bias - 1) << man) + rounded;
  return static_cast<std::uint16_t>(sign | (bits >= infinity ? infinity : bits));
}
/// [rne_reference]

/// Returns the value of `bits` in `format` as a float (every such value is one exactly).
float decode(std::uint16_t bits, Format format) {
  const int man = format.fraction_bits;
  const int bias = (1 << (format.exponent_bits - 1)) - 1;
  const int exponent_mask = (1 << format.exponent_bits) - 1;
  const bool negative = (bits >> (format.exponent_bits + man)) != 0;
  const int exponent = bits >> man & exponent_mask;
  const int fraction = bits & ((1 << man) - 1);
  double value;
  if (exponent == exponent_mask) {
    value = fraction != 0 ? std::numeric_limits<double>::quiet_NaN() : INFINITY;
  } else if (exponent == 0) {
    value = std::ldexp(fraction, 1 - bias - man);
  } else {
    value = std::ldexp(fraction + (1 << man), exponent - bias - man);
  }
  return static_cast<float>(negative ? -value : value);
}

std::uint16_t half_bits(float f) {
  return __half_as_ushort(__float2half(f));
}
std::uint16_t half_bits_rn(float f) {
  return __half_as_ushort(__float2half_rn(f));
}
std::uint16_t bf16_bits(float f) {
  return __bfloat16_as_ushort(__float2bfloat16(f));
}
std::uint16_t bf16_bits_rn(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

/// The inputs of a sweep: a strided walk over all 2^32 bit patterns, and for every value of the
/// 16-bit format the value itself, the midpoint to its successor (a tie) and the floats just
/// below and above both, where rounding decisions happen.
std::vector<std::uint32_t> sweep(Format format) {
  std::vector<std::uint32_t> inputs;
  for (std::uint64_t f = 0; f <= 0xFFFFFFFFu; f += 1021)
    inputs.push_back(static_cast<std::uint32_t>(f));
  const std::uint32_t count = 1u << (1 + format.exponent_bits + format.fraction_bits);
  for (std::uint32_t bits = 0; bits < count; ++bits) {
    const float value = decode(static_cast<std::uint16_t>(bits), format);
    if (!std::isfinite(value)) continue;
    // The successor away from zero; past the largest finite value it is where 2^(max + 1) would be.
    const float next = decode(static_cast<std::uint16_t>(bits + 1), format);
    const float step = std::isfinite(next)
                           ? next - value
                           : value - decode(static_cast<std::uint16_t>(bits - 1), format);
    const float mid = value + step / 2;  // exact: one more bit than the format has
    for (const float x : {value, mid}) {
      const std::uint32_t u = std::bit_cast<std::uint32_t>(x);
      inputs.insert(inputs.end(), {u, u + 1, u - 1});
    }
  }
  for (const float special : {0.0f, -0.0f, INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, FLT_MIN,
                              FLT_TRUE_MIN, -FLT_TRUE_MIN}) {
    inputs.push_back(std::bit_cast<std::uint32_t>(special));
  }
  for (const std::uint32_t nan :
       {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF812345u, 0x7FFFFFFFu}) {
    inputs.push_back(nan);
  }
  return inputs;
}

std::string hex(std::uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

/// Checks `convert` against round_to over the sweep, reporting the first few mismatches.
void expect_matches_reference(std::uint16_t (*convert)(float), Format format) {
  int mismatches = 0;
  const std::vector<std::uint32_t> inputs = sweep(format);
  for (const std::uint32_t u : inputs) {
    const std::uint16_t want = round_to(u, format);
    const std::uint16_t got = convert(std::bit_cast<float>(u));
    if (got != want && ++mismatches <= 10) {
      ADD_FAILURE() << "float bits " << hex(u) << " (" << std::bit_cast<float>(u) << "): got "
                    << hex(got) << ", want " << hex(want);
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << inputs.size() << " inputs";
}

TEST(SimtFp16, FloatToHalfMatchesTheBitLevelReference) {
  expect_matches_reference(half_bits, kHalf);
  expect_matches_reference(half_bits_rn, kHalf);
}

TEST(SimtFp16, FloatToBfloat16MatchesTheBitLevelReference) {
  expect_matches_reference(bf16_bits, kBfloat16);
  expect_matches_reference(bf16_bits_rn, kBfloat16);
}

TEST(SimtFp16, ReferenceAgreesWithValuesWorkedByHand) {
  // The reference itself, on values whose rounding is known from the formats' definitions.
  const auto h = [](float f) { return round_to(std::bit_cast<std::uint32_t>(f), kHalf); };
  const auto b = [](float f) { return round_to(std::bit_cast<std::uint32_t>(f), kBfloat16); };
  EXPECT_EQ(h(1.0f), 0x3C00);
  EXPECT_EQ(h(65504.0f), 0x7BFF);                  // the largest half
  EXPECT_EQ(h(65519.0f), 0x7BFF);                  // below the tie: down
  EXPECT_EQ(h(65520.0f), 0x7C00);                  // the tie with 2^16 goes to even: inf
  EXPECT_EQ(h(std::ldexp(1.0f, -24)), 0x0001);     // the smallest subnormal
  EXPECT_EQ(h(std::ldexp(1.0f, -25)), 0x0000);     // half of it: a tie, to even (zero)
  EXPECT_EQ(h(std::ldexp(3.0f, -25)), 0x0002);     // 1.5 units: a tie, to even (two)
  EXPECT_EQ(h(std::ldexp(1023.5f, -24)), 0x0400);  // the tie that carries into the normals
  EXPECT_EQ(h(-0.0f), 0x8000);
  EXPECT_EQ(h(NAN), 0x7FFF);
  EXPECT_EQ(b(1.0f), 0x3F80);
  EXPECT_EQ(b(1.0f + std::ldexp(1.0f, -8)), 0x3F80);  // a tie: to even
  EXPECT_EQ(b(1.0f + std::ldexp(3.0f, -8)), 0x3F82);  // a tie: to even, upward
  EXPECT_EQ(b(FLT_MAX), 0x7F80);                      // rounds up past the largest bfloat16
  EXPECT_EQ(b(FLT_TRUE_MIN), 0x0000);                 // 2^-149 is far below half a unit
  EXPECT_EQ(b(std::ldexp(1.0f, -133)), 0x0001);       // the smallest bfloat16 subnormal
}

TEST(SimtFp16, EveryNanBecomesCudasCanonicalNan) {
  for (const std::uint32_t nan : {0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFFFFFFFFu}) {
    EXPECT_EQ(half_bits(std::bit_cast<float>(nan)), 0x7FFF) << hex(nan);
    EXPECT_EQ(bf16_bits(std::bit_cast<float>(nan)), 0x7FFF) << hex(nan);
  }
}

TEST(SimtFp16, HalfToFloatIsExactForEveryBitPattern) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float got = __half2float(__ushort_as_half(static_cast<std::uint16_t>(bits)));
    const float want = decode(static_cast<std::uint16_t>(bits), kHalf);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << hex(bits);
    } else {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(got), std::bit_cast<std::uint32_t>(want)) << hex(bits);
    }
  }
}

TEST(SimtFp16, Bfloat16ToFloatIsExactForEveryBitPattern) {
  for (std::uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float got = __bfloat162float(__ushort_as_bfloat16(static_cast<std::uint16_t>(bits)));
    const std::uint32_t want = bits << 16;  // bfloat16 is the top half of a float
    if (std::isnan(std::bit_cast<float>(want))) {
      EXPECT_TRUE(std::isnan(got)) << hex(bits);
    } else {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(got), want) << hex(bits);
    }
  }
}

TEST(SimtFp16, PairsKeepTheirOrder) {
  const __half2 h = __floats2half2_rn(1.5f, -2.0f);
  EXPECT_EQ(__half2float(__low2half(h)), 1.5f);
  EXPECT_EQ(__half2float(__high2half(h)), -2.0f);
  const float2 hf = __half22float2(__halves2half2(__float2half(3.0f), __float2half(4.0f)));
  EXPECT_EQ(hf.x, 3.0f);
  EXPECT_EQ(hf.y, 4.0f);
  const __nv_bfloat162 b = __floats2bfloat162_rn(0.5f, 8.0f);
  EXPECT_EQ(__bfloat162float(__low2bfloat16(b)), 0.5f);
  EXPECT_EQ(__bfloat162float(__high2bfloat16(b)), 8.0f);
  const float2 bf =
      __bfloat1622float2(__halves2bfloat162(__float2bfloat16(-1.0f), __float2bfloat16(2.0f)));
  EXPECT_EQ(bf.x, -1.0f);
  EXPECT_EQ(bf.y, 2.0f);
}

}  // namespace
}  // namespace simt_tests
