// Lab 06 — vLLM's paged_attention_v2 and its reduce kernel: the reference solution. The two
// kernels only; the given launchers (labs/06-cuda-split-kv/given/launchers.cpp) include this
// file when the build's LAB_IMPL is `solution`, once per backend (emulator, and nvcc's CUDA).
#include <cfloat>
#include <cstdint>

#include "given/kernel_support.cuh"

namespace pa::cuda_v2::SIMT_BACKEND {
namespace {

// =============================================================================================
// Kernel 1: paged_attention_v2 — one thread block per (query head, sequence, partition)
// =============================================================================================

/// [paged_attention_v2_kernel]
// grid (num_heads, num_seqs, max_num_partitions), block (NUM_THREADS); dynamic shared memory:
// v2_shared_mem_bytes(HEAD_SIZE, PARTITION_SIZE).
template <typename scalar_t, int HEAD_SIZE, int BLOCK_SIZE, int NUM_THREADS, int PARTITION_SIZE>
__global__ void __launch_bounds__(NUM_THREADS) paged_attention_v2_kernel(
    float* __restrict__ exp_sums,          // [num_seqs, num_heads, max_num_partitions]
    float* __restrict__ max_logits,        // [num_seqs, num_heads, max_num_partitions]
    float* __restrict__ tmp_out,           // [num_seqs, num_heads, max_num_partitions, HEAD_SIZE]
    scalar_t* __restrict__ out,            // [num_seqs, num_heads, HEAD_SIZE]
    const scalar_t* __restrict__ q,        // [num_seqs, num_heads, HEAD_SIZE]
    // [num_blocks, num_kv_heads, HEAD_SIZE/x, BLOCK_SIZE, x]
    const scalar_t* __restrict__ k_cache,
    const scalar_t* __restrict__ v_cache,  // [num_blocks, num_kv_heads, HEAD_SIZE, BLOCK_SIZE]
    const int num_kv_heads, const float scale,
    const int* __restrict__ block_tables,  // [num_seqs, max_num_blocks_per_seq]
    const int* __restrict__ seq_lens,      // [num_seqs]
    const int max_num_blocks_per_seq, const int q_stride, const int kv_block_stride,
    const int kv_head_stride) {
  // ---- Step 0 (given): lab 05's geometry, who this thread is, which partition ------------
  using Thread = DecodeThread<scalar_t, HEAD_SIZE, BLOCK_SIZE, NUM_THREADS>;
  constexpr int NUM_WARPS = Thread::NUM_WARPS;
  constexpr int NUM_BLOCKS_PER_PARTITION = PARTITION_SIZE / BLOCK_SIZE;
  static_assert(PARTITION_SIZE % BLOCK_SIZE == 0, "a partition is a whole number of blocks");
  const Thread me;

  const int head_idx = blockIdx.x;
  const int num_heads = gridDim.x;
  const int seq_idx = blockIdx.y;
  const int partition_idx = blockIdx.z;
  const int max_num_partitions = gridDim.z;
  const int kv_head_idx = head_idx / (num_heads / num_kv_heads);  // GQA, as in lab 05
  const int seq_len = seq_lens[seq_idx];
  const int num_seq_blocks = ceil_div(seq_len, BLOCK_SIZE);
  const int num_partitions = ceil_div(seq_len, PARTITION_SIZE);  // this sequence's own count
  const int* block_table = block_tables + seq_idx * max_num_blocks_per_seq;  // [max_num_blocks]

  // ---- Step 1: the partition's blocks and tokens ----------------------------------------
  // The grid is sized for the longest sequence; a shorter one's trailing partitions are empty.
  if (partition_idx >= num_partitions) return;
  const int start_block_idx = partition_idx * NUM_BLOCKS_PER_PARTITION;
  const int end_block_idx = imin(start_block_idx + NUM_BLOCKS_PER_PARTITION, num_seq_blocks);
  const int num_blocks = end_block_idx - start_block_idx;
  const int start_token_idx = start_block_idx * BLOCK_SIZE;
  const int end_token_idx = imin(start_token_idx + PARTITION_SIZE, seq_len);
  const int num_tokens = end_token_idx - start_token_idx;

  // ---- Step 2: the query and the partition's slice of the block table, once -------------
  __shared__ typename Thread::QueryVecs q_vecs;         // [THREAD_GROUP_SIZE, NUM_VECS]
  __shared__ int block_ids[NUM_BLOCKS_PER_PARTITION];  // physical id of each block read
  me.load_query(q_vecs, q + seq_idx * q_stride + head_idx * HEAD_SIZE);
  for (int i = me.thread_idx; i < num_blocks; i += NUM_THREADS) {
    block_ids[i] = block_table[start_block_idx + i];
  }
  __syncthreads();  // every thread reads all of q_vecs and block_ids below

  // ---- Step 3: the logits of the partition's tokens, and their running max --------------
  SIMT_DYNAMIC_SHARED(float, shared_mem);
  float* logits = shared_mem;                    // [PARTITION_SIZE], by token - start_token_idx
  float* warp_rows = shared_mem + PARTITION_SIZE;  // [NUM_WARPS, HEAD_SIZE]
  __shared__ float red_smem[2 * NUM_WARPS];      // [max partials | sum partials]

  // Warp w takes blocks w, w + NUM_WARPS, ...: the keys of its next block are loaded into a
  // second register buffer before this block's dot product, so a warp always has a whole cache
  // block's keys (4 KiB at fp16, head 128, block 16) on their way while it computes.
  const auto k_block_of = [&](int i) {
    return k_cache + static_cast<std::int64_t>(block_ids[i]) * kv_block_stride +
           kv_head_idx * kv_head_stride;
  };
  float qk_max = -FLT_MAX;  // meaningful on group rank 0
  typename Thread::KeyVecs keys, next_keys;  // the register double buffer
  if constexpr (Thread::DOUBLE_BUFFER_KEYS) {
    if (me.warp_idx < num_blocks) me.load_keys(keys, k_block_of(me.warp_idx));
  }
  for (int i = me.warp_idx; i < num_blocks; i += NUM_WARPS) {
    const bool more = i + NUM_WARPS < num_blocks;  // the same on every lane of the warp
    if constexpr (Thread::DOUBLE_BUFFER_KEYS) {
      if (more) me.load_keys(next_keys, k_block_of(i + NUM_WARPS));
    } else {
      me.load_keys(keys, k_block_of(i));
    }
    const float qk = me.qk(q_vecs, keys, scale);
    const int token_idx = start_token_idx + i * BLOCK_SIZE + me.thread_group_in_warp;
    if (me.thread_group_offset == 0) {
      // Rows past the sequence's end hold stale data (or NaN): store 0, keep the max.
      const bool past_end = token_idx >= end_token_idx;
      logits[token_idx - start_token_idx] = past_end ? 0.f : qk;
      qk_max = past_end ? qk_max : fmaxf(qk_max, qk);
    }
    if constexpr (Thread::DOUBLE_BUFFER_KEYS) {
      if (more) keys = next_keys;
    }
  }

  // ---- Step 4: the partition's max m, its exponentials and their sum denom --------------
  qk_max = block_max<NUM_WARPS>(red_smem, qk_max);
  float exp_sum = 0.f;
  for (int i = me.thread_idx; i < num_tokens; i += NUM_THREADS) {
    const float e = __expf(logits[i] - qk_max);
    logits[i] = e;
    exp_sum += e;
  }
  // Not normalized: the merge needs e^(l - m) as it is. block_sum's barrier also publishes
  // every exponential to the value loop.
  exp_sum = block_sum<NUM_WARPS>(&red_smem[NUM_WARPS], exp_sum);

  // ---- Step 5: acc = sum of e^(l - m) v over the partition ------------------------------
  float accs[Thread::NUM_ROWS_PER_THREAD];  // this lane's rows of acc
#pragma unroll
  for (int i = 0; i < Thread::NUM_ROWS_PER_THREAD; ++i) accs[i] = 0.f;
  for (int i = me.warp_idx; i < num_blocks; i += NUM_WARPS) {
    const scalar_t* v_block = v_cache + static_cast<std::int64_t>(block_ids[i]) * kv_block_stride +
                              kv_head_idx * kv_head_stride;
    me.accumulate_values(accs, logits + i * BLOCK_SIZE, v_block, num_tokens - i * BLOCK_SIZE);
  }
  me.fold_row_lanes(accs);

  // ---- Step 6: every warp parks its rows; one barrier ------------------------------------
  if (me.v_row_leader()) {
#pragma unroll
    for (int i = 0; i < Thread::NUM_ROWS_PER_THREAD; ++i) {
      const int row = me.v_row(i);
      if (row < HEAD_SIZE) warp_rows[me.warp_idx * HEAD_SIZE + row] = accs[i];
    }
  }
  __syncthreads();  // the sums below read every warp's rows

  // ---- Step 7: the partial (m, denom, acc) — or, for a one-partition sequence, out ------
  const std::int64_t seq_head = static_cast<std::int64_t>(seq_idx) * num_heads + head_idx;
  if (num_partitions == 1) {
    // The whole sequence is this block's: divide and write the output; no reduce needed.
    const float inv_sum = __fdividef(1.f, exp_sum);
    scalar_t* out_ptr = out + seq_head * HEAD_SIZE;  // [HEAD_SIZE]
    for (int d = me.thread_idx; d < HEAD_SIZE; d += NUM_THREADS) {
      float acc = 0.f;
#pragma unroll
      for (int w = 0; w < NUM_WARPS; ++w) acc += warp_rows[w * HEAD_SIZE + d];
      from_float(out_ptr[d], acc * inv_sum);
    }
    return;
  }
  const std::int64_t partial = seq_head * max_num_partitions + partition_idx;
  if (me.thread_idx == 0) {
    max_logits[partial] = qk_max;
    exp_sums[partial] = exp_sum;
  }
  float* tmp_out_ptr = tmp_out + partial * HEAD_SIZE;  // [HEAD_SIZE]
  for (int d = me.thread_idx; d < HEAD_SIZE; d += NUM_THREADS) {
    float acc = 0.f;
#pragma unroll
    for (int w = 0; w < NUM_WARPS; ++w) acc += warp_rows[w * HEAD_SIZE + d];
    tmp_out_ptr[d] = acc;
  }
}
/// [paged_attention_v2_kernel]

// =============================================================================================
// Kernel 2: paged_attention_v2_reduce — one thread block per (query head, sequence)
// =============================================================================================

/// [paged_attention_v2_reduce_kernel]
// grid (num_heads, num_seqs), block (NUM_THREADS); dynamic shared memory:
// v2_reduce_shared_mem_bytes() (one weight per thread).
template <typename scalar_t, int HEAD_SIZE, int NUM_THREADS, int PARTITION_SIZE>
__global__ void __launch_bounds__(NUM_THREADS) paged_attention_v2_reduce_kernel(
    scalar_t* __restrict__ out,               // [num_seqs, num_heads, HEAD_SIZE]
    const float* __restrict__ exp_sums,       // [num_seqs, num_heads, max_num_partitions]
    const float* __restrict__ max_logits,     // [num_seqs, num_heads, max_num_partitions]
    const float* __restrict__ tmp_out,        // [num_seqs, num_heads, max_num_partitions, HEAD_SIZE]
    const int* __restrict__ seq_lens,         // [num_seqs]
    const int max_num_partitions) {
  // ---- Step 0 (given): who this thread is -------------------------------------------------
  constexpr int NUM_WARPS = NUM_THREADS / WARP_SIZE;
  constexpr int NUM_DIMS_PER_THREAD = ceil_div(HEAD_SIZE, NUM_THREADS);
  constexpr int kInFlight = 8;  // partitions whose rows are loaded before any is used
  const int head_idx = blockIdx.x;
  const int num_heads = gridDim.x;
  const int seq_idx = blockIdx.y;
  const int thread_idx = threadIdx.x;
  const int seq_len = seq_lens[seq_idx];

  // ---- Step 1: this sequence's partials -------------------------------------------------
  const int num_partitions = ceil_div(seq_len, PARTITION_SIZE);
  if (num_partitions == 1) return;  // the attention kernel wrote out itself
  const std::int64_t seq_head = static_cast<std::int64_t>(seq_idx) * num_heads + head_idx;
  const float* m_row = max_logits + seq_head * max_num_partitions;      // [max_num_partitions]
  const float* denom_row = exp_sums + seq_head * max_num_partitions;    // [max_num_partitions]
  const float* acc_rows = tmp_out + seq_head * max_num_partitions * HEAD_SIZE;  // [.., HEAD_SIZE]

  // ---- Step 2: the global max M of the partitions' maxima --------------------------------
  __shared__ float red_smem[2 * NUM_WARPS];  // [max partials | sum partials]
  float global_max = -FLT_MAX;
  for (int p = thread_idx; p < num_partitions; p += NUM_THREADS) {
    global_max = fmaxf(global_max, m_row[p]);
  }
  global_max = block_max<NUM_WARPS>(red_smem, global_max);

  // ---- Step 3: merge, a tile of NUM_THREADS partitions at a time --------------------------
  // Partition p is weighted by e^(m_p - M): the same rescale as lab 03's merge.
  SIMT_DYNAMIC_SHARED(float, weights);  // [NUM_THREADS] the current tile's e^(m_p - M)
  float denom = 0.f;                    // this thread's share of sum_p e^(m_p - M) denom_p
  float accs[NUM_DIMS_PER_THREAD];      // dims thread_idx, thread_idx + NUM_THREADS, ...
#pragma unroll
  for (int k = 0; k < NUM_DIMS_PER_THREAD; ++k) accs[k] = 0.f;
  for (int first = 0; first < num_partitions; first += NUM_THREADS) {
    const int count = imin(NUM_THREADS, num_partitions - first);
    if (thread_idx < count) {
      const float w = __expf(m_row[first + thread_idx] - global_max);
      weights[thread_idx] = w;
      denom += w * denom_row[first + thread_idx];
    }
    __syncthreads();  // the tile's weights are written
    // kInFlight partitions' rows at a time: their loads all issue before the first multiply,
    // instead of one L2 round trip per partition.
    for (int j0 = 0; j0 < count; j0 += kInFlight) {
      float rows[kInFlight][NUM_DIMS_PER_THREAD];  // [kInFlight, NUM_DIMS_PER_THREAD]
#pragma unroll
      for (int jj = 0; jj < kInFlight; ++jj) {
        const float* acc_row = acc_rows + static_cast<std::int64_t>(first + j0 + jj) * HEAD_SIZE;
#pragma unroll
        for (int k = 0; k < NUM_DIMS_PER_THREAD; ++k) {
          const int d = thread_idx + k * NUM_THREADS;
          // A partition past the tile is never read (it may not exist): 0, weighted by 0.
          rows[jj][k] = j0 + jj < count && d < HEAD_SIZE ? acc_row[d] : 0.f;
        }
      }
#pragma unroll
      for (int jj = 0; jj < kInFlight; ++jj) {
        const float w = j0 + jj < count ? weights[j0 + jj] : 0.f;
#pragma unroll
        for (int k = 0; k < NUM_DIMS_PER_THREAD; ++k) accs[k] += w * rows[jj][k];
      }
    }
    __syncthreads();  // every thread is done with the tile before the next one overwrites it
  }
  denom = block_sum<NUM_WARPS>(&red_smem[NUM_WARPS], denom);

  // ---- Step 4: out = acc / denom ---------------------------------------------------------
  const float inv_denom = __fdividef(1.f, denom);
  scalar_t* out_ptr = out + seq_head * HEAD_SIZE;  // [HEAD_SIZE]
#pragma unroll
  for (int k = 0; k < NUM_DIMS_PER_THREAD; ++k) {
    const int d = thread_idx + k * NUM_THREADS;
    if (d < HEAD_SIZE) from_float(out_ptr[d], accs[k] * inv_denom);
  }
}
/// [paged_attention_v2_reduce_kernel]

}  // namespace
}  // namespace pa::cuda_v2::SIMT_BACKEND
