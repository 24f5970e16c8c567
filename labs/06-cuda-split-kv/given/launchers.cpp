// Lab 06, given: the host side of both kernels. CUDA C++, compiled once per backend (by the
// host compiler against the SIMT emulator, and by nvcc when CMake finds it). It includes the
// kernels from the file the build picks (PA_LAB_IMPL: your starter.cpp, or the reference
// solution), then, for each call: copies the host tensors to device buffers, picks the kernel
// instantiation for the runtime dtype / head size / block size / partition size, launches the
// attention kernel on a (num_heads, num_seqs, max_num_partitions) grid, asks whether it was
// still a skeleton, launches the reduce kernel when some sequence has more than one partition,
// and copies the results back.
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

#include PA_LAB_IMPL  // the two kernels: paged_attention_v2_kernel, paged_attention_v2_reduce_kernel

namespace pa::cuda_v2::SIMT_BACKEND {
namespace {

using pa::device::as_elements;
using pa::device::bytes_to_device;
using pa::device::nan_floats;
using pa::device::to_device;
using pa::device::with_one_of;
using pa::device::with_scalar_t;

/// One instantiation of the kernels: element type, head size, block size and partition size.
template <typename T, int HEAD, int BLOCK, int PARTITION>
struct V2Config {
  using scalar_t = T;
  static constexpr int head_size = HEAD;
  static constexpr int block_size = BLOCK;
  static constexpr int partition_size = PARTITION;
};

/// Calls f(V2Config<scalar_t, HEAD_SIZE, BLOCK_SIZE, PARTITION_SIZE>{}) for the runtime dtype
/// and sizes; the instantiations are those of kSupportedHeadSizes × kSupportedBlockSizes ×
/// kSupportedPartitionSizes × the three dtypes.
template <class F>
void with_v2_config(DType dtype, int head_size, int block_size, int partition_size, F&& f) {
  with_scalar_t(dtype, [&](auto scalar) {
    using scalar_t = typename decltype(scalar)::type;
    with_one_of<kSupportedBlockSizes>(block_size, "block_size", [&](auto block) {
      with_one_of<kSupportedPartitionSizes>(partition_size, "partition_size", [&](auto part) {
        with_one_of<kSupportedHeadSizes>(head_size, "head_size", [&](auto head) {
          f(V2Config<scalar_t, decltype(head)::value, decltype(block)::value,
                     decltype(part)::value>{});
        });
      });
    });
  });
}

static_assert(v2_shared_mem_bytes(256, 512) <= 48 * 1024,
              "the largest instantiation stays within the 48 KiB every device grants by default");

/// [launcher]
/// paged_attention_v2's operands, output and scratch in this backend's device memory, and the
/// two launches on them.
class Session final : public DeviceSession::Impl {
 public:
  /// Copies the operands to the device; api.cpp has run checks::attention on them.
  explicit Session(const AttentionArgs& a)
      : dtype_(a.query.dtype()),
        out_shape_(a.query.shape()),
        num_seqs_(static_cast<int>(a.query.size(0))),
        num_heads_(static_cast<int>(a.query.size(1))),
        head_size_(static_cast<int>(a.query.size(2))),
        num_kv_heads_(a.num_kv_heads),
        block_size_(a.block_size),
        max_num_blocks_per_seq_(static_cast<int>(a.block_tables.size(1))),
        partition_size_(a.partition_size),
        max_num_partitions_(v2_max_num_partitions(a.max_seq_len, a.partition_size)),
        scale_(a.scale) {
    query_ = bytes_to_device(a.query);              // [num_seqs, num_heads, head_size]
    key_cache_ = bytes_to_device(a.key_cache);      // [blocks, kv_heads, head/x, block, x]
    value_cache_ = bytes_to_device(a.value_cache);  // [blocks, kv_heads, head, block]
    block_tables_ = to_device<std::int32_t>(a.block_tables);     // [num_seqs, max_blocks_per_seq]
    seq_lens_ = to_device<std::int32_t>(a.seq_lens);             // [num_seqs]
    out_ = simt::DeviceBuffer<unsigned char>(a.query.nbytes());  // [num_seqs, heads, head_size]
    out_.fill_bytes(0xFF);  // NaN: an element the kernels forget to write cannot pass
    const std::size_t partials = static_cast<std::size_t>(num_seqs_) *
                                 static_cast<std::size_t>(num_heads_) *
                                 static_cast<std::size_t>(max_num_partitions_);
    exp_sums_ = nan_floats(partials);    // [num_seqs, num_heads, max_num_partitions]
    max_logits_ = nan_floats(partials);  // [num_seqs, num_heads, max_num_partitions]
    tmp_out_ = nan_floats(partials * static_cast<std::size_t>(head_size_));  // [.., head_size]
  }

  /// The checked launch of tests and paged_attention_v2: each kernel waited for and asked for
  /// the skeleton flag, so that NotImplemented names the one still to write.
  void launch() override { run(/*checked=*/true); }

  /// The kernels queued back to back on one stream (simt::enqueue) without waiting or asking:
  /// checked == false is the path the benchmark times.
  void run(bool checked) {
    if (num_seqs_ == 0) return;
    with_v2_config(dtype_, head_size_, block_size_, partition_size_, [&](auto config) {
      using Config = decltype(config);
      using scalar_t = typename Config::scalar_t;
      const auto kernel =
          &paged_attention_v2_kernel<scalar_t, Config::head_size, Config::block_size, kNumThreads,
                                     Config::partition_size>;
      const int kv_head_stride = head_size_ * block_size_;
      const int kv_block_stride = num_kv_heads_ * kv_head_stride;
      simt::enqueue(kernel, dim3(num_heads_, num_seqs_, max_num_partitions_), dim3(kNumThreads),
                    v2_shared_mem_bytes(head_size_, partition_size_), exp_sums_.data(),
                    max_logits_.data(), tmp_out_.data(), as_elements<scalar_t>(out_),
                    as_elements<const scalar_t>(query_), as_elements<const scalar_t>(key_cache_),
                    as_elements<const scalar_t>(value_cache_), num_kv_heads_, scale_,
                    block_tables_.data(), seq_lens_.data(), max_num_blocks_per_seq_,
                    num_heads_ * head_size_, kv_block_stride, kv_head_stride);
      if (checked) finish("paged_attention_v2_kernel");
      // With one partition for everyone, the attention kernel wrote every output itself.
      if (max_num_partitions_ == 1) return;
      const auto reduce = &paged_attention_v2_reduce_kernel<scalar_t, Config::head_size,
                                                            kNumThreads, Config::partition_size>;
      simt::enqueue(reduce, dim3(num_heads_, num_seqs_), dim3(kNumThreads),
                    v2_reduce_shared_mem_bytes(), as_elements<scalar_t>(out_), exp_sums_.data(),
                    max_logits_.data(), tmp_out_.data(), seq_lens_.data(), max_num_partitions_);
      if (checked) finish("paged_attention_v2_reduce_kernel");
    });
  }

  /// Waits for the queued kernels and throws what they left: a fault, or NotImplemented naming
  /// `kernel` when a skeleton ran.
  static void finish(const char* kernel) {
    simt::synchronize();
    throw_if_todo(kernel, PA_LAB_IMPL);
  }

  void download(Tensor& out) const override {
    if (timed_unchecked_) {  // the flag and the errors, once after any number of timed spans
      timed_unchecked_ = false;
      finish("paged_attention_v2_kernel or paged_attention_v2_reduce_kernel");
    }
    const ArgCheck check("DeviceSession::download");
    dtype_is(check, "out", out, dtype_, "the dtype of query");
    shape_is(check, "out", out, out_shape_, "the shape of query");
    out_.download(static_cast<unsigned char*>(out.data()), out.nbytes());
  }

  void upload_scratch(const Tensor& exp_sums, const Tensor& max_logits,
                      const Tensor& tmp_out) override {
    exp_sums_.upload(exp_sums.data_as<float>(), exp_sums_.size());
    max_logits_.upload(max_logits.data_as<float>(), max_logits_.size());
    tmp_out_.upload(tmp_out.data_as<float>(), tmp_out_.size());
  }

  void download_scratch(Tensor& exp_sums, Tensor& max_logits, Tensor& tmp_out) const override {
    exp_sums_.download(exp_sums.data_as<float>(), exp_sums_.size());
    max_logits_.download(max_logits.data_as<float>(), max_logits_.size());
    tmp_out_.download(tmp_out.data_as<float>(), tmp_out_.size());
  }

  double timed_launch() override {
    timed_unchecked_ = true;
    return timing_.launch([&] { run(/*checked=*/false); });  // the two kernels alone
  }
  double timed_read_roofline() override { return timing_.read_roofline(cache_spans()); }
  double timed_cache_copy() override { return timing_.cache_copy(cache_spans()); }

 private:
  std::vector<simt::DeviceSpan> cache_spans() const {
    return {{key_cache_.data(), key_cache_.size()}, {value_cache_.data(), value_cache_.size()}};
  }

  DType dtype_;
  std::vector<std::int64_t> out_shape_;
  int num_seqs_, num_heads_, head_size_, num_kv_heads_, block_size_;
  int max_num_blocks_per_seq_, partition_size_, max_num_partitions_;
  float scale_;
  simt::DeviceBuffer<unsigned char> query_, key_cache_, value_cache_, out_;  // bytes of dtype_
  simt::DeviceBuffer<std::int32_t> block_tables_, seq_lens_;
  simt::DeviceBuffer<float> exp_sums_, max_logits_, tmp_out_;
  simt::SessionTiming timing_;
  mutable bool timed_unchecked_ = false;  // timed launches since the last finish()
};
/// [launcher]

class BackendLaunchers final : public Launchers {
 public:
  std::unique_ptr<DeviceSession::Impl> open_session(const AttentionArgs& args) const override {
    return std::make_unique<Session>(args);
  }

  int device_count() const override { return simt::cuda_device_count(); }

  int attention_slots(DType dtype, int head_size, int block_size) const override {
    int slots = 1;
    with_v2_config(dtype, head_size, block_size, kPartitionSize, [&](auto config) {
      using Config = decltype(config);
      const auto kernel =
          &paged_attention_v2_kernel<typename Config::scalar_t, Config::head_size,
                                     Config::block_size, kNumThreads, Config::partition_size>;
      slots = simt::occupancy(kernel, kNumThreads,
                              v2_shared_mem_bytes(head_size, kPartitionSize), kDesignRegisters)
                  .slots();
    });
    return slots;
  }
};

}  // namespace

const Launchers& launchers() {
  static const BackendLaunchers instance;
  return instance;
}

}  // namespace pa::cuda_v2::SIMT_BACKEND
