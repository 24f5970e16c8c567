/// \file
/// Lab 05, given host code: the launchers behind reshape_and_cache and paged_attention_v1.
/// Each copies the host tensors into device buffers, picks the kernel instantiation for the
/// runtime dtype, head size and block size, sizes the dynamic shared memory and opts into it,
/// launches, asks whether the kernel was still a skeleton, and copies the result back.
/// The attention launch lives in a session that V1DeviceSession also keeps, so bench_lab.cpp
/// times the very launch the tests run. starter.cpp and the reference solution both include
/// this file at the bottom, after their two kernels (the launchers name them): one copy for
/// both, not to be edited.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernel_support.cuh"

namespace pa::cuda_v1::SIMT_BACKEND {
namespace {

/// A device copy of `t`, element type T (the caller picks the T that matches t.dtype()).
template <typename T>
simt::DeviceBuffer<T> to_device(const Tensor& t) {
  simt::DeviceBuffer<T> buffer(static_cast<std::size_t>(t.numel()));  // [t.numel()]
  buffer.upload(t.data_as<T>(), buffer.size());
  return buffer;
}

/// Copies `buffer` back over the bytes of `t`, which has as many elements.
template <typename T>
void to_host(const simt::DeviceBuffer<T>& buffer, Tensor& t) {
  buffer.download(t.data_as<T>(), buffer.size());
}

/// A device copy of `t`'s bytes, whatever its dtype: [t.nbytes()].
simt::DeviceBuffer<unsigned char> bytes_to_device(const Tensor& t) {
  simt::DeviceBuffer<unsigned char> buffer(t.nbytes());
  buffer.upload(static_cast<const unsigned char*>(t.data()), t.nbytes());
  return buffer;
}

/// The bytes of a device buffer seen as elements of T (T must match the tensor's dtype).
template <typename T>
T* as_elements(simt::DeviceBuffer<unsigned char>& buffer) {
  return reinterpret_cast<T*>(buffer.data());
}

/// Calls f(std::type_identity<scalar_t>{}) with the device type of `dtype`.
template <class F>
void with_scalar_t(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32: return f(std::type_identity<float>{});
    case DType::kFloat16: return f(std::type_identity<__half>{});
    case DType::kBFloat16: return f(std::type_identity<__nv_bfloat16>{});
    default: throw std::logic_error("with_scalar_t: not an activation dtype (checks missed it)");
  }
}

/// One instantiation of the attention kernel: element type, head size and block size.
template <typename T, int HEAD, int BLOCK>
struct V1Config {
  using scalar_t = T;
  static constexpr int head_size = HEAD;
  static constexpr int block_size = BLOCK;
};

/// Calls f(V1Config<scalar_t, HEAD_SIZE, BLOCK_SIZE>{}) for the runtime head size.
template <typename scalar_t, int BLOCK_SIZE, class F>
void with_head_size(int head_size, F&& f) {
  switch (head_size) {
    case 64: return f(V1Config<scalar_t, 64, BLOCK_SIZE>{});
    case 80: return f(V1Config<scalar_t, 80, BLOCK_SIZE>{});
    case 96: return f(V1Config<scalar_t, 96, BLOCK_SIZE>{});
    case 112: return f(V1Config<scalar_t, 112, BLOCK_SIZE>{});
    case 128: return f(V1Config<scalar_t, 128, BLOCK_SIZE>{});
    case 256: return f(V1Config<scalar_t, 256, BLOCK_SIZE>{});
    default: throw std::logic_error("with_head_size: unsupported head size (checks missed it)");
  }
}

/// Calls f(V1Config<scalar_t, HEAD_SIZE, BLOCK_SIZE>{}) for the runtime sizes: the only place
/// that names every supported instantiation.
template <class F>
void with_v1_config(DType dtype, int head_size, int block_size, F&& f) {
  with_scalar_t(dtype, [&](auto scalar) {
    using scalar_t = typename decltype(scalar)::type;
    switch (block_size) {
      case 8: return with_head_size<scalar_t, 8>(head_size, f);
      case 16: return with_head_size<scalar_t, 16>(head_size, f);
      case 32: return with_head_size<scalar_t, 32>(head_size, f);
      default: throw std::logic_error("with_v1_config: unsupported block size (checks missed it)");
    }
  });
}

/// The attention kernel instantiated for Config, with kNumThreads threads per block.
template <class Config>
constexpr auto v1_kernel() {
  return &paged_attention_v1_kernel<typename Config::scalar_t, Config::head_size,
                                    Config::block_size, kNumThreads>;
}

/// The dynamic shared memory this instantiation may use on this device, in bytes.
template <class Config>
std::size_t v1_shared_mem_limit() {
  return simt::max_dynamic_shared_bytes(v1_kernel<Config>());
}

/// Throws pa::NotImplemented if `kernel` ran as a skeleton. The flag and throw_if_todo live in
/// the file that has skeletons (starter.cpp defines PA_TODO_KERNEL); a file without any, like
/// the reference solution, has nothing to check.
void check_implemented([[maybe_unused]] const char* kernel) {
#if defined(PA_TODO_KERNEL)
  throw_if_todo(kernel);
#endif
}

/// The longest context whose logits (padded to whole blocks) fit in `limit_bytes`.
int tokens_within(std::size_t limit_bytes, int block_size) {
  const std::size_t floats = limit_bytes / sizeof(float);
  return static_cast<int>(floats / static_cast<std::size_t>(block_size)) * block_size;
}

// ---- Timing, for V1DeviceSession (bench_lab.cpp): the only code here that differs by backend

#if defined(__CUDACC__)
/// Times device work on the GPU's own clock: an event recorded into the stream before it and
/// one after it. The span also holds any idle time between them, e.g. the host's wake-up
/// from the cudaDeviceSynchronize that every simt::launch ends with.
class DeviceTimer {
 public:
  DeviceTimer() {
    simt::detail::check(cudaEventCreate(&start_), "DeviceTimer: cudaEventCreate");
    simt::detail::check(cudaEventCreate(&stop_), "DeviceTimer: cudaEventCreate");
  }
  ~DeviceTimer() {
    (void)cudaEventDestroy(start_);  // a destructor must not throw
    (void)cudaEventDestroy(stop_);
  }
  DeviceTimer(const DeviceTimer&) = delete;
  DeviceTimer& operator=(const DeviceTimer&) = delete;

  /// Marks the start of the span in the stream.
  void start() { simt::detail::check(cudaEventRecord(start_), "DeviceTimer: cudaEventRecord"); }

  /// Marks the end of the span, waits for it and returns its length in seconds.
  double stop_seconds() {
    simt::detail::check(cudaEventRecord(stop_), "DeviceTimer: cudaEventRecord");
    simt::detail::check(cudaEventSynchronize(stop_), "DeviceTimer: cudaEventSynchronize");
    float ms = 0.f;
    simt::detail::check(cudaEventElapsedTime(&ms, start_, stop_),
                        "DeviceTimer: cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e-3;
  }

 private:
  cudaEvent_t start_{};
  cudaEvent_t stop_{};
};

/// Evicts everything from the GPU's L2 cache by writing a buffer twice its size, so that a
/// timed span that follows reads its operands from device memory. The memset is queued before
/// the span's start event, so its own time is not counted.
class L2Flusher {
 public:
  L2Flusher() {
    int device = 0;
    int l2_bytes = 0;
    simt::detail::check(cudaGetDevice(&device), "L2Flusher: cudaGetDevice");
    simt::detail::check(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device),
                        "L2Flusher: cudaDeviceGetAttribute");
    const std::size_t bytes = 2 * static_cast<std::size_t>(std::max(l2_bytes, 1));
    buffer_ = simt::DeviceBuffer<unsigned char>(bytes);
  }
  void flush() { buffer_.fill_bytes(++byte_); }

 private:
  simt::DeviceBuffer<unsigned char> buffer_;  // [2 * L2 size]
  unsigned char byte_ = 0;
};

/// dst[0, bytes) = src[0, bytes), both in device memory, queued in the stream.
void copy_device_to_device(unsigned char* dst, const unsigned char* src, std::size_t bytes) {
  simt::detail::check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToDevice),
                      "copy_device_to_device");
}

/// Waits until the device is idle, as simt::launch does after every kernel.
void wait_for_device() {
  simt::detail::check(cudaDeviceSynchronize(), "wait_for_device");
}
#else
/// Times work on the host's steady clock: the emulator runs every kernel on the calling thread.
class DeviceTimer {
 public:
  /// Marks the start of the span.
  void start() { start_ = std::chrono::steady_clock::now(); }
  /// Returns the seconds since start().
  double stop_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_{};
};

/// Nothing to flush: the emulator's "device memory" is host memory, and its timings are not
/// about caches.
class L2Flusher {
 public:
  void flush() {}
};

/// dst[0, bytes) = src[0, bytes) in the emulator's device memory (host memory).
void copy_device_to_device(unsigned char* dst, const unsigned char* src, std::size_t bytes) {
  std::memcpy(dst, src, bytes);
}

/// The emulator's launches return when the kernel is done: nothing to wait for.
void wait_for_device() {}
#endif

}  // namespace

// The backend's half of the public API (paged_attention_v1.hpp declares it and dispatches to
// it); the contracts are the header's.

/// [reshape_and_cache]
void reshape_and_cache(const Tensor& key, const Tensor& value, Tensor& key_cache,
                       Tensor& value_cache, const Tensor& slot_mapping) {
  checks::reshape_and_cache(key, value, key_cache, value_cache, slot_mapping);
  const int num_tokens = static_cast<int>(key.size(0));
  const int num_kv_heads = static_cast<int>(key.size(1));
  const int head_size = static_cast<int>(key.size(2));
  const int block_size = static_cast<int>(key_cache.size(3));
  if (num_tokens == 0) return;
  with_scalar_t(key.dtype(), [&](auto scalar) {
    using scalar_t = typename decltype(scalar)::type;
    const auto d_key = to_device<scalar_t>(key);      // [num_tokens, num_kv_heads, head_size]
    const auto d_value = to_device<scalar_t>(value);  // [num_tokens, num_kv_heads, head_size]
    // [num_blocks, num_kv_heads, head_size/x, block_size, x]
    auto d_key_cache = to_device<scalar_t>(key_cache);
    // [num_blocks, num_kv_heads, head_size, block_size]
    auto d_value_cache = to_device<scalar_t>(value_cache);
    const auto d_slots = to_device<std::int64_t>(slot_mapping);  // [num_tokens]
    const int width = num_kv_heads * head_size;
    simt::launch(reshape_and_cache_kernel<scalar_t>, dim3(num_tokens), dim3(std::min(width, 512)),
                 0, d_key.data(), d_value.data(), d_key_cache.data(), d_value_cache.data(),
                 d_slots.data(), width, width, num_kv_heads, head_size, block_size,
                 x_of(key.dtype()));
    check_implemented("reshape_and_cache_kernel");
    to_host(d_key_cache, key_cache);
    to_host(d_value_cache, value_cache);
  });
}
/// [reshape_and_cache]

/// [launcher]
namespace {

/// paged_attention_v1's operands in this backend's device memory, and the launch on them. The
/// host launcher below makes one per call; V1DeviceSession keeps one for repeated launches.
class V1Session final : public detail::V1SessionBackend {
 public:
  /// Copies the operands to the device; the caller has run checks::paged_attention_v1.
  V1Session(const Tensor& query, const Tensor& key_cache, const Tensor& value_cache,
            int num_kv_heads, float scale, const Tensor& block_tables, const Tensor& seq_lens,
            int block_size, int max_seq_len)
      : dtype_(query.dtype()),
        out_shape_(query.shape()),
        num_seqs_(static_cast<int>(query.size(0))),
        num_heads_(static_cast<int>(query.size(1))),
        head_size_(static_cast<int>(query.size(2))),
        num_kv_heads_(num_kv_heads),
        block_size_(block_size),
        max_num_blocks_per_seq_(static_cast<int>(block_tables.size(1))),
        max_seq_len_(max_seq_len),
        scale_(scale) {
    // Shared memory: every logit of the longest sequence, bounded by what the device allows
    // (checked before anything is copied).
    with_v1_config(dtype_, head_size_, block_size_, [&](auto config) {
      const std::size_t limit = v1_shared_mem_limit<decltype(config)>();
      checks::context_fits(max_seq_len_, tokens_within(limit, block_size_), limit,
                           SIMT_BACKEND_NAME);
    });
    query_ = bytes_to_device(query);  // [num_seqs, num_heads, head_size]
    // [num_blocks, num_kv_heads, head_size/x, block_size, x]
    key_cache_ = bytes_to_device(key_cache);
    // [num_blocks, num_kv_heads, head_size, block_size]
    value_cache_ = bytes_to_device(value_cache);
    // [num_seqs, max_num_blocks_per_seq]
    block_tables_ = to_device<std::int32_t>(block_tables);
    seq_lens_ = to_device<std::int32_t>(seq_lens);  // [num_seqs]
    out_ = simt::DeviceBuffer<unsigned char>(query.nbytes());  // [num_seqs, num_heads, head_size]
    out_.fill_bytes(0xFF);  // NaN: an element the kernel forgets to write cannot pass
  }

  void launch() override {
    if (num_seqs_ == 0) return;
    with_v1_config(dtype_, head_size_, block_size_, [&](auto config) {
      using Config = decltype(config);
      using scalar_t = typename Config::scalar_t;
      const auto kernel = v1_kernel<Config>();
      const std::size_t shared_bytes = v1_shared_mem_bytes(head_size_, block_size_, max_seq_len_);
      simt::set_max_dynamic_shared_bytes(kernel, shared_bytes);  // opt in past the 48 KiB default

      const int kv_head_stride = head_size_ * block_size_;
      const int kv_block_stride = num_kv_heads_ * kv_head_stride;
      simt::launch(kernel, dim3(num_heads_, num_seqs_), dim3(kNumThreads), shared_bytes,
                   as_elements<scalar_t>(out_), as_elements<const scalar_t>(query_),
                   as_elements<const scalar_t>(key_cache_),
                   as_elements<const scalar_t>(value_cache_), num_kv_heads_, scale_,
                   block_tables_.data(), seq_lens_.data(), max_num_blocks_per_seq_,
                   num_heads_ * head_size_, kv_block_stride, kv_head_stride);
      check_implemented("paged_attention_v1_kernel");
    });
  }

  void download(Tensor& out) const override {
    const ArgCheck check("V1DeviceSession::download");
    checks::dtype_is(check, "out", out, dtype_, "the dtype of query");
    checks::shape_is(check, "out", out, out_shape_, "the shape of query");
    out_.download(static_cast<unsigned char*>(out.data()), out.nbytes());
  }

  double timed_launch() override {
    flusher().flush();
    timer_.start();
    launch();
    return timer_.stop_seconds();
  }

  double timed_cache_copy() override {
    const std::size_t key_bytes = key_cache_.size(), value_bytes = value_cache_.size();
    if (cache_copy_.size() != key_bytes + value_bytes) {
      cache_copy_ = simt::DeviceBuffer<unsigned char>(key_bytes + value_bytes);
    }
    flusher().flush();
    timer_.start();
    copy_device_to_device(cache_copy_.data(), key_cache_.data(), key_bytes);
    copy_device_to_device(cache_copy_.data() + key_bytes, value_cache_.data(), value_bytes);
    wait_for_device();  // as every launch does, so that both spans end alike
    return timer_.stop_seconds();
  }

 private:
  L2Flusher& flusher() {
    if (!flusher_) flusher_ = std::make_unique<L2Flusher>();  // only timed sessions need one
    return *flusher_;
  }

  DType dtype_;
  std::vector<std::int64_t> out_shape_;
  int num_seqs_, num_heads_, head_size_, num_kv_heads_, block_size_;
  int max_num_blocks_per_seq_, max_seq_len_;
  float scale_;
  simt::DeviceBuffer<unsigned char> query_, key_cache_, value_cache_, out_;  // bytes of dtype_
  simt::DeviceBuffer<std::int32_t> block_tables_, seq_lens_;
  DeviceTimer timer_;
  std::unique_ptr<L2Flusher> flusher_;
  simt::DeviceBuffer<unsigned char> cache_copy_;  // [key_cache bytes + value_cache bytes]
};

}  // namespace

void paged_attention_v1(Tensor& out, const Tensor& query, const Tensor& key_cache,
                        const Tensor& value_cache, int num_kv_heads, float scale,
                        const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                        int max_seq_len) {
  checks::paged_attention_v1(out, query, key_cache, value_cache, num_kv_heads, block_tables,
                             seq_lens, block_size, max_seq_len);
  if (query.size(0) == 0) return;
  V1Session session(query, key_cache, value_cache, num_kv_heads, scale, block_tables, seq_lens,
                    block_size, max_seq_len);
  session.launch();
  session.download(out);
}
/// [launcher]

std::unique_ptr<detail::V1SessionBackend> make_v1_session(
    const Tensor& query, const Tensor& key_cache, const Tensor& value_cache, int num_kv_heads,
    float scale, const Tensor& block_tables, const Tensor& seq_lens, int block_size,
    int max_seq_len) {
  // The session's output is its own, shaped like query: query stands in for it here.
  checks::paged_attention_v1(query, query, key_cache, value_cache, num_kv_heads, block_tables,
                             seq_lens, block_size, max_seq_len);
  return std::make_unique<V1Session>(query, key_cache, value_cache, num_kv_heads, scale,
                                     block_tables, seq_lens, block_size, max_seq_len);
}

int v1_max_seq_len(DType dtype, int head_size, int block_size) {
  checks::kernel_config(ArgCheck("v1_max_seq_len"), dtype, head_size, block_size);
  int tokens = 0;
  with_v1_config(dtype, head_size, block_size, [&](auto config) {
    tokens = tokens_within(v1_shared_mem_limit<decltype(config)>(), block_size);
  });
  return tokens;
}

int device_count() { return simt::cuda_device_count(); }

}  // namespace pa::cuda_v1::SIMT_BACKEND
