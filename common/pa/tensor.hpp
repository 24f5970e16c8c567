/// \file
/// The host vocabulary of the CUDA labs: an element type (DType) and a dense row-major host
/// tensor (Tensor), the stand-ins for the torch dtypes and tensors that vLLM's ops take.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace pa {

/// [dtype]
/// Element types: float32/float16/bfloat16 for activations and caches, int32 for block tables
/// and lengths, int64 for slot mappings (as in vLLM).
enum class DType { kFloat32, kFloat16, kBFloat16, kInt32, kInt64 };
/// [dtype]

/// Returns the bytes one element of `dtype` occupies.
constexpr std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
      return 2;
    case DType::kBFloat16:
      return 2;
    case DType::kInt32:
      return 4;
    case DType::kInt64:
      return 8;
  }
  return 0;
}

/// Returns the name error messages use: "float32", "float16", "bfloat16", "int32", "int64".
inline std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
  }
  return "?";
}

/// Returns true for the three activation types (float32, float16, bfloat16).
constexpr bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

/// Returns x, the innermost extent of vLLM's V0 key cache: how many elements fill 16 bytes (4
/// for float32, 8 for float16 and bfloat16), so one thread's read of x neighbours is one load.
constexpr int x_of(DType dtype) {
  return static_cast<int>(16 / dtype_size(dtype));
}

/// [tensor]
/// A dense, row-major host tensor: a dtype, a shape and the bytes. The launchers copy it to
/// device memory and back.
class Tensor {
 public:
  Tensor() = default;

  /// A zero-filled tensor of the given dtype and shape; throws on a negative extent.
  Tensor(DType dtype, std::vector<std::int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
    for (const std::int64_t extent : shape_) {
      if (extent < 0) throw std::invalid_argument("Tensor: negative extent in " + shape_string());
    }
    bytes_.assign(static_cast<std::size_t>(numel()) * dtype_size(dtype_), 0);
  }

  DType dtype() const { return dtype_; }
  const std::vector<std::int64_t>& shape() const { return shape_; }
  int dim() const { return static_cast<int>(shape_.size()); }
  std::int64_t size(int d) const { return shape_.at(static_cast<std::size_t>(d)); }
  std::int64_t numel() const {
    return std::accumulate(shape_.begin(), shape_.end(), std::int64_t{1},
                           std::multiplies<std::int64_t>());
  }
  std::size_t nbytes() const { return bytes_.size(); }

  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }

  /// The bytes as elements of T (the caller picks the T that matches dtype()).
  template <class T>
  T* data_as() {
    return reinterpret_cast<T*>(bytes_.data());
  }
  template <class T>
  const T* data_as() const {
    return reinterpret_cast<const T*>(bytes_.data());
  }

  /// Sets every byte to `byte` (0xFF makes every float32/float16/bfloat16 element a NaN).
  void fill_bytes(unsigned char byte) { std::memset(bytes_.data(), byte, bytes_.size()); }

  /// Returns "[2, 8, 128]", the notation the error messages use.
  std::string shape_string() const { return format_shape(shape_); }

  /// Returns `shape` as "[2, 8, 128]".
  static std::string format_shape(const std::vector<std::int64_t>& shape) {
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i) {
      s += (i ? ", " : "") + std::to_string(shape[i]);
    }
    return s + "]";
  }

 private:
  DType dtype_ = DType::kFloat32;
  std::vector<std::int64_t> shape_;
  std::vector<unsigned char> bytes_;  // operator new: aligned for 16-byte vector copies
};
/// [tensor]

}  // namespace pa
