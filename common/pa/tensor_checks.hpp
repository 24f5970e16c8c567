/// \file
/// ArgCheck's vocabulary for Tensor arguments: rank, dtype and exact shape, and membership in
/// a list of supported sizes, each failing with the standard "<function>: <argument> — expected
/// <expected>, got <actual>" message.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "pa/checks.hpp"
#include "pa/tensor.hpp"

namespace pa {

/// Returns "{64, 80, 96}", the notation messages use for a list of supported sizes.
template <std::size_t N>
std::string list_string(const std::array<int, N>& values) {
  std::string s = "{";
  for (std::size_t i = 0; i < N; ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "}";
}

/// Returns true when `v` is one of `values`.
template <std::size_t N>
bool is_one_of(const std::array<int, N>& values, std::int64_t v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

/// Requires `t` to have exactly `shape`; `how` says where the expected extents come from.
inline void shape_is(const ArgCheck& check, const std::string& name, const Tensor& t,
                     const std::vector<std::int64_t>& shape, const std::string& how) {
  check.that(t.shape() == shape, name + ".shape", Tensor::format_shape(shape) + " (" + how + ")",
             t.shape_string());
}

/// Requires `t` to hold `dtype` elements; `why` says why that one.
inline void dtype_is(const ArgCheck& check, const std::string& name, const Tensor& t, DType dtype,
                     const std::string& why) {
  check.that(t.dtype() == dtype, name + ".dtype", dtype_name(dtype) + " (" + why + ")",
             dtype_name(t.dtype()));
}

/// Requires `t` to have `rank` dimensions; `layout` names them.
inline void rank_is(const ArgCheck& check, const std::string& name, const Tensor& t, int rank,
                    const std::string& layout) {
  check.that(t.dim() == rank, name + ".dim()", std::to_string(rank) + " (" + layout + ")",
             std::to_string(t.dim()) + " " + t.shape_string());
}

}  // namespace pa
