// Lab 05, given: what one backend's build of the kernels offers the host. given/launchers.cpp
// is compiled once per backend (namespaces emu and cuda) and implements Launchers there;
// given/api.cpp picks one per call (the session layer: common/pa/device_session.hpp). Plain
// C++: no CUDA in sight.
#pragma once

#include "pa/decode_checks.hpp"
#include "paged_attention_v1.hpp"

namespace pa::cuda_v1 {

/// The operands of one attention call, everything but `out`: what every decode over the V0
/// caches reads (pa::V0DecodeOperands: query, caches, num_kv_heads, block tables, sequence
/// lengths, block_size, max_seq_len) and the scale. Checked by checks::attention.
struct AttentionArgs : V0DecodeOperands {
  float scale;
};

/// One backend's build of the kernels and their host launchers: sessions over AttentionArgs
/// (throwing when the context does not fit), and these.
class Launchers : public SessionLaunchers<AttentionArgs> {
 public:
  /// reshape_and_cache on checked arguments with at least one token.
  virtual void reshape_and_cache(const Tensor& key, const Tensor& value, Tensor& key_cache,
                                 Tensor& value_cache, const Tensor& slot_mapping) const = 0;
  /// paged_attention_v1_probe on checked arguments with at least one sequence: fills `rows`.
  virtual void probe(const AttentionArgs& args, Probe stage, Tensor& rows) const = 0;
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
