/// \file
/// Lab 06 — vLLM's paged_attention_v2: split-KV decode attention over the paged caches of lab 05.
/// Each sequence is cut into partitions of partition_size tokens; one thread block per (query
/// head, sequence, partition) writes that partition's partial softmax state, and a reduce kernel
/// merges the partials of each (sequence, head) into the output. Host tensors in, host tensors
/// out; the caller picks where the kernels run: the SIMT emulator (every machine) or a CUDA GPU
/// (builds in which CMake found nvcc).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "pa/backend.hpp"
#include "pa/device_session.hpp"
#include "pa/tensor.hpp"
#include "pa/waves.hpp"

namespace pa::cuda_v2 {

/// [constants]
/// The sizes the kernels are instantiated for (template arguments, like vLLM's).
inline constexpr std::array<int, 6> kSupportedHeadSizes{64, 80, 96, 112, 128, 256};
inline constexpr std::array<int, 3> kSupportedBlockSizes{8, 16, 32};
/// Partition sizes: vLLM's 512, and 64, which cuts a few thousand tokens into dozens of
/// partitions (the tests' way to many partitions at emulator speed).
inline constexpr std::array<int, 2> kSupportedPartitionSizes{64, 512};
/// vLLM's partition size (PARTITION_SIZE in csrc/attention/paged_attention_v2.cu).
inline constexpr int kPartitionSize = 512;

/// Threads per thread block of both kernels (four warps).
inline constexpr int kNumThreads = 128;
/// Threads per warp.
inline constexpr int kWarpSize = 32;

/// The registers per thread the attention kernel is designed to fit in (ptxas reports what it
/// uses: `tools/lab bench --ptxas 06`); the emulator, which has no registers, answers
/// choose_partition_size as an H100 would at this figure.
inline constexpr int kDesignRegisters = 160;  // ptxas 13, sm_90, fp16 head 128: 158
/// [constants]

/// [api]
/// Returns how many partitions of partition_size tokens the longest context is cut into:
/// ceil(max_seq_len / partition_size), the partition extent of the grid and of the scratch.
constexpr int v2_max_num_partitions(int max_seq_len, int partition_size) {
  return (max_seq_len + partition_size - 1) / partition_size;
}

/// One decode step of attention over the paged caches, split-KV: for every sequence b and query
/// head h, out[b, h] = softmax(scale * K q[b, h]) V over the first seq_lens[b] tokens of b, read
/// through block_tables[b]; query head h reads kv head h / (num_heads / num_kv_heads).
/// A sequence of more than one partition leaves partition p's state in the scratch tensors:
/// max_logits[b, h, p] = m (its largest logit), exp_sums[b, h, p] = sum of exp(logit - m) over
/// its tokens, tmp_out[b, h, p, :] = sum of exp(logit - m) v over its tokens (not divided).
/// Scratch entries of a one-partition sequence, and of partitions past a sequence's own count,
/// are left as they were: those are never written, read or merged.
/// out, query:          [num_seqs, num_heads, head_size]
/// exp_sums, max_logits: [num_seqs, num_heads, max_num_partitions] float32
/// tmp_out:             [num_seqs, num_heads, max_num_partitions, head_size] float32
/// key_cache:           [num_blocks, num_kv_heads, head_size / x, block_size, x]
/// value_cache:         [num_blocks, num_kv_heads, head_size, block_size]
/// block_tables:        [num_seqs, max_num_blocks_per_seq] int32;  seq_lens: [num_seqs] int32
/// max_num_partitions = v2_max_num_partitions(max_seq_len, partition_size); max_seq_len bounds
/// every seq_len; partition_size is one of kSupportedPartitionSizes.
void paged_attention_v2(Backend backend, Tensor& out, Tensor& exp_sums, Tensor& max_logits,
                        Tensor& tmp_out, const Tensor& query, const Tensor& key_cache,
                        const Tensor& value_cache, int num_kv_heads, float scale,
                        const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                        int max_seq_len, int partition_size);

/// The reduce kernel alone, on partials the caller gives instead of the attention kernel's: for
/// every sequence b of more than one partition (ceil(seq_lens[b] / partition_size) > 1) and
/// every head h, out[b, h] = the merge of (max_logits, exp_sums, tmp_out)[b, h, p] over the
/// sequence's own partitions p, as paged_attention_v2's second launch computes it; the rows of
/// one-partition sequences keep what `out` held. What it is for: tests that hand the merge
/// states of their own, so that a wrong merge is told apart from a wrong partial.
/// out:                 [num_seqs, num_heads, head_size] of a float dtype (what is written)
/// exp_sums, max_logits: [num_seqs, num_heads, max_num_partitions] float32
/// tmp_out:             [num_seqs, num_heads, max_num_partitions, head_size] float32
/// seq_lens:            [num_seqs] int32, each in [1, max_seq_len]
/// max_num_partitions = v2_max_num_partitions(max_seq_len, partition_size).
void paged_attention_v2_reduce(Backend backend, Tensor& out, const Tensor& exp_sums,
                               const Tensor& max_logits, const Tensor& tmp_out,
                               const Tensor& seq_lens, int max_seq_len, int partition_size);

/// Returns the bytes of dynamic shared memory the attention kernel uses: one float32 logit per
/// token of a partition, then one float32 row of head_size per warp for the cross-warp sum.
/// Independent of the context length: nothing here caps it.
constexpr std::size_t v2_shared_mem_bytes(int head_size, int partition_size) {
  return (static_cast<std::size_t>(partition_size) +
          static_cast<std::size_t>(kNumThreads / kWarpSize) * static_cast<std::size_t>(head_size)) *
         sizeof(float);
}

/// Returns the bytes of dynamic shared memory the reduce kernel uses: one float32 weight per
/// thread, the tile of partitions it merges at a time. Independent of the context length.
constexpr std::size_t v2_reduce_shared_mem_bytes() {
  return static_cast<std::size_t>(kNumThreads) * sizeof(float);
}

/// Returns the partition size, among kSupportedPartitionSizes, that FA2's wave rule
/// (pa::waves::pick_chunk_size) picks for num_seqs * num_heads thread-block rows of max_seq_len
/// tokens on a device that runs `slots` attention blocks at once: the largest whose grid's
/// wave efficiency is within 85 % of the best (the fewest partitions, the smallest reduce).
constexpr int v2_partition_size(int num_seqs, int num_heads, int max_seq_len, int slots) {
  return pa::waves::pick_chunk_size(kSupportedPartitionSizes,
                                    static_cast<std::int64_t>(num_seqs) * num_heads, max_seq_len,
                                    slots);
}

/// Returns the partition size v2_partition_size picks on the device of `backend`. The slots
/// are the attention kernel's blocks per SM × SMs from the CUDA occupancy API for this dtype,
/// head_size and block_size, or, on the emulator, an H100's at kDesignRegisters.
int choose_partition_size(Backend backend, DType dtype, int head_size, int block_size,
                          int num_seqs, int num_heads, int max_seq_len);

/// Returns the bytes of keys or values one attention block has on their way by design: each
/// of its warps one whole cache block of its head (block_size tokens × head_size elements of
/// elem_bytes), the next block's keys loaded while it multiplies the current one (the register
/// double buffer) and a block's values all issued before the first is used.
constexpr std::size_t v2_bytes_in_flight(int head_size, int block_size, int elem_bytes) {
  return static_cast<std::size_t>(kNumThreads / kWarpSize) * static_cast<std::size_t>(block_size) *
         static_cast<std::size_t>(head_size) * static_cast<std::size_t>(elem_bytes);
}

/// Returns true when this build has the CUDA backend and a CUDA device is present.
bool cuda_device_present();
/// [api]

/// [device_session]
/// paged_attention_v2 without the host copies around it, for timing the two kernels alone
/// (bench_lab.cpp): launch (the attention kernel and, when some sequence has more than one
/// partition, the reduce kernel), download and the timings are pa::DeviceSession's
/// (common/pa/device_session.hpp), through the very launches paged_attention_v2 makes.
class DeviceSession : public pa::DeviceSession {
 public:
  /// Checks the operands as paged_attention_v2 does and copies them to `backend`'s device
  /// memory; the session owns the output and the scratch, NaN until the first launch.
  DeviceSession(Backend backend, const Tensor& query, const Tensor& key_cache,
                const Tensor& value_cache, int num_kv_heads, float scale,
                const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                int max_seq_len, int partition_size);
};
/// [device_session]

}  // namespace pa::cuda_v2
