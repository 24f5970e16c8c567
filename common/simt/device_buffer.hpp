// simt::DeviceBuffer's one definition, shared by both backends: ownership, sizes and the count
// checks live here; each backend supplies only how its memory is allocated, copied and filled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace simt {

/// n elements of T in one backend's device memory: owned, movable, not copyable. `Memory`
/// provides static allocate(bytes), release(p) noexcept, to_device(dst, src, bytes),
/// to_host(dst, src, bytes), fill(p, byte, bytes) and name(p, name); each backend names its
/// instance DeviceBuffer<T>.
template <class T, class Memory>
class BasicDeviceBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "device memory holds trivially copyable values");

 public:
  BasicDeviceBuffer() = default;
  /// Allocates n elements, uninitialised, as cudaMalloc does.
  explicit BasicDeviceBuffer(std::size_t n)
      : data_(static_cast<T*>(Memory::allocate(checked_bytes(n)))), size_(n) {}
  ~BasicDeviceBuffer() { Memory::release(data_); }

  BasicDeviceBuffer(BasicDeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  BasicDeviceBuffer& operator=(BasicDeviceBuffer&& other) noexcept {
    if (this != &other) {
      Memory::release(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  BasicDeviceBuffer(const BasicDeviceBuffer&) = delete;
  BasicDeviceBuffer& operator=(const BasicDeviceBuffer&) = delete;

  /// Returns the device pointer to pass to a kernel.
  T* data() { return data_; }
  /// Returns the device pointer to pass to a kernel.
  const T* data() const { return data_; }
  /// Returns the number of elements.
  std::size_t size() const { return size_; }

  /// Copies n host elements to the start of the buffer; throws std::invalid_argument if n > size().
  void upload(const T* host, std::size_t n) {
    check_count("DeviceBuffer::upload", n);
    if (n > 0) Memory::to_device(data_, host, n * sizeof(T));
  }
  /// Copies the first n elements to host memory; throws std::invalid_argument if n > size().
  void download(T* host, std::size_t n) const {
    check_count("DeviceBuffer::download", n);
    if (n > 0) Memory::to_host(host, data_, n * sizeof(T));
  }
  /// Names the buffer in the emulator's memory-checker reports as the student knows it
  /// ("query", "key_cache"); a no-op on a GPU.
  void set_name(const char* name) const {
    if (data_ != nullptr) Memory::name(data_, name);
  }
  /// Sets every byte of the buffer to `byte` (0xFF makes every float NaN).
  void fill_bytes(unsigned char byte) {
    if (size_ > 0) Memory::fill(data_, byte, size_ * sizeof(T));
  }

 private:
  static std::size_t checked_bytes(std::size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::invalid_argument("DeviceBuffer: size overflows");
    return n * sizeof(T);
  }
  void check_count(const char* function, std::size_t n) const {
    if (n > size_) {
      throw std::invalid_argument(std::string(function) + ": n — expected at most " +
                                  std::to_string(size_) + " (the buffer's size), got " +
                                  std::to_string(n));
    }
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace simt
