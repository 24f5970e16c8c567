// Lab 05 — vLLM's paged_attention_v1 and reshape_and_cache: the reference solution. The two
// kernels only; the given launchers (labs/05-cuda-paged-v1/given/launchers.cpp) include this
// file when the build's LAB_IMPL is `solution`, once per backend (emulator, and nvcc's CUDA).
#include <cfloat>
#include <cstdint>

#include "given/kernel_support.cuh"

namespace pa::cuda_v1::SIMT_BACKEND {
namespace {

// =============================================================================================
// Kernel 1: reshape_and_cache — scatter this step's K and V into the paged caches
// =============================================================================================

/// [reshape_and_cache_kernel]
// grid (num_tokens), block (min(num_kv_heads * head_size, 512)): one thread block per token, its
// threads striding over the token's num_kv_heads * head_size elements.
template <typename scalar_t>
__global__ void reshape_and_cache_kernel(
    const scalar_t* __restrict__ key,          // [num_tokens, num_kv_heads, head_size]
    const scalar_t* __restrict__ value,        // [num_tokens, num_kv_heads, head_size]
    // [num_blocks, num_kv_heads, head_size/x, block_size, x]
    scalar_t* __restrict__ key_cache,
    scalar_t* __restrict__ value_cache,        // [num_blocks, num_kv_heads, head_size, block_size]
    const std::int64_t* __restrict__ slot_mapping,  // [num_tokens]
    const int key_stride, const int value_stride, const int num_kv_heads, const int head_size,
    const int block_size, const int x) {
  const std::int64_t token_idx = blockIdx.x;
  const std::int64_t slot_idx = slot_mapping[token_idx];
  if (slot_idx < 0) return;  // a padding token: nothing to store

  const std::int64_t block_idx = slot_idx / block_size;     // physical block
  const std::int64_t block_offset = slot_idx % block_size;  // row inside it
  const int n = num_kv_heads * head_size;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const int head_idx = i / head_size;
    const int head_offset = i % head_size;  // the dimension d
    const int x_idx = head_offset / x;      // which 16-byte chunk of the key
    const int x_offset = head_offset % x;   // which element of that chunk

    // key_cache[block_idx, head_idx, x_idx, block_offset, x_offset]
    const std::int64_t key_dst =
        (((block_idx * num_kv_heads + head_idx) * (head_size / x) + x_idx) * block_size +
         block_offset) * x + x_offset;
    // value_cache[block_idx, head_idx, head_offset, block_offset]
    const std::int64_t value_dst =
        ((block_idx * num_kv_heads + head_idx) * head_size + head_offset) * block_size +
        block_offset;
    key_cache[key_dst] = key[token_idx * key_stride + i];
    value_cache[value_dst] = value[token_idx * value_stride + i];
  }
}
/// [reshape_and_cache_kernel]

// =============================================================================================
// Kernel 2: paged_attention_v1 — one thread block per (query head, sequence)
// =============================================================================================

/// [block_reduce]
// The cross-warp half of a block-wide sum: every warp folds its 32 lanes with a butterfly of
// shuffles, lane 0 parks the warp's total in red_smem[warp], and after a barrier each warp
// reads the NUM_WARPS partials back and folds them the same way. Every thread gets the total.
template <int NUM_WARPS>
__device__ __forceinline__ float block_sum(float* red_smem,  // [NUM_WARPS]
                                           float sum) {
  const int warp_idx = threadIdx.x / WARP_SIZE;
  const int lane = threadIdx.x % WARP_SIZE;
#pragma unroll
  for (int lane_mask = WARP_SIZE / 2; lane_mask >= 1; lane_mask >>= 1) {
    sum += __shfl_xor_sync(FULL_MASK, sum, lane_mask);
  }
  if (lane == 0) red_smem[warp_idx] = sum;
  __syncthreads();
  sum = lane < NUM_WARPS ? red_smem[lane] : 0.f;
#pragma unroll
  for (int lane_mask = NUM_WARPS / 2; lane_mask >= 1; lane_mask >>= 1) {
    sum += __shfl_xor_sync(FULL_MASK, sum, lane_mask);
  }
  return __shfl_sync(FULL_MASK, sum, 0);
}
/// [block_reduce]

/// [paged_attention_v1_kernel]
// grid (num_heads, num_seqs), block (NUM_THREADS); dynamic shared memory: v1_shared_mem_bytes().
template <typename scalar_t, int HEAD_SIZE, int BLOCK_SIZE, int NUM_THREADS>
__global__ void __launch_bounds__(NUM_THREADS) paged_attention_v1_kernel(
    scalar_t* __restrict__ out,              // [num_seqs, num_heads, HEAD_SIZE]
    const scalar_t* __restrict__ q,          // [num_seqs, num_heads, HEAD_SIZE]
    // [num_blocks, num_kv_heads, HEAD_SIZE/x, BLOCK_SIZE, x]
    const scalar_t* __restrict__ k_cache,
    const scalar_t* __restrict__ v_cache,    // [num_blocks, num_kv_heads, HEAD_SIZE, BLOCK_SIZE]
    const int num_kv_heads, const float scale,
    const int* __restrict__ block_tables,    // [num_seqs, max_num_blocks_per_seq]
    const int* __restrict__ seq_lens,        // [num_seqs]
    const int max_num_blocks_per_seq, const int q_stride, const int kv_block_stride,
    const int kv_head_stride,
    const Probe probe_stage,                 // kNone, or where a probe launch stops (tests)
    float* __restrict__ probe) {             // [num_seqs, num_heads, max_num_blocks_per_seq *
                                             //  BLOCK_SIZE] float32; nullptr unless probing
  // ---- Step 0: the geometry (compile-time) and who this thread is ------------------------
  // A thread group is the THREAD_GROUP_SIZE threads that share one key token; a warp's thread
  // groups cover one cache block, one token each.
  constexpr int THREAD_GROUP_SIZE = imax(WARP_SIZE / BLOCK_SIZE, 1);
  constexpr int NUM_THREAD_GROUPS = NUM_THREADS / THREAD_GROUP_SIZE;
  constexpr int NUM_WARPS = NUM_THREADS / WARP_SIZE;
  // A thread group reads 16 bytes of q and of k per step: VEC_SIZE elements per thread.
  constexpr int VEC_SIZE = imax(16 / (THREAD_GROUP_SIZE * static_cast<int>(sizeof(scalar_t))), 1);
  constexpr int NUM_ELEMS_PER_THREAD = HEAD_SIZE / THREAD_GROUP_SIZE;
  constexpr int NUM_VECS_PER_THREAD = NUM_ELEMS_PER_THREAD / VEC_SIZE;
  constexpr int x = 16 / static_cast<int>(sizeof(scalar_t));  // key_cache's innermost extent
  static_assert(WARP_SIZE % BLOCK_SIZE == 0, "one warp covers one cache block");
  static_assert(x % VEC_SIZE == 0, "a vec never straddles two x-chunks of the key cache");
  static_assert(HEAD_SIZE % (THREAD_GROUP_SIZE * VEC_SIZE) == 0, "whole vecs per thread");

  const int head_idx = blockIdx.x;
  const int num_heads = gridDim.x;
  const int seq_idx = blockIdx.y;
  const int thread_idx = threadIdx.x;
  const int warp_idx = thread_idx / WARP_SIZE;
  const int lane = thread_idx % WARP_SIZE;
  const int thread_group_idx = thread_idx / THREAD_GROUP_SIZE;  // block-wide, < NUM_THREAD_GROUPS
  const int thread_group_offset = thread_idx % THREAD_GROUP_SIZE;  // rank inside the group
  const int thread_group_in_warp = lane / THREAD_GROUP_SIZE;  // the row of a cache block it takes
  // GQA: num_heads / num_kv_heads consecutive query heads share one kv head.
  const int kv_head_idx = head_idx / (num_heads / num_kv_heads);

  const int seq_len = seq_lens[seq_idx];
  const int num_seq_blocks = ceil_div(seq_len, BLOCK_SIZE);
  const int* block_table = block_tables + seq_idx * max_num_blocks_per_seq;  // [max_num_blocks]

  // ---- Step 1: the query, once, into shared memory ---------------------------------------
  // Row r of q_vecs holds the vecs of group rank r: r, r + G, r + 2G, ... (G = group size), so
  // neighbouring threads load neighbouring 16-byte pieces of q.
  using Q_vec = Vec<scalar_t, VEC_SIZE>;
  using K_vec = Vec<scalar_t, VEC_SIZE>;
  __shared__ Q_vec q_vecs[THREAD_GROUP_SIZE][NUM_VECS_PER_THREAD];  // [G, HEAD_SIZE / (G*VEC)]
  const scalar_t* q_ptr = q + seq_idx * q_stride + head_idx * HEAD_SIZE;  // [HEAD_SIZE]
  for (int i = thread_group_idx; i < NUM_VECS_PER_THREAD; i += NUM_THREAD_GROUPS) {
    const int vec_idx = thread_group_offset + i * THREAD_GROUP_SIZE;
    q_vecs[thread_group_offset][i] = *reinterpret_cast<const Q_vec*>(q_ptr + vec_idx * VEC_SIZE);
  }
  __syncthreads();  // every thread reads every row of q_vecs below

  // ---- Step 2: q·k for every token, logits into dynamic shared memory --------------------
  SIMT_DYNAMIC_SHARED(float, shared_mem);
  float* logits = shared_mem;                   // [num_seq_blocks * BLOCK_SIZE]
  __shared__ float red_smem[2 * NUM_WARPS];     // [max partials | sum partials]

  float qk_max = -FLT_MAX;  // this thread's running max (meaningful on group rank 0)
  for (int block_idx = warp_idx; block_idx < num_seq_blocks; block_idx += NUM_WARPS) {
    const std::int64_t physical_block_number = block_table[block_idx];
    const int token_idx = block_idx * BLOCK_SIZE + thread_group_in_warp;
    // key_cache[physical_block_number, kv_head_idx, :, thread_group_in_warp, :]
    const scalar_t* k_ptr = k_cache + physical_block_number * kv_block_stride +
                            kv_head_idx * kv_head_stride + thread_group_in_warp * x;
    K_vec k_vecs[NUM_VECS_PER_THREAD];
#pragma unroll
    for (int j = 0; j < NUM_VECS_PER_THREAD; ++j) {
      const int d = (thread_group_offset + j * THREAD_GROUP_SIZE) * VEC_SIZE;  // first dim
      // dims d .. d+VEC_SIZE-1 sit in x-chunk d / x, at offset d % x of this token's row
      k_vecs[j] = *reinterpret_cast<const K_vec*>(k_ptr + (d / x) * BLOCK_SIZE * x + d % x);
    }
    // Each thread holds a slice of the dot product; the group's butterfly adds the slices so
    // that every member ends with the whole q·k.
    float qk = 0.f;
#pragma unroll
    for (int j = 0; j < NUM_VECS_PER_THREAD; ++j) {
      qk += dot(q_vecs[thread_group_offset][j], k_vecs[j]);
    }
#pragma unroll
    for (int lane_mask = THREAD_GROUP_SIZE / 2; lane_mask >= 1; lane_mask >>= 1) {
      qk += __shfl_xor_sync(FULL_MASK, qk, lane_mask);
    }
    qk *= scale;
    if (thread_group_offset == 0) {
      // Rows past seq_len in the last block hold stale data (or NaN): store 0, keep the max.
      const bool past_end = token_idx >= seq_len;
      logits[token_idx] = past_end ? 0.f : qk;
      qk_max = past_end ? qk_max : fmaxf(qk_max, qk);
    }
  }

  // ---- Probe A (given): a probe launch stops here and hands the tests the logits ----------
  if (probe_exit(Probe::kLogits, probe_stage, probe, num_seq_blocks * BLOCK_SIZE,
                 max_num_blocks_per_seq * BLOCK_SIZE)) {
    return;
  }

  // ---- Step 3: reduction 1, the block-wide max of the logits -----------------------------
  // Inside a warp: butterfly over the group leaders (masks below THREAD_GROUP_SIZE would only
  // fold a group into itself). Across warps: through red_smem[0 .. NUM_WARPS).
#pragma unroll
  for (int lane_mask = WARP_SIZE / 2; lane_mask >= THREAD_GROUP_SIZE; lane_mask >>= 1) {
    qk_max = fmaxf(qk_max, __shfl_xor_sync(FULL_MASK, qk_max, lane_mask));
  }
  if (lane == 0) red_smem[warp_idx] = qk_max;
  __syncthreads();  // also publishes every warp's logits to the loop below
  qk_max = lane < NUM_WARPS ? red_smem[lane] : -FLT_MAX;
#pragma unroll
  for (int lane_mask = NUM_WARPS / 2; lane_mask >= 1; lane_mask >>= 1) {
    qk_max = fmaxf(qk_max, __shfl_xor_sync(FULL_MASK, qk_max, lane_mask));
  }
  qk_max = __shfl_sync(FULL_MASK, qk_max, 0);

  // ---- Step 4: reduction 2, exponentials and their block-wide sum ------------------------
  float exp_sum = 0.f;
  for (int i = thread_idx; i < seq_len; i += NUM_THREADS) {
    const float e = __expf(logits[i] - qk_max);
    logits[i] = e;
    exp_sum += e;
  }
  exp_sum = block_sum<NUM_WARPS>(&red_smem[NUM_WARPS], exp_sum);
  const float inv_sum = __fdividef(1.f, exp_sum);
  for (int i = thread_idx; i < seq_len; i += NUM_THREADS) logits[i] *= inv_sum;
  __syncthreads();  // the V loop reads probabilities that other threads just wrote

  // ---- Probe B (given): a probe launch stops here and hands the tests the probabilities ---
  // Its own barrier, as at Probe A: with TODOs 3 and 4 still empty it reports wrong
  // probabilities, not a race.
  if (probe_exit(Probe::kProbabilities, probe_stage, probe, num_seq_blocks * BLOCK_SIZE,
                 max_num_blocks_per_seq * BLOCK_SIZE)) {
    return;
  }

  // ---- Step 5: probabilities times V, per warp -------------------------------------------
  // value_cache rows are dimensions, columns tokens: a thread reads V_VEC_SIZE tokens of one
  // dimension in one load. NUM_V_VECS_PER_ROW lanes cover one row of a block, so a warp covers
  // NUM_ROWS_PER_ITER rows at a time and NUM_ROWS_PER_THREAD passes cover the head.
  constexpr int V_VEC_SIZE = imin(16 / static_cast<int>(sizeof(scalar_t)), BLOCK_SIZE);
  using V_vec = Vec<scalar_t, V_VEC_SIZE>;
  constexpr int NUM_V_VECS_PER_ROW = BLOCK_SIZE / V_VEC_SIZE;
  constexpr int NUM_ROWS_PER_ITER = WARP_SIZE / NUM_V_VECS_PER_ROW;
  constexpr int NUM_ROWS_PER_THREAD = ceil_div(HEAD_SIZE, NUM_ROWS_PER_ITER);

  float accs[NUM_ROWS_PER_THREAD];  // [NUM_ROWS_PER_THREAD] partial out[row] of this thread
#pragma unroll
  for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) accs[i] = 0.f;

  const int v_token_offset = (lane % NUM_V_VECS_PER_ROW) * V_VEC_SIZE;  // first column read
  for (int block_idx = warp_idx; block_idx < num_seq_blocks; block_idx += NUM_WARPS) {
    const std::int64_t physical_block_number = block_table[block_idx];
    const int token_idx = block_idx * BLOCK_SIZE + v_token_offset;
    float probs[V_VEC_SIZE];  // [V_VEC_SIZE] softmax weights of tokens token_idx ..
#pragma unroll
    for (int j = 0; j < V_VEC_SIZE; ++j) probs[j] = logits[token_idx + j];
    // value_cache[physical_block_number, kv_head_idx, :, :]
    const scalar_t* v_ptr =
        v_cache + physical_block_number * kv_block_stride + kv_head_idx * kv_head_stride;
#pragma unroll
    for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) {
      const int row_idx = lane / NUM_V_VECS_PER_ROW + i * NUM_ROWS_PER_ITER;
      if (row_idx < HEAD_SIZE) {
        const V_vec v_vec =
            *reinterpret_cast<const V_vec*>(v_ptr + row_idx * BLOCK_SIZE + v_token_offset);
        float acc = 0.f;
#pragma unroll
        for (int j = 0; j < V_VEC_SIZE; ++j) {
          // A weight of 0 does not cancel a NaN: tokens past seq_len must not be read at all.
          const float v = token_idx + j < seq_len ? to_float(v_vec.val[j]) : 0.f;
          acc += probs[j] * v;
        }
        accs[i] += acc;
      }
    }
  }

  // ---- Step 6: fold the lanes that share a row, then the warps ---------------------------
#pragma unroll
  for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) {
    float acc = accs[i];
#pragma unroll
    for (int lane_mask = NUM_V_VECS_PER_ROW / 2; lane_mask >= 1; lane_mask >>= 1) {
      acc += __shfl_xor_sync(FULL_MASK, acc, lane_mask);
    }
    accs[i] = acc;
  }

  __syncthreads();  // every warp is done with the logits: their memory becomes out_smem
  float* out_smem = shared_mem;  // [NUM_WARPS / 2, HEAD_SIZE]
  const bool row_leader = lane % NUM_V_VECS_PER_ROW == 0;
#pragma unroll
  for (int active = NUM_WARPS; active > 1; active /= 2) {
    const int mid = active / 2;
    if (warp_idx >= mid && warp_idx < active) {  // the upper half hands its rows down
      float* dst = &out_smem[(warp_idx - mid) * HEAD_SIZE];
#pragma unroll
      for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) {
        const int row_idx = lane / NUM_V_VECS_PER_ROW + i * NUM_ROWS_PER_ITER;
        if (row_idx < HEAD_SIZE && row_leader) dst[row_idx] = accs[i];
      }
    }
    __syncthreads();
    if (warp_idx < mid) {  // the lower half adds them
      const float* src = &out_smem[warp_idx * HEAD_SIZE];
#pragma unroll
      for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) {
        const int row_idx = lane / NUM_V_VECS_PER_ROW + i * NUM_ROWS_PER_ITER;
        if (row_idx < HEAD_SIZE && row_leader) accs[i] += src[row_idx];
      }
    }
    __syncthreads();
  }

  // ---- Step 7: warp 0 writes out[seq_idx, head_idx, :] -----------------------------------
  if (warp_idx == 0) {
    scalar_t* out_ptr =
        out + (static_cast<std::int64_t>(seq_idx) * num_heads + head_idx) * HEAD_SIZE;
#pragma unroll
    for (int i = 0; i < NUM_ROWS_PER_THREAD; ++i) {
      const int row_idx = lane / NUM_V_VECS_PER_ROW + i * NUM_ROWS_PER_ITER;
      if (row_idx < HEAD_SIZE && row_leader) from_float(out_ptr[row_idx], accs[i]);
    }
  }
}
/// [paged_attention_v1_kernel]

}  // namespace
}  // namespace pa::cuda_v1::SIMT_BACKEND
