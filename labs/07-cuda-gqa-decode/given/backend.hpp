// Lab 07, given: what one backend's build of the kernels offers the host. given/launchers.cpp
// is compiled once per backend (namespaces emu and cuda) and implements Launchers there;
// given/api.cpp picks one per call (the session layer: common/pa/device_session.hpp). Plain
// C++: no CUDA in sight.
#pragma once

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
  int partition_size;  // the caller's (0: the default); the launchers get api.cpp's choice
};

/// One backend's build of the kernels and their host launchers: sessions over DecodeArgs, and
/// the cache writer.
class Launchers : public SessionLaunchers<DecodeArgs> {
 public:
  /// reshape_and_cache_flash on checked arguments with at least one token.
  virtual void reshape_and_cache_flash(const Tensor& key, const Tensor& value, Tensor& key_cache,
                                       Tensor& value_cache, const Tensor& slot_mapping) const = 0;
  /// Decode blocks the device runs at once (blocks per SM × SMs, simt::occupancy; on the
  /// emulator an H100's at kDesignRegisters) for one instantiation: what sizes the default split.
  virtual int decode_slots(DType dtype, int head_size, int block_size) const = 0;
};

/// What a decode session offers beside pa::SessionImpl: the split's buffers copied back to the
/// host (DeviceSession::partition_state). given/launchers.cpp's Session implements both.
class PartitionStateReader {
 public:
  virtual ~PartitionStateReader() = default;
  virtual PartitionState partition_state() const = 0;
};

namespace emu {
const Launchers& launchers();
}
namespace cuda {
const Launchers& launchers();  // defined in builds with the CUDA backend only
}

}  // namespace pa::cuda_gqa
