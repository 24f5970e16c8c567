// Lab 05, given: the host side of both kernels. CUDA C++, compiled once per backend (by the
// host compiler against the SIMT emulator, and by nvcc when CMake finds it). It includes the
// kernels from the file the build picks (PA_LAB_IMPL: your starter.cpp, or the reference
// solution), then, for each call: copies the host tensors to device buffers, picks the kernel
// instantiation for the runtime dtype / head size / block size, sizes the dynamic shared
// memory and opts into it, launches, asks whether the kernel was still a skeleton, and copies
// the result back.
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
#include "simt/timing.hpp"

#include PA_LAB_IMPL  // the two kernels: reshape_and_cache_kernel, paged_attention_v1_kernel

namespace pa::cuda_v1::SIMT_BACKEND {
namespace {

/// One instantiation of the attention kernel: element type, head size and block size.
template <typename T, int HEAD, int BLOCK>
struct V1Config {
  using scalar_t = T;
  static constexpr int head_size = HEAD;
  static constexpr int block_size = BLOCK;
};

/// Calls f(V1Config<scalar_t, HEAD_SIZE, BLOCK_SIZE>{}) for the runtime dtype and sizes; the
/// instantiations are those of kSupportedHeadSizes × kSupportedBlockSizes × the three dtypes.
template <class F>
void with_v1_config(DType dtype, int head_size, int block_size, F&& f) {
  with_scalar_t(dtype, [&](auto scalar) {
    using scalar_t = typename decltype(scalar)::type;
    with_one_of<kSupportedBlockSizes>(block_size, "block_size", [&](auto block) {
      with_one_of<kSupportedHeadSizes>(head_size, "head_size", [&](auto head) {
        f(V1Config<scalar_t, decltype(head)::value, decltype(block)::value>{});
      });
    });
  });
}

/// The attention kernel instantiated for Config, with kNumThreads threads per block.
template <class Config>
constexpr auto v1_kernel() {
  return &paged_attention_v1_kernel<typename Config::scalar_t, Config::head_size,
                                    Config::block_size, kNumThreads>;
}

/// The bytes of the kernel's static __shared__ arrays: q_vecs (one query row, HEAD_SIZE elements)
/// and red_smem (2 * NUM_WARPS floats), as TODO 1 and the reductions declare them.
template <class Config>
constexpr std::size_t v1_static_shared_bytes() {
  return Config::head_size * sizeof(typename Config::scalar_t) +
         2 * (kNumThreads / kWarpSize) * sizeof(float);
}

/// The dynamic shared memory this instantiation may use on this device, in bytes: what the device
/// lets a block opt in to, less the kernel's static arrays (which a GPU's runtime knows, and the
/// emulator is told), so that both backends refuse the same contexts.
template <class Config>
std::size_t v1_shared_mem_limit() {
  simt::declare_static_shared_bytes(v1_kernel<Config>(), v1_static_shared_bytes<Config>());
  return simt::max_dynamic_shared_bytes(v1_kernel<Config>());
}

/// The longest context whose logits (padded to whole blocks) fit in `limit_bytes`.
int tokens_within(std::size_t limit_bytes, int block_size) {
  const std::size_t floats = limit_bytes / sizeof(float);
  return static_cast<int>(floats / static_cast<std::size_t>(block_size)) * block_size;
}

/// [launcher]
/// paged_attention_v1's operands in this backend's device memory (SessionBase), and the launch
/// on them.
class Session final : public SessionBase {
 public:
  /// Copies the operands to the device; api.cpp has run checks::attention on them, and
  /// open_session has made sure the context fits.
  explicit Session(const AttentionArgs& a)
      : SessionBase(a),
        num_kv_heads_(a.num_kv_heads),
        block_size_(a.block_size),
        max_seq_len_(a.max_seq_len),
        scale_(a.scale) {}

  /// The checked launch of tests and paged_attention_v1: waited for and asked for the flag.
  void checked_launch() override {
    enqueue();
    finish();
  }

  /// Queues the kernel without waiting (simt::enqueue): the path the benchmark times.
  void enqueue() override { enqueue_kernel(Probe::kNone, nullptr); }

  /// A probe launch: the kernel stops at `stage` and copies its shared-memory row of each
  /// (sequence, head) into `rows` ([num_seqs, num_heads, max_num_blocks_per_seq * block_size]
  /// float32); what it leaves unwritten stays NaN.
  void probe(Probe stage, Tensor& rows) {
    simt::DeviceBuffer<float> d_rows(static_cast<std::size_t>(rows.numel()));
    d_rows.fill_bytes(0xFF);  // NaN
    d_rows.set_name("probe");
    enqueue_kernel(stage, d_rows.data());
    finish();
    d_rows.download(rows.data_as<float>(), d_rows.size());
  }

 private:
  void enqueue_kernel(Probe stage, float* probe_rows) {
    if (num_seqs_ == 0) return;
    with_v1_config(dtype_, head_size_, block_size_, [&](auto config) {
      using Config = decltype(config);
      using scalar_t = typename Config::scalar_t;
      const auto kernel = v1_kernel<Config>();
      const std::size_t shared_bytes = v1_shared_mem_bytes(head_size_, block_size_, max_seq_len_);
      if (!opted_in_) {  // opt in past the 48 KiB default, once: not a host call per timed span
        simt::set_max_dynamic_shared_bytes(kernel, shared_bytes);
        opted_in_ = true;
      }

      const int kv_head_stride = head_size_ * block_size_;
      const int kv_block_stride = num_kv_heads_ * kv_head_stride;
      simt::enqueue(kernel, dim3(num_heads_, num_seqs_), dim3(kNumThreads), shared_bytes,
                    as_elements<scalar_t>(out_), as_elements<const scalar_t>(query_),
                    as_elements<const scalar_t>(key_cache_),
                    as_elements<const scalar_t>(value_cache_), num_kv_heads_, scale_,
                    block_tables_.data(), seq_lens_.data(), max_num_blocks_per_seq_,
                    num_heads_ * head_size_, kv_block_stride, kv_head_stride, stage,
                    probe_rows);
    });
  }

 public:

  /// Waits for the queued launches and throws what they left: a kernel's fault, or
  /// NotImplemented when the kernel is still a skeleton.
  void finish() const override {
    simt::synchronize();
    throw_if_todo("paged_attention_v1_kernel", PA_LAB_IMPL);
  }

 private:
  int num_kv_heads_, block_size_, max_seq_len_;
  float scale_;
  bool opted_in_ = false;  // the kernel's shared-memory opt-in is made
};
/// [launcher]

class BackendLaunchers final : public BackendLaunchersBase<Launchers, Session> {
 public:
  /// [reshape_and_cache]
  void reshape_and_cache(const Tensor& key, const Tensor& value, Tensor& key_cache,
                         Tensor& value_cache, const Tensor& slot_mapping) const override {
    const int num_tokens = static_cast<int>(key.size(0));
    const int num_kv_heads = static_cast<int>(key.size(1));
    const int head_size = static_cast<int>(key.size(2));
    const int block_size = static_cast<int>(key_cache.size(3));
    with_scalar_t(key.dtype(), [&](auto scalar) {
      using scalar_t = typename decltype(scalar)::type;
      const auto d_key = to_device<scalar_t>(key);        // [num_tokens, num_kv_heads, head_size]
      const auto d_value = to_device<scalar_t>(value);    // [num_tokens, num_kv_heads, head_size]
      auto d_key_cache = to_device<scalar_t>(key_cache);  // [blocks, kv_heads, head/x, block, x]
      auto d_value_cache = to_device<scalar_t>(value_cache);  // [blocks, kv_heads, head, block]
      const auto d_slots = to_device<std::int64_t>(slot_mapping);  // [num_tokens]
      d_key.set_name("key");
      d_value.set_name("value");
      d_key_cache.set_name("key_cache");
      d_value_cache.set_name("value_cache");
      d_slots.set_name("slot_mapping");
      const int width = num_kv_heads * head_size;
      simt::launch(reshape_and_cache_kernel<scalar_t>, dim3(num_tokens), dim3(std::min(width, 512)),
                   0, d_key.data(), d_value.data(), d_key_cache.data(), d_value_cache.data(),
                   d_slots.data(), width, width, num_kv_heads, head_size, block_size,
                   x_of(key.dtype()));
      throw_if_todo("reshape_and_cache_kernel", PA_LAB_IMPL);
      to_host(d_key_cache, key_cache);
      to_host(d_value_cache, value_cache);
    });
  }
  /// [reshape_and_cache]

  std::unique_ptr<SessionImpl> open_session(const AttentionArgs& args) const override {
    // Shared memory holds every logit of the longest sequence: refuse what the device cannot
    // hold before anything is copied.
    with_v1_config(args.query.dtype(), static_cast<int>(args.query.size(2)), args.block_size,
                   [&](auto config) {
                     const std::size_t limit = v1_shared_mem_limit<decltype(config)>();
                     checks::context_fits(args.max_seq_len, tokens_within(limit, args.block_size),
                                          limit, SIMT_BACKEND_NAME);
                   });
    return BackendLaunchersBase::open_session(args);
  }

  void probe(const AttentionArgs& args, Probe stage, Tensor& rows) const override {
    const auto session = open_session(args);  // refuses a context that does not fit
    static_cast<Session&>(*session).probe(stage, rows);
  }

  int max_seq_len(DType dtype, int head_size, int block_size) const override {
    int tokens = 0;
    with_v1_config(dtype, head_size, block_size, [&](auto config) {
      tokens = tokens_within(v1_shared_mem_limit<decltype(config)>(), block_size);
    });
    return tokens;
  }
};

}  // namespace

const Launchers& launchers() {
  static const BackendLaunchers instance;
  return instance;
}

}  // namespace pa::cuda_v1::SIMT_BACKEND
