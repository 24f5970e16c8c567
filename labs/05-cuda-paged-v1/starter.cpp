// Lab 05 — vLLM's paged_attention_v1 and reshape_and_cache. Your file: the two kernel bodies,
// reshape_and_cache_kernel first, then paged_attention_v1_kernel step by step; the chapter's
// sections follow the TODO steps one for one.
//
//   tools/lab watch 05     # rebuild and grade on every save
//   tools/lab grade 05     # the same, once
//
// CUDA C++. The given launchers (given/launchers.cpp) #include this file and are compiled
// twice: against the SIMT emulator (always, so every test runs on your laptop) and by nvcc
// when CMake finds it. given/kernel_support.cuh has Vec<T, N>, to_float / from_float, dot,
// ceil_div / imax / imin, WARP_SIZE, FULL_MASK and PA_TODO_KERNEL.
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
  PA_TODO_KERNEL();  // delete this line when you write the body

  // TODO 1. This block's token is blockIdx.x; its slot is slot_mapping[token]. A negative slot
  //         is a padding token: return without writing anything.
  // TODO 2. The slot names physical block slot / block_size, row slot % block_size.
  // TODO 3. Stride i = threadIdx.x, threadIdx.x + blockDim.x, ... over the token's
  //         num_kv_heads * head_size elements; element i is head i / head_size, dimension
  //         d = i % head_size, and sits at key[token * key_stride + i] (value likewise).
  // TODO 4. Store it at value_cache[block, head, d, row] and at
  //         key_cache[block, head, d / x, row, d % x] — flatten both with int64 arithmetic.
}
/// [reshape_and_cache_kernel]

// =============================================================================================
// Kernel 2: paged_attention_v1 — one thread block per (query head, sequence)
// =============================================================================================

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
    const int kv_head_stride) {
  PA_TODO_KERNEL();  // delete this line when you write the body

  // ---- Step 0 (given): the geometry (compile-time) and who this thread is ----------------
  constexpr int THREAD_GROUP_SIZE = imax(WARP_SIZE / BLOCK_SIZE, 1);  // threads per key token
  constexpr int NUM_THREAD_GROUPS = NUM_THREADS / THREAD_GROUP_SIZE;
  constexpr int NUM_WARPS = NUM_THREADS / WARP_SIZE;
  constexpr int VEC_SIZE = imax(16 / (THREAD_GROUP_SIZE * static_cast<int>(sizeof(scalar_t))), 1);
  constexpr int NUM_ELEMS_PER_THREAD = HEAD_SIZE / THREAD_GROUP_SIZE;
  constexpr int NUM_VECS_PER_THREAD = NUM_ELEMS_PER_THREAD / VEC_SIZE;
  constexpr int x = 16 / static_cast<int>(sizeof(scalar_t));  // key_cache's innermost extent
  static_assert(WARP_SIZE % BLOCK_SIZE == 0, "one warp covers one cache block");
  static_assert(x % VEC_SIZE == 0, "a vec never straddles two x-chunks of the key cache");
  static_assert(HEAD_SIZE % (THREAD_GROUP_SIZE * VEC_SIZE) == 0, "whole vecs per thread");
  using Q_vec = Vec<scalar_t, VEC_SIZE>;
  using K_vec = Vec<scalar_t, VEC_SIZE>;

  const int head_idx = blockIdx.x;
  const int num_heads = gridDim.x;
  const int seq_idx = blockIdx.y;
  const int thread_idx = threadIdx.x;
  const int warp_idx = thread_idx / WARP_SIZE;
  const int lane = thread_idx % WARP_SIZE;
  const int thread_group_idx = thread_idx / THREAD_GROUP_SIZE;  // block-wide, < NUM_THREAD_GROUPS
  const int thread_group_offset = thread_idx % THREAD_GROUP_SIZE;  // rank inside the group
  const int thread_group_in_warp = lane / THREAD_GROUP_SIZE;  // the row of a cache block it takes
  const int seq_len = seq_lens[seq_idx];
  const int num_seq_blocks = ceil_div(seq_len, BLOCK_SIZE);
  const int* block_table = block_tables + seq_idx * max_num_blocks_per_seq;  // [max_num_blocks]

  // TODO 0. kv_head_idx: the kv head this query head reads. num_heads / num_kv_heads
  //         consecutive query heads share one kv head (GQA; MHA is the case of 1).

  // TODO 1. The query into shared memory: __shared__ Q_vec q_vecs[THREAD_GROUP_SIZE]
  //         [NUM_VECS_PER_THREAD]. Row r holds the vecs a group's rank-r thread works on:
  //         vec r, r + THREAD_GROUP_SIZE, r + 2 * THREAD_GROUP_SIZE, ... of
  //         q[seq_idx, head_idx, :] (q_stride elements per sequence). The block's thread groups
  //         share the loading; then every thread reads every row: barrier.

  // TODO 2. q·k for every token. SIMT_DYNAMIC_SHARED(float, shared_mem); the logits live in it
  //         ([num_seq_blocks * BLOCK_SIZE] floats), and __shared__ float red_smem[2 * NUM_WARPS]
  //         holds the reductions' partials. Warp w takes logical blocks w, w + NUM_WARPS, ...;
  //         inside a block, thread group thread_group_in_warp takes that row (token).
  //         Physical block = block_table[logical block]. The group's rank-r thread loads its
  //         vecs j = 0 .. NUM_VECS_PER_THREAD-1: dimensions d = (r + j * THREAD_GROUP_SIZE) *
  //         VEC_SIZE onward, found at key_cache[block, kv_head_idx, d / x, row, d % x].
  //         Sum dot(q_vec, k_vec) over j, then add the group's partial sums together with
  //         __shfl_xor_sync (masks THREAD_GROUP_SIZE/2 .. 1), multiply by scale. Rank 0 stores
  //         the logit — 0 for rows at or past seq_len — and keeps its running qk_max of the
  //         real ones (start from -FLT_MAX).

  // TODO 3. Reduction 1, the block-wide max: a butterfly over the warp (masks 16 down to
  //         THREAD_GROUP_SIZE), lane 0 writes red_smem[warp_idx], barrier, each warp folds the
  //         NUM_WARPS partials the same way, then broadcast lane 0's value with __shfl_sync.

  // TODO 4. Reduction 2, the sum: for tokens i = thread_idx, thread_idx + NUM_THREADS, ... <
  //         seq_len replace logits[i] by __expf(logits[i] - qk_max) and add it to exp_sum; sum
  //         exp_sum over the block (as in TODO 3, through red_smem[NUM_WARPS ..]); scale every
  //         logit by 1 / exp_sum. Other threads read these probabilities next: barrier.

  // ---- Step 5 (given): the value-side geometry -------------------------------------------
  // value_cache rows are dimensions, columns tokens: a thread reads V_VEC_SIZE tokens of one
  // dimension in one load. NUM_V_VECS_PER_ROW lanes cover one row of a block, so a warp covers
  // NUM_ROWS_PER_ITER rows at a time and NUM_ROWS_PER_THREAD passes cover the head.
  constexpr int V_VEC_SIZE = imin(16 / static_cast<int>(sizeof(scalar_t)), BLOCK_SIZE);
  using V_vec = Vec<scalar_t, V_VEC_SIZE>;
  constexpr int NUM_V_VECS_PER_ROW = BLOCK_SIZE / V_VEC_SIZE;
  constexpr int NUM_ROWS_PER_ITER = WARP_SIZE / NUM_V_VECS_PER_ROW;
  constexpr int NUM_ROWS_PER_THREAD = ceil_div(HEAD_SIZE, NUM_ROWS_PER_ITER);

  // TODO 5. float accs[NUM_ROWS_PER_THREAD], zeroed. Warp w again takes logical blocks w,
  //         w + NUM_WARPS, ...; the lane reads the V_VEC_SIZE probabilities of columns
  //         (lane % NUM_V_VECS_PER_ROW) * V_VEC_SIZE onward, and for i < NUM_ROWS_PER_THREAD
  //         the row d = lane / NUM_V_VECS_PER_ROW + i * NUM_ROWS_PER_ITER (if d < HEAD_SIZE):
  //         one V_vec from value_cache[block, kv_head_idx, d, those columns]; accs[i] +=
  //         sum_j prob[j] * v[j]. A column at or past seq_len holds garbage (NaN in the
  //         tests), and 0 * NaN is NaN: use 0 for it instead of reading it into the sum.

  // TODO 6. Fold the lanes that share a row (__shfl_xor_sync, masks NUM_V_VECS_PER_ROW/2 .. 1),
  //         then the warps: barrier (the logits' memory becomes float out_smem[NUM_WARPS / 2]
  //         [HEAD_SIZE]), and halve the active warps each round — the upper half writes its
  //         rows, barrier, the lower half adds them, barrier.

  // TODO 7. Warp 0's row leaders (lane % NUM_V_VECS_PER_ROW == 0) write
  //         out[seq_idx, head_idx, d] with from_float.
}
/// [paged_attention_v1_kernel]

}  // namespace
}  // namespace pa::cuda_v1::SIMT_BACKEND
