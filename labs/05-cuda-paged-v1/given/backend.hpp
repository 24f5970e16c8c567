// Lab 05, given: what one backend's build of the kernels offers the host. given/launchers.cpp
// is compiled once per backend (namespaces emu and cuda) and implements Launchers there;
// given/api.cpp picks one per call (the session layer: common/pa/device_session.hpp). Plain
// C++: no CUDA in sight.
#pragma once

#include "paged_attention_v1.hpp"

namespace pa::cuda_v1 {

/// The operands of one attention call, everything but `out` (checked by checks::attention).
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
};

/// One backend's build of the kernels and their host launchers: sessions over AttentionArgs
/// (throwing when the context does not fit), and these.
class Launchers : public SessionLaunchers<AttentionArgs> {
 public:
  /// reshape_and_cache on checked arguments with at least one token.
  virtual void reshape_and_cache(const Tensor& key, const Tensor& value, Tensor& key_cache,
                                 Tensor& value_cache, const Tensor& slot_mapping) const = 0;
  /// v1_max_seq_len for a checked configuration.
  virtual int max_seq_len(DType dtype, int head_size, int block_size) const = 0;
};

namespace emu {
const Launchers& launchers();
}
namespace cuda {
const Launchers& launchers();  // defined in builds with the CUDA backend only
}

}  // namespace pa::cuda_v1
