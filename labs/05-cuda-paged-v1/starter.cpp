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

  // TODO 1. Which token, and whether it is stored at all. In: blockIdx.x, slot_mapping
  //         [num_tokens]. A padding token (negative slot) writes nothing, and no address is
  //         computed from its slot.
  // TODO 2. Where the slot lives: its physical block and its row in that block (§ The cache
  //         layouts).
  // TODO 3. The threads share the token's num_kv_heads * head_size elements of key and value
  //         ([num_tokens, num_kv_heads, head_size], key_stride / value_stride per token); every
  //         element is copied exactly once, whatever blockDim.x is.
  // TODO 4. Each element lands at its place in both caches: key_cache
  //         [num_blocks, num_kv_heads, head_size/x, block_size, x] and value_cache
  //         [num_blocks, num_kv_heads, head_size, block_size]. Invariant: reading the caches back
  //         through the same layouts gives the token's key and value; nothing else changes.
  //         Offsets reach past 2^31 elements in a large cache (§ The cache layouts): compute
  //         them in int64.
  //         Stuck? tools/lab hint 05 reshape
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
    const int kv_head_stride,
    const Probe probe_stage,                 // kNone, or where a probe launch stops (tests)
    float* __restrict__ probe) {             // [num_seqs, num_heads, max_num_blocks_per_seq *
                                             //  BLOCK_SIZE] float32; nullptr unless probing
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

  // TODO 0. Goal: kv_head_idx, the kv head this query head reads under grouped-query
  //         attention (§ What one decode step asks of the kernel). Invariant: consecutive query
  //         heads share a kv head; with num_heads == num_kv_heads each reads its own.

  // TODO 1. Goal: the query q[seq_idx, head_idx, :] ([HEAD_SIZE], q_stride per sequence) in
  //         __shared__ Q_vec q_vecs[THREAD_GROUP_SIZE][NUM_VECS_PER_THREAD], laid out so that a
  //         group's rank-r thread finds the vecs it multiplies in row r (§ Thread groups, vecs
  //         and warps). The whole block shares the loading. Invariant after it: every thread may
  //         read every row — the writes of all threads are visible.

  // TODO 2. Goal: the logits. Out: logits ([num_seq_blocks * BLOCK_SIZE] floats at the start of
  //         SIMT_DYNAMIC_SHARED(float, shared_mem)), and for each group's rank 0 the running max
  //         qk_max of its real logits; __shared__ float red_smem[2 * NUM_WARPS] is kept for the
  //         reductions. Work split: a warp per logical block (found through block_table), a thread
  //         group per token row, a rank per slice of the head; the key's dimensions sit in
  //         key_cache in x-chunks (§ The cache layouts). Invariants after it: logits[t] =
  //         scale * q·k_t for every t < seq_len, with every rank's slice in it; rows at or past
  //         seq_len hold 0 and never reach qk_max.

  // ---- Probe A (given): a probe launch stops here and hands the tests the logits ----------
  if (probe_exit(Probe::kLogits, probe_stage, probe, num_seq_blocks * BLOCK_SIZE,
                 max_num_blocks_per_seq * BLOCK_SIZE)) {
    return;
  }

  // TODO 3. Goal: the block-wide max of the logits, in every thread (§ The two reductions):
  //         first within each warp, then across warps through red_smem.

  // TODO 4. Goal: the probabilities, in place. Out: logits[t] = e^(s_t - max) / sum over
  //         t' < seq_len of e^(s_t' - max), for t < seq_len; the sum is block-wide (the other
  //         half of red_smem). Invariant after it: every thread may read every probability.

  // ---- Probe B (given): a probe launch stops here and hands the tests the probabilities ---
  // Its own barrier, as at Probe A: with TODOs 3 and 4 still empty it reports wrong
  // probabilities, not a race.
  if (probe_exit(Probe::kProbabilities, probe_stage, probe, num_seq_blocks * BLOCK_SIZE,
                 max_num_blocks_per_seq * BLOCK_SIZE)) {
    return;
  }

  // ---- Step 5 (given): the value-side geometry -------------------------------------------
  // value_cache rows are dimensions, columns tokens: a thread reads V_VEC_SIZE tokens of one
  // dimension in one load. NUM_V_VECS_PER_ROW lanes cover one row of a block, so a warp covers
  // NUM_ROWS_PER_ITER rows at a time and NUM_ROWS_PER_THREAD passes cover the head.
  constexpr int V_VEC_SIZE = imin(16 / static_cast<int>(sizeof(scalar_t)), BLOCK_SIZE);
  using V_vec = Vec<scalar_t, V_VEC_SIZE>;
  constexpr int NUM_V_VECS_PER_ROW = BLOCK_SIZE / V_VEC_SIZE;
  constexpr int NUM_ROWS_PER_ITER = WARP_SIZE / NUM_V_VECS_PER_ROW;
  constexpr int NUM_ROWS_PER_THREAD = ceil_div(HEAD_SIZE, NUM_ROWS_PER_ITER);

  // TODO 5. Goal: each lane's share of sum_t w_t v_t. Out: float accs[NUM_ROWS_PER_THREAD],
  //         the rows (dimensions) given by the value-side geometry above, summed over the
  //         tokens of the warp's logical blocks; value_cache is [num_blocks, num_kv_heads,
  //         HEAD_SIZE, BLOCK_SIZE] (a row is a dimension, its columns tokens). Invariant: a
  //         column at or past seq_len adds exactly 0 — its cache row may hold NaN, and 0 * NaN
  //         is NaN (§ The softmax held in shared memory — and labs 02 and 03).

  // TODO 6. Goal: the full sum of each row in warp 0: the lanes that share a row, then the
  //         warps (through float out_smem[NUM_WARPS / 2][HEAD_SIZE], which reuses the logits'
  //         memory: every warp must be done reading them first).

  // TODO 7. Goal: out[seq_idx, head_idx, :] ([num_seqs, num_heads, HEAD_SIZE]) written once per
  //         dimension, rounded to scalar_t once (from_float).
  //         Stuck on a step? tools/lab hint 05 (the steps), tools/lab hint 05 attention.N
}
/// [paged_attention_v1_kernel]

}  // namespace
}  // namespace pa::cuda_v1::SIMT_BACKEND
