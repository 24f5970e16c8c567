/// \file
/// The numeric types every lab shares: float64 matrices and int32 index vectors.
#pragma once

#include <Eigen/Dense>

namespace pa {

/// [types]
/// A row-major float64 matrix: row i is token (or head) i, as in a real KV cache.
using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A float64 column vector: one query, one output row, one score row.
using Vec = Eigen::VectorXd;

/// An int32 vector: block tables, slot mappings and lengths are int32 in real engines.
using IVec = Eigen::VectorXi;
/// [types]

}  // namespace pa
