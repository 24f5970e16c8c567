// Lab 07 — grouped-query decode on tensor cores over vLLM V1's flash layout. Your file: the
// cache writer reshape_and_cache_flash_kernel, the tile copy KvTile::copy, and gqa_decode_kernel
// step by step; the chapter's sections follow the TODO steps one for one.
//
//   tools/lab watch 07     # rebuild and grade on every save
//   tools/lab grade 07     # the same, once
//
// CUDA C++. The given launchers (given/launchers.cpp) #include this file and are compiled
// twice: against the SIMT emulator (always, so every test runs on your laptop) and by nvcc
// when CMake finds it. given/kernel_support.cuh has Vec<T, N>, to_float / from_float,
// ceil_div / imin, WARP_SIZE, FULL_MASK, SharedTiles (with the ring's stage_of, k and v),
// stage_block_table, load_partial and PA_TODO_KERNEL; nvcuda::wmma and the asynchronous copies
// (__pipeline_memcpy_async, __pipeline_commit, __pipeline_wait_prior) come with simt/cuda.hpp.
#include <cmath>
#include <cstdint>

#include "given/kernel_support.cuh"

namespace pa::cuda_gqa::SIMT_BACKEND {
namespace {

// =============================================================================================
// Kernel 1: reshape_and_cache_flash — scatter this step's K and V into the flash-layout caches
// =============================================================================================

/// [reshape_and_cache_flash_kernel]
// grid (num_tokens), block (min(num_kv_heads * head_size, 512)): one thread block per token, its
// threads striding over the token's num_kv_heads * head_size elements.
template <typename scalar_t>
__global__ void reshape_and_cache_flash_kernel(
    const scalar_t* __restrict__ key,    // [num_tokens, num_kv_heads, head_size]
    const scalar_t* __restrict__ value,  // [num_tokens, num_kv_heads, head_size]
    scalar_t* __restrict__ key_cache,    // [num_blocks, block_size, num_kv_heads, head_size]
    scalar_t* __restrict__ value_cache,  // [num_blocks, block_size, num_kv_heads, head_size]
    const std::int64_t* __restrict__ slot_mapping,  // [num_tokens]
    const int key_stride, const int value_stride, const std::int64_t block_stride,
    const int page_stride, const int head_stride, const int num_kv_heads, const int head_size,
    const int block_size) {
  PA_TODO_KERNEL();  // delete this line when you write the body

  // TODO 1. This block's token is blockIdx.x; its slot is slot_mapping[token]. A negative slot
  //         is a padding token: return without writing anything.
  // TODO 2. The slot names physical block slot / block_size and row (page) slot % block_size.
  // TODO 3. Stride i = threadIdx.x, threadIdx.x + blockDim.x, ... over the token's
  //         num_kv_heads * head_size elements: element i is kv head i / head_size, dimension
  //         i % head_size, read at key[token * key_stride + i] (value likewise).
  // TODO 4. Store it at cache[block, row, head, dimension]: block * block_stride + row *
  //         page_stride + head * head_stride + dimension, in int64 arithmetic.
}
/// [reshape_and_cache_flash_kernel]

// =============================================================================================
// Kernel 2: gqa_decode — one thread block per (kv head, sequence, partition)
// =============================================================================================

/// [kv_tile]
// One [kTileTokens, HEAD_SIZE] tile of the key or value cache, copied asynchronously from
// device memory into a stage of the shared ring, never through registers: thread t copies
// 16-byte chunk t % CHUNKS_PER_ROW of the tile's rows t / CHUNKS_PER_ROW + i * ROWS_PER_PASS.
// The CHUNKS_PER_ROW threads of a row read one token's head, HEAD_SIZE contiguous elements:
// coalesced 16-byte copies (cp.async.cg on a GPU: they bypass L1 and the register file).
template <typename scalar_t, int HEAD_SIZE, int BLOCK_SIZE>
struct KvTile {
  static constexpr int VEC_SIZE = 16 / static_cast<int>(sizeof(scalar_t));  // elements per copy
  static constexpr int CHUNKS_PER_ROW = HEAD_SIZE / VEC_SIZE;
  static constexpr int ROWS_PER_PASS = kNumThreads / CHUNKS_PER_ROW;
  static constexpr int PASSES = kTileTokens / ROWS_PER_PASS;
  static_assert(kNumThreads % CHUNKS_PER_ROW == 0 && kTileTokens % ROWS_PER_PASS == 0,
                "the block's threads cover the tile in whole passes");
  using Chunk = Vec<scalar_t, VEC_SIZE>;

  // Starts the copies of tokens tile_start .. tile_start + kTileTokens - 1 of kv head
  // kv_head_idx into `stage` [kTileTokens, ld]; the caller commits them as one group. The
  // partition's blocks are table[0 ..] (shared memory), its first token partition_start. A token
  // at or past `end` is zero-filled: its 16 bytes are not read (the copy's source size is 0), and
  // the address given is a row of the partition's last block, which exists.
  __device__ static void copy(scalar_t* stage, int ld,
                              const scalar_t* __restrict__ cache,  // [blocks, BLOCK, kv, HEAD]
                              const int* table, int partition_start, int tile_start, int end,
                              int kv_head_idx, std::int64_t kv_block_stride,
                              int kv_token_stride) {
    // TODO 3a. For i < PASSES: row = threadIdx.x / CHUNKS_PER_ROW + i * ROWS_PER_PASS, token =
    //          tile_start + row, chunk = threadIdx.x % CHUNKS_PER_ROW. Its block in the table is
    //          (token - partition_start) / BLOCK_SIZE, clamped to the partition's last block,
    //          (end - 1 - partition_start) / BLOCK_SIZE; the source is cache[table[block],
    //          token % BLOCK_SIZE, kv_head_idx, chunk * VEC_SIZE] (kv_block_stride elements per
    //          block, kv_token_stride per row, int64). __pipeline_memcpy_async(stage + row * ld +
    //          chunk * VEC_SIZE, source, 16, zfill) with zfill 16 for a token at or past `end`
    //          (a zero row; nothing read), else 0.
  }
};
/// [kv_tile]

/// [gqa_decode_kernel]
// grid (num_kv_heads, num_seqs, max_num_partitions), block (kNumThreads); dynamic shared memory:
// SharedLayout{HEAD_SIZE}.bytes().
template <typename scalar_t, int HEAD_SIZE, int BLOCK_SIZE>
__global__ void __launch_bounds__(kNumThreads) gqa_decode_kernel(
    scalar_t* __restrict__ out,            // [num_seqs, num_heads, HEAD_SIZE]
    float* __restrict__ exp_sums,          // [num_seqs, num_heads, max_num_partitions]
    float* __restrict__ max_logits,        // [num_seqs, num_heads, max_num_partitions]
    float* __restrict__ tmp_out,           // [num_seqs, num_heads, max_num_partitions, HEAD_SIZE]
    int* __restrict__ arrivals,            // [num_seqs, num_kv_heads], 0 between launches
    const scalar_t* __restrict__ q,        // [num_seqs, num_heads, HEAD_SIZE]
    const scalar_t* __restrict__ k_cache,  // [num_blocks, BLOCK_SIZE, num_kv_heads, HEAD_SIZE]
    const scalar_t* __restrict__ v_cache,  // [num_blocks, BLOCK_SIZE, num_kv_heads, HEAD_SIZE]
    const int num_heads, const float scale,
    const int* __restrict__ block_tables,  // [num_seqs, max_num_blocks_per_seq]
    const int* __restrict__ seq_lens,      // [num_seqs]
    const int max_num_blocks_per_seq, const int partition_size, const int q_stride,
    const std::int64_t kv_block_stride, const int kv_token_stride) {
  PA_TODO_KERNEL();  // delete this line when you write the body

  using namespace nvcuda;
  // ---- Step 0 (given): the geometry (compile-time) and who this thread is ----------------
  using Tiles = SharedTiles<scalar_t, HEAD_SIZE>;
  using Tile = KvTile<scalar_t, HEAD_SIZE, BLOCK_SIZE>;
  using Chunk = typename Tile::Chunk;
  constexpr int VEC_SIZE = Tile::VEC_SIZE;
  constexpr int kStages = Tiles::kStages;  // the ring: tile t lives in stage Tiles::stage_of(t)
  constexpr int QK_STEPS = HEAD_SIZE / kWmmaTile;     // Q·Kᵀ: 16-wide steps over the head
  constexpr int PV_STEPS = kTileTokens / kWmmaTile;   // P·V: 16-token steps over the tile
  constexpr int O_TILES_PER_WARP = HEAD_SIZE / kWmmaTile / kNumWarps;  // P·V: columns per warp
  constexpr int O_COLS_PER_WARP = O_TILES_PER_WARP * kWmmaTile;
  constexpr int ROW_THREADS = kNumThreads / kTileRows;       // threads sharing one row: 8
  constexpr int COLS_PER_THREAD = kTileTokens / ROW_THREADS;  // scores of a row per thread
  static_assert(HEAD_SIZE % (kWmmaTile * kNumWarps) == 0, "each warp owns whole output tiles");

  const int kv_head_idx = blockIdx.x;
  const int num_kv_heads = gridDim.x;
  const int seq_idx = blockIdx.y;
  const int partition_idx = blockIdx.z;
  const int max_num_partitions = gridDim.z;
  const int thread_idx = threadIdx.x;
  const int warp_idx = thread_idx / WARP_SIZE;
  const int lane = thread_idx % WARP_SIZE;
  const int row = thread_idx / ROW_THREADS;       // the row of S, P and O this thread serves
  const int row_lane = thread_idx % ROW_THREADS;  // its rank among that row's threads
  const int seq_len = seq_lens[seq_idx];
  const int* block_table = block_tables + seq_idx * max_num_blocks_per_seq;  // [max_blocks]

  // TODO 1. The group and the partition. group_size = num_heads / num_kv_heads query heads
  //         share this kv head: heads first_head = kv_head_idx * group_size onward. This block
  //         reads tokens [start, end): start = partition_idx * partition_size, end = the
  //         smaller of start + partition_size and seq_len. A block whose start is at or past
  //         seq_len returns at once (before any barrier). num_partitions = ceil(seq_len /
  //         partition_size) is the sequence's own count; num_tiles = ceil((end - start) /
  //         kTileTokens). Then: SIMT_DYNAMIC_SHARED(unsigned char, shared_mem); and
  //         const Tiles tiles(shared_mem);

  // TODO 2. The query tile, o, the block table and the first tiles. Row r < group_size of
  //         tiles.q [kTileRows, Tiles::kLdQ] is q[seq_idx, first_head + r, :] (one contiguous
  //         [group_size, HEAD_SIZE] slab, q_stride elements per sequence), rows at or past
  //         group_size are zero; copy it in Chunks of VEC_SIZE. Set tiles.o [kTileRows,
  //         Tiles::kLdO] to 0. Stage the partition's slice of the block table (given:
  //         stage_block_table(tiles.table, the slice's first entry — block start / BLOCK_SIZE
  //         of this sequence's table —, ceil((end - start) / BLOCK_SIZE) entries)); barrier.
  //         Then the pipeline's prologue: tiles 0 .. kStages - 2 start their trips. Tile t is
  //         two copy groups of every thread: Tile::copy its keys into tiles.k(stage_of(t)),
  //         __pipeline_commit(), its values into tiles.v(stage_of(t)), __pipeline_commit(). A
  //         tile at or past num_tiles copies nothing but still commits its two (empty) groups,
  //         so that every thread's group count stays 2 per tile. Each thread keeps its row's
  //         running max m_run = -INFINITY and sum l_run = 0.

  // TODO 3. For each tile (tokens tile_start = start + tile * kTileTokens onward, in stage
  //         Tiles::stage_of(tile)):
  //   a. Tile tile + kStages - 1 starts its trip (its two groups, as in the prologue): its
  //      stage is the one tile - 1 used, which every warp left at (C). Then wait for this
  //      tile's keys: __pipeline_wait_prior(n) lets the n most recent groups stay in flight,
  //      and behind the keys come this tile's values and the 2 (kStages - 1) groups of the
  //      tiles ahead. The wait lands this thread's copies only: a barrier (K) then makes every
  //      thread's visible.
  //   b. S = Q·Kᵀ on tensor cores: warp w owns score columns 16w .. 16w + 15. An accumulator
  //      filled with 0; for k < QK_STEPS: a matrix_a fragment (row_major) of tiles.q at column
  //      16k, a matrix_b fragment of the keys' rows 16w .. 16w + 15 at column 16k — col_major,
  //      which reads the [tokens, dims] tile as its transpose — and mma_sync. Store it to
  //      tiles.s + 16w (pitch Tiles::kLdS, mem_row_major). Barrier (A).
  //   c. The online softmax of row `row`, shared by its ROW_THREADS threads: scores s =
  //      tiles.s[row, row_lane + j * ROW_THREADS] * scale for j < COLS_PER_THREAD, -INFINITY
  //      for tokens at or past `end`; the tile's max over the row (__shfl_xor_sync, masks 4,
  //      2, 1: the row's lanes only); m_new = max(m_run, tile max); alpha = __expf(m_run -
  //      m_new); p = __expf(s - m_new) into tiles.p (from_float) and their row sum; l_run =
  //      l_run * alpha + sum; m_run = m_new; rank 0 of the row writes tiles.row_alpha[row].
  //      Never take a max or a sum across rows: each row is another query head.
  //   d. Wait for this tile's values (one group fewer may stay in flight than in a); barrier
  //      (B): P, row_alpha and the values are visible to every warp.
  //   e. o = diag(alpha) o + P·V: warp w owns output columns [w * O_COLS_PER_WARP, ...). Scale
  //      row r of its columns of tiles.o by tiles.row_alpha[r] in shared memory (which lane
  //      holds which element of a fragment is unspecified: never index x[] by position), then
  //      __syncwarp(). For each of its O_TILES_PER_WARP tiles: load the accumulator from tiles.o
  //      (mem_row_major), for k < PV_STEPS mma_sync a row_major matrix_a of tiles.p at column
  //      16k with a row_major matrix_b of the values' rows 16k .. 16k + 15 at its columns, and
  //      store it back. Barrier (C): the stage is free for the copies of the next iteration.

  // TODO 4. A sequence of one partition (num_partitions == 1): rows r < group_size — never a
  //         padding row — write out[seq_idx, first_head + r, d] = o[r, d] / l_run (the row's
  //         8 threads share the dimensions) and the block returns.

  // TODO 5. Otherwise this partition's result: for rows r < group_size, slot = (seq_idx *
  //         num_heads + first_head + r) * max_num_partitions + partition_idx:
  //         tmp_out[slot, d] = o[r, d] / l_run, max_logits[slot] = m_run, exp_sums[slot] = l_run.

  // TODO 6. The fused merge. Barrier (every thread's partials are written); then thread 0
  //         alone: __threadfence() (one fence publishes the whole block's writes at device
  //         scope), atomicAdd(&arrivals[seq_idx * num_kv_heads + kv_head_idx], 1) returns how
  //         many came before; the block that sees num_partitions - 1 is the last: it resets the
  //         counter with atomicExch(.., 0), fences again (it reads the others' partials next)
  //         and tells its threads through *tiles.is_last; barrier; the others return. In the
  //         last block every thread merges (read partials with load_partial): each row r <
  //         group_size's 8 threads fold its partitions' maxima into M and the total T = sum_p
  //         exp_sums[p] * __expf(max_logits[p] - M) (shuffles over the row's lanes); then, a
  //         chunk of at most Tiles::kLdS partitions at a time, the row's threads write its
  //         weights w_p = exp_sums[p] * __expf(max_logits[p] - M) / T into tiles.s (free now),
  //         barrier, and thread t accumulates out elements e = t, t + kNumThreads, ... of the
  //         group's [group_size, HEAD_SIZE] rows: sum_p w_p tmp_out[p, d], loading 8
  //         partitions' values before multiplying any (their L2 trips overlap); barrier before
  //         the next chunk's weights. Then out[seq_idx, first_head + r, d] = the sum.
}
/// [gqa_decode_kernel]

}  // namespace
}  // namespace pa::cuda_gqa::SIMT_BACKEND
