/// \file
/// Timing device work the same way on both backends, for the CUDA labs' benchmarks:
///   DeviceTimer   a span on the device's clock (CUDA events), or the host's on the emulator
///   L2Flusher     evicts the GPU's L2 before a timed span, so operands come from DRAM
///   FlushedTimer  a span timed after a flush: what every timed call below does
///   ReadRoofline  the yardstick: one kernel that only reads the given buffers (16-byte loads,
///                 four in flight per thread, an XOR reduction), timed like the kernel it is
///                 compared with: what this device reads per second when reading is all it does
///   DeviceCopy    a second yardstick: cudaMemcpy device to device of the same buffers
///   SessionTiming what a lab's timed session holds: its launch and both yardsticks, timed alike
/// Include after (or instead of) "simt/cuda.hpp"; everything lives in the backend's namespace.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "simt/cuda.hpp"

namespace simt {
inline namespace SIMT_BACKEND {

#if defined(__CUDACC__)
/// Times device work on the GPU's clock: an event before the span and one after it, both in the
/// default stream. Work queued in between without waiting (simt::enqueue) is timed alone; work
/// that waits on the host (simt::launch) would add its round trips to the span.
class DeviceTimer {
 public:
  DeviceTimer() {
    detail::check(cudaEventCreate(&start_), "DeviceTimer: cudaEventCreate");
    detail::check(cudaEventCreate(&stop_), "DeviceTimer: cudaEventCreate");
  }
  ~DeviceTimer() {
    (void)cudaEventDestroy(start_);  // a destructor must not throw
    (void)cudaEventDestroy(stop_);
  }
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  /// Marks the start of the span in the stream.
  void start() { detail::check(cudaEventRecord(start_), "DeviceTimer: cudaEventRecord"); }

  /// Marks the end of the span, waits for it and returns its length in seconds.
  double stop_seconds() {
    detail::check(cudaEventRecord(stop_), "DeviceTimer: cudaEventRecord");
    detail::check(cudaEventSynchronize(stop_), "DeviceTimer: cudaEventSynchronize");
    float ms = 0.f;
    detail::check(cudaEventElapsedTime(&ms, start_, stop_), "DeviceTimer: cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
  }

 private:
  cudaEvent_t start_{};
  cudaEvent_t stop_{};
};

/// Evicts everything from the GPU's L2 cache by writing a buffer twice its size; queued before
/// a span's start event, so its own time is not counted.
class L2Flusher {
 public:
  L2Flusher() {
    int device = 0, l2_bytes = 0;
    detail::check(cudaGetDevice(&device), "L2Flusher: cudaGetDevice");
    detail::check(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device),
                  "L2Flusher: cudaDeviceGetAttribute");
    buffer_ = DeviceBuffer<unsigned char>(2 * static_cast<std::size_t>(std::max(l2_bytes, 1)));
  }
  void flush() { buffer_.fill_bytes(++byte_); }

 private:
  DeviceBuffer<unsigned char> buffer_;  // [2 * L2 bytes]
  unsigned char byte_ = 0;
};

/// Queues dst[0, bytes) = src[0, bytes), both device memory, on the default stream without
/// waiting (the timer's stop event waits).
inline void copy_device_to_device(void* dst, const void* src, std::size_t bytes) {
  detail::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice),
                "copy_device_to_device");
}

/// Thread blocks for a kernel that strides over a buffer: enough to fill every SM several times.
inline int grid_stride_blocks() {
  int device = 0, sms = 0;
  detail::check(cudaGetDevice(&device), "grid_stride_blocks: cudaGetDevice");
  detail::check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
                "grid_stride_blocks: cudaDeviceGetAttribute");
  return 8 * std::max(sms, 1);
}
#else
/// Times work on the host's steady clock: the emulator runs every kernel on the calling thread.
class DeviceTimer {
 public:
  void start() { start_ = std::chrono::steady_clock::now(); }
  double stop_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_{};
};

/// Nothing to flush: the emulator's device memory is host memory, and its timings are not
/// about caches.
class L2Flusher {
 public:
  void flush() {}
};

/// dst[0, bytes) = src[0, bytes) in the emulator's device memory (host memory).
inline void copy_device_to_device(void* dst, const void* src, std::size_t bytes) {
  std::memcpy(dst, src, bytes);
}

/// A few blocks: the emulator runs them one after another anyway.
inline int grid_stride_blocks() { return 4; }
#endif

/// One buffer in device memory that a yardstick reads: its address and length in bytes.
struct DeviceSpan {
  const void* data = nullptr;
  std::size_t bytes = 0;
};

/// Times device work as every benchmark here wants it: the L2 evicted first, outside the span,
/// then the span on the device's clock. The flush buffer is allocated at the first call, so an
/// object that is never timed costs nothing.
class FlushedTimer {
 public:
  /// Flushes, runs `work()` (which queues kernels with simt::enqueue: the span's stop event
  /// waits for them) and returns the seconds of the span.
  template <class Work>
  double time(Work&& work) {
    if (!flusher_) flusher_ = std::make_unique<L2Flusher>();
    flusher_->flush();
    timer_.start();
    work();
    return timer_.stop_seconds();
  }

 private:
  DeviceTimer timer_;
  std::unique_ptr<L2Flusher> flusher_;
};

namespace detail {
inline constexpr int kReadThreads = 256;
// The most buffers one pass reads (a lab's K and V caches are two), and the 16-byte loads each
// thread issues before it uses any: 64 bytes in flight per thread, so a short pass is not
// limited by one load's latency per step (the first version, one load per step and one launch
// per buffer, was slower than lab 06's v2 on a 33.5 MB batch).
inline constexpr int kMaxReadSpans = 4;
inline constexpr int kReadLoadsInFlight = 4;

/// The buffers of one pass, by value (a kernel argument): words[s] holds count[s] 16-byte words.
struct ReadSpans {
  const uint4* words[kMaxReadSpans] = {};
  std::size_t count[kMaxReadSpans] = {};
  int n = 0;
};

// Private to each translation unit that includes this header (a kernel cannot be `inline`):
// two labs' launchers, each with its copy, then link into one benchmark program.
namespace {

/// Reads every word of every span once with a grid-stride loop of 16-byte loads, kReadLoadsInFlight
/// at a time, folds them with XOR per thread, then per warp, and lane 0 of every warp XORs its fold
/// into *sink: only 4 bytes per warp are written, and *sink ends as the XOR of every 32-bit word
/// read (whatever the schedule: a test checks it), which also keeps the loads from being optimised
/// away.
__global__ void __launch_bounds__(kReadThreads)
    read_roofline_kernel(ReadSpans spans, unsigned int* __restrict__ sink) {
  unsigned int fold = 0;
  const std::size_t stride = static_cast<std::size_t>(blockDim.x) * gridDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int s = 0; s < spans.n; ++s) {
    const uint4* __restrict__ words = spans.words[s];  // [count]
    const std::size_t count = spans.count[s];
    std::size_t i = first;
    for (; i + (kReadLoadsInFlight - 1) * stride < count; i += kReadLoadsInFlight * stride) {
      uint4 w[kReadLoadsInFlight];
      for (int u = 0; u < kReadLoadsInFlight; ++u) w[u] = words[i + u * stride];
      for (int u = 0; u < kReadLoadsInFlight; ++u) fold ^= w[u].x ^ w[u].y ^ w[u].z ^ w[u].w;
    }
    for (; i < count; i += stride) {
      const uint4 w = words[i];
      fold ^= w.x ^ w.y ^ w.z ^ w.w;
    }
  }
  for (int mask = 16; mask >= 1; mask >>= 1) fold ^= __shfl_xor_sync(0xffffffffu, fold, mask);
  if (threadIdx.x % 32 == 0) atomicXor(sink, fold);
}
}  // namespace
}  // namespace detail

/// The read roofline over a set of device buffers: timed() runs one read-only kernel over all of
/// them (the L2 flushed first, outside the span) and returns the seconds of the pass.
/// Each buffer must be 16-byte aligned and a multiple of 16 bytes long; at most
/// detail::kMaxReadSpans buffers.
class ReadRoofline {
 public:
  explicit ReadRoofline(std::vector<DeviceSpan> spans) : spans_(std::move(spans)), sink_(1) {
    if (spans_.size() > static_cast<std::size_t>(detail::kMaxReadSpans)) {
      throw std::invalid_argument("ReadRoofline: spans — expected at most " +
                                  std::to_string(detail::kMaxReadSpans) + " buffers, got " +
                                  std::to_string(spans_.size()));
    }
    for (const DeviceSpan& s : spans_) {
      if (reinterpret_cast<std::uintptr_t>(s.data) % 16 != 0 || s.bytes % 16 != 0) {
        throw std::invalid_argument("ReadRoofline: every buffer must be 16-byte aligned and a "
                                    "multiple of 16 bytes long");
      }
      args_.words[args_.n] = static_cast<const uint4*>(s.data);
      args_.count[args_.n] = s.bytes / 16;
      ++args_.n;
    }
    sink_.fill_bytes(0);
  }

  /// Returns the total bytes one pass reads.
  std::size_t bytes() const {
    std::size_t total = 0;
    for (const DeviceSpan& s : spans_) total += s.bytes;
    return total;
  }

  /// Runs the pass once, flushed and timed, and returns its seconds.
  double timed() {
    return clock_.time([&] {
      enqueue(detail::read_roofline_kernel, dim3(grid_stride_blocks()),
              dim3(detail::kReadThreads), 0, args_, sink_.data());
    });
  }

  /// The XOR of every 32-bit word the passes so far have read, folded over the passes (an even
  /// number of passes over unchanged buffers gives 0): what the kernel leaves in its sink.
  unsigned int fold() const {
    unsigned int value = 0;
    synchronize();
    sink_.download(&value, 1);
    return value;
  }

 private:
  std::vector<DeviceSpan> spans_;
  detail::ReadSpans args_;
  DeviceBuffer<unsigned int> sink_;  // [1] the XOR of every word read
  FlushedTimer clock_;
};

/// The copy yardstick: timed() copies every buffer device to device (flushed first) and returns
/// the seconds; count it by the bytes it reads, like every series (a copy also writes them).
class DeviceCopy {
 public:
  explicit DeviceCopy(std::vector<DeviceSpan> spans) : spans_(std::move(spans)) {
    std::size_t total = 0;
    for (const DeviceSpan& s : spans_) total += s.bytes;
    target_ = DeviceBuffer<unsigned char>(total);
  }

  double timed() {
    return clock_.time([&] {
      std::size_t at = 0;
      for (const DeviceSpan& s : spans_) {
        copy_device_to_device(target_.data() + at, s.data, s.bytes);
        at += s.bytes;
      }
    });
  }

 private:
  std::vector<DeviceSpan> spans_;
  DeviceBuffer<unsigned char> target_;  // [total bytes]
  FlushedTimer clock_;
};

/// The timing half of a lab's benchmarked session (labs 05-07 share it): the session's kernels,
/// flushed and timed, and the two yardsticks over the session's K and V buffers, each built at
/// its first call. `caches` must name the same buffers on every call. `launch` is given the
/// session's queued path (kernels only, simt::enqueue, back to back on one stream): checks that
/// need the host (the skeleton flag, errors) come before and after the timed spans, not in them.
class SessionTiming {
 public:
  template <class Launch>
  double launch(Launch&& launch) {
    return clock_.time(launch);
  }
  double read_roofline(const std::vector<DeviceSpan>& caches) {
    if (!roofline_) roofline_ = std::make_unique<ReadRoofline>(caches);
    return roofline_->timed();
  }
  double cache_copy(const std::vector<DeviceSpan>& caches) {
    if (!copy_) copy_ = std::make_unique<DeviceCopy>(caches);
    return copy_->timed();
  }

 private:
  FlushedTimer clock_;
  std::unique_ptr<ReadRoofline> roofline_;
  std::unique_ptr<DeviceCopy> copy_;
};

}  // namespace SIMT_BACKEND
}  // namespace simt
