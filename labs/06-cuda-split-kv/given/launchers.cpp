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
#include "pa/device_session.cuh"
#include "pa/device_tensors.cuh"

#include "simt/occupancy.hpp"
#include "simt/timing.hpp"

// The two kernels: paged_attention_v2_kernel and paged_attention_v2_reduce_kernel.
#include PA_LAB_IMPL

namespace pa::cuda_v2::SIMT_BACKEND {
namespace {

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
/// paged_attention_v2's operands in this backend's device memory (SessionBase), its scratch, and
/// the two launches on them.
class Session final : public SessionBase {
 public:
  /// Copies the operands to the device; api.cpp has run checks::attention on them.
  explicit Session(const AttentionArgs& a)
      : SessionBase(a),
        num_kv_heads_(a.num_kv_heads),
        block_size_(a.block_size),
        partition_size_(a.partition_size),
        max_num_partitions_(v2_max_num_partitions(a.max_seq_len, a.partition_size)),
        scale_(a.scale) {
    const std::size_t partials = static_cast<std::size_t>(num_seqs_) *
                                 static_cast<std::size_t>(num_heads_) *
                                 static_cast<std::size_t>(max_num_partitions_);
    exp_sums_ = nan_floats(partials);    // [num_seqs, num_heads, max_num_partitions]
    max_logits_ = nan_floats(partials);  // [num_seqs, num_heads, max_num_partitions]
    tmp_out_ = nan_floats(partials * static_cast<std::size_t>(head_size_));  // [.., head_size]
    // The names the emulator's memory checker gives an access past these buffers' ends
    // (SessionBase names the operands).
    exp_sums_.set_name("exp_sums");
    max_logits_.set_name("max_logits");
    tmp_out_.set_name("tmp_out");
  }

  /// The checked launch of tests and paged_attention_v2: each kernel waited for and asked for
  /// the skeleton flag, so that NotImplemented names the one still to write.
  void checked_launch() override { run(/*checked=*/true); }

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

  /// Queues both kernels without waiting or asking: the path the benchmark times.
  void enqueue() override { run(/*checked=*/false); }

  /// Waits for the queued kernels and throws what they left after timing: a fault, or
  /// NotImplemented when either was still a skeleton.
  void finish() const override {
    finish("paged_attention_v2_kernel or paged_attention_v2_reduce_kernel");
  }

  /// Waits for the queued kernels and throws what they left: a fault, or NotImplemented naming
  /// `kernel` when a skeleton ran.
  static void finish(const char* kernel) {
    simt::synchronize();
    throw_if_todo(kernel, PA_LAB_IMPL);
  }

  /// Overwrites the device scratch with the caller's (checked) tensors.
  void upload_scratch(const Tensor& exp_sums, const Tensor& max_logits, const Tensor& tmp_out) {
    exp_sums_.upload(exp_sums.data_as<float>(), exp_sums_.size());
    max_logits_.upload(max_logits.data_as<float>(), max_logits_.size());
    tmp_out_.upload(tmp_out.data_as<float>(), tmp_out_.size());
  }

  /// Copies the device scratch back into the caller's tensors.
  void download_scratch(Tensor& exp_sums, Tensor& max_logits, Tensor& tmp_out) const {
    exp_sums_.download(exp_sums.data_as<float>(), exp_sums_.size());
    max_logits_.download(max_logits.data_as<float>(), max_logits_.size());
    tmp_out_.download(tmp_out.data_as<float>(), tmp_out_.size());
  }

 private:
  int num_kv_heads_, block_size_, partition_size_, max_num_partitions_;
  float scale_;
  simt::DeviceBuffer<float> exp_sums_, max_logits_, tmp_out_;
};
/// [launcher]

class BackendLaunchers final : public BackendLaunchersBase<Launchers, Session> {
 public:
  void paged_attention_v2(const AttentionArgs& args, Tensor& out, Tensor& exp_sums,
                          Tensor& max_logits, Tensor& tmp_out) const override {
    Session session(args);
    session.upload_scratch(exp_sums, max_logits, tmp_out);
    session.launch();
    session.download(out);
    session.download_scratch(exp_sums, max_logits, tmp_out);
  }

  void paged_attention_v2_reduce(Tensor& out, const Tensor& exp_sums, const Tensor& max_logits,
                                 const Tensor& tmp_out, const Tensor& seq_lens,
                                 int partition_size) const override {
    const int num_seqs = static_cast<int>(out.size(0)), num_heads = static_cast<int>(out.size(1));
    const int max_num_partitions = static_cast<int>(exp_sums.size(2));
    simt::DeviceBuffer<unsigned char> out_d = bytes_to_device(out);  // the caller's rows stay
    simt::DeviceBuffer<float> exp_sums_d = to_device<float>(exp_sums);
    simt::DeviceBuffer<float> max_logits_d = to_device<float>(max_logits);
    simt::DeviceBuffer<float> tmp_out_d = to_device<float>(tmp_out);
    simt::DeviceBuffer<std::int32_t> seq_lens_d = to_device<std::int32_t>(seq_lens);
    out_d.set_name("out");
    exp_sums_d.set_name("exp_sums");
    max_logits_d.set_name("max_logits");
    tmp_out_d.set_name("tmp_out");
    seq_lens_d.set_name("seq_lens");
    with_scalar_t(out.dtype(), [&](auto scalar) {
      using scalar_t = typename decltype(scalar)::type;
      with_one_of<kSupportedPartitionSizes>(partition_size, "partition_size", [&](auto part) {
        with_one_of<kSupportedHeadSizes>(static_cast<int>(out.size(2)), "head_size",
                                         [&](auto head) {
          const auto reduce =
              &paged_attention_v2_reduce_kernel<scalar_t, decltype(head)::value, kNumThreads,
                                                decltype(part)::value>;
          simt::enqueue(reduce, dim3(num_heads, num_seqs), dim3(kNumThreads),
                        v2_reduce_shared_mem_bytes(), as_elements<scalar_t>(out_d),
                        exp_sums_d.data(), max_logits_d.data(), tmp_out_d.data(),
                        seq_lens_d.data(), max_num_partitions);
          Session::finish("paged_attention_v2_reduce_kernel");
        });
      });
    });
    out_d.download(static_cast<unsigned char*>(out.data()), out.nbytes());
  }

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
