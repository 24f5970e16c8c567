/// \file
/// Lab 05 — vLLM's paged_attention_v1 kernel and its cache writer reshape_and_cache, in vLLM's
/// memory layouts. Host tensors in, host tensors out; the caller picks where the kernels run:
/// the SIMT emulator (every machine) or a CUDA GPU (builds in which CMake found nvcc).
#pragma once

#include <array>
#include <cstddef>

#include "pa/backend.hpp"
#include "pa/device_session.hpp"
#include "pa/tensor.hpp"

namespace pa::cuda_v1 {

/// [constants]
/// The sizes the attention kernel is instantiated for (template arguments, like vLLM's).
inline constexpr std::array<int, 6> kSupportedHeadSizes{64, 80, 96, 112, 128, 256};
inline constexpr std::array<int, 3> kSupportedBlockSizes{8, 16, 32};

/// Threads per thread block of paged_attention_v1_kernel (four warps).
inline constexpr int kNumThreads = 128;
/// Threads per warp.
inline constexpr int kWarpSize = 32;
/// [constants]

/// [api]
/// Scatters this step's keys and values into the paged caches: token i goes to slot
/// slot_mapping[i] (block slot / block_size, row slot % block_size); a negative slot marks a
/// padding token and writes nothing.
/// key, value:  [num_tokens, num_kv_heads, head_size]
/// key_cache:   [num_blocks, num_kv_heads, head_size / x, block_size, x]   (x = 16 / elem bytes)
/// value_cache: [num_blocks, num_kv_heads, head_size, block_size]
/// slot_mapping: [num_tokens] int64
void reshape_and_cache(Backend backend, const Tensor& key, const Tensor& value,
                       Tensor& key_cache, Tensor& value_cache, const Tensor& slot_mapping);

/// One decode step of attention over the paged caches: for every sequence b and query head h,
/// out[b, h] = softmax(scale * K q[b, h]) V over the first seq_lens[b] tokens of b, read
/// through block_tables[b]; query head h reads kv head h / (num_heads / num_kv_heads).
/// out, query:   [num_seqs, num_heads, head_size]
/// key_cache:    [num_blocks, num_kv_heads, head_size / x, block_size, x]
/// value_cache:  [num_blocks, num_kv_heads, head_size, block_size]
/// block_tables: [num_seqs, max_num_blocks_per_seq] int32;  seq_lens: [num_seqs] int32
/// max_seq_len bounds every seq_len and sizes the kernel's shared memory.
void paged_attention_v1(Backend backend, Tensor& out, const Tensor& query,
                        const Tensor& key_cache, const Tensor& value_cache, int num_kv_heads,
                        float scale, const Tensor& block_tables, const Tensor& seq_lens,
                        int block_size, int max_seq_len);

/// The two points of paged_attention_v1_kernel where a probe launch stops, so that the first
/// half of the kernel can be checked before the value side exists: after TODO 2 (the logits)
/// and after TODO 4 (the probabilities). A normal launch passes kNone. vLLM's kernel has no
/// probe; the tests' is two extra arguments.
enum class Probe : int { kNone = 0, kLogits = 1, kProbabilities = 2 };

/// Runs paged_attention_v1_kernel up to `probe` (kLogits or kProbabilities) and returns, for
/// every sequence b and query head h, the row the kernel holds in shared memory there, over
/// b's whole blocks: [num_seqs, num_heads, max_num_blocks_per_seq * block_size] float32, with
/// columns from ceil(seq_lens[b] / block_size) * block_size on left NaN. Same operands as
/// paged_attention_v1.
Tensor paged_attention_v1_probe(Backend backend, Probe probe, const Tensor& query,
                                const Tensor& key_cache, const Tensor& value_cache,
                                int num_kv_heads, float scale, const Tensor& block_tables,
                                const Tensor& seq_lens, int block_size, int max_seq_len);

/// Returns the bytes of dynamic shared memory the v1 kernel needs: every logit of the longest
/// sequence (padded to whole blocks) as float32, or the cross-warp output buffer if larger.
constexpr std::size_t v1_shared_mem_bytes(int head_size, int block_size, int max_seq_len) {
  const std::size_t padded = static_cast<std::size_t>((max_seq_len + block_size - 1) / block_size) *
                             static_cast<std::size_t>(block_size);
  const std::size_t logits = padded * sizeof(float);
  const std::size_t outputs = static_cast<std::size_t>(kNumThreads / kWarpSize / 2) *
                              static_cast<std::size_t>(head_size) * sizeof(float);
  return logits > outputs ? logits : outputs;
}

/// Returns the longest context the v1 kernel accepts on `backend` for this configuration: the
/// most logits that fit in the dynamic shared memory the device lets one block opt into.
int v1_max_seq_len(Backend backend, DType dtype, int head_size, int block_size);

/// Returns true when this build has the CUDA backend and a CUDA device is present.
bool cuda_device_present();
/// [api]

/// [device_session]
/// paged_attention_v1 without the host copies around it, for timing the kernel alone
/// (bench_lab.cpp): launch, download and the timings are pa::DeviceSession's
/// (common/pa/device_session.hpp), through the very launch paged_attention_v1 makes.
class DeviceSession : public pa::DeviceSession {
 public:
  /// Checks the operands as paged_attention_v1 does and copies them to `backend`'s device
  /// memory; the session owns the output, shaped like query and NaN until the first launch.
  DeviceSession(Backend backend, const Tensor& query, const Tensor& key_cache,
                const Tensor& value_cache, int num_kv_heads, float scale,
                const Tensor& block_tables, const Tensor& seq_lens, int block_size,
                int max_seq_len);
};
/// [device_session]

}  // namespace pa::cuda_v1
