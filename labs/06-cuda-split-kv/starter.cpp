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

  // TODO 1. The partition's blocks and tokens. num_partitions = ceil(seq_len / PARTITION_SIZE)
  //         is this sequence's own count; the grid is sized for the longest sequence, so a
  //         block with partition_idx >= num_partitions has nothing to do: return before
  //         reading or writing anything. Otherwise it owns logical blocks [start_block_idx,
  //         end_block_idx): NUM_BLOCKS_PER_PARTITION of them, fewer in the last partition
  //         (clamp to num_seq_blocks), and tokens [start_token_idx, end_token_idx) with
  //         end_token_idx clamped to seq_len. num_blocks and num_tokens are the differences.

  // TODO 2. Once per thread block: the query into __shared__ typename Thread::QueryVecs q_vecs
  //         (me.load_query; q[seq_idx, head_idx, :] starts at seq_idx * q_stride +
  //         head_idx * HEAD_SIZE), and the partition's slice of the block table into
  //         __shared__ int block_ids[NUM_BLOCKS_PER_PARTITION] (block_ids[i] =
  //         block_table[start_block_idx + i], threads striding over i < num_blocks). Both are
  //         read by every thread next: barrier.

  // TODO 3. The logits of the partition's tokens. SIMT_DYNAMIC_SHARED(float, shared_mem) holds
  //         float logits[PARTITION_SIZE] (token t at t - start_token_idx), then
  //         float warp_rows[NUM_WARPS][HEAD_SIZE]; __shared__ float red_smem[2 * NUM_WARPS] is for
  //         the reductions. Warp w takes the partition's blocks i = w, w + NUM_WARPS, ... <
  //         num_blocks; its k_block is key_cache[block_ids[i], kv_head_idx] (kv_block_stride,
  //         kv_head_stride; int64 arithmetic). me.load_keys(keys, k_block) issues the loads of
  //         the group's share of a key into typename Thread::KeyVecs keys, and me.qk(q_vecs,
  //         keys, scale) is the logit of the group's row, token start_token_idx + i * BLOCK_SIZE
  //         + me.thread_group_in_warp. Keep loads in flight: when Thread::DOUBLE_BUFFER_KEYS,
  //         load block i + NUM_WARPS's keys into a second KeyVecs before qk on block i's, and
  //         move them over after; otherwise load each block's keys just before its qk.
  //         Group rank 0 stores it (0 for a token at or past end_token_idx) and keeps a running
  //         qk_max of the real ones (start from -FLT_MAX).

  // TODO 4. The partition's m, e^(logit - m) and denom: qk_max = block_max over the block
  //         (red_smem); for i = me.thread_idx, + NUM_THREADS, ... < num_tokens replace logits[i]
  //         by __expf(logits[i] - qk_max) and add it to exp_sum; exp_sum = block_sum over the
  //         block (the other half of red_smem). Do not divide: a partial stays undivided. (Its
  //         barrier also publishes the exponentials to the next step.)

  // TODO 5. acc = sum of e^(logit - m) v over the partition: float accs[Thread::NUM_ROWS_PER_THREAD]
  //         zeroed; warp w again takes blocks i = w, w + NUM_WARPS, ...: v_block is
  //         value_cache[block_ids[i], kv_head_idx], and me.accumulate_values(accs, the block's
  //         weights logits + i * BLOCK_SIZE, v_block, the tokens of the partition from that
  //         block's first on). Then me.fold_row_lanes(accs).

  // TODO 6. Each warp parks its rows: every row leader (me.v_row_leader()) writes accs[i] to
  //         warp_rows[me.warp_idx][me.v_row(i)] for rows < HEAD_SIZE. Barrier: the next step
  //         reads every warp's rows.

  // TODO 7. acc[d] = the sum over warps w = 0, 1, ... of warp_rows[w][d] (threads striding over
  //         d), and then:
  //         - a one-partition sequence is finished here: out[seq_idx, head_idx, d] =
  //           acc[d] / exp_sum (from_float), and return: no partial, no reduce;
  //         - otherwise write the partial at (seq_idx, head_idx, partition_idx) of the scratch,
  //           whose partition extent is max_num_partitions: thread 0 writes max_logits = qk_max
  //           and exp_sums = exp_sum, and tmp_out[..., d] = acc[d], undivided.
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

  // TODO 1. This sequence's partials: num_partitions = ceil(seq_len / PARTITION_SIZE), its own
  //         count — entries past it belong to no one and are never read. A one-partition
  //         sequence was written by the attention kernel: return. Otherwise the rows of
  //         (seq_idx, head_idx) are max_logits[.., 0 .. num_partitions), exp_sums[..] likewise,
  //         and tmp_out[.., p, :] (partition extent max_num_partitions; int64 offsets).

  // TODO 2. The global max M = max_p m_p: threads stride over p < num_partitions, then
  //         block_max (__shared__ float red_smem[2 * NUM_WARPS]).

  // TODO 3. Merge, a tile of NUM_THREADS partitions at a time (SIMT_DYNAMIC_SHARED(float,
  //         weights), [NUM_THREADS]): for first = 0, NUM_THREADS, ... < num_partitions, thread t
  //         computes the weight w = __expf(m_p - M) of partition p = first + t (if it exists),
  //         stores it in weights[t] and adds w * denom_p to its share of denom; barrier; each
  //         thread adds weights[j] * tmp_out[.., first + j, d] to accs for its dimensions
  //         d = thread_idx + k * NUM_THREADS < HEAD_SIZE, k < NUM_DIMS_PER_THREAD; barrier
  //         (before the next tile overwrites weights). Then denom = block_sum (the other half
  //         of red_smem).

  // TODO 4. out[seq_idx, head_idx, d] = accs[k] / denom (from_float).
}
/// [paged_attention_v2_reduce_kernel]

}  // namespace
}  // namespace pa::cuda_v2::SIMT_BACKEND
