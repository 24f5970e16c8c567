/// \file
/// The elements of a Tensor as float64, for the CUDA labs' tests and benchmarks: read and write
/// one element whatever its dtype, round a value as a dtype stores it, and move whole tensors to
/// and from Eigen matrices. No GoogleTest.
#pragma once

#include <cstdint>
#include <vector>

#include "pa/tensor.hpp"
#include "pa/types.hpp"

namespace pa::testing {

/// Returns element i (flat, row-major) of `t` widened to double.
double load(const Tensor& t, std::int64_t i);

/// Stores `v` into element i of `t`, rounded to t's dtype (to nearest even).
void store(Tensor& t, std::int64_t i, double v);

/// Returns the value `v` becomes once stored as `dtype`: what a kernel reading it will see.
double round_to(DType dtype, double v);

/// Returns `m` with every element rounded to `dtype`.
Mat rounded(DType dtype, Mat m);

/// Returns a tensor of `shape` holding the elements of `m` in row-major order (rounded to
/// dtype); numel of `shape` must equal m.size().
Tensor to_tensor(DType dtype, const Mat& m, std::vector<std::int64_t> shape);

/// Returns the elements of `t` as a [rows, cols] matrix (rows * cols == t.numel()).
Mat to_mat(const Tensor& t, Eigen::Index rows, Eigen::Index cols);

}  // namespace pa::testing
