// Lab 06 — vLLM's paged_attention_v2 and its reduce kernel. Your file: the two kernel bodies,
// paged_attention_v2_kernel first (one partition's partial state), then
// paged_attention_v2_reduce_kernel (the merge); the chapter's sections follow the TODO steps
// one for one.
//
//   tools/lab watch 06     # rebuild and grade on every save
//   tools/lab grade 06     # the same, once
//
// CUDA C++. The given launchers (given/launchers.cpp) #include this file and are compiled
// twice: against the SIMT emulator (always, so every test runs on your laptop) and by nvcc when
// CMake finds it. given/kernel_support.cuh has lab 05's helpers (Vec<T, N>, to_float /
// from_float, dot, ceil_div / imax / imin, WARP_SIZE, FULL_MASK, PA_TODO_KERNEL), and
// given/decode_pieces.cuh has lab 05's kernel cut into pieces: DecodeThread (the geometry,
// load_query, qk, accumulate_values, fold_row_lanes) and block_max / block_sum.
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
  PA_TODO_KERNEL();  // delete this line when you write the body

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
  const int* block_table = block_tables + seq_idx * max_num_blocks_per_seq;  // [max_num_blocks]

  // TODO 1. Goal: this block's share of the sequence. Out: the sequence's own num_partitions
  //         (the grid is sized for the longest sequence), and this partition's logical blocks
  //         [start_block_idx, end_block_idx) and tokens [start_token_idx, end_token_idx), with
  //         num_blocks and num_tokens. Invariants: a block whose partition the sequence does not
  //         have returns before it reads, writes or waits at a barrier; only the last partition
  //         is shorter, and neither range reaches past the sequence (§ The partition's bounds).

  // TODO 2. Goal: what every thread of the block reads, in shared memory once: the query
  //         q[seq_idx, head_idx, :] as Thread::QueryVecs (me.load_query), and this partition's
  //         physical block ids, __shared__ int block_ids[NUM_BLOCKS_PER_PARTITION] (i-th = the
  //         block table's entry for logical block start_block_idx + i). Invariant after it:
  //         every thread sees all of both.

  // TODO 3. Goal: the logits of the partition's tokens. Out: float logits[PARTITION_SIZE] at the
  //         start of SIMT_DYNAMIC_SHARED(float, shared_mem) (then float warp_rows[NUM_WARPS]
  //         [HEAD_SIZE]), token t at t - start_token_idx; each group's rank 0 keeps the running
  //         max of its real logits (__shared__ float red_smem[2 * NUM_WARPS] is for the
  //         reductions). Lab 05's work split over this partition's blocks; me.qk gives a group's
  //         logit from key_cache [num_blocks, num_kv_heads, HEAD_SIZE/x, BLOCK_SIZE, x]
  //         (kv_block_stride, kv_head_stride; int64 offsets). Invariant: a token at or past
  //         end_token_idx holds 0 and never reaches the max (§ The partial). Loads in flight:
  //         me.load_keys issues a block's key loads into Thread::KeyVecs; when
  //         Thread::DOUBLE_BUFFER_KEYS, the warp's next block's loads are issued before the
  //         current block's me.qk, so a DRAM round trip overlaps each dot product.

  // TODO 4. Goal: the partition's statistics, relative to its own max. Out, in every thread:
  //         m = the partition's max, denom = the sum of e^(logit - m) over its tokens; logits[i]
  //         replaced by e^(logit - m). Invariant: nothing is divided — a partial stays
  //         undivided until the reduce (§ A partition is lab 03's partial).

  // TODO 5. Goal: acc, the partition's e^(logit - m)-weighted sum of value rows, in each lane's
  //         float accs[Thread::NUM_ROWS_PER_THREAD] (me.accumulate_values over the warp's blocks
  //         of value_cache [num_blocks, num_kv_heads, HEAD_SIZE, BLOCK_SIZE], then
  //         me.fold_row_lanes). Invariant: a token at or past end_token_idx adds exactly 0.

  // TODO 6. Goal: every warp's row sums where the whole block can read them: warp_rows[w][d]
  //         from warp w's row leaders (me.v_row_leader(), me.v_row(i)). Invariant after it:
  //         every warp's rows are visible to every thread.

  // TODO 7. Goal: the partition's result. acc[d] sums the warps' rows. A sequence of one
  //         partition is finished here: out[seq_idx, head_idx, :] ([num_seqs, num_heads,
  //         HEAD_SIZE]) = acc / denom, no scratch written, no reduce. Otherwise the partial goes
  //         to entry (seq_idx, head_idx, partition_idx) of the scratch, whose partition extent
  //         is max_num_partitions: max_logits and exp_sums [num_seqs, num_heads,
  //         max_num_partitions] get m and denom (once), tmp_out [.., HEAD_SIZE] the undivided acc
  //         (§ Writing the partial).
  //         Stuck on a step? tools/lab hint 06 lists them; tools/lab hint 06 attention.N
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
  PA_TODO_KERNEL();  // delete this line when you write the body

  // ---- Step 0 (given): who this thread is -------------------------------------------------
  constexpr int NUM_WARPS = NUM_THREADS / WARP_SIZE;
  constexpr int NUM_DIMS_PER_THREAD = ceil_div(HEAD_SIZE, NUM_THREADS);
  const int head_idx = blockIdx.x;
  const int num_heads = gridDim.x;
  const int seq_idx = blockIdx.y;
  const int thread_idx = threadIdx.x;
  const int seq_len = seq_lens[seq_idx];

  // TODO 1. Goal: which partials are this sequence's. In: max_logits, exp_sums [num_seqs,
  //         num_heads, max_num_partitions], tmp_out [.., HEAD_SIZE]. Out: the rows of
  //         (seq_idx, head_idx) and the sequence's own num_partitions. Invariants: entries past
  //         num_partitions belong to no one and are never read; a one-partition sequence was
  //         written by the attention kernel, and this block leaves it alone (§ The merge).

  // TODO 2. Goal: the global max M of the partitions' maxima, in every thread.

  // TODO 3. Goal: the merged acc and denom. Partition p's weight is beta_p = e^(m_p - M); acc[d]
  //         = sum_p beta_p tmp_out[p, d] for the thread's dimensions (thread_idx + k *
  //         NUM_THREADS < HEAD_SIZE), denom = sum_p beta_p denom_p over the block. The weights
  //         pass through SIMT_DYNAMIC_SHARED(float, weights) [NUM_THREADS], a tile of partitions
  //         at a time. Invariants: no weight exceeds 1; a tile's weights are read only after all
  //         are written, and overwritten only after all are read (§ The reduce kernel: max,
  //         rescale, ordered sum).

  // TODO 4. Goal: out[seq_idx, head_idx, :] = acc / denom, rounded to scalar_t once.
  //         Stuck on a step? tools/lab hint 06 reduce.N
}
/// [paged_attention_v2_reduce_kernel]

}  // namespace
}  // namespace pa::cuda_v2::SIMT_BACKEND
