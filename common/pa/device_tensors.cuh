/// \file
/// Host code every CUDA lab's launchers share (given code): pa::Tensor to and from simt device
/// buffers, and the dispatch from a runtime DType to the device element type a kernel template
/// takes. CUDA C++, compiled once per backend like the launchers that include it; everything
/// lives in pa::device::SIMT_BACKEND (an inline namespace).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "pa/tensor.hpp"
#include "simt/cuda.hpp"

namespace pa::device {
inline namespace SIMT_BACKEND {

/// Returns a device copy of `t` as elements of T (the caller picks the T that matches its dtype).
template <typename T>
simt::DeviceBuffer<T> to_device(const Tensor& t) {
  simt::DeviceBuffer<T> buffer(static_cast<std::size_t>(t.numel()));  // [t.numel()]
  buffer.upload(t.data_as<T>(), buffer.size());
  return buffer;
}

/// Returns a device copy of `t`'s bytes, whatever its dtype: [t.nbytes()].
inline simt::DeviceBuffer<unsigned char> bytes_to_device(const Tensor& t) {
  simt::DeviceBuffer<unsigned char> buffer(t.nbytes());
  buffer.upload(static_cast<const unsigned char*>(t.data()), t.nbytes());
  return buffer;
}

/// Copies `buffer` back over the elements of `t`, which has as many.
template <typename T>
void to_host(const simt::DeviceBuffer<T>& buffer, Tensor& t) {
  buffer.download(t.data_as<T>(), buffer.size());
}

/// Returns the bytes of a device buffer seen as elements of T (T must match the tensor's dtype).
template <typename T>
T* as_elements(simt::DeviceBuffer<unsigned char>& buffer) {
  return reinterpret_cast<T*>(buffer.data());
}

/// Returns a device buffer of `n` floats, every one NaN: an element a kernel forgets cannot pass.
inline simt::DeviceBuffer<float> nan_floats(std::size_t n) {
  simt::DeviceBuffer<float> buffer(n);
  buffer.fill_bytes(0xFF);
  return buffer;
}

/// Calls f(std::type_identity<scalar_t>{}) with the device type of `dtype`: float, __half or
/// __nv_bfloat16.
template <class F>
void with_scalar_t(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(std::type_identity<float>{});
    case DType::kFloat16: return f(std::type_identity<__half>{});
    case DType::kBFloat16: return f(std::type_identity<__nv_bfloat16>{});
    default: throw std::logic_error("with_scalar_t: not an activation dtype (checks missed it)");
  }
}

/// The same for the tensor cores' two input types, float16 and bfloat16.
template <class F>
void with_16bit_t(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat16: return f(std::type_identity<__half>{});
    case DType::kBFloat16: return f(std::type_identity<__nv_bfloat16>{});
    default: throw std::logic_error("with_16bit_t: not float16 or bfloat16 (checks missed it)");
  }
}

namespace detail {
template <const auto& kValues, class F, std::size_t... I>
bool call_with_match(int value, F& f, std::index_sequence<I...>) {
  return ((value == kValues[I] ? (f(std::integral_constant<int, kValues[I]>{}), true) : false) ||
          ...);
}
}  // namespace detail

/// Calls f(std::integral_constant<int, v>{}) for the v of the constexpr array `kValues` (a lab's
/// kSupported... list, so the sizes a kernel is instantiated for are written once) that equals
/// `value`; throws std::logic_error naming `name` when none does (the checks refuse it first).
template <const auto& kValues, class F>
void with_one_of(int value, const char* name, F&& f) {
  if (!detail::call_with_match<kValues>(value, f, std::make_index_sequence<kValues.size()>{})) {
    throw std::logic_error(std::string("with_one_of: unsupported ") + name + " " +
                           std::to_string(value) + " (checks missed it)");
  }
}

}  // namespace SIMT_BACKEND
}  // namespace pa::device
