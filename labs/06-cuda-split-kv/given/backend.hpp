// Lab 06, given: what one backend's build of the kernels offers the host. given/launchers.cpp
// is compiled once per backend (namespaces emu and cuda) and implements Launchers there;
// given/api.cpp picks one per call. Plain C++: no CUDA in sight.
#pragma once

#include <memory>

#include "paged_attention_v2.hpp"

namespace pa::cuda_v2 {

/// The operands of one attention call, everything but the output and the scratch (checked by
/// checks::attention).
struct AttentionArgs {
  const Tensor& query;        // [num_seqs, num_heads, head_size]
  const Tensor& key_cache;    // [num_blocks, num_kv_heads, head_size / x, block_size, x]
  const Tensor& value_cache;  // [num_blocks, num_kv_heads, head_size, block_size]
  int num_kv_heads;
  float scale;
  const Tensor& block_tables;  // [num_seqs, max_num_blocks_per_seq] int32
  const Tensor& seq_lens;      // [num_seqs] int32
  int block_size;
  int max_seq_len;
  int partition_size;
};

/// The operands, the output and the scratch in one backend's device memory, and the launches.
class DeviceSession::Impl {
 public:
  virtual ~Impl() = default;
  virtual void launch() = 0;
  virtual void download(Tensor& out) const = 0;
  /// Overwrites the device scratch with the caller's (checked) tensors, so that entries the
  /// kernels must not write keep whatever the caller put there.
  virtual void upload_scratch(const Tensor& exp_sums, const Tensor& max_logits,
                              const Tensor& tmp_out) = 0;
  /// Copies the device scratch back into the caller's tensors.
  virtual void download_scratch(Tensor& exp_sums, Tensor& max_logits, Tensor& tmp_out) const = 0;
  virtual double timed_launch() = 0;
  virtual double timed_read_roofline() = 0;
  virtual double timed_cache_copy() = 0;
};

/// One backend's build of the kernels and their host launchers.
class Launchers {
 public:
  virtual ~Launchers() = default;
  /// Copies checked operands to device memory, with NaN output and scratch.
  virtual std::unique_ptr<DeviceSession::Impl> open_session(const AttentionArgs& args) const = 0;
  /// CUDA devices this backend sees (the emulator: 0).
  virtual int device_count() const = 0;
  /// Attention blocks the device runs at once (blocks per SM × SMs) for one instantiation at
  /// kPartitionSize.
  virtual int attention_slots(DType dtype, int head_size, int block_size) const = 0;
};

namespace emu {
const Launchers& launchers();
}
#if PA_HAVE_CUDA_BACKEND
namespace cuda {
const Launchers& launchers();
}
#endif

}  // namespace pa::cuda_v2
