// Lab 07, given: the host side of both kernels. CUDA C++, compiled once per backend (by the
// host compiler against the SIMT emulator, and by nvcc when CMake finds it). It includes the
// kernels from the file the build picks (PA_LAB_IMPL: your starter.cpp, or the reference
// solution), then, for each call: copies the host tensors to device buffers, picks the kernel
// instantiation for the runtime dtype / head size / block size, sizes the split and the
// buffers of its partial results, opts into the shared memory, launches, asks whether the
// kernel was still a skeleton, and copies the result back.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "given/backend.hpp"
#include "given/checks.hpp"
#include "given/kernel_support.cuh"
#include "pa/device_tensors.cuh"
#include "simt/occupancy.hpp"
#include "simt/timing.hpp"

#include PA_LAB_IMPL  // the kernels: reshape_and_cache_flash_kernel, gqa_decode_kernel

namespace pa::cuda_gqa::SIMT_BACKEND {
namespace {

using pa::device::as_elements;
using pa::device::bytes_to_device;
using pa::device::to_device;
using pa::device::to_host;
using pa::device::with_16bit_t;
using pa::device::with_one_of;
using pa::device::with_scalar_t;

/// One instantiation of the decode kernel: element type, head size and block size.
template <typename T, int HEAD, int BLOCK>
struct DecodeConfig {
  using scalar_t = T;
  static constexpr int head_size = HEAD;
  static constexpr int block_size = BLOCK;
};

/// Calls f(DecodeConfig<scalar_t, HEAD_SIZE, BLOCK_SIZE>{}) for the runtime dtype and sizes; the
/// instantiations are those of kSupportedHeadSizes × kSupportedBlockSizes × the two 16-bit types.
template <class F>
void with_decode_config(DType dtype, int head_size, int block_size, F&& f) {
  with_16bit_t(dtype, [&](auto scalar) {
    using scalar_t = typename decltype(scalar)::type;
    with_one_of<kSupportedBlockSizes>(block_size, "block_size", [&](auto block) {
      with_one_of<kSupportedHeadSizes>(head_size, "head_size", [&](auto head) {
        f(DecodeConfig<scalar_t, decltype(head)::value, decltype(block)::value>{});
      });
    });
  });
}

/// [launcher]
/// gqa_decode's operands in this backend's device memory, and the launch on them.
class Session final : public DeviceSession::Impl {
 public:
  /// Copies the operands to the device; api.cpp has run checks::decode on them.
  explicit Session(const DecodeArgs& a)
      : dtype_(a.query.dtype()),
        out_shape_(a.query.shape()),
        num_seqs_(static_cast<int>(a.query.size(0))),
        num_heads_(static_cast<int>(a.query.size(1))),
        head_size_(static_cast<int>(a.query.size(2))),
        block_size_(static_cast<int>(a.key_cache.size(1))),
        num_kv_heads_(static_cast<int>(a.key_cache.size(2))),
        max_num_blocks_per_seq_(static_cast<int>(a.block_tables.size(1))),
        occupancy_(decode_occupancy(a)),
        partition_size_(a.partition_size != 0
                            ? a.partition_size
                            : default_partition_size(num_seqs_, num_kv_heads_, a.max_seq_len,
                                                     occupancy_.slots())),
        max_num_partitions_((a.max_seq_len + partition_size_ - 1) / partition_size_),
        scale_(a.scale) {
    query_ = bytes_to_device(a.query);              // [num_seqs, num_heads, head_size]
    key_cache_ = bytes_to_device(a.key_cache);      // [blocks, block_size, kv_heads, head_size]
    value_cache_ = bytes_to_device(a.value_cache);  // [blocks, block_size, kv_heads, head_size]
    block_tables_ = to_device<std::int32_t>(a.block_tables);     // [num_seqs, max_blocks_per_seq]
    seq_lens_ = to_device<std::int32_t>(a.seq_lens);             // [num_seqs]
    out_ = simt::DeviceBuffer<unsigned char>(a.query.nbytes());  // [num_seqs, heads, head_size]
    out_.fill_bytes(0xFF);  // NaN: an element the kernel forgets to write cannot pass
    // The partial results of the split, NaN until written: a merge that reads a partition the
    // sequence does not have reads NaN.
    const std::size_t rows = std::size_t(num_seqs_) * num_heads_ * max_num_partitions_;
    exp_sums_ = simt::DeviceBuffer<float>(rows);    // [num_seqs, num_heads, max_partitions]
    max_logits_ = simt::DeviceBuffer<float>(rows);  // [num_seqs, num_heads, max_partitions]
    tmp_out_ = simt::DeviceBuffer<float>(rows * head_size_);  // [.., max_partitions, head_size]
    exp_sums_.fill_bytes(0xFF);
    max_logits_.fill_bytes(0xFF);
    tmp_out_.fill_bytes(0xFF);
    arrivals_ = simt::DeviceBuffer<int>(std::size_t(num_seqs_) * num_kv_heads_);  // [seqs, kv]
    // Zero at the session's start; every launch leaves it at 0 again (the last partition of a
    // pair resets its counter), and a launch that fails zeroes it again before it reports.
    arrivals_.fill_bytes(0);
    // Opt in past the default 48 KiB of shared memory (head size 256) once, not in the timed
    // launches.
    with_decode_config(dtype_, head_size_, block_size_, [&](auto config) {
      using Config = decltype(config);
      simt::set_max_dynamic_shared_bytes(
          &gqa_decode_kernel<typename Config::scalar_t, Config::head_size, Config::block_size>,
          SharedLayout{Config::head_size}.bytes());
    });
  }

  /// Queues the kernel without waiting (simt::enqueue): the path the benchmark times.
  void enqueue() {
    with_decode_config(dtype_, head_size_, block_size_, [&](auto config) {
      using Config = decltype(config);
      using scalar_t = typename Config::scalar_t;
      const auto kernel = &gqa_decode_kernel<scalar_t, Config::head_size, Config::block_size>;
      const std::size_t shared_bytes = SharedLayout{Config::head_size}.bytes();  // opted in

      const int kv_token_stride = num_kv_heads_ * head_size_;  // one token's heads side by side
      const std::int64_t kv_block_stride = std::int64_t{block_size_} * kv_token_stride;
      simt::enqueue(kernel, dim3(num_kv_heads_, num_seqs_, max_num_partitions_), dim3(kNumThreads),
                    shared_bytes, as_elements<scalar_t>(out_), exp_sums_.data(), max_logits_.data(),
                    tmp_out_.data(), arrivals_.data(), as_elements<const scalar_t>(query_),
                    as_elements<const scalar_t>(key_cache_),
                    as_elements<const scalar_t>(value_cache_), num_heads_, scale_,
                    block_tables_.data(), seq_lens_.data(), max_num_blocks_per_seq_,
                    partition_size_, num_heads_ * head_size_, kv_block_stride, kv_token_stride);
    });
  }

  /// Waits for the queued launches and throws what they left: a kernel's fault, or
  /// NotImplemented when the kernel is still a skeleton.
  void finish() const {
    simt::synchronize();
    throw_if_todo("gqa_decode_kernel", PA_LAB_IMPL);
  }

  /// The checked launch of tests and gqa_decode: queued, waited for and asked for the flag.
  void launch() override {
    try {
      enqueue();
      finish();
    } catch (...) {
      // A launch that died mid-grid may have left some pairs counted but never merged: the
      // next launch would then take the wrong block for the last one. Start it from zero.
      arrivals_.fill_bytes(0);
      throw;
    }
  }

  void download(Tensor& out) const override {
    if (timed_unchecked_) {  // the flag and the errors, once after any number of timed spans
      timed_unchecked_ = false;
      finish();
    }
    const ArgCheck check("DeviceSession::download");
    dtype_is(check, "out", out, dtype_, "the dtype of query");
    shape_is(check, "out", out, out_shape_, "the shape of query");
    out_.download(static_cast<unsigned char*>(out.data()), out.nbytes());
  }

  int partition_size() const override { return partition_size_; }

  /// The device's decode blocks per SM and SMs for `a`'s instantiation (simt::occupancy; on
  /// the emulator an H100's at kDesignRegisters).
  static simt::Occupancy decode_occupancy(const DecodeArgs& a) {
    simt::Occupancy result{1, 1};
    const int head_size = static_cast<int>(a.query.size(2));
    with_decode_config(a.query.dtype(), head_size, static_cast<int>(a.key_cache.size(1)),
                       [&](auto config) {
      using Config = decltype(config);
      const auto kernel =
          &gqa_decode_kernel<typename Config::scalar_t, Config::head_size, Config::block_size>;
      const std::size_t bytes = SharedLayout{Config::head_size}.bytes();
      simt::set_max_dynamic_shared_bytes(kernel, bytes);  // the occupancy query needs it too
      result = simt::occupancy(kernel, kNumThreads, bytes, kDesignRegisters);
    });
    return result;
  }

  double timed_launch() override {
    timed_unchecked_ = true;
    return timing_.launch([&] { enqueue(); });  // the kernel alone in the span
  }
  double timed_read_roofline() override { return timing_.read_roofline(cache_spans()); }

 private:
  std::vector<simt::DeviceSpan> cache_spans() const {
    return {{key_cache_.data(), key_cache_.size()}, {value_cache_.data(), value_cache_.size()}};
  }

  DType dtype_;
  std::vector<std::int64_t> out_shape_;
  int num_seqs_, num_heads_, head_size_, block_size_, num_kv_heads_, max_num_blocks_per_seq_;
  simt::Occupancy occupancy_;
  int partition_size_, max_num_partitions_;
  float scale_;
  simt::DeviceBuffer<unsigned char> query_, key_cache_, value_cache_, out_;  // bytes of dtype_
  simt::DeviceBuffer<std::int32_t> block_tables_, seq_lens_;
  simt::DeviceBuffer<float> exp_sums_, max_logits_, tmp_out_;
  simt::DeviceBuffer<int> arrivals_;
  simt::SessionTiming timing_;
  mutable bool timed_unchecked_ = false;  // timed launches since the last finish()
};
/// [launcher]

class BackendLaunchers final : public Launchers {
 public:
  /// [reshape_and_cache_flash]
  void reshape_and_cache_flash(const Tensor& key, const Tensor& value, Tensor& key_cache,
                               Tensor& value_cache, const Tensor& slot_mapping) const override {
    const int num_tokens = static_cast<int>(key.size(0));
    const int num_kv_heads = static_cast<int>(key.size(1));
    const int head_size = static_cast<int>(key.size(2));
    const int block_size = static_cast<int>(key_cache.size(1));
    with_scalar_t(key.dtype(), [&](auto scalar) {
      using scalar_t = typename decltype(scalar)::type;
      const auto d_key = to_device<scalar_t>(key);        // [num_tokens, num_kv_heads, head_size]
      const auto d_value = to_device<scalar_t>(value);    // [num_tokens, num_kv_heads, head_size]
      auto d_key_cache = to_device<scalar_t>(key_cache);  // [blocks, block_size, kv_heads, head]
      auto d_value_cache = to_device<scalar_t>(value_cache);       // the same
      const auto d_slots = to_device<std::int64_t>(slot_mapping);  // [num_tokens]
      const int width = num_kv_heads * head_size;  // a token's elements: also its page stride
      simt::launch(reshape_and_cache_flash_kernel<scalar_t>, dim3(num_tokens),
                   dim3(std::min(width, 512)), 0, d_key.data(), d_value.data(), d_key_cache.data(),
                   d_value_cache.data(), d_slots.data(), width, width,
                   std::int64_t{block_size} * width, width, head_size, num_kv_heads, head_size,
                   block_size);
      throw_if_todo("reshape_and_cache_flash_kernel", PA_LAB_IMPL);
      to_host(d_key_cache, key_cache);
      to_host(d_value_cache, value_cache);
    });
  }
  /// [reshape_and_cache_flash]

  std::unique_ptr<DeviceSession::Impl> open_session(const DecodeArgs& args) const override {
    return std::make_unique<Session>(args);
  }

  int device_count() const override { return simt::cuda_device_count(); }
};

}  // namespace

const Launchers& launchers() {
  static const BackendLaunchers instance;
  return instance;
}

}  // namespace pa::cuda_gqa::SIMT_BACKEND
