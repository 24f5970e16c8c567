// Lab 06, given: what one backend's build of the kernels offers the host. given/launchers.cpp
// is compiled once per backend (namespaces emu and cuda) and implements Launchers there;
// given/api.cpp picks one per call (the session layer: common/pa/device_session.hpp). Plain
// C++: no CUDA in sight.
#pragma once

#include "pa/decode_checks.hpp"
#include "paged_attention_v2.hpp"

namespace pa::cuda_v2 {

/// The operands of one attention call, everything but the output and the scratch: what every
/// decode over the V0 caches reads (pa::V0DecodeOperands: query, caches, num_kv_heads, block
/// tables, sequence lengths, block_size, max_seq_len), the scale and the partition size.
/// Checked by checks::attention.
struct AttentionArgs : V0DecodeOperands {
  float scale;
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
  /// paged_attention_v2_reduce on checked arguments with at least one sequence: `out` goes to
  /// the device first (the rows the reduce leaves alone keep it) and comes back.
  virtual void paged_attention_v2_reduce(Tensor& out, const Tensor& exp_sums,
                                         const Tensor& max_logits, const Tensor& tmp_out,
                                         const Tensor& seq_lens, int partition_size) const = 0;
  /// Attention blocks the device runs at once (blocks per SM × SMs, simt::occupancy; on the
  /// emulator an H100's at kDesignRegisters) for one instantiation at kPartitionSize.
  virtual int attention_slots(DType dtype, int head_size, int block_size) const = 0;
};

namespace emu {
const Launchers& launchers();
}
namespace cuda {
const Launchers& launchers();  // defined in builds with the CUDA backend only
}

}  // namespace pa::cuda_v2
