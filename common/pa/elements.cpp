#include "pa/elements.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace pa::testing {

double load(const Tensor& t, std::int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32:
      return t.data_as<float>()[i];
    case DType::kFloat16:
      return static_cast<float>(t.data_as<Eigen::half>()[i]);
    case DType::kBFloat16:
      return static_cast<float>(t.data_as<Eigen::bfloat16>()[i]);
    case DType::kInt32:
      return t.data_as<std::int32_t>()[i];
    case DType::kInt64:
      return static_cast<double>(t.data_as<std::int64_t>()[i]);
  }
  return 0.0;
}

void store(Tensor& t, std::int64_t i, double v) {
  switch (t.dtype()) {
    case DType::kFloat32:
      t.data_as<float>()[i] = static_cast<float>(v);
      break;
    case DType::kFloat16:
      t.data_as<Eigen::half>()[i] = Eigen::half(static_cast<float>(v));
      break;
    case DType::kBFloat16:
      t.data_as<Eigen::bfloat16>()[i] = Eigen::bfloat16(static_cast<float>(v));
      break;
    case DType::kInt32:
      t.data_as<std::int32_t>()[i] = static_cast<std::int32_t>(v);
      break;
    case DType::kInt64:
      t.data_as<std::int64_t>()[i] = static_cast<std::int64_t>(v);
      break;
  }
}

double round_to(DType dtype, double v) {
  const float f = static_cast<float>(v);
  switch (dtype) {
    case DType::kFloat16:
      return static_cast<float>(Eigen::half(f));
    case DType::kBFloat16:
      return static_cast<float>(Eigen::bfloat16(f));
    default:
      return f;
  }
}

Mat rounded(DType dtype, Mat m) {
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = round_to(dtype, m.data()[i]);
  return m;
}

Tensor to_tensor(DType dtype, const Mat& m, std::vector<std::int64_t> shape) {
  Tensor t(dtype, std::move(shape));
  if (t.numel() != m.size()) {
    throw std::invalid_argument("to_tensor: " + t.shape_string() + " does not hold " +
                                std::to_string(m.size()) + " elements");
  }
  for (Eigen::Index i = 0; i < m.size(); ++i) store(t, i, m.data()[i]);
  return t;
}

Mat to_mat(const Tensor& t, Eigen::Index rows, Eigen::Index cols) {
  if (rows * cols != t.numel()) {
    throw std::invalid_argument("to_mat: " + t.shape_string() + " is not [" + std::to_string(rows) +
                                ", " + std::to_string(cols) + "]");
  }
  Mat m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = load(t, i);
  return m;
}

}  // namespace pa::testing
