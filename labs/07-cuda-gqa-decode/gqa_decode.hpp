/// \file
/// Lab 07 — a decode kernel in the style engines run today: grouped-query heads packed into the
/// rows of a tensor-core tile, split-KV with a fused merge, over vLLM V1's cache layout (its
/// FlashAttention backend's), and the cache writer for that layout, reshape_and_cache_flash. Host
/// tensors in, host tensors out; the caller picks the SIMT emulator (every machine) or a CUDA GPU.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "pa/backend.hpp"
#include "pa/device_session.hpp"
#include "pa/tensor.hpp"
#include "pa/waves.hpp"

namespace pa::cuda_gqa {

/// [constants]
/// The sizes the decode kernel is instantiated for (template arguments).
inline constexpr std::array<int, 3> kSupportedHeadSizes{64, 128, 256};
inline constexpr std::array<int, 2> kSupportedBlockSizes{16, 32};

/// Threads per warp, warps and threads per thread block of the decode kernel.
inline constexpr int kWarpSize = 32;
inline constexpr int kNumWarps = 4;
inline constexpr int kNumThreads = kNumWarps * kWarpSize;

/// The wmma tile edge: every matrix product is made of 16x16x16 steps.
inline constexpr int kWmmaTile = 16;
/// Rows of the query tile: the query heads of one group, padded with zero rows up to 16.
inline constexpr int kTileRows = kWmmaTile;
/// The most query heads one kv head may serve: one group fills the tile's rows.
inline constexpr int kMaxGroupSize = kTileRows;
/// Tokens per K/V tile: each warp takes 16 of them in Q·Kᵀ.
inline constexpr int kTileTokens = kNumWarps * kWmmaTile;

/// The split (split-KV): default_partition_size cuts each (sequence, kv head) pair's context
/// into at most kMaxSplits partitions by FA2's wave rule (pa/waves.hpp) on the device's
/// slots; no partition is longer than kMaxPartitionSize tokens, whose block-table slice the
/// kernel stages in shared memory (kMaxTableEntries entries at the smallest block size).
inline constexpr int kMaxSplits = 128;
inline constexpr int kMaxPartitionSize = 8192;
inline constexpr int kMaxTableEntries = kMaxPartitionSize / 16;  // 16: the smallest block size
static_assert(kMaxPartitionSize % kTileTokens == 0, "partitions are whole tiles");

/// The registers per thread the decode kernel is designed to fit in (ptxas reports what it
/// uses: `tools/lab bench --ptxas 07`); the emulator, which has no registers, sizes the split
/// as an H100 would at this figure.
inline constexpr int kDesignRegisters = 128;  // ptxas 13, sm_90, fp16 head 128: 126
/// [constants]

/// [shared_layout]
/// The decode kernel's dynamic shared memory for one head size: where each tile lives (byte
/// offsets from the first 128-byte boundary of the allocation, each 128-byte aligned: wmma wants
/// 32) and its row pitch in elements. Every row is padded by 16 bytes: wmma needs the pitch
/// (ldm) to be a multiple of 16 bytes, and the pad moves consecutive rows to different banks.
/// Elements are 16-bit (float16 or bfloat16).
///
/// The keys and values arrive by asynchronous copy into a ring of stages(): stage i holds one
/// tile's keys and its values, [kTileTokens, ld_kv] each. Three stages keep two tiles (64 KiB
/// at head size 128) on their way while the third is multiplied; at head size 256 two stages
/// (one tile in flight, 64 KiB) are what fits beside the rest in an H100's 227 KiB.
struct SharedLayout {
  int head_size;

  static constexpr std::size_t kElemBytes = 2;
  static constexpr int kPadHalf = 8;   // 16 bytes of 16-bit elements
  static constexpr int kPadFloat = 4;  // 16 bytes of float

  constexpr int stages() const { return head_size <= 128 ? 3 : 2; }
  constexpr int ld_q() const { return head_size + kPadHalf; }    // q_tile  [16, ld_q] half
  constexpr int ld_kv() const { return head_size + kPadHalf; }   // a K or V tile [64, ld_kv] half
  // scores [16, ld_s] float; 32 bytes of pad: the 4 rows a warp's softmax reads at once start
  // 8 banks apart
  static constexpr int ld_s() { return kTileTokens + 2 * kPadFloat; }
  static constexpr int ld_p() { return kTileTokens + kPadHalf; }   // probs [16, ld_p] half
  constexpr int ld_o() const { return head_size + kPadFloat; }   // acc_o   [16, ld_o] float

  static constexpr std::size_t align(std::size_t bytes) { return (bytes + 127) / 128 * 128; }
  constexpr std::size_t tile_bytes() const {  // one K or V tile of the ring
    return align(std::size_t{kTileTokens} * ld_kv() * kElemBytes);
  }
  constexpr std::size_t q_offset() const { return 0; }
  constexpr std::size_t ring_offset() const {
    return q_offset() + align(std::size_t{kTileRows} * ld_q() * kElemBytes);
  }
  constexpr std::size_t k_offset(int stage) const {
    return ring_offset() + std::size_t(2 * stage) * tile_bytes();
  }
  constexpr std::size_t v_offset(int stage) const {
    return ring_offset() + std::size_t(2 * stage + 1) * tile_bytes();
  }
  constexpr std::size_t s_offset() const {
    return ring_offset() + std::size_t(2 * stages()) * tile_bytes();
  }
  constexpr std::size_t p_offset() const {
    return s_offset() + align(std::size_t{kTileRows} * ld_s() * sizeof(float));
  }
  constexpr std::size_t o_offset() const {
    return p_offset() + align(std::size_t{kTileRows} * ld_p() * kElemBytes);
  }
  constexpr std::size_t alpha_offset() const {  // row_alpha [16] float
    return o_offset() + align(std::size_t{kTileRows} * ld_o() * sizeof(float));
  }
  constexpr std::size_t table_offset() const {  // the partition's block ids [kMaxTableEntries]
    return alpha_offset() + align(std::size_t{kTileRows} * sizeof(float));
  }
  constexpr std::size_t flag_offset() const {  // is_last [1] int
    return table_offset() + align(std::size_t{kMaxTableEntries} * sizeof(int));
  }
  /// The bytes to ask for: the tiles, plus room to move the start to a 128-byte boundary (a
  /// dynamic allocation is only promised 16-byte alignment).
  constexpr std::size_t bytes() const { return flag_offset() + align(sizeof(int)) + 128 - 16; }
  /// The bytes of keys and values one thread block has in flight while it multiplies a tile:
  /// the stages ahead of the one being read, keys and values, (stages() - 1) * 2 * 64 rows.
  constexpr std::size_t bytes_in_flight() const {
    return std::size_t(stages() - 1) * 2 * kTileTokens * std::size_t(head_size) * kElemBytes;
  }
};
/// [shared_layout]

/// [api]
/// Scatters this step's keys and values into the paged caches of vLLM V1's flash layout: token
/// i goes to slot slot_mapping[i] (block slot / block_size, row slot % block_size), all its kv
/// heads side by side; a negative slot marks a padding token and writes nothing.
/// key, value:             [num_tokens, num_kv_heads, head_size]
/// key_cache, value_cache: [num_blocks, block_size, num_kv_heads, head_size]
/// slot_mapping:           [num_tokens] int64
void reshape_and_cache_flash(Backend backend, const Tensor& key, const Tensor& value,
                             Tensor& key_cache, Tensor& value_cache, const Tensor& slot_mapping);

/// One decode step of attention over the flash-layout caches: for every sequence b and query
/// head h, out[b, h] = softmax(scale * K q[b, h]) V over the first seq_lens[b] tokens of b, read
/// through block_tables[b] from kv head h / (num_heads / num_kv_heads). num_kv_heads and
/// block_size are the caches' extents. The context is split into partitions of partition_size
/// tokens (a multiple of kTileTokens, at most kMaxPartitionSize; 0 picks default_partition_size
/// for the backend's device) whose partial results are
/// merged inside the kernel. float16 and bfloat16 only: the products run on tensor cores.
/// out, query:             [num_seqs, num_heads, head_size]
/// key_cache, value_cache: [num_blocks, block_size, num_kv_heads, head_size]
/// block_tables:           [num_seqs, max_num_blocks_per_seq] int32;  seq_lens: [num_seqs] int32
/// max_seq_len bounds every seq_len and sizes the split.
void gqa_decode(Backend backend, Tensor& out, const Tensor& query, const Tensor& key_cache,
                const Tensor& value_cache, float scale, const Tensor& block_tables,
                const Tensor& seq_lens, int max_seq_len, int partition_size = 0);

/// Returns the partition size gqa_decode uses when passed 0, on a device that runs `slots`
/// decode blocks at once (blocks per SM × SMs: simt::occupancy): FA2's wave rule
/// (pa::waves::num_splits) splits each of the num_seqs * num_kv_heads pairs' tiles into s
/// partitions, at most kMaxSplits; the partition is whole tiles, ceil(tiles / s) of them, and
/// at most kMaxPartitionSize tokens.
constexpr int default_partition_size(int num_seqs, int num_kv_heads, int max_seq_len, int slots) {
  const std::int64_t pairs = std::int64_t{num_seqs} * num_kv_heads;
  const int tiles = (max_seq_len + kTileTokens - 1) / kTileTokens;
  const int splits = pa::waves::num_splits(pairs, tiles, slots, kMaxSplits);
  const int size = (tiles + splits - 1) / splits * kTileTokens;
  return size < kMaxPartitionSize ? size : kMaxPartitionSize;
}

/// Returns true when this build has the CUDA backend and a CUDA device is present.
bool cuda_device_present();
/// [api]

/// [partition_state]
/// What the split's buffers hold after a launch: each partition's result as the decode kernel
/// wrote it for the merge (chapter: "Split-KV: each partition's result"), float32 whatever the
/// dtype. Slot [b, h, p] is query head h of sequence b over partition p; a slot no block wrote
/// is NaN.
struct PartitionState {
  int max_num_partitions = 0;
  Tensor max_logits;  // [num_seqs, num_heads, max_num_partitions]: the row's m
  Tensor exp_sums;    // [num_seqs, num_heads, max_num_partitions]: the row's denom
  Tensor tmp_out;     // [num_seqs, num_heads, max_num_partitions, head_size]: acc / denom
};
/// [partition_state]

class PartitionStateReader;  // given/backend.hpp: a session's view of the split's buffers

/// [device_session]
/// gqa_decode without the host copies around it, for timing the kernel alone (bench_lab.cpp):
/// launch, download and the timings are pa::DeviceSession's (common/pa/device_session.hpp),
/// through the very launch gqa_decode makes.
class DeviceSession : public pa::DeviceSession {
 public:
  /// Checks the operands as gqa_decode does and copies them to `backend`'s device memory; the
  /// session owns the output, shaped like query and NaN until the first launch.
  DeviceSession(Backend backend, const Tensor& query, const Tensor& key_cache,
                const Tensor& value_cache, float scale, const Tensor& block_tables,
                const Tensor& seq_lens, int max_seq_len, int partition_size = 0);

  /// Returns the partition size this session's launches use (never 0).
  int partition_size() const { return partition_size_; }

  /// Copies the split's buffers as the last launch() left them (each launch() starts them at
  /// NaN): what the tests compare, partition by partition, with the host.
  PartitionState partition_state() const;

 private:
  int partition_size_;
  const PartitionStateReader* partitions_ = nullptr;  // the open session's, owned by it
};
/// [device_session]

}  // namespace pa::cuda_gqa
