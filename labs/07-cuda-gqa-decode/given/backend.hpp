// Lab 07, given: what one backend's build of the kernels offers the host. given/launchers.cpp
// is compiled once per backend (namespaces emu and cuda) and implements Launchers there;
// given/api.cpp picks one per call. Plain C++: no CUDA in sight.
#pragma once

#include <memory>

#include "gqa_decode.hpp"

namespace pa::cuda_gqa {

/// The operands of one decode call, everything but `out` (checked by checks::decode).
struct DecodeArgs {
  const Tensor& query;         // [num_seqs, num_heads, head_size]
  const Tensor& key_cache;     // [num_blocks, block_size, num_kv_heads, head_size]
  const Tensor& value_cache;   // [num_blocks, block_size, num_kv_heads, head_size]
  float scale;
  const Tensor& block_tables;  // [num_seqs, max_num_blocks_per_seq] int32
  const Tensor& seq_lens;      // [num_seqs] int32
  int max_seq_len;
  int partition_size;          // 0: default_partition_size
};

/// The operands in one backend's device memory and the launches on them.
class DeviceSession::Impl {
 public:
  virtual ~Impl() = default;
  virtual void launch() = 0;
  virtual void download(Tensor& out) const = 0;
  virtual int partition_size() const = 0;
  virtual double timed_launch() = 0;
  virtual double timed_read_roofline() = 0;
};

/// One backend's build of the kernels and their host launchers.
class Launchers {
 public:
  virtual ~Launchers() = default;
  /// reshape_and_cache_flash on checked arguments with at least one token.
  virtual void reshape_and_cache_flash(const Tensor& key, const Tensor& value, Tensor& key_cache,
                                       Tensor& value_cache, const Tensor& slot_mapping) const = 0;
  /// Copies checked operands to device memory.
  virtual std::unique_ptr<DeviceSession::Impl> open_session(const DecodeArgs& args) const = 0;
  /// CUDA devices this backend sees (the emulator: 0).
  virtual int device_count() const = 0;
};

namespace emu {
const Launchers& launchers();
}
#if PA_HAVE_CUDA_BACKEND
namespace cuda {
const Launchers& launchers();
}
#endif

}  // namespace pa::cuda_gqa
