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
#include "pa/device_session.cuh"
#include "pa/device_tensors.cuh"
#include "simt/occupancy.hpp"
#include "simt/timing.hpp"

#include PA_LAB_IMPL  // the kernels: reshape_and_cache_flash_kernel, gqa_decode_kernel

namespace pa::cuda_gqa::SIMT_BACKEND {
namespace {

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
/// gqa_decode's operands in this backend's device memory (SessionBase), the partial results of
/// the split, and the launch on them.
class Session final : public SessionBase, public PartitionStateReader {
 public:
  /// Copies the operands to the device; api.cpp has run checks::decode on them and turned a
  /// partition size of 0 into the default one (default_partition_size on decode_slots).
  explicit Session(const DecodeArgs& a)
      : SessionBase(a),
        block_size_(static_cast<int>(a.key_cache.size(1))),
        num_kv_heads_(static_cast<int>(a.key_cache.size(2))),
        partition_size_(a.partition_size),
        max_num_partitions_((a.max_seq_len + partition_size_ - 1) / partition_size_),
        scale_(a.scale) {
    // The partial results of the split, NaN until written: a merge that reads a partition the
    // sequence does not have reads NaN.
    const std::size_t rows = std::size_t(num_seqs_) * num_heads_ * max_num_partitions_;
    exp_sums_ = nan_floats(rows);              // [num_seqs, num_heads, max_partitions]
    max_logits_ = nan_floats(rows);            // [num_seqs, num_heads, max_partitions]
    tmp_out_ = nan_floats(rows * head_size_);  // [.., max_partitions, head_size]
    arrivals_ = simt::DeviceBuffer<int>(std::size_t(num_seqs_) * num_kv_heads_);  // [seqs, kv]
    // Zero at the session's start; every launch leaves it at 0 again (the last partition of a
    // pair resets its counter), and a launch that fails zeroes it again before it reports.
    arrivals_.fill_bytes(0);
    // The names the emulator's memory checker gives an access past these buffers' ends
    // (SessionBase names the operands).
    exp_sums_.set_name("exp_sums");
    max_logits_.set_name("max_logits");
    tmp_out_.set_name("tmp_out");
    arrivals_.set_name("arrivals");
    // Opt in past the default 48 KiB of shared memory (head size 256) once, not in the timed
    // launches.
    with_decode_config(dtype_, head_size_, block_size_, [&](auto config) {
      using Config = decltype(config);
      simt::set_max_dynamic_shared_bytes(
          &gqa_decode_kernel<typename Config::scalar_t, Config::head_size, Config::block_size>,
          SharedLayout{Config::head_size}.bytes());
    });
  }

  /// The checked launch of tests and gqa_decode: queued, waited for and asked for the flag. The
  /// split's buffers start it at NaN, so that partition_state() shows this launch's writes only.
  void checked_launch() override {
    for (auto* buffer : {&exp_sums_, &max_logits_, &tmp_out_}) buffer->fill_bytes(0xFF);
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

  /// The split's buffers, copied to the host as the last launch left them.
  PartitionState partition_state() const override {
    PartitionState state;
    state.max_num_partitions = max_num_partitions_;
    const std::int64_t seqs = num_seqs_, heads = num_heads_, parts = max_num_partitions_;
    state.max_logits = Tensor(DType::kFloat32, {seqs, heads, parts});
    state.exp_sums = Tensor(DType::kFloat32, {seqs, heads, parts});
    state.tmp_out = Tensor(DType::kFloat32, {seqs, heads, parts, std::int64_t{head_size_}});
    max_logits_.download(state.max_logits.data_as<float>(), max_logits_.size());
    exp_sums_.download(state.exp_sums.data_as<float>(), exp_sums_.size());
    tmp_out_.download(state.tmp_out.data_as<float>(), tmp_out_.size());
    return state;
  }

 protected:
  /// Queues the kernel without waiting (simt::enqueue): the path the benchmark times.
  void enqueue() override {
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

  void finish() const override {
    simt::synchronize();
    throw_if_todo("gqa_decode_kernel", PA_LAB_IMPL);
  }

 private:
  int block_size_, num_kv_heads_, partition_size_, max_num_partitions_;
  float scale_;
  simt::DeviceBuffer<float> exp_sums_, max_logits_, tmp_out_;
  simt::DeviceBuffer<int> arrivals_;
};
/// [launcher]

class BackendLaunchers final : public BackendLaunchersBase<Launchers, Session> {
 public:
  /// [decode_slots]
  int decode_slots(DType dtype, int head_size, int block_size) const override {
    int slots = 1;
    with_decode_config(dtype, head_size, block_size, [&](auto config) {
      using Config = decltype(config);
      const auto kernel =
          &gqa_decode_kernel<typename Config::scalar_t, Config::head_size, Config::block_size>;
      const std::size_t bytes = SharedLayout{Config::head_size}.bytes();
      simt::set_max_dynamic_shared_bytes(kernel, bytes);  // the occupancy query counts it
      slots = simt::occupancy(kernel, kNumThreads, bytes, kDesignRegisters).slots();
    });
    return slots;
  }
  /// [decode_slots]

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
      d_key.set_name("key");
      d_value.set_name("value");
      d_key_cache.set_name("key_cache");
      d_value_cache.set_name("value_cache");
      d_slots.set_name("slot_mapping");
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
};

}  // namespace

const Launchers& launchers() {
  static const BackendLaunchers instance;
  return instance;
}

}  // namespace pa::cuda_gqa::SIMT_BACKEND
