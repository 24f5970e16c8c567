// Lab 06, given: what one backend's build of the kernels offers the host. given/launchers.cpp
// is compiled once per backend (namespaces emu and cuda) and implements Launchers there;
// given/api.cpp picks one per call (the session layer: common/pa/device_session.hpp). Plain
// C++: no CUDA in sight.
#pragma once

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

/// One backend's build of the kernels and their host launchers: sessions over AttentionArgs,
/// with NaN output and scratch, and the call itself.
class Launchers : public SessionLaunchers<AttentionArgs> {
 public:
  /// paged_attention_v2 on checked arguments with at least one sequence: the caller's scratch
  /// goes to the device first, so that entries the kernels must not write keep what the caller
  /// put there, and comes back with the output.
  virtual void paged_attention_v2(const AttentionArgs& args, Tensor& out, Tensor& exp_sums,
                                  Tensor& max_logits, Tensor& tmp_out) const = 0;
};

namespace emu {
const Launchers& launchers();
}
namespace cuda {
const Launchers& launchers();  // defined in builds with the CUDA backend only
}

}  // namespace pa::cuda_v2
